/* tokenizer.c - a model's tokenizer from its GGUF metadata (llm/tokenizer.h): the vocabulary
 * (its hash index and lookup: tok_base.c), special tokens matched whole, the ids' text back.
 * The two encoders are tok_spm.c (SentencePiece-style, "llama") and tok_bpe.c (byte-level BPE,
 * "gpt2"). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tok_impl.h"

/* ---- loading ---- */

static int read_id(const gl_gguf_t *g, const char *key, int n, int32_t *id, gp_error_t *err)
{
	uint32_t v;
	*id = -1;
	if (gl_gguf_get_u32(g, key, &v) < 0) {
		if (errno == ENOENT)
			return 0;
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: '%s' is not a token id", key);
	}
	if (v >= (uint32_t)n) {
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: '%s' %u is past the vocabulary (%d)", key, v,
				    n);
	}
	*id = (int32_t)v;
	return 0;
}

static int read_flag(const gl_gguf_t *g, const char *key, int dflt)
{
	int v;
	return gl_gguf_get_bool(g, key, &v) == 0 ? v : dflt;
}

/* An optional per-token array (scores, token_type) must have one value per token. */
static int check_arr(const gl_gguf_t *g, const char *key, int n, int *present, gp_error_t *err)
{
	gl_gguf_vtype_t et;
	uint64_t len;
	*present = 0;
	if (gl_gguf_get_arr(g, key, &et, &len) < 0) {
		if (errno == ENOENT)
			return 0;
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: '%s' is not an array", key);
	}
	if (len != (uint64_t)n || et == GL_GGUF_STRING || et == GL_GGUF_ARRAY) {
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: '%s' has %llu values for %d tokens", key,
				    (unsigned long long)len, n);
	}
	*present = 1;
	return 0;
}

static int load_tokens(gl_tok_t *t, const gl_gguf_t *g, gp_error_t *err)
{
	gl_gguf_vtype_t et;
	uint64_t n;
	if (gl_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n) < 0 || et != GL_GGUF_STRING ||
	    n == 0 || n > INT32_MAX / 2) {
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: no 'tokenizer.ggml.tokens' array of strings");
	}
	t->n = (int)n;
	int has_scores, has_types;
	if (check_arr(g, "tokenizer.ggml.scores", t->n, &has_scores, err) < 0 ||
	    check_arr(g, "tokenizer.ggml.token_type", t->n, &has_types, err) < 0)
		return -1;
	size_t total = 0;
	const char *s;
	size_t len;
	for (int i = 0; i < t->n; i++) {
		if (gl_gguf_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)i, &s, &len) < 0)
			return gp_errprintf(err, "tokenizer: token %d unreadable", i);
		total += len + 1;
	}
	if (total > UINT32_MAX) {
		errno = EFBIG;
		return gp_errprintf(err, "tokenizer: the vocabulary's text is over 4 GiB");
	}
	t->tok = calloc((size_t)t->n, sizeof(*t->tok));
	t->arena = malloc(total);
	for (t->nslots = 64; t->nslots < 2 * (size_t)t->n; t->nslots *= 2)
		;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->tok || !t->arena || !t->slots)
		return gp_errprintf(err, "tokenizer: out of memory");
	size_t off = 0;
	for (int i = 0; i < t->n; i++) {
		gl_tokdef_t *d = &t->tok[i];
		float score = 0;
		int64_t type = GL_TT_NORMAL;
		gl_gguf_arr_str(g, "tokenizer.ggml.tokens", (uint64_t)i, &s, &len);
		if ((has_scores && gl_gguf_arr_f32(g, "tokenizer.ggml.scores", i, &score) < 0) ||
		    (has_types && gl_gguf_arr_i64(g, "tokenizer.ggml.token_type", i, &type) < 0) ||
		    type < GL_TT_UNDEFINED || type > GL_TT_BYTE) {
			errno = EINVAL;
			return gp_errprintf(err, "tokenizer: token %d has a bad score or type", i);
		}
		memcpy(t->arena + off, s, len);
		t->arena[off + len] = '\0';
		*d = (gl_tokdef_t){(uint32_t)off, (uint32_t)len, score,
				   (uint8_t)(type == GL_TT_UNDEFINED ? GL_TT_NORMAL : type)};
		off += len + 1;
		gl_tok_index(t, i);
	}
	return 0;
}

typedef struct {
	uint8_t first;
	uint32_t len;
	int32_t id;
} special_t;

