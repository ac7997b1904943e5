/* api.h - OpenAI's API as gllm speaks it: a request's JSON (POST /v1/completions,
 * /v1/chat/completions) checked and turned into what the engine takes, and the answers' JSON
 * (whole, or the chunks of a stream), and OpenAI's error shape
 * {"error": {"message", "type", "param", "code"}}. No sockets and no engine here: the server
 * (server.c) moves the bytes, the tests and the fuzzer call these directly.
 *
 * Bounds: the body's size is the HTTP server's (1 MiB); here the JSON's nesting depth, the
 * messages, the stop strings and each string's length are bounded before the JSON is read
 * further. Unknown fields are ignored, as OpenAI's clients send many; a field whose meaning
 * gllm cannot honour (n > 1, logprobs, echo, tools, penalties) is refused with a 400 rather
 * than answered differently. */
#ifndef GLLM_API_H
#define GLLM_API_H

#include <stddef.h>
#include <stdint.h>

#include "llm/chat.h"
#include "llm/engine.h"
#include "llm/sample.h"

#define GLA_MAX_DEPTH	 16
#define GLA_MAX_MESSAGES 256
#define GLA_MAX_STOPS	 4
#define GLA_MAX_STOP_LEN 256

typedef enum { GLA_COMPLETION = 0, GLA_CHAT = 1 } gla_kind_t;

typedef struct {
	gla_kind_t kind;
	char *prompt;	/* completion: the text */
	gl_msg_t *msgs; /* chat: role and content (both malloc'd) */
	int nmsgs;
	int max_tokens; /* 0: up to the context */
	gl_sample_params_t sp;
	int seeded; /* a seed was given (else the server picks one) */
	char *stop[GLA_MAX_STOPS];
	int nstop;
	int stream, include_usage;
} gla_req_t;

/* Why a request is refused: the HTTP status and OpenAI's error fields. */
typedef struct {
	int status;
	char message[256];
	const char *type;  /* "invalid_request_error", ... */
	const char *param; /* the offending field, or NULL */
	const char *code;  /* NULL, "invalid_api_key", ... */
} gla_err_t;

/* Parse LEN bytes of BODY as a request of KIND; MAX_TOKENS_CAP bounds max_tokens (the
 * context). 0, or -1 with E filled (400). */
int gla_parse(const char *body, size_t len, gla_kind_t kind, int max_tokens_cap, gla_req_t *r,
	      gla_err_t *e);
void gla_req_free(gla_req_t *r);
/* Fill E; returns -1. */
int gla_fail(gla_err_t *e, int status, const char *type, const char *param, const char *code,
	     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---- answers (malloc'd NUL-terminated JSON, NULL if out of memory) ---- */
char *gla_error_json(const gla_err_t *e);
char *gla_models_json(const char *model, long created);

typedef struct {
	gla_kind_t kind;
	const char *id; /* "cmpl-..." / "chatcmpl-..." */
	const char *model;
	long created;
} gla_answer_t;

/* A whole answer: TEXT (LEN bytes), why it finished ("stop", "length") and the usage. */
char *gla_answer_json(const gla_answer_t *a, const char *text, size_t len, const char *finish,
		      const gl_usage_t *u);
/* A stream's chunk: ROLE first (chat: {"role": "assistant"}), then TEXT pieces, then FINISH
 * (a chunk with an empty delta and the reason). A chunk with usage has no choices. */
typedef enum { GLA_CHUNK_ROLE, GLA_CHUNK_TEXT, GLA_CHUNK_FINISH, GLA_CHUNK_USAGE } gla_chunk_t;
char *gla_chunk_json(const gla_answer_t *a, gla_chunk_t what, const char *text, size_t len,
		     const char *finish, const gl_usage_t *u);

#endif
