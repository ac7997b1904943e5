/* pipe.h - a model split over the ranks of a job: the head rank's executor (engine.h's
 * gl_exec_ops_t) and the other ranks' loop.
 *
 * The ranks holding layers form a ring in rank order: rank 0 (the head) embeds a batch and
 * runs its own layers in submit, sends the activations to the next rank, each stage runs its
 * layers and sends them on, and the last sends them back to rank 0 for the final norm and the
 * head. Batches come back in the order they left, and up to one per ring member are in flight,
 * so every stage has work under concurrent requests. A release travels the same ring, so it
 * reaches every stage after the steps that used the sequence.
 *
 * KV space: every rank's cache has the same blocks of the same size and sees the same
 * reservations and releases in the same order, so a step rank 0 found room for finds room on
 * every stage (a stage that does not is a failure, not a wait).
 *
 * Failure: a stage that dies, or a batch not back within the timeout, makes wait return -1
 * (EPIPE, ETIMEDOUT) once, losing every batch in flight; the pipe stays broken after that
 * (every submit fails with EPIPE): the program ends and its service restarts it. */
#ifndef GLLM_PIPE_H
#define GLLM_PIPE_H

#include "gllm/stage.h"
#include "gpool/gcomm.h"
#include "llm/engine.h"

typedef struct {
	gc_comm_t *comm;
	const int *ring; /* ranks with layers, in order; ring[0] is 0, this rank */
	int nring;
	gl_stage_limits_t lim;
	gl_wire_t wire;
	int timeout_ms; /* a batch not back in this long: the pipeline is declared dead */
} gl_pipe_opts_t;

typedef struct gl_pipe gl_pipe_t;

/* The head rank's executor over its layers W (with the embedding and head) and cache KV. */
gl_pipe_t *gl_pipe_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w, gl_kv_t *kv,
			  const gl_pipe_opts_t *o, gp_error_t *err);
/* Tells the stages to end (when the ring still works), then frees. */
void gl_pipe_destroy(gl_pipe_t **p);
extern const gl_exec_ops_t gl_pipe_ops;

/* A stage rank: take frames from PREV, run its layers, pass them to NEXT, until a SHUTDOWN
 * (0) or a failure (-1 with ERR: a bad frame, no KV room, the ring broken). */
int gl_stage_run(gc_comm_t *c, gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w,
		 gl_kv_t *kv, int prev, int next, const gl_stage_limits_t *lim, gl_wire_t wire,
		 gp_error_t *err);

#endif