static int special_cmp(const void *a, const void *b)
{
	const special_t *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Control and user-defined tokens, bucketed by first byte, longest first in each bucket. */
static int index_specials(gl_tok_t *t)
{
	size_t n = 0;
	for (int i = 0; i < t->n; i++)
		n += (t->tok[i].type == GL_TT_CONTROL || t->tok[i].type == GL_TT_USER) &&
		     t->tok[i].len > 0;
	special_t *v = calloc(n ? n : 1, sizeof(*v));
	t->special = calloc(n ? n : 1, sizeof(*t->special));
	if (!v || !t->special) {
		free(v);
		return -1;
	}
	n = 0;
	for (int i = 0; i < t->n; i++)
		if ((t->tok[i].type == GL_TT_CONTROL || t->tok[i].type == GL_TT_USER) &&
		    t->tok[i].len > 0)
			v[n++] = (special_t){(uint8_t)gl_tok_text(t, i)[0], t->tok[i].len, i};
	qsort(v, n, sizeof(*v), special_cmp);
	memset(t->special_at, 0, sizeof(t->special_at));
	for (size_t i = 0; i < n; i++) {
		t->special[i] = v[i].id;
		t->special_at[v[i].first + 1]++;
	}
	for (int b = 0; b < 256; b++)
		t->special_at[b + 1] += t->special_at[b];
	free(v);
	return 0;
}

static void add_eog(gl_tok_t *t, int32_t id)
{
	if (id < 0 || t->neog == GL_TOK_MAX_EOG)
		return;
	for (int i = 0; i < t->neog; i++)
		if (t->eog[i] == id)
			return;
	t->eog[t->neog++] = id;
}

/* The SentencePiece byte tokens <0x00>..<0xFF>; -1 where the vocabulary has none. */
static void index_bytes(gl_tok_t *t)
{
	static const char hex[] = "0123456789ABCDEF";
	for (int b = 0; b < 256; b++) {
		char s[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
		int32_t id = gl_tok_lookup(t, s, 6);
		t->byte_id[b] = id >= 0 && t->tok[id].type == GL_TT_BYTE ? id : -1;
	}
}

static const struct {
	const char *name;
	int pre;
} pre_names[] = {
    {"default", GL_PRE_GPT2},	  {"gpt2", GL_PRE_GPT2},     {"gpt-2", GL_PRE_GPT2},
    {"llama-bpe", GL_PRE_LLAMA3}, {"llama3", GL_PRE_LLAMA3}, {"smaug-bpe", GL_PRE_LLAMA3},
    {"qwen2", GL_PRE_QWEN2},
};

static int read_model(gl_tok_t *t, const gl_gguf_t *g, gp_error_t *err)
{
	const char *s;
	size_t len;
	if (gl_gguf_get_str(g, "tokenizer.ggml.model", &s, &len) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "tokenizer: no 'tokenizer.ggml.model'");
	}
	if (strcmp(s, "llama") == 0) {
		t->kind = GL_TOK_SPM;
		return 0;
	}
	if (strcmp(s, "gpt2") != 0) {
		errno = ENOTSUP;
		return gp_errprintf(err, "tokenizer: model '%.64s' is not supported", s);
	}
	t->kind = GL_TOK_BPE;
	t->pre = GL_PRE_GPT2;
	if (gl_gguf_get_str(g, "tokenizer.ggml.pre", &s, &len) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(pre_names) / sizeof(pre_names[0]); i++)
		if (strcmp(s, pre_names[i].name) == 0) {
			t->pre = pre_names[i].pre;
			return 0;
		}
	errno = ENOTSUP;
	return gp_errprintf(err, "tokenizer: pre-tokenizer '%.64s' is not supported", s);
}

static int read_ids(gl_tok_t *t, const gl_gguf_t *g, gp_error_t *err)
{
	int32_t eot, eom;
	if (read_id(g, "tokenizer.ggml.bos_token_id", t->n, &t->bos, err) < 0 ||
	    read_id(g, "tokenizer.ggml.eos_token_id", t->n, &t->eos, err) < 0 ||
	    read_id(g, "tokenizer.ggml.unknown_token_id", t->n, &t->unk, err) < 0 ||
	    read_id(g, "tokenizer.ggml.eot_token_id", t->n, &eot, err) < 0 ||
	    read_id(g, "tokenizer.ggml.eom_token_id", t->n, &eom, err) < 0)
		return -1;
	if (t->unk < 0)
		for (int i = 0; i < t->n && t->unk < 0; i++)
			if (t->tok[i].type == GL_TT_UNKNOWN)
				t->unk = i;
	add_eog(t, t->eos);
	add_eog(t, eot);
	add_eog(t, eom);
	static const char *const ends[] = {"<|im_end|>", "<|eot_id|>", "<|end_of_text|>",
					   "<|endoftext|>", "<|eom_id|>"};
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		add_eog(t, gl_tok_lookup(t, ends[i], strlen(ends[i])));
	int spm = t->kind == GL_TOK_SPM;
	t->add_bos = read_flag(g, "tokenizer.ggml.add_bos_token", spm || t->pre == GL_PRE_LLAMA3);
	if (t->bos < 0)
		t->add_bos = 0;
	t->add_space_prefix = spm && read_flag(g, "tokenizer.ggml.add_space_prefix", 1);
	/* Llama 3's tokenizer takes a pre-token that is a whole token as it is (HF's
	 * ignore_merges; llama.cpp does the same) */
	t->ignore_merges = t->pre == GL_PRE_LLAMA3;
	return 0;
}

gl_tok_t *gl_tok_from_gguf(const gl_gguf_t *g, gp_error_t *err)
{
	if (!g) {
		errno = EINVAL;
		gp_errprintf(err, "tokenizer: no model file");
		return NULL;
	}
	gl_tok_t *t = calloc(1, sizeof(*t));
	if (!t) {
		gp_errprintf(err, "tokenizer: out of memory");
		return NULL;
	}
	errno = ENOMEM;
	if (read_model(t, g, err) < 0 || load_tokens(t, g, err) < 0 || read_ids(t, g, err) < 0)
		goto fail;
	errno = ENOMEM;
	if (index_specials(t) < 0) {
		gp_errprintf(err, "tokenizer: out of memory");
		goto fail;
	}
	if (t->kind == GL_TOK_SPM)
		index_bytes(t);
	else if (gl_tok_bpe_load(t, g, err) < 0)
		goto fail;
	return t;
fail:;
	int e = errno;
	gl_tok_destroy(&t);
	errno = e;
	return NULL;
}

void gl_tok_destroy(gl_tok_t **tp)
{
	if (!tp || !*tp)
		return;
	gl_tok_t *t = *tp;
	free(t->tok);
	free(t->arena);
	free(t->slots);
	free(t->special);
	free(t->merges);
	free(t);
	*tp = NULL;
}

int gl_tok_vocab(const gl_tok_t *t)
{
	return t->n;
}

int32_t gl_tok_bos(const gl_tok_t *t)
{
	return t->bos;
}

int32_t gl_tok_eos(const gl_tok_t *t)
{
	return t->eos;
}

int gl_tok_add_bos(const gl_tok_t *t)
{
	return t->add_bos;
}

int gl_tok_is_eog(const gl_tok_t *t, int32_t id)
{
	for (int i = 0; i < t->neog; i++)
		if (t->eog[i] == id)
			return 1;
	return 0;
}

int32_t gl_tok_find(const gl_tok_t *t, const char *piece)
{
	return piece ? gl_tok_lookup(t, piece, strlen(piece)) : -1;
}

/* ---- encoding ---- */

static int encode_fragment(const gl_tok_t *t, const char *s, size_t len, int after_special,
			   gl_tokout_t *o)
{
	if (!len)
		return 0;
	if (t->kind == GL_TOK_SPM)
		/* llama.cpp puts the prefix space before the text and after every special token */
		return gl_tok_spm_encode(t, s, len, t->add_space_prefix && after_special, o);
	return gl_tok_bpe_encode(t, s, len, o);
}

/* The longest special token at S (N bytes), or -1. */
static int32_t special_at(const gl_tok_t *t, const char *s, size_t n)
{
	unsigned char b = (unsigned char)s[0];
	for (uint32_t i = t->special_at[b]; i < t->special_at[b + 1]; i++) {
		const gl_tokdef_t *d = &t->tok[t->special[i]];
		if (d->len <= n && memcmp(t->arena + d->off, s, d->len) == 0)
			return t->special[i];
	}
	return -1;
}

int gl_tok_encode(const gl_tok_t *t, const char *text, size_t len, int add_bos, int parse_special,
		  int32_t *ids, int max)
{
	/* a byte gives at most three ids (a one-byte special token, then a prefix space of three
	 * byte tokens and one more), so the count fits an int */
	if (!t || (!text && len) || max < 0 || (!ids && max) || len > (size_t)(INT_MAX - 1) / 3) {
		errno = EINVAL;
		return -1;
	}
	gl_tokout_t o = {ids, max, 0};
	if (add_bos && t->bos >= 0)
		gl_tok_emit(&o, t->bos);
	size_t start = 0;
	int after_special = 1;
	for (size_t i = 0; parse_special && i < len;) {
		int32_t id = special_at(t, text + i, len - i);
		if (id < 0) {
			i++;
			continue;
		}
		if (encode_fragment(t, text + start, i - start, after_special, &o) < 0)
			return -1;
		gl_tok_emit(&o, id);
		after_special = 1;
		i += t->tok[id].len;
		start = i;
	}
	if (encode_fragment(t, text + start, len - start, after_special, &o) < 0)
		return -1;
	return (int)o.n;
}

/* ---- ids to text ---- */

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
				      : -1;
}

