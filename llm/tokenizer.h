/* tokenizer.h - a language model's tokenizer, read from its GGUF file's metadata:
 *   tokenizer.ggml.model "llama": SentencePiece-style (tokens with scores; the best-scoring
 *     merges first; U+2581 for a space; a space put before the text unless
 *     tokenizer.ggml.add_space_prefix is false; bytes without a token as <0xNN>)
 *   tokenizer.ggml.model "gpt2": byte-level BPE (tokenizer.ggml.merges in rank order; bytes
 *     mapped to printable code points as GPT-2 does; the pre-tokenizer's split of words,
 *     numbers, punctuation and spaces: llama3's and qwen2's patterns, by tokenizer.ggml.pre)
 * Special tokens (control and user-defined: tokenizer.ggml.token_type 3 and 4) are matched whole
 * in the text when the caller asks (a chat template's <|im_start|>), never produced from
 * ordinary text otherwise. */
#ifndef GL_TOKENIZER_H
#define GL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "llm/gguf.h"

typedef struct gl_tok gl_tok_t;

/* NULL with errno (EINVAL: missing or inconsistent metadata, ENOTSUP: another model) and ERR. */
gl_tok_t *gl_tok_from_gguf(const gl_gguf_t *g, gp_error_t *err);
void gl_tok_destroy(gl_tok_t **t);

int gl_tok_vocab(const gl_tok_t *t);
int32_t gl_tok_bos(const gl_tok_t *t); /* -1 if none */
int32_t gl_tok_eos(const gl_tok_t *t);
/* Whether BOS is put first by default (tokenizer.ggml.add_bos_token; SentencePiece: yes). */
int gl_tok_add_bos(const gl_tok_t *t);
/* 1 if ID ends a generation: eos, eot, <|im_end|>, <|eot_id|>, <|end_of_text|>. */
int gl_tok_is_eog(const gl_tok_t *t, int32_t id);
/* The id of the token whose text is exactly PIECE, or -1. */
int32_t gl_tok_find(const gl_tok_t *t, const char *piece);

/* Encode LEN bytes of TEXT (UTF-8; invalid bytes become byte tokens) into at most MAX ids:
 * BOS first if ADD_BOS, special tokens matched whole if PARSE_SPECIAL. Returns the number of
 * ids the text needs (more than MAX: only MAX were written; call again with more room), or
 * -1 with errno. */
int gl_tok_encode(const gl_tok_t *t, const char *text, size_t len, int add_bos, int parse_special,
		  int32_t *ids, int max);
/* The bytes token ID stands for in generated text (a space for U+2581, the byte of <0xNN>, the
 * bytes of a byte-level BPE piece; control tokens: nothing). FIRST: the first token of a
 * SentencePiece text, which drops the prefix space. Returns the length (more than CAP: only CAP
 * written), -1 (EINVAL) for an id out of range. A piece may end inside a UTF-8 character:
 * callers that emit text join pieces first (gl_tok_decode). */
int gl_tok_piece(const gl_tok_t *t, int32_t id, int first, char *buf, size_t cap);
/* The text of N ids, into a malloc'd NUL-terminated string (*LEN its length). */
char *gl_tok_decode(const gl_tok_t *t, const int32_t *ids, int n, size_t *len);

#endif
