/* test_tokenizer: the tokenizer (llm/tokenizer.c) on small vocabularies written here as GGUF
 * metadata: SentencePiece-style merges by score (ties to the left, byte fallback, unused tokens
 * split again, the prefix space), byte-level BPE merges by rank with the three pre-tokenizers'
 * splits, special tokens only when asked, pieces and decoding, round trips of random bytes
 * (invalid UTF-8 too), refused metadata, and a 100 kB text in bounded time (no quadratic
 * rescans). The comparison with SentencePiece and a Python BPE is tests/tools/tok_compare.py. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "llm/gguf.h"
#include "llm/tok_impl.h"
#include "llm/tokenizer.h"
#include "llm/test/tok_check.h"

#define SP "\xe2\x96\x81" /* U+2581, SentencePiece's space */

typedef struct {
	char *tok[1024];
	float score[1024];
	int32_t type[1024];
	int n;
	const char *merges[64];
	int nmerges;
} voc_t;

static int add(voc_t *v, const char *text, float score, int type)
{
	CHECK(v->n < 1024);
	v->tok[v->n] = strdup(text);
	v->score[v->n] = score;
	v->type[v->n] = type;
	return v->n++;
}

static void voc_free(voc_t *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->tok[i]);
}

static char tmpdir[] = "/tmp/test_tokenizer.XXXXXX";

/* Write V with MODEL and PRE (NULL: none) and read a tokenizer back; EXTRA adds keys. */
static gl_tok_t *load(const voc_t *v, const char *model, const char *pre,
		      void (*extra)(gl_gguf_writer_t *), gp_error_t *err)
{
	static int seq;
	char path[128];
	snprintf(path, sizeof(path), "%s/v%d.gguf", tmpdir, seq++);
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	CHECK(w);
	CHECK(gl_gguf_set_str(w, "general.architecture", "llama") == 0);
	CHECK(gl_gguf_set_str(w, "tokenizer.ggml.model", model) == 0);
	if (pre)
		CHECK(gl_gguf_set_str(w, "tokenizer.ggml.pre", pre) == 0);
	CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok,
				  (uint64_t)v->n) == 0);
	CHECK(gl_gguf_set_arr_f32(w, "tokenizer.ggml.scores", v->score, (uint64_t)v->n) == 0);
	CHECK(gl_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", v->type, (uint64_t)v->n) == 0);
	if (v->nmerges)
		CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.merges", v->merges,
					  (uint64_t)v->nmerges) == 0);
	if (extra)
		extra(w);
	CHECK(gl_gguf_write(w, path, err) == 0);
	gl_gguf_writer_destroy(&w);
	gl_gguf_t *g = gl_gguf_open(path, err);
	CHECK(g);
	gl_tok_t *t = gl_tok_from_gguf(g, err);
	int e = errno;
	gl_gguf_close(&g); /* the tokenizer keeps copies of what it needs */
	unlink(path);
	errno = e;
	return t;
}

/* ids of TEXT (no BOS, no specials), checked against the count alone */
static int enc(const gl_tok_t *t, const char *text, int32_t *ids, int max)
{
	int n = gl_tok_encode(t, text, strlen(text), 0, 0, ids, max);
	CHECK(n >= 0 && n <= max);
	return n;
}

static int same(const int32_t *a, int n, const int32_t *b, int m)
{
	return n == m && memcmp(a, b, (size_t)n * sizeof(*a)) == 0;
}

static void roundtrip(const gl_tok_t *t, const char *s, size_t len)
{
	int32_t *ids = malloc((2 * len + 2) * sizeof(*ids));
	CHECK(ids);
	int n = gl_tok_encode(t, s, len, 1, 0, ids, (int)(2 * len + 2));
	CHECK(n >= 0 && n <= (int)(2 * len + 2));
	size_t dlen;
	char *d = gl_tok_decode(t, ids, n, &dlen);
	CHECK(d && dlen == len && memcmp(d, s, len) == 0 && d[len] == '\0');
	free(d);
	free(ids);
}