/* bytes written to BUF up to CAP, all counted */
typedef struct {
	char *buf;
	size_t cap, n;
} piece_t;

static void put(piece_t *p, const char *s, size_t len)
{
	if (p->n < p->cap)
		memcpy(p->buf + p->n, s, len < p->cap - p->n ? len : p->cap - p->n);
	p->n += len;
}

static void spm_piece(const gl_tok_t *t, const gl_tokdef_t *d, int first, piece_t *p)
{
	const char *s = t->arena + d->off;
	size_t i = 0;
	if (d->type == GL_TT_BYTE && d->len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' &&
	    hexval(s[3]) >= 0 && hexval(s[4]) >= 0) {
		char b = (char)(hexval(s[3]) << 4 | hexval(s[4]));
		put(p, &b, 1);
		return;
	}
	if (d->type == GL_TT_USER || d->type == GL_TT_UNKNOWN) {
		put(p, s, d->len);
		return;
	}
	if (first && t->add_space_prefix && d->len >= 3 && memcmp(s, "\xe2\x96\x81", 3) == 0)
		i = 3;
	while (i < d->len) {
		if (i + 3 <= d->len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
			put(p, " ", 1);
			i += 3;
		} else {
			put(p, s + i, 1);
			i++;
		}
	}
}

static void bpe_piece(const gl_tok_t *t, const gl_tokdef_t *d, piece_t *p)
{
	const unsigned char *s = (const unsigned char *)t->arena + d->off;
	if (d->type == GL_TT_USER) {
		put(p, (const char *)s, d->len);
		return;
	}
	for (size_t i = 0; i < d->len;) {
		int32_t cp;
		size_t n = gl_utf8_next(s + i, d->len - i, &cp);
		if (cp >= 0 && cp < 0x144 && t->byte_of_cp[cp] >= 0) {
			char b = (char)t->byte_of_cp[cp];
			put(p, &b, 1);
		} else {
			put(p, (const char *)s + i, n);
		}
		i += n;
	}
}

