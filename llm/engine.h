/* engine.h - generation for many requests at once: continuous batching (a new request's prompt
 * joins the running ones' decode steps as soon as there is room in the batch and the KV cache;
 * long prompts in chunks), sampling, stop strings, token limits, and text handed out as it is
 * produced (whole UTF-8 characters only, a possible stop string held back until it is decided).
 *
 * The engine decides; an executor runs its batches: on one rank with every layer
 * (gl_exec_local), or through a pipeline of ranks each holding a range of layers (gllm/), which
 * holds several batches in flight so that every stage works at once. The engine is
 * single-threaded: every call and every callback happens in the thread that calls
 * gl_engine_run. */
#ifndef GL_ENGINE_H
#define GL_ENGINE_H

#include <stdint.h>

#include "common/error.h"
#include "llm/forward.h"
#include "llm/sample.h"
#include "llm/tokenizer.h"

/* ---- executors ---- */
typedef struct {
	/* Start batch BT (copied); the executor reserves its KV space on every rank. 0, or -1
	 * with errno (ENOSPC: no KV space on some rank; nothing started). */
	int (*submit)(void *ctx, uint64_t id, const gl_batch_t *bt, gp_error_t *err);
	/* Wait up to TIMEOUT_MS (-1: no limit) for a batch to finish: 1 with *ID and LOGITS (its
	 * nseq x n_vocab) filled, 0 on timeout, -1 on a failure that lost every batch in flight
	 * (a rank gone: errno EPIPE/ETIMEDOUT). */
	int (*wait)(void *ctx, uint64_t *id, float *logits, int timeout_ms, gp_error_t *err);
	/* SEQ has ended: its KV space is given back on every rank. */
	void (*release)(void *ctx, int seq);
	/* Batches it can hold in flight (1 on one rank; a pipeline: its ranks). */
	int (*depth)(void *ctx);
	/* Tokens of KV space free for new work on the rank that has least. */
	int (*free_tokens)(void *ctx);
} gl_exec_ops_t;

/* The executor of one rank holding every layer, the embedding and the head. */
typedef struct gl_exec_local gl_exec_local_t;
gl_exec_local_t *gl_exec_local_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w,
				      gl_kv_t *kv, int max_tokens, gp_error_t *err);
void gl_exec_local_destroy(gl_exec_local_t **x);
extern const gl_exec_ops_t gl_exec_local_ops;

/* ---- the engine ---- */
typedef enum {
	GL_FINISH_STOP = 0,	 /* an end-of-generation token or a stop string */
	GL_FINISH_LENGTH = 1,	 /* max_tokens, or the context is full */
	GL_FINISH_CANCELLED = 2, /* gl_engine_cancel */
	GL_FINISH_ERROR = 3,	 /* the executor failed: the text so far is not an answer */
} gl_finish_t;

const char *gl_finish_name(gl_finish_t f); /* "stop", "length", "cancelled", "error" */

typedef struct {
	int prompt_tokens, completion_tokens;
	double queue_ms, first_token_ms, total_ms;
} gl_usage_t;

typedef struct {
	const int32_t *prompt; /* copied */
	int nprompt;
	int max_tokens; /* 0: up to the context */
	gl_sample_params_t sp;
	const char *const *stop; /* stop strings (copied), not part of the answer */
	int nstop;
	int ignore_eos; /* benchmarks: go on past end-of-generation tokens */
	/* TEXT is whole UTF-8 characters; called zero or more times, then on_done once. */
	void (*on_text)(void *arg, const char *text, size_t len, int ntokens);
	void (*on_done)(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error);
	void *arg;
} gl_request_t;

typedef struct {
	int max_seqs;	      /* requests generating at once (<= GL_MAX_BATCH_SEQS) */
	int max_batch_tokens; /* tokens in one batch (prefill chunks + decodes) */
	int n_ctx;	      /* tokens a request may hold, prompt and answer */
} gl_engine_opts_t;

typedef struct gl_engine gl_engine_t;

gl_engine_t *gl_engine_create(const gl_tok_t *tok, const gl_hparams_t *hp,
			      const gl_exec_ops_t *ops, void *exec, const gl_engine_opts_t *o,
			      gp_error_t *err);
void gl_engine_destroy(gl_engine_t **e);
/* Queue a request: its id (>= 0), or -1 with errno (EINVAL: an empty prompt, one longer than
 * the context, bad sampling parameters; ERR says which). */
int gl_engine_submit(gl_engine_t *e, const gl_request_t *r, gp_error_t *err);
/* End request ID: on_done(CANCELLED) is called from the next gl_engine_run. */
int gl_engine_cancel(gl_engine_t *e, int id);
/* Start what can start, then wait up to TIMEOUT_MS for a batch and hand out its tokens.
 * Returns the requests still open, or -1 if the executor failed (every open request has been
 * ended with GL_FINISH_ERROR; the engine can take new ones once the executor works again). */
int gl_engine_run(gl_engine_t *e, int timeout_ms, gp_error_t *err);
int gl_engine_open(const gl_engine_t *e);

#endif