static void random_roundtrips(const gl_tok_t *t, const char *alphabet)
{
	unsigned seed = 12345;
	char s[200];
	for (int round = 0; round < 300; round++) {
		size_t len = (size_t)(rand_r(&seed) % sizeof(s));
		for (size_t i = 0; i < len; i++)
			/* half from the vocabulary's letters, half any byte (invalid UTF-8 too) */
			s[i] = rand_r(&seed) % 2 ? alphabet[rand_r(&seed) % strlen(alphabet)]
						 : (char)(rand_r(&seed) & 0xff);
		roundtrip(t, s, len);
	}
	static const char *const texts[] = {
	    "",
	    " ",
	    "  ",
	    " hello",
	    "hello ",
	    "a\n\nb",
	    "\xc3\xa9t\xc3\xa9 \xe6\x9d\xb1\xe4\xba\xac \xf0\x9f\x99\x82",
	    "\xff\xfe\xc3",
	    "\xe6\x9d",
	    "\xed\xa0\x80"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		roundtrip(t, texts[i], strlen(texts[i]));
}

/* ---- SentencePiece-style ---- */

static voc_t spm_voc;
static int sp_unk, sp_bos, sp_eos, sp_user, sp_ctl, sp_space, sp_l, sp_d, sp_ll, sp_hello, sp_w,
    sp_o, sp_r, sp_world, sp_wo;

static void spm_build(voc_t *v)
{
	sp_unk = add(v, "<unk>", 0, GL_TT_UNKNOWN);
	sp_bos = add(v, "<s>", 0, GL_TT_CONTROL);
	sp_eos = add(v, "</s>", 0, GL_TT_CONTROL);
	for (int b = 0; b < 256; b++) {
		char s[8];
		snprintf(s, sizeof(s), "<0x%02X>", b);
		add(v, s, 0, GL_TT_BYTE);
	}
	sp_user = add(v, "<|x|>", 0, GL_TT_USER);
	sp_ctl = add(v, "<|im_end|>", 0, GL_TT_CONTROL);
	sp_space = add(v, SP, -20, GL_TT_NORMAL);
	add(v, "h", -21, GL_TT_NORMAL);
	add(v, "e", -22, GL_TT_NORMAL);
	sp_o = add(v, "o", -23, GL_TT_NORMAL);
	sp_w = add(v, "w", -24, GL_TT_NORMAL);
	sp_r = add(v, "r", -25, GL_TT_NORMAL);
	sp_l = add(v, "l", -26, GL_TT_NORMAL);
	sp_d = add(v, "d", -27, GL_TT_NORMAL);
	/* the merges in score order: ll, llo, _h, _he, _hello, or, _w, _wor, _worl, _world */
	sp_ll = add(v, "ll", -1, GL_TT_NORMAL);
	add(v, "llo", -2, GL_TT_NORMAL);
	add(v, SP "h", -3, GL_TT_NORMAL);
	add(v, SP "he", -4, GL_TT_NORMAL);
	sp_hello = add(v, SP "hello", -5, GL_TT_NORMAL);
	add(v, "or", -6, GL_TT_NORMAL);
	add(v, SP "w", -7, GL_TT_NORMAL);
	add(v, SP "wor", -8, GL_TT_NORMAL);
	add(v, SP "worl", -9, GL_TT_NORMAL);
	sp_world = add(v, SP "world", -10, GL_TT_NORMAL);
	/* never output: merged first (before _w), then split into w and o again */
	sp_wo = add(v, "wo", -0.5f, GL_TT_UNUSED);
}

static void spm_ids(gl_gguf_writer_t *w)
{
	CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)sp_bos) == 0);
	CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)sp_eos) == 0);
	CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)sp_unk) == 0);
}

static void spm_merges(const gl_tok_t *t)
{
	int32_t ids[64];
	int n = enc(t, "hello", ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_hello}, 1));
	/* "wo" (unused, the best score) is merged before "_w" can be, then split again */
	n = enc(t, "hello world", ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_hello, sp_space, sp_w, sp_o, sp_r, sp_l, sp_d}, 7));
	/* equal scores: the leftmost pair first */
	n = enc(t, "lll", ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_space, sp_ll, sp_l}, 3));
	/* leading spaces: the prefix space and the text's own */
	n = enc(t, " hello", ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_space, sp_hello}, 2));
	/* characters without a token: their bytes (x = 0x78, e-acute = c3 a9, \n) */
	n = enc(t, "x\xc3\xa9\n", ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_space, 3 + 0x78, 3 + 0xc3, 3 + 0xa9, 3 + 0x0a}, 5));
	CHECK(enc(t, "", ids, 64) == 0);
	/* BOS first when asked; the count alone when MAX is short */
	n = gl_tok_encode(t, "hello world", 11, 1, 0, ids, 2);
	CHECK(n == 8 && ids[0] == sp_bos && ids[1] == sp_hello);
	CHECK(gl_tok_encode(t, "hello", 5, 1, 0, NULL, 0) == 2);
	errno = 0;
	CHECK(gl_tok_encode(t, "hello", 5, 0, 0, NULL, 3) == -1 && errno == EINVAL);
}

