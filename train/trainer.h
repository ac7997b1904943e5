/* trainer.h - gtrain's training loop: data-parallel SGD/AdamW of an MLP over a libgcomm
 * communicator, fixed global batch, speed-weighted shares, gradient buckets allreduced while
 * the backward pass goes on, mixed precision with loss scaling, checkpoints and resume, the
 * model file at the end. gtrain.c is its command line; the unit tests call gt_train() in
 * forked ranks. */
#ifndef GT_TRAINER_H
#define GT_TRAINER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "gpool/gcomm.h"
#include "gpool/kernels.h"
#include "train/optim.h"

#define GT_MAX_RANKS 256

typedef struct {
	int sizes[17];
	int nsizes;
	const char *data;      /* CSV[.gz] or IMAGES,LABELS */
	const char *test_data; /* optional separate test set; else test_frac of data */
	double test_frac;
	uint64_t seed;
	int epochs;
	int global_batch;
	gt_optim_conf_t opt;
	gk_dtype_t compute; /* f32, f16, bf16 */
	gk_math_t math;	    /* GK_MATH_TF32: f32 products on the tensor cores (-p tf32) */
	double loss_scale;  /* initial scale for f16/bf16 (dynamic) */
	int scale_window;
	double input_scale; /* 0: 1 / the training data's largest |value| */
	const char *backend;
	size_t bucket_bytes;
	/* allreduce buckets during backward: 1, 0, or -1 auto (on for a card backend; off for
	 * cpu, where the allreduce thread competes with the BLAS for the same cores: measured
	 * 30 % slower on the test hosts) */
	int overlap;
	/* AdamW layer by layer beside backward (train/optover.h): 1, 0, or -1 auto; only for
	 * one rank with a scaler that is not dynamic (not f16) and AdamW */
	int overlap_optimizer;
	int rebalance_every;	     /* steps; 0: never */
	double scores[GT_MAX_RANKS]; /* initial share weights; all 0: equal */
	double slow_factor;
	int diag_every;	  /* print per-step diagnostics every N steps (0: per epoch only) */
	const char *ckpt; /* checkpoint file written every ckpt_every steps */
	int ckpt_every;
	const char *ckpt_cmd;	/* sh -c after each checkpoint ($GTRAIN_CKPT, $GTRAIN_STEP) */
	const char *resume;	/* resume from this file (must exist) */
	const char *resume_cmd; /* sh -c before start, to fetch $GTRAIN_CKPT */
	int fresh;		/* ignore an existing --ckpt file */
	const char *model;	/* model file at the end */
	int model_dtype;	/* its storage type (gm_dtype_t: GM_F32, GM_F16, GM_BF16) */
	const char *model_cmd;	/* sh -c after writing it ($GTRAIN_MODEL) */
	long stop_after;	/* stop after this global step (tests: a run cut short); 0: no */
	int throttle_rank;	/* -1: none; else this rank sleeps after forward, */
	double throttle_ms_per_row; /* this long a row of its share: a slower PC */
	int blas_threads;
	FILE *out; /* progress (rank 0); NULL: stdout */
	int quiet;
} gt_conf_t;

typedef struct {
	long steps, skipped;
	double test_acc; /* 0..1 */
	size_t test_correct, test_rows;
	double last_loss;
	double samples_per_s;
	double exposed_ms, blocking_ms; /* allreduce wait per step after backward; one blocking
					   allreduce of all gradients */
	double final_scale;
	int optimizer_overlapped; /* AdamW ran layer by layer beside backward (optover.h) */
} gt_result_t;

void gt_conf_defaults(gt_conf_t *c);
/* Train on COMM (NULL: one rank alone). 0, or -1 with err. */
int gt_train(const gt_conf_t *c, gc_comm_t *comm, gt_result_t *res, gp_error_t *err);

#endif
