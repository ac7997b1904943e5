/* tok_bpe.c - the byte-level BPE encoder (tokenizer.ggml.model "gpt2"): the text cut into
 * pre-tokens by the model's pattern (GPT-2's, Llama 3's or Qwen2's, tokenizer.ggml.pre), each
 * pre-token's bytes mapped to GPT-2's printable code points, then the adjacent pair of the
 * lowest merge rank (tokenizer.ggml.merges) merged again and again (a priority queue).
 *
 * The patterns, as llama.cpp writes them (\s: Unicode's White_Space):
 *   gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen2:  llama3's with \p{N} (one digit a pre-token)
 * are scanned by hand over the code points (no regex library); an invalid UTF-8 byte is one
 * code point of no class (a punctuation mark, so to speak). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tok_impl.h"
#include "llm/unicode_tab.h"

enum { F_VALID = 1, F_LETTER = 2, F_NUMBER = 4, F_SPACE = 8 };

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cp < r[mid][0])
			hi = mid;
		else if (cp > r[mid][1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

static int is_space(int32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 ||
	       cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

static uint8_t classify(int32_t cp)
{
	if (cp < 0)
		return F_VALID;
	if (cp < 0x80) /* the common case without a search */
		return F_VALID | (((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') ? F_LETTER : 0) |
		       (cp >= '0' && cp <= '9' ? F_NUMBER : 0) | (is_space(cp) ? F_SPACE : 0);
	uint8_t f = F_VALID;
	if (in_ranges(gl_uni_letters, sizeof(gl_uni_letters) / sizeof(gl_uni_letters[0]),
		      (uint32_t)cp))
		f |= F_LETTER;
	else if (in_ranges(gl_uni_numbers, sizeof(gl_uni_numbers) / sizeof(gl_uni_numbers[0]),
			   (uint32_t)cp))
		f |= F_NUMBER;
	return f | (is_space(cp) ? F_SPACE : 0);
}

typedef struct {
	int32_t *cp;
	uint8_t *fl;
	size_t *off; /* n + 1 byte offsets */
	size_t n;
} scan_t;

static uint8_t fl(const scan_t *s, size_t i)
{
	return i < s->n ? s->fl[i] : 0;
}

static int32_t cpat(const scan_t *s, size_t i)
{
	return i < s->n ? s->cp[i] : -2;
}

static int32_t lower(int32_t c, int fold)
{
	return fold && c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* 's 't 'm 'd (2) or 're 've 'll (3) at POS, case-insensitive with FOLD; 0 for none */
static size_t contraction(const scan_t *s, size_t pos, int fold)
{
	if (cpat(s, pos) != '\'')
		return 0;
	int32_t a = lower(cpat(s, pos + 1), fold), b = lower(cpat(s, pos + 2), fold);
	if (a == 's' || a == 't' || a == 'm' || a == 'd')
		return 2;
	if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
		return 3;
	return 0;
}

/* \s+(?!\S) then \s+ at POS; with NEWLINES first \s*[\r\n]+. 0 for no space at POS. */
static size_t spaces(const scan_t *s, size_t pos, int newlines)
{
	size_t n = 0, last_nl = 0;
	while (fl(s, pos + n) & F_SPACE) {
		int32_t c = cpat(s, pos + n);
		if (c == '\r' || c == '\n')
			last_nl = n + 1;
		n++;
	}
	if (newlines && last_nl)
		return last_nl;
	if (n > 1 && pos + n < s->n)
		return n - 1;
	return n;
}

static size_t gpt2_token(const scan_t *s, size_t pos)
{
	size_t k = contraction(s, pos, 0);
	if (k)
		return k;
	int sp = cpat(s, pos) == ' ';
	uint8_t f2 = fl(s, pos + (size_t)sp);
	uint8_t want = f2 & F_LETTER ? F_LETTER : f2 & F_NUMBER ? F_NUMBER : 0;
	if (want) {
		size_t i = pos + (size_t)sp;
		while (fl(s, i) & want)
			i++;
		return i - pos;
	}
	if (f2 && !(f2 & (F_SPACE | F_LETTER | F_NUMBER))) {
		size_t i = pos + (size_t)sp;
		while (fl(s, i) && !(fl(s, i) & (F_SPACE | F_LETTER | F_NUMBER)))
			i++;
		return i - pos;
	}
	k = spaces(s, pos, 0);
	return k ? k : 1;
}

/* llama3's pattern; qwen2's with DIGITS 1 */
static size_t llama3_token(const scan_t *s, size_t pos, size_t digits)
{
	size_t k = contraction(s, pos, 1);
	if (k)
		return k;
	int32_t c = cpat(s, pos);
	uint8_t f = fl(s, pos);
	if (c != '\r' && c != '\n' && !(f & F_NUMBER) &&
	    ((f & F_LETTER) || (fl(s, pos + 1) & F_LETTER))) {
		size_t i = pos + 1;
		while (fl(s, i) & F_LETTER)
			i++;
		return i - pos;
	}
	if (f & F_NUMBER) {
		size_t i = pos;
		while (i - pos < digits && (fl(s, i) & F_NUMBER))
			i++;
		return i - pos;
	}
	int sp = c == ' ';
	uint8_t f2 = fl(s, pos + (size_t)sp);
	if (f2 && !(f2 & (F_SPACE | F_LETTER | F_NUMBER))) {
		size_t i = pos + (size_t)sp;
		while (fl(s, i) && !(fl(s, i) & (F_SPACE | F_LETTER | F_NUMBER)))
			i++;
		while (cpat(s, i) == '\r' || cpat(s, i) == '\n')
			i++;
		return i - pos;
	}
	k = spaces(s, pos, 1);
	return k ? k : 1;
}

int gl_tok_pretokenize(int pre, const char *text, size_t len, gl_tok_word_f word, void *arg)
{
	scan_t s = {0};
	s.cp = malloc((len + 1) * sizeof(*s.cp));
	s.fl = malloc(len + 1);
	s.off = malloc((len + 1) * sizeof(*s.off));
	int rc = -1;
	if (!s.cp || !s.fl || !s.off) {
		errno = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < len;) {
		s.off[s.n] = i;
		i += gl_utf8_next((const unsigned char *)text + i, len - i, &s.cp[s.n]);
		s.fl[s.n] = classify(s.cp[s.n]);
		s.n++;
	}
	s.off[s.n] = len;
	for (size_t pos = 0; pos < s.n;) {
		size_t k = pre == GL_PRE_GPT2	 ? gpt2_token(&s, pos)
			   : pre == GL_PRE_QWEN2 ? llama3_token(&s, pos, 1)
						 : llama3_token(&s, pos, 3);
		if (word(arg, text + s.off[pos], s.off[pos + k] - s.off[pos]) < 0)
			goto out;
		pos += k;
	}
	rc = 0;
out:
	free(s.cp);
	free(s.fl);
	free(s.off);
	return rc;
}

/* ---- the merges ---- */

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for
 * U+0100 onwards in byte order */
static uint32_t byte_cp(int b)
{
	if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff))
		return (uint32_t)b;
	uint32_t n = 0;
	for (int i = 0; i < b; i++)
		n += !((i >= 0x21 && i <= 0x7e) || (i >= 0xa1 && i <= 0xac) || (i >= 0xae));
	return 0x100 + n;
}

static size_t put_utf8(char *d, uint32_t cp)
{
	if (cp < 0x80) {
		d[0] = (char)cp;
		return 1;
	}
	d[0] = (char)(0xc0 | cp >> 6); /* every mapped code point is below U+0800 */
	d[1] = (char)(0x80 | (cp & 0x3f));
	return 2;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static const gl_merge_t *merge_find(const gl_tok_t *t, int32_t a, int32_t b)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = t->nmerges_slots - 1;
	for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
		const gl_merge_t *m = &t->merges[i];
		if (m->rank < 0)
			return NULL;
		if (m->key == key)
			return m;
	}
}