static void spm_special(const gl_tok_t *t)
{
	int32_t ids[64];
	/* whole, and a prefix space after each (as llama.cpp does) */
	const char *s = "<|x|>hello<|im_end|>";
	int n = gl_tok_encode(t, s, strlen(s), 0, 1, ids, 64);
	CHECK(same(ids, n, (int32_t[]){sp_user, sp_hello, sp_ctl}, 3));
	/* not asked for: the text's bytes */
	n = gl_tok_encode(t, s, strlen(s), 0, 0, ids, 64);
	CHECK(n > 3 && ids[0] == sp_space && ids[1] == 3 + '<');
	for (int i = 0; i < n; i++)
		CHECK(ids[i] != sp_user && ids[i] != sp_ctl);
	/* a special text inside words; the longest match */
	s = "he<|x|><|x|";
	n = gl_tok_encode(t, s, strlen(s), 0, 1, ids, 64);
	CHECK(n == 7 && ids[0] == gl_tok_find(t, SP "he") && ids[1] == sp_user &&
	      ids[2] == sp_space);
}

static void spm_pieces(const gl_tok_t *t)
{
	char buf[32];
	CHECK(gl_tok_piece(t, sp_hello, 0, buf, sizeof(buf)) == 6 && memcmp(buf, " hello", 6) == 0);
	CHECK(gl_tok_piece(t, sp_hello, 1, buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK(gl_tok_piece(t, 3 + 0xc3, 0, buf, sizeof(buf)) == 1 && buf[0] == '\xc3');
	CHECK(gl_tok_piece(t, sp_bos, 0, buf, sizeof(buf)) == 0);
	CHECK(gl_tok_piece(t, sp_user, 0, buf, sizeof(buf)) == 5 && memcmp(buf, "<|x|>", 5) == 0);
	/* too small: the length it needs, the start written */
	memset(buf, 0, sizeof(buf));
	CHECK(gl_tok_piece(t, sp_world, 0, buf, 3) == 6 && memcmp(buf, " wo", 3) == 0 && !buf[3]);
	errno = 0;
	CHECK(gl_tok_piece(t, gl_tok_vocab(t), 0, buf, sizeof(buf)) == -1 && errno == EINVAL);
	CHECK(gl_tok_piece(t, -1, 0, buf, sizeof(buf)) == -1);
	size_t len;
	char *d = gl_tok_decode(t, (int32_t[]){sp_bos, sp_hello, sp_world, sp_eos}, 4, &len);
	CHECK(d && len == 11 && strcmp(d, "hello world") == 0);
	free(d);
	d = gl_tok_decode(t, NULL, 0, &len);
	CHECK(d && len == 0 && d[0] == '\0');
	free(d);
	CHECK(gl_tok_decode(t, (int32_t[]){99999}, 1, &len) == NULL && errno == EINVAL);
}

static void spm(void)
{
	gp_error_t err = {{0}};
	spm_build(&spm_voc);
	gl_tok_t *t = load(&spm_voc, "llama", NULL, spm_ids, &err);
	if (!t)
		fprintf(stderr, "%s\n", err.text);
	CHECK(t);
	CHECK(gl_tok_vocab(t) == spm_voc.n);
	CHECK(gl_tok_bos(t) == sp_bos && gl_tok_eos(t) == sp_eos && gl_tok_add_bos(t) == 1);
	CHECK(gl_tok_is_eog(t, sp_eos) && gl_tok_is_eog(t, sp_ctl) && !gl_tok_is_eog(t, sp_bos));
	CHECK(gl_tok_find(t, SP "hello") == sp_hello && gl_tok_find(t, "nope") == -1);
	CHECK(gl_tok_find(t, "wo") == sp_wo);
	spm_merges(t);
	spm_special(t);
	spm_pieces(t);
	random_roundtrips(t, "helowrd x");
	gl_tok_destroy(&t);
	CHECK(t == NULL);
	gl_tok_destroy(&t);
}

static void spm_no_prefix(gl_gguf_writer_t *w)
{
	spm_ids(w);
	CHECK(gl_gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", 0) == 0);
	CHECK(gl_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", 0) == 0);
}

static void spm_without_prefix(void)
{
	gp_error_t err = {{0}};
	gl_tok_t *t = load(&spm_voc, "llama", NULL, spm_no_prefix, &err);
	CHECK(t);
	CHECK(gl_tok_add_bos(t) == 0);
	int32_t ids[16];
	int n = enc(t, " hello", ids, 16);
	CHECK(same(ids, n, (int32_t[]){sp_hello}, 1));
	char buf[16];
	CHECK(gl_tok_piece(t, sp_hello, 1, buf, sizeof(buf)) == 6); /* the space stays */
	random_roundtrips(t, "helowrd x");
	gl_tok_destroy(&t);
}

/* ---- byte-level BPE ---- */

static voc_t bpe_voc;
static int bp_hello, bp_gworld, bp_eot, bp_imstart, bp_a, bp_aa, bp_aaaa;

/* GPT-2's printable code point of byte B, as UTF-8 */
static void mapped(int b, char *s)
{
	int n = 0;
	for (int i = 0; i < b; i++)
		n += !((i >= 0x21 && i <= 0x7e) || (i >= 0xa1 && i <= 0xac) || i >= 0xae);
	int cp = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae ? b : 0x100 + n;
	if (cp < 0x80) {
		s[0] = (char)cp, s[1] = 0;
	} else {
		s[0] = (char)(0xc0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3f)), s[2] = 0;
	}
}

static void bpe_build(voc_t *v)
{
	for (int b = 0; b < 256; b++) {
		char s[4];
		mapped(b, s);
		add(v, s, 0, GL_TT_NORMAL);
	}
	static const char *const merges[] = {
	    "h e",   "l l",	     "he ll", "hell o",		"\xc4\xa0 w",
	    "o r",   "\xc4\xa0w or", "l d",   "\xc4\xa0wor ld", "a a",
	    "aa aa", "1 2",	     "12 3"};
	static const char *const results[] = {
	    "he", "ll",	  "hell", "hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "ld", "\xc4\xa0world",
	    "aa", "aaaa", "12",	  "123"};
	for (int i = 0; i < 13; i++) {
		int id = add(v, results[i], 0, GL_TT_NORMAL);
		v->merges[v->nmerges++] = merges[i];
		if (i == 3)
			bp_hello = id;
		if (i == 8)
			bp_gworld = id;
		if (i == 9)
			bp_aa = id;
		if (i == 10)
			bp_aaaa = id;
	}
	bp_a = 'a';
	bp_eot = add(v, "<|endoftext|>", 0, GL_TT_CONTROL);
	bp_imstart = add(v, "<|im_start|>", 0, GL_TT_CONTROL);
}

static void bpe_ids(gl_gguf_writer_t *w)
{
	CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)bp_eot) == 0);
}

