/* fuzz_tokenizer: the tokenizer (llm/tokenizer.c) and the chat templates (llm/chat.c) on any
 * bytes. The first byte picks what the rest is:
 *   0  a text for a small SentencePiece-style vocabulary (byte 1: add BOS, match specials)
 *   1  a text for a small byte-level BPE (byte 1: those flags and the pre-tokenizer)
 *   2  a conversation: byte 1 the template, byte 2 the assistant's header, then messages cut at
 *      NUL bytes, each message's first byte its role (one of them unknown)
 *   3  a GGUF file whose tokenizer metadata is read (the model owner's bytes), then used
 * Properties: the count of ids is the same with any room, a short buffer holds their start,
 * every id is in the vocabulary and has a piece, and without special tokens the ids decode to
 * the text itself (a text with U+2581 in it excepted for SentencePiece, which reads it as a
 * space); a conversation renders or is refused with EINVAL and a message, and ChatML's prompt
 * holds every content. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "llm/chat.h"
#include "llm/gguf.h"
#include "llm/tokenizer.h"
#include "tests/fuzz/fuzz.h"

#define SP "\xe2\x96\x81"

static gl_tok_t *spm_tok, *bpe_tok[3];

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

static gl_tok_t *load(gl_gguf_writer_t *w)
{
	gp_error_t err = {{0}};
	char path[] = "/tmp/fuzz_tokenizer.XXXXXX";
	int fd = mkstemp(path);
	FUZZ_CHECK(fd >= 0);
	close(fd);
	FUZZ_CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
	gl_gguf_t *g = gl_gguf_open(path, &err);
	FUZZ_CHECK(g);
	gl_tok_t *t = gl_tok_from_gguf(g, &err);
	if (!t)
		fprintf(stderr, "fuzz_tokenizer: %s\n", err.text);
	FUZZ_CHECK(t);
	gl_gguf_close(&g);
	unlink(path);
	return t;
}

static void set_vocab(gl_gguf_writer_t *w, char **tok, int32_t *type, float *score, int n)
{
	FUZZ_CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok,
				       (uint64_t)n) == 0);
	FUZZ_CHECK(gl_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", type, (uint64_t)n) == 0);
	FUZZ_CHECK(gl_gguf_set_arr_f32(w, "tokenizer.ggml.scores", score, (uint64_t)n) == 0);
}

static const char *const pieces[] = {"th",     "he",   "in",  "er", "an",  "the", SP "t", SP "th",
				     SP "the", SP "a", SP SP, "12", "123", "ing", SP "in"};
#define NPIECES (int)(sizeof(pieces) / sizeof(pieces[0]))

static void build_spm(void)
{
	static char *tok[400];
	static int32_t type[400];
	static float score[400];
	int n = 0;
	static const char *const heads[] = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|u|>"};
	static const int32_t htypes[] = {2, 3, 3, 3, 4};
	for (int i = 0; i < 5; i++, n++)
		tok[n] = strdup(heads[i]), type[n] = htypes[i];
	for (int b = 0; b < 256; b++, n++) {
		tok[n] = malloc(8);
		snprintf(tok[n], 8, "<0x%02X>", b);
		type[n] = 6;
	}
	for (int c = ' ' + 1; c < 127; c++, n++) {
		tok[n] = calloc(1, 2);
		tok[n][0] = (char)c;
		type[n] = 1, score[n] = -100 - c;
	}
	tok[n] = strdup(SP), type[n] = 1, score[n++] = -50;
	for (int i = 0; i < NPIECES; i++, n++)
		tok[n] = strdup(pieces[i]), type[n] = i == 4 ? 5 : 1, score[n] = -(float)(i % 7);
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	FUZZ_CHECK(gl_gguf_set_str(w, "tokenizer.ggml.model", "llama") == 0);
	set_vocab(w, tok, type, score, n);
	FUZZ_CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 1) == 0);
	FUZZ_CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2) == 0);
	spm_tok = load(w);
	for (int i = 0; i < n; i++)
		free(tok[i]);
}

static void build_bpe(void)
{
	static const char *const merges[] = {
	    "t h", "th e", "\xc4\xa0 t",	"\xc4\xa0t he",	     "h e", "i n", "e r",
	    "1 2", "12 3", "\xc4\xa0 \xc4\xa0", "\xc4\x8a \xc4\x8a", "in g"};
	static const char *const results[] = {
	    "th", "the", "\xc4\xa0t",	     "\xc4\xa0the",	 "he", "in", "er",
	    "12", "123", "\xc4\xa0\xc4\xa0", "\xc4\x8a\xc4\x8a", "ing"};
	static char *tok[300];
	static int32_t type[300];
	static float score[300];
	int n = 0;
	for (int b = 0; b < 256; b++, n++) {
		tok[n] = calloc(1, 4);
		mapped(b, tok[n]);
		type[n] = 1;
	}
	for (int i = 0; i < 12; i++, n++)
		tok[n] = strdup(results[i]), type[n] = 1;
	tok[n] = strdup("<|im_start|>"), type[n++] = 3;
	tok[n] = strdup("<|im_end|>"), type[n++] = 3;
	static const char *const pres[] = {"llama-bpe", "qwen2", "default"};
	for (int p = 0; p < 3; p++) {
		gl_gguf_writer_t *w = gl_gguf_writer_create();
		FUZZ_CHECK(gl_gguf_set_str(w, "tokenizer.ggml.model", "gpt2") == 0);
		FUZZ_CHECK(gl_gguf_set_str(w, "tokenizer.ggml.pre", pres[p]) == 0);
		set_vocab(w, tok, type, score, n);
		FUZZ_CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, 12) == 0);
		FUZZ_CHECK(gl_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)n - 2) == 0);
		bpe_tok[p] = load(w);
	}
	for (int i = 0; i < n; i++)
		free(tok[i]);
}

static void encode(const gl_tok_t *t, const uint8_t *s, size_t len, int bos, int special, int spm)
{
	int n = gl_tok_encode(t, (const char *)s, len, bos, special, NULL, 0);
	FUZZ_CHECK(n >= 0 && (size_t)n <= 3 * len + 1);
	int32_t *ids = malloc(((size_t)n + 1) * sizeof(*ids));
	FUZZ_CHECK(ids);
	FUZZ_CHECK(gl_tok_encode(t, (const char *)s, len, bos, special, ids, n) == n);
	int32_t half[8];
	int k = n / 2 < 8 ? n / 2 : 8;
	FUZZ_CHECK(gl_tok_encode(t, (const char *)s, len, bos, special, half, k) == n);
	FUZZ_CHECK(memcmp(half, ids, (size_t)k * sizeof(*ids)) == 0);
	char piece[4];
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(ids[i] >= 0 && ids[i] < gl_tok_vocab(t));
		FUZZ_CHECK(gl_tok_piece(t, ids[i], i == 0, piece, sizeof(piece)) >= 0);
	}
	size_t dlen;
	char *d = gl_tok_decode(t, ids, n, &dlen);
	FUZZ_CHECK(d && strlen(d) <= dlen);
	if (!special && !(spm && memmem(s, len, SP, 3)))
		FUZZ_CHECK(dlen == len && memcmp(d, s, len) == 0);
	free(d);
	free(ids);
}

static void chat(const uint8_t *data, size_t size)
{
	if (size < 2)
		return;
	static const char *const roles[] = {"system", "user", "assistant", "tool"};
	gl_chat_t c = (gl_chat_t)(data[0] % 4);
	int add = data[1] & 1, n;
	char **parts = fuzz_split(data + 2, size - 2, '\0', NULL, &n);
	gl_msg_t *m = calloc((size_t)n + 1, sizeof(*m));
	FUZZ_CHECK(m);
	for (int i = 0; i < n; i++) {
		m[i].role = roles[(unsigned char)parts[i][0] % 4];
		m[i].content = parts[i][0] ? parts[i] + 1 : parts[i];
	}
	gp_error_t err = {{0}};
	char *s = gl_chat_render(c, m, n, add, data[1] & 2 ? "<s>" : NULL, &err);
	if (!s) {
		FUZZ_CHECK(errno == EINVAL && err.text[0]);
	} else if (c == GL_CHAT_CHATML) {
		for (int i = 0; i < n; i++)
			FUZZ_CHECK(strstr(s, m[i].content) != NULL);
	}
	free(s);
	free(m);
	fuzz_strv_free(parts, n);
}

static void from_gguf(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	gl_gguf_t *g = gl_gguf_open_mem(data, size, &err);
	if (!g)
		return;
	gl_tok_t *t = gl_tok_from_gguf(g, &err);
	gl_gguf_close(&g); /* the tokenizer holds copies */
	if (!t) {
		FUZZ_CHECK(
		    (errno == EINVAL || errno == ENOTSUP || errno == EFBIG || errno == ENOMEM) &&
		    err.text[0]);
		return;
	}
	static const char text[] = " Hello, world! 123  \xe6\x9d\xb1\n<|im_start|>x\xff";
	encode(t, (const uint8_t *)text, sizeof(text) - 1, 1, 1, 1);
	gl_tok_destroy(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!spm_tok) {
		build_spm();
		build_bpe();
	}
	if (size < 2)
		return 0;
	int flags = data[1];
	switch (data[0] % 4) {
	case 0:
		encode(spm_tok, data + 2, size - 2, flags & 1, flags & 2, 1);
		break;
	case 1:
		encode(bpe_tok[(flags >> 2) % 3], data + 2, size - 2, flags & 1, flags & 2, 0);
		break;
	case 2:
		chat(data + 1, size - 1);
		break;
	default:
		from_gguf(data + 1, size - 1);
		break;
	}
	return 0;
}