static void merge_add(gl_tok_t *t, int32_t a, int32_t b, int32_t rank, int32_t result)
{
	uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = t->nmerges_slots - 1;
	for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
		gl_merge_t *m = &t->merges[i];
		if (m->rank >= 0 && m->key == key)
			return; /* the first rank of a pair counts */
		if (m->rank < 0) {
			*m = (gl_merge_t){key, rank, result};
			return;
		}
	}
}

/* "left right" of merge I as three ids; 0 if a part is not a token (the merge is skipped) */
static int merge_ids(const gl_tok_t *t, const char *s, size_t len, int32_t ids[3], char *buf)
{
	const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
	if (!sp)
		return 0;
	size_t la = (size_t)(sp - s), lb = len - la - 1;
	ids[0] = gl_tok_lookup(t, s, la);
	ids[1] = gl_tok_lookup(t, sp + 1, lb);
	memcpy(buf, s, la);
	memcpy(buf + la, sp + 1, lb);
	ids[2] = gl_tok_lookup(t, buf, la + lb);
	return ids[0] >= 0 && ids[1] >= 0 && ids[2] >= 0;
}

int gl_tok_bpe_load(gl_tok_t *t, const gl_gguf_t *g, gp_error_t *err)
{
	memset(t->byte_of_cp, 0xff, sizeof(t->byte_of_cp));
	for (int b = 0; b < 256; b++) {
		char s[2];
		uint32_t cp = byte_cp(b);
		t->byte_of_cp[cp] = (int16_t)b;
		t->byte_id[b] = gl_tok_lookup(t, s, put_utf8(s, cp));
		if (t->byte_id[b] < 0) {
			errno = EINVAL;
			return gp_errprintf(err, "tokenizer: no token for byte 0x%02x", b);
		}
	}
	gl_gguf_vtype_t et;
	uint64_t n;
	if (gl_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n) < 0 || et != GL_GGUF_STRING ||
	    n > INT32_MAX / 4) {
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: no 'tokenizer.ggml.merges' array of strings");
	}
	for (t->nmerges_slots = 64; t->nmerges_slots < 2 * n; t->nmerges_slots *= 2)
		;
	t->merges = malloc(t->nmerges_slots * sizeof(*t->merges));
	char *buf = malloc(GL_GGUF_MAX_STRING + 1);
	if (!t->merges || !buf) {
		free(buf);
		errno = ENOMEM;
		return gp_errprintf(err, "tokenizer: out of memory");
	}
	for (size_t i = 0; i < t->nmerges_slots; i++)
		t->merges[i] = (gl_merge_t){0, -1, -1};
	for (uint64_t i = 0; i < n; i++) {
		const char *s;
		size_t len;
		int32_t ids[3];
		if (gl_gguf_arr_str(g, "tokenizer.ggml.merges", i, &s, &len) < 0 ||
		    len > GL_GGUF_MAX_STRING) {
			free(buf);
			errno = EINVAL;
			return gp_errprintf(err, "tokenizer: merge %llu unreadable",
					    (unsigned long long)i);
		}
		if (merge_ids(t, s, len, ids, buf))
			merge_add(t, ids[0], ids[1], (int32_t)i, ids[2]);
	}
	free(buf);
	return 0;
}