static void bpe_encode(const gl_tok_t *t)
{
	int32_t ids[64];
	int n = enc(t, "hello world", ids, 64);
	CHECK(same(ids, n, (int32_t[]){bp_hello, bp_gworld}, 2));
	/* rank order: "a a" left to right, then "aa aa" */
	n = enc(t, "aaaaa", ids, 64);
	CHECK(same(ids, n, (int32_t[]){bp_aaaa, bp_a}, 2));
	/* bytes stand for themselves when nothing merges */
	n = enc(t, "\xc3\xa9", ids, 64);
	CHECK(same(ids, n, (int32_t[]){0xc3, 0xa9}, 2));
	const char *s = "<|im_start|>hello<|endoftext|>";
	n = gl_tok_encode(t, s, strlen(s), 1, 1, ids, 64);
	CHECK(same(ids, n, (int32_t[]){bp_imstart, bp_hello, bp_eot}, 3));
	char buf[16];
	CHECK(gl_tok_piece(t, bp_gworld, 1, buf, sizeof(buf)) == 6 &&
	      memcmp(buf, " world", 6) == 0);
	CHECK(gl_tok_piece(t, '\n', 0, buf, sizeof(buf)) == 1 && buf[0] == '\n');
	CHECK(gl_tok_piece(t, bp_eot, 0, buf, sizeof(buf)) == 0);
	CHECK(gl_tok_is_eog(t, bp_eot) && !gl_tok_is_eog(t, bp_hello));
	CHECK(gl_tok_bos(t) == -1 && gl_tok_add_bos(t) == 0);
}

