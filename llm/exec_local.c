/* exec_local.c - the executor of one rank that holds the whole model (engine.h): submit reserves
 * the batch's KV space and keeps a copy of it, wait runs it (embedding, every layer, the head)
 * straight into the engine's logits. One batch in flight: depth 1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llm/engine.h"

struct gl_exec_local {
	gl_fwd_t *fwd;
	gl_kv_t *kv;
	int max_tokens;
	int pending;
	uint64_t id;
	gl_batch_t bt;
	int32_t *tokens; /* max_tokens */
};

gl_exec_local_t *gl_exec_local_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w,
				      gl_kv_t *kv, int max_tokens, gp_error_t *err)
{
	gl_exec_local_t *x = calloc(1, sizeof *x);
	if (!x || !(x->tokens = malloc((size_t)(max_tokens > 0 ? max_tokens : 1) * 4))) {
		free(x);
		errno = ENOMEM;
		gp_errprintf(err, "exec: out of memory");
		return NULL;
	}
	x->kv = kv;
	x->max_tokens = max_tokens;
	if (!(x->fwd = gl_fwd_create(b, hp, w, kv, max_tokens, err))) {
		int e = errno;
		free(x->tokens);
		free(x);
		errno = e;
		return NULL;
	}
	return x;
}

void gl_exec_local_destroy(gl_exec_local_t **xp)
{
	if (!xp || !*xp)
		return;
	gl_fwd_destroy(&(*xp)->fwd);
	free((*xp)->tokens);
	free(*xp);
	*xp = NULL;
}

static int x_submit(void *ctx, uint64_t id, const gl_batch_t *bt, gp_error_t *err)
{
	gl_exec_local_t *x = ctx;
	if (x->pending) {
		errno = EBUSY;
		return gp_errprintf(err, "exec: a batch is already in flight");
	}
	if (bt->nseq < 1 || bt->nseq > GL_MAX_BATCH_SEQS || bt->ntok < 1 ||
	    bt->ntok > x->max_tokens) {
		errno = EINVAL;
		return gp_errprintf(err, "exec: a batch of %d tokens (at most %d)", bt->ntok,
				    x->max_tokens);
	}
	/* reserve every sequence's space, or none (the old lengths back on ENOSPC) */
	int old[GL_MAX_BATCH_SEQS];
	for (int j = 0; j < bt->nseq; j++) {
		old[j] = gl_kv_len(x->kv, bt->seq[j]);
		if (gl_kv_reserve(x->kv, bt->seq[j], bt->ctx[j]) < 0) {
			int e = errno, seq = bt->seq[j], want = bt->ctx[j];
			while (j-- > 0)
				gl_kv_reserve(x->kv, bt->seq[j], old[j]);
			errno = e;
			return gp_errprintf(err, "exec: no KV space for sequence %d (%d tokens)",
					    seq, want);
		}
	}
	x->bt = *bt;
	memcpy(x->tokens, bt->tokens, (size_t)bt->ntok * 4);
	x->bt.tokens = x->tokens;
	x->id = id;
	x->pending = 1;
	return 0;
}

static int x_wait(void *ctx, uint64_t *id, float *logits, int timeout_ms, gp_error_t *err)
{
	gl_exec_local_t *x = ctx;
	(void)timeout_ms;
	if (!x->pending)
		return 0;
	x->pending = 0;
	if (gl_fwd_embed(x->fwd, &x->bt, err) < 0 || gl_fwd_layers(x->fwd, &x->bt, err) < 0 ||
	    gl_fwd_head(x->fwd, &x->bt, logits, err) < 0)
		return -1;
	*id = x->id;
	return 1;
}

static void x_release(void *ctx, int seq)
{
	gl_exec_local_t *x = ctx;
	gl_kv_release(x->kv, seq);
}

static int x_depth(void *ctx)
{
	(void)ctx;
	return 1;
}

static int x_free_tokens(void *ctx)
{
	gl_exec_local_t *x = ctx;
	return gl_kv_free_blocks(x->kv) * gl_kv_block_size(x->kv);
}

const gl_exec_ops_t gl_exec_local_ops = {x_submit, x_wait, x_release, x_depth, x_free_tokens};