int gl_tok_piece(const gl_tok_t *t, int32_t id, int first, char *buf, size_t cap)
{
	if (!t || id < 0 || id >= t->n || (!buf && cap)) {
		errno = EINVAL;
		return -1;
	}
	const gl_tokdef_t *d = &t->tok[id];
	piece_t p = {buf, cap, 0};
	if (d->type == GL_TT_CONTROL)
		return 0;
	if (t->kind == GL_TOK_SPM)
		spm_piece(t, d, first, &p);
	else
		bpe_piece(t, d, &p);
	return p.n > INT_MAX ? INT_MAX : (int)p.n;
}

char *gl_tok_decode(const gl_tok_t *t, const int32_t *ids, int n, size_t *len)
{
	if (!t || n < 0 || (!ids && n)) {
		errno = EINVAL;
		return NULL;
	}
	size_t cap = 64, used = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	/* as the encoder puts a prefix space before the text and after each special token */
	int first = 1;
	for (int i = 0; i < n; i++) {
		int k = gl_tok_piece(t, ids[i], first, s + used, cap - used - 1);
		if (k < 0) {
			free(s);
			return NULL;
		}
		if ((size_t)k >= cap - used) {
			size_t need = used + (size_t)k + 1;
			while (cap < need)
				cap *= 2;
			char *ns = realloc(s, cap);
			if (!ns) {
				free(s);
				return NULL;
			}
			s = ns;
			k = gl_tok_piece(t, ids[i], first, s + used, cap - used - 1);
		}
		used += (size_t)k;
		uint8_t type = t->tok[ids[i]].type;
		first = type == GL_TT_CONTROL || type == GL_TT_USER;
	}
	s[used] = '\0';
	if (len)
		*len = used;
	return s;
}