typedef struct {
	char words[32][32];
	int n;
} words_t;

static int collect(void *arg, const char *s, size_t len)
{
	words_t *w = arg;
	CHECK(w->n < 32 && len < 32);
	memcpy(w->words[w->n], s, len);
	w->words[w->n++][len] = '\0';
	return 0;
}

/* Split S by PRE and compare with the NULL-terminated EXPECT (Python's regex module's split
 * of llama.cpp's patterns, worked out once). */
static void split(int pre, const char *s, const char *const *expect)
{
	words_t w = {.n = 0};
	CHECK(gl_tok_pretokenize(pre, s, strlen(s), collect, &w) == 0);
	int i = 0;
	for (; expect[i]; i++) {
		if (i >= w.n || strcmp(w.words[i], expect[i]) != 0)
			fprintf(stderr, "split %d of '%s': got '%s', expected '%s'\n", i, s,
				i < w.n ? w.words[i] : "(none)", expect[i]);
		CHECK(i < w.n && strcmp(w.words[i], expect[i]) == 0);
	}
	CHECK(i == w.n);
}

static void pretokenizers(void)
{
	const char *s = "Hello, world! It's 12345 apples\n\n  ok  ";
	split(GL_PRE_LLAMA3, s,
	      (const char *[]){"Hello", ",", " world", "!", " It", "'s", " ", "123", "45",
			       " apples", "\n\n", " ", " ok", "  ", NULL});
	split(GL_PRE_QWEN2, s,
	      (const char *[]){"Hello", ",", " world", "!", " It", "'s", " ", "1", "2", "3", "4",
			       "5", " apples", "\n\n", " ", " ok", "  ", NULL});
	split(GL_PRE_GPT2, s,
	      (const char *[]){"Hello", ",", " world", "!", " It", "'s", " 12345", " apples",
			       "\n\n ", " ok", "  ", NULL});
	s = "I'LL don't\tx  \r\n y";
	split(GL_PRE_LLAMA3, s,
	      (const char *[]){"I", "'LL", " don", "'t", "\tx", "  \r\n", " y", NULL});
	split(GL_PRE_GPT2, s,
	      (const char *[]){"I", "'", "LL", " don", "'t", "\t", "x", "  \r\n", " y", NULL});
	s = "\xe2\x82\xac"
	    "100 \xc2\xbd ...\n\nfoo"; /* euro sign, one half */
	split(GL_PRE_LLAMA3, s,
	      (const char *[]){"\xe2\x82\xac", "100", " ", "\xc2\xbd", " ...\n\n", "foo", NULL});
	split(
	    GL_PRE_GPT2, s,
	    (const char *[]){"\xe2\x82\xac", "100", " \xc2\xbd", " ...", "\n", "\n", "foo", NULL});
	s = "\xc3\xa7\xc3\xa0 \xe6\x9d\xb1\xe4\xba\xac"
	    "2024\xe5\xb9\xb4 \xf0\x9f\x99\x82!!";
	split(GL_PRE_LLAMA3, s,
	      (const char *[]){"\xc3\xa7\xc3\xa0", " \xe6\x9d\xb1\xe4\xba\xac", "202", "4",
			       "\xe5\xb9\xb4", " \xf0\x9f\x99\x82!!", NULL});
	split(GL_PRE_GPT2, s,
	      (const char *[]){"\xc3\xa7\xc3\xa0", " \xe6\x9d\xb1\xe4\xba\xac", "2024",
			       "\xe5\xb9\xb4", " \xf0\x9f\x99\x82!!", NULL});
	split(GL_PRE_LLAMA3, "", (const char *[]){NULL});
}

static void bpe(void)
{
	gp_error_t err = {{0}};
	bpe_build(&bpe_voc);
	static const char *const pres[] = {"llama-bpe", "qwen2", "default"};
	for (int i = 0; i < 3; i++) {
		gl_tok_t *t = load(&bpe_voc, "gpt2", pres[i], bpe_ids, &err);
		if (!t)
			fprintf(stderr, "%s\n", err.text);
		CHECK(t);
		bpe_encode(t);
		random_roundtrips(t, "helowrd a1");
		int32_t ids[8];
		/* qwen2: one digit a pre-token, no "12" merge across them */
		int n = enc(t, "123", ids, 8);
		CHECK(n == (i == 1 ? 3 : 1));
		gl_tok_destroy(&t);
	}
}