/* ---- encoding ---- */

typedef struct {
	int32_t id, prev, next;
} bsym_t;

typedef struct {
	const gl_tok_t *t;
	gl_tokout_t *o;
	bsym_t *sym;
	size_t cap;
	char *mapped; /* the pre-token in mapped code points (ignore_merges) */
	gl_tokheap_t heap;
} bpe_t;

static int bpe_pair(bpe_t *w, int32_t left, int32_t right)
{
	if (left < 0 || right < 0)
		return 0;
	const gl_merge_t *m = merge_find(w->t, w->sym[left].id, w->sym[right].id);
	if (!m)
		return 0;
	gl_tokpair_t p = {-(double)m->rank, left, right, w->sym[left].id, w->sym[right].id};
	return gl_tokheap_push(&w->heap, p);
}

static int bpe_grow(bpe_t *w, size_t len)
{
	if (len <= w->cap)
		return 0;
	bsym_t *s = realloc(w->sym, len * sizeof(*s));
	if (!s)
		return -1;
	w->sym = s;
	char *m = realloc(w->mapped, 2 * len);
	if (!m)
		return -1;
	w->mapped = m;
	w->cap = len;
	return 0;
}

static int bpe_word(void *arg, const char *s, size_t len)
{
	bpe_t *w = arg;
	const gl_tok_t *t = w->t;
	if (bpe_grow(w, len) < 0)
		return -1;
	if (t->ignore_merges) {
		size_t n = 0;
		for (size_t i = 0; i < len; i++)
			n += put_utf8(w->mapped + n, byte_cp((unsigned char)s[i]));
		int32_t id = gl_tok_lookup(t, w->mapped, n);
		if (id >= 0) {
			gl_tok_emit(w->o, id);
			return 0;
		}
	}
	for (size_t i = 0; i < len; i++)
		w->sym[i] = (bsym_t){t->byte_id[(unsigned char)s[i]], (int32_t)i - 1,
				     i + 1 < len ? (int32_t)i + 1 : -1};
	w->heap.n = 0;
	for (size_t i = 1; i < len; i++)
		if (bpe_pair(w, (int32_t)i - 1, (int32_t)i) < 0)
			return -1;
	gl_tokpair_t p;
	while (gl_tokheap_pop(&w->heap, &p)) {
		bsym_t *l = &w->sym[p.left], *r = &w->sym[p.right];
		if (l->id != p.a || r->id != p.b || l->next != p.right)
			continue; /* stale */
		l->id = merge_find(t, p.a, p.b)->result;
		l->next = r->next;
		if (r->next >= 0)
			w->sym[r->next].prev = p.left;
		r->id = -1;
		r->next = -1;
		if (bpe_pair(w, l->prev, p.left) < 0 || bpe_pair(w, p.left, l->next) < 0)
			return -1;
	}
	for (int32_t i = 0; len && i >= 0; i = w->sym[i].next)
		gl_tok_emit(w->o, w->sym[i].id);
	return 0;
}

int gl_tok_bpe_encode(const gl_tok_t *t, const char *s, size_t len, gl_tokout_t *o)
{
	bpe_t w = {.t = t, .o = o};
	int rc = gl_tok_pretokenize(t->pre, s, len, bpe_word, &w);
	if (rc < 0)
		errno = ENOMEM;
	free(w.sym);
	free(w.mapped);
	free(w.heap.v);
	return rc;
}
