/* rank.h - one rank of a gllm job from the model file to a running share of it: what this
 * rank has (its card's memory and measured speed, or the cpu's), the plan every rank agrees
 * on (rank 0 computes it from everyone's numbers and broadcasts it), this rank's layers
 * loaded, its KV cache, and its executor (rank 0: the engine's; the others: a stage).
 * A job of one rank (no communicator) holds everything and runs gl_exec_local. */
#ifndef GLLM_RANK_H
#define GLLM_RANK_H

#include <stdio.h>

#include "gllm/pipe.h"
#include "gllm/plan.h"
#include "llm/engine.h"
#include "llm/gguf.h"
#include "llm/tokenizer.h"

typedef struct {
	const char *model;   /* the GGUF file */
	const char *backend; /* "auto", "cpu", "cuda", "hip" */
	int n_ctx;	     /* tokens a request may hold (0: the model's, at most 4096) */
	int parallel;	     /* requests generating at once */
	int max_batch_tokens;
	gl_wire_t wire;
	int timeout_ms; /* a batch not back from the ring in this long: the ranks failed */
	int kv_f16;	/* the KV cache in f16 (else f32) */
} gllm_opts_t;

typedef struct {
	gc_comm_t *comm; /* NULL: one rank */
	int rank, size;
	gk_backend_t *b;
	gl_gguf_t *g;
	gl_hparams_t hp;
	gl_tok_t *tok; /* rank 0 */
	gl_weights_t *w;
	gl_kv_t *kv;
	gl_plan_model_t pm;
	size_t *layer_bytes;
	int lazy; /* the model was staged lazily: fetch this rank's share before loading */
	gl_plan_rank_t ranks[GL_PLAN_MAX_RANKS];
	gl_plan_t plan;
	int ring[GL_PLAN_MAX_RANKS], nring;
	int prev, next; /* a stage's neighbours (next -1: no layers) */
	gl_stage_limits_t lim;
	gllm_opts_t o;
	/* rank 0's executor */
	gl_exec_local_t *local;
	gl_pipe_t *pipe;
	const gl_exec_ops_t *ops;
	void *exec;
} gllm_rank_t;

/* Fill O's defaults (auto backend, 8 requests, 512 tokens a batch, f32 on the wire, 60 s). */
void gllm_opts_default(gllm_opts_t *o);
/* What this rank has: its device, free memory and speed (GLLM_MEM and GLLM_SPEED, in bytes
 * and GB/s, override the measurement: tests, and a PC its owner shares only in part). */
int gllm_probe(gk_backend_t *b, gl_plan_rank_t *me, gp_error_t *err);
/* Open the model and agree on the plan with every rank of C (NULL: one rank); the plan is
 * printed to PLAN_OUT on rank 0 (NULL: not). With LOAD, load this rank's share and make its
 * executor or stage. NULL with errno and ERR (on every rank: a rank that cannot go on says so
 * and the others' next call on the communicator fails). */
gllm_rank_t *gllm_rank_open(gc_comm_t *c, const gllm_opts_t *o, int load, FILE *plan_out,
			    gp_error_t *err);
/* A rank other than 0: serve as a stage until rank 0 says stop (0) or the ring fails (-1). */
int gllm_rank_stage(gllm_rank_t *r, gp_error_t *err);
/* Rank 0: tells the stages to end; every rank: frees all. */
void gllm_rank_close(gllm_rank_t **r);

#endif