/* ---- refused metadata ---- */

static void bos_past_end(gl_gguf_writer_t *w)
{
	CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 100000) == 0);
}

static void refused(void)
{
	gp_error_t err = {{0}};
	errno = 0;
	CHECK(load(&spm_voc, "bert", NULL, NULL, &err) == NULL && errno == ENOTSUP);
	CHECK(strstr(err.text, "bert"));
	CHECK(load(&spm_voc, "llama", NULL, bos_past_end, &err) == NULL && errno == EINVAL);
	CHECK(strstr(err.text, "bos_token_id"));
	CHECK(load(&bpe_voc, "gpt2", "nonesuch", NULL, &err) == NULL && errno == ENOTSUP);
	/* a byte-level vocabulary without every byte's token */
	voc_t v = {.n = 0};
	add(&v, "a", 0, GL_TT_NORMAL);
	v.merges[v.nmerges++] = "a a";
	CHECK(load(&v, "gpt2", NULL, NULL, &err) == NULL && errno == EINVAL);
	/* gpt2 without merges */
	voc_t nomerge = bpe_voc;
	nomerge.nmerges = 0;
	CHECK(load(&nomerge, "gpt2", NULL, NULL, &err) == NULL && errno == EINVAL);
	CHECK(strstr(err.text, "merges"));
	/* scores of another length */
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	char path[128];
	snprintf(path, sizeof(path), "%s/short.gguf", tmpdir);
	CHECK(gl_gguf_set_str(w, "tokenizer.ggml.model", "llama") == 0);
	CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *[]){"a", "b"}, 2) == 0);
	CHECK(gl_gguf_set_arr_f32(w, "tokenizer.ggml.scores", (float[]){0}, 1) == 0);
	CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
	gl_gguf_t *g = gl_gguf_open(path, &err);
	CHECK(g);
	CHECK(gl_tok_from_gguf(g, &err) == NULL && errno == EINVAL);
	CHECK(strstr(err.text, "scores"));
	gl_gguf_close(&g);
	unlink(path);
	CHECK(gl_tok_from_gguf(NULL, &err) == NULL && errno == EINVAL);
	voc_free(&v);
}

/* ---- 100 kB in bounded time ---- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void long_text(void)
{
	gp_error_t err = {{0}};
	size_t len = 100000;
	char *s = malloc(len);
	int32_t *ids = malloc((len + 2) * sizeof(*ids));
	CHECK(s && ids);
	gl_tok_t *sp = load(&spm_voc, "llama", NULL, spm_ids, &err);
	gl_tok_t *bp = load(&bpe_voc, "gpt2", "llama-bpe", bpe_ids, &err);
	CHECK(sp && bp);
	/* one word of 100000 letters: every merge of a quadratic rescan would read it all */
	memset(s, 'a', len);
	double t0 = now();
	int n = gl_tok_encode(bp, s, len, 0, 0, ids, (int)len + 2);
	CHECK(n == (int)len / 4);
	for (int i = 0; i < n; i++)
		CHECK(ids[i] == bp_aaaa);
	memset(s, 'l', len);
	n = gl_tok_encode(sp, s, len, 0, 0, ids, (int)len + 2);
	CHECK(n == (int)len / 2 + 1 && ids[0] == sp_space && ids[1] == sp_ll);
	for (size_t i = 0; i + 12 <= len; i += 12)
		memcpy(s + i, "hello world ", 12);
	n = gl_tok_encode(sp, s, len, 0, 0, ids, (int)len + 2);
	CHECK(n > (int)len / 12);
	n = gl_tok_encode(bp, s, len, 0, 0, ids, (int)len + 2);
	CHECK(n > (int)len / 12);
	double dt = now() - t0;
	fprintf(stderr, "test_tokenizer: 4 x 100 kB encoded in %.3f s\n", dt);
	CHECK(dt < 10.0); /* a quadratic encoder takes minutes; this machine is shared */
	gl_tok_destroy(&sp);
	gl_tok_destroy(&bp);
	free(s);
	free(ids);
}

int main(void)
{
	CHECK(mkdtemp(tmpdir));
	spm();
	spm_without_prefix();
	pretokenizers();
	bpe();
	refused();
	long_text();
	voc_free(&spm_voc);
	voc_free(&bpe_voc);
	rmdir(tmpdir);
	printf("test_tokenizer: ok\n");
	return 0;
}
