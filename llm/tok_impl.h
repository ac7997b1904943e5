/* tok_impl.h - the tokenizer's own header (not public): the vocabulary that tokenizer.c reads
 * from the GGUF metadata, shared with the two encoders, tok_spm.c (SentencePiece-style) and
 * tok_bpe.c (byte-level BPE with its pre-tokenizer), and the merge queue both use. */
#ifndef GL_TOK_IMPL_H
#define GL_TOK_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "llm/tokenizer.h"

/* tokenizer.ggml.token_type (llama.cpp's numbering; 0: not given, read as normal) */
enum {
	GL_TT_UNDEFINED = 0,
	GL_TT_NORMAL = 1,
	GL_TT_UNKNOWN = 2,
	GL_TT_CONTROL = 3,
	GL_TT_USER = 4,
	GL_TT_UNUSED = 5,
	GL_TT_BYTE = 6,
};

enum { GL_TOK_SPM, GL_TOK_BPE };
/* the byte-level BPE's pre-tokenizers (tokenizer.ggml.pre) */
enum { GL_PRE_GPT2, GL_PRE_LLAMA3, GL_PRE_QWEN2 };

typedef struct {
	uint32_t off; /* into the arena */
	uint32_t len;
	float score;
	uint8_t type;
} gl_tokdef_t;

typedef struct {
	uint64_t key; /* left id << 32 | right id; 0 with rank -1: an empty slot */
	int32_t rank;
	int32_t result;
} gl_merge_t;

#define GL_TOK_MAX_EOG 8

struct gl_tok {
	int kind, pre;
	int n;
	gl_tokdef_t *tok;
	char *arena;
	uint32_t *slots; /* text -> id + 1 (0: empty), open addressing */
	size_t nslots;
	int32_t bos, eos, unk;
	int add_bos, add_space_prefix, ignore_merges;
	int32_t eog[GL_TOK_MAX_EOG];
	int neog;
	int32_t *special; /* control and user-defined ids, by first byte then longest first */
	uint32_t special_at[257];
	int32_t byte_id[256]; /* SPM: <0xNN>; BPE: the token of the byte's mapped character */
	gl_merge_t *merges;   /* BPE: open addressing on the pair */
	size_t nmerges_slots;
	int16_t byte_of_cp[0x144]; /* BPE: GPT-2's printable code point -> the byte, or -1 */
};

/* ids written up to MAX, all counted */
typedef struct {
	int32_t *ids;
	int max;
	size_t n;
} gl_tokout_t;

static inline void gl_tok_emit(gl_tokout_t *o, int32_t id)
{
	if (o->n < (size_t)o->max)
		o->ids[o->n] = id;
	o->n++;
}

static inline const char *gl_tok_text(const gl_tok_t *t, int32_t id)
{
	return t->arena + t->tok[id].off;
}

/* ---- tok_base.c ---- */
/* Token id's text into the hash index (a later duplicate text takes the slot). */
void gl_tok_index(gl_tok_t *t, int32_t id);
/* The id of the token with these bytes, or -1. */
int32_t gl_tok_lookup(const gl_tok_t *t, const char *s, size_t len);

/* A merge queue: a binary heap, the highest priority first, then the leftmost. */
typedef struct {
	double pri;
	int32_t left, right;
	int32_t a, b; /* what the encoder checks is still there when it pops the entry */
} gl_tokpair_t;

typedef struct {
	gl_tokpair_t *v;
	size_t n, cap;
} gl_tokheap_t;

int gl_tokheap_push(gl_tokheap_t *h, gl_tokpair_t p);
int gl_tokheap_pop(gl_tokheap_t *h, gl_tokpair_t *p);

/* Length of the valid UTF-8 character at S (N bytes left), 1 for an invalid byte; *CP its code
 * point, or -1 for an invalid byte. */
size_t gl_utf8_next(const unsigned char *s, size_t n, int32_t *cp);

/* The encoders of one fragment of ordinary text (no special tokens in it). PREFIX: put a space
 * first (SentencePiece, add_space_prefix). 0, or -1 with errno (ENOMEM). */
int gl_tok_spm_encode(const gl_tok_t *t, const char *s, size_t len, int prefix, gl_tokout_t *o);
int gl_tok_bpe_encode(const gl_tok_t *t, const char *s, size_t len, gl_tokout_t *o);
/* BPE loading: GPT-2's byte map and the merges (tokenizer.ggml.merges). */
int gl_tok_bpe_load(gl_tok_t *t, const gl_gguf_t *g, gp_error_t *err);
/* The pre-tokenizer alone: calls WORD for each piece of S. For the tests. */
typedef int (*gl_tok_word_f)(void *arg, const char *s, size_t len);
int gl_tok_pretokenize(int pre, const char *s, size_t len, gl_tok_word_f word, void *arg);

#endif
