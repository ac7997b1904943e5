/* trainer_int.h - what the files of gtrain's training loop share (internal): the state of a
 * run (tr_t) and the helpers of base.c (under them all), buckets.c (the gradient allreduce)
 * and resume.c (checkpoints), which trainer.c's loop calls. Functions return 0 or -1 with t->err
 * filled, unless said otherwise. */
#ifndef GT_TRAINER_INT_H
#define GT_TRAINER_INT_H

#include "train/data.h"
#include "train/mlp.h"
#include "train/optim.h"
#include "train/optover.h"
#include "train/trainer.h"

/* what each rank reports after a step (the per-step allgather) */
enum { ST_COMPUTE, ST_WAIT, ST_ROWS, ST_LOSS, ST_HITS, ST_N };

typedef struct {
	const gt_conf_t *c;
	gc_comm_t *comm;
	int rank, size;
	FILE *out;
	gk_backend_t *b;
	gt_mlp_t *m;
	gt_optim_t *o;
	gt_scaler_t sc;
	gt_data_t train, test;
	float input_scale;
	char hosts[GT_MAX_RANKS][64];
	/* buckets of the step in flight */
	gc_req_t *req[GT_MAX_LAYERS];
	int nreq;
	size_t pend_lo, pend_hi; /* parameter range not yet sent */
	int pending;
	int overlap;	 /* resolved from the conf (auto: on for a card backend) */
	float *test_dev; /* the test set, scaled, in a card's memory (NULL: gathered on the host) */
	uint32_t *dflag; /* the Inf/NaN flag of the step's gradient (backend memory) */
	uint32_t *hflag; /* its read-back (pinned) */
	gk_amp_t *amp;	 /* AdamW: the loss scaler on the card (NULL: the host's, t->sc) */
	gk_amp_t *hamp;	 /* its read-back (pinned), mirrored into t->sc after each wait */
	gt_optover_t *ov; /* AdamW layer by layer beside backward (one rank; optover.h) */
	int graph_ok;	  /* a graph capture has not failed yet */
	int prof;	  /* GTRAIN_PROFILE: a wait after each phase of a step, times printed */
	gp_error_t *err;
} tr_t;

/* ---- base.c ---- */
double tr_now_ms(void);
/* Fill t->err with WHAT and the communicator's message; returns -1. */
int tr_fail_comm(tr_t *t, const char *what);
const char *tr_dtype_name(gk_dtype_t t);
/* sh -c CMD with VAR=PATH and GTRAIN_STEP=STEP in its environment; 0 if it exits 0. */
int tr_run_hook(const char *cmd, const char *var, const char *path, long step);

/* ---- buckets.c ---- */
/* gt_mlp_backward's callback: layer LAYER's gradient is complete (ARG is the tr_t). */
int tr_grad_ready(void *arg, int layer);
/* After backward: send what is left, wait for every bucket; *wait_ms the time waited. */
int tr_finish_allreduce(tr_t *t, double *wait_ms);
/* One blocking allreduce of all gradients, median of 5, rank 0's figure on every rank
 * (ms; 0 alone; -1 on failure). */
double tr_blocking_cost(tr_t *t);

/* ---- resume.c ---- */
/* Rank 0: write the checkpoint of step STEP, then run --ckpt-cmd. */
int tr_save_ckpt(tr_t *t, long step);
/* Every rank: the checkpoint to resume from (rank 0 reads it, all get it by broadcast);
 * *start = its step, or 0 for a fresh start. */
int tr_resume(tr_t *t, long *start);

#endif
