/* forward.h - the forward pass of one rank's share of a model over a batch of sequences: the
 * embedding (the rank that holds it), its layers (RMSNorm, q/k/v products, RoPE, the paged KV
 * cache, attention, the output product, the residual, RMSNorm, SwiGLU feed-forward), and the
 * final norm and head (the rank that holds it). All arithmetic is gpool/kernels.h's, so the
 * same code runs on a card and on the cpu backend.
 *
 * A batch mixes prefill and decode: sequence j brings n_j new tokens (its prompt, a chunk of
 * it, or the one token it just sampled) after ctx_j - n_j it already has in the cache. */
#ifndef GL_FORWARD_H
#define GL_FORWARD_H

#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"
#include "llm/kvcache.h"
#include "llm/model.h"

#define GL_MAX_BATCH_SEQS 256

typedef struct {
	int nseq;
	int ntok;		/* sum of n */
	int32_t seq[GL_MAX_BATCH_SEQS]; /* the sequences' ids in the KV cache */
	int32_t n[GL_MAX_BATCH_SEQS];	/* new tokens of each */
	int32_t ctx[GL_MAX_BATCH_SEQS]; /* tokens of each in the cache after this step */
	const int32_t *tokens;		/* ntok token ids, sequence by sequence (embedding rank) */
	int all_logits;			/* 1: logits of every row, not only each sequence's last */
} gl_batch_t;

typedef struct gl_fwd gl_fwd_t;

/* A forward pass over W's layers with cache KV (its layers are W's), for batches of at most
 * MAX_TOKENS tokens. */
gl_fwd_t *gl_fwd_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w, gl_kv_t *kv,
			int max_tokens, gp_error_t *err);
void gl_fwd_destroy(gl_fwd_t **f);

/* The activations (ntok x dim f32) live in the pass's device buffer between these calls. */
int gl_fwd_embed(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err);
int gl_fwd_set_x(gl_fwd_t *f, const gl_batch_t *bt, const float *x_host, gp_error_t *err);
int gl_fwd_get_x(gl_fwd_t *f, const gl_batch_t *bt, float *x_host, gp_error_t *err);
/* This rank's layers (the batch's KV space reserved beforehand: gl_kv_reserve). */
int gl_fwd_layers(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err);
/* Final norm and head: LOGITS (host) gets nseq x n_vocab (the last row of each sequence), or
 * ntok x n_vocab with all_logits. */
int gl_fwd_head(gl_fwd_t *f, const gl_batch_t *bt, float *logits, gp_error_t *err);

#endif
