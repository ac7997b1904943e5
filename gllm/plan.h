/* plan.h - which rank of a pipeline holds which layers.
 *
 * A decode step reads every weight once, so a rank's time per token is the bytes it holds over
 * the speed it reads them at (a card's memory bandwidth, a cpu's measured quantized
 * matrix-vector GB/s). With several batches in flight the pipeline moves at its slowest stage:
 * the planner gives each rank a contiguous range of layers so that the slowest stage is as fast
 * as it can be, with every rank's weights, its layers' KV cache for the whole context and a
 * workspace within its free memory. Rank 0 also holds the embedding and the head (it
 * tokenizes, samples and serves HTTP), and its time counts the head. A rank too small for any
 * layer gets none (it is left out of the ring); a model that fits in no arrangement is an
 * error that says how much is missing. */
#ifndef GLLM_PLAN_H
#define GLLM_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

#define GL_PLAN_MAX_RANKS 64

typedef struct {
	char host[64];
	char device[64]; /* "cuda:0 NVIDIA GeForce RTX 3060", "cpu" */
	int has_card;
	size_t mem_free;  /* bytes free on its card, or of RAM for a cpu rank */
	double speed_gbs; /* GB/s it reads weights at (> 0) */
} gl_plan_rank_t;

typedef struct {
	const char *name;
	int n_layers;
	const size_t *layer_bytes; /* n_layers: gl_layer_bytes */
	size_t embed_bytes, head_bytes;
	size_t kv_bytes_token_layer; /* K and V of one token in one layer */
	long long kv_tokens;	     /* tokens of KV space each rank holds (context x parallel) */
	size_t workspace_bytes;	     /* activations and scratch of a batch, on every rank */
} gl_plan_model_t;

typedef struct {
	int first, last; /* layers first .. last-1; first == last: none */
	size_t used;	 /* bytes: weights, KV cache, workspace */
	double ms;	 /* milliseconds of a token's pass on this rank */
} gl_plan_slot_t;

typedef struct {
	int nranks;
	gl_plan_slot_t slot[GL_PLAN_MAX_RANKS];
	double bottleneck_ms; /* the slowest stage: a token's time per batch in flight */
} gl_plan_t;

/* Plan model M on ranks R[0..N): 0, or -1 with errno (ENOSPC: it does not fit; EINVAL: bad
 * numbers) and ERR saying why. */
int gl_plan_make(const gl_plan_model_t *m, const gl_plan_rank_t *r, int n, gl_plan_t *p,
		 gp_error_t *err);
/* The plan as a table (rank, host, device, memory free and used, layers, share of time). */
void gl_plan_print(FILE *f, const gl_plan_model_t *m, const gl_plan_rank_t *r, const gl_plan_t *p);

#endif
