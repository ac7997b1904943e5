/* ckpt.h - gtrain's two file formats: the model file (read by the model server) and the
 * checkpoint (resumable training state). Both are a magic line, one line of JSON, then
 * little-endian binary. Formats in docs/training.md.
 *
 * Model file ("GPMODEL1\n"):
 *   {"kind":"mlp","layers":[64,256,256,10],"activation":"relu","dtype":"f32","input_scale":S}\n
 *   then for each layer l: W_l [layers[l+1]][layers[l]] f32 row-major, then b_l [layers[l+1]].
 * Checkpoint ("GPCKPT1\n"): a JSON line with the training state (step, optimizer, loss scale,
 *   global batch, seed, ...), then the parameters (the model file's order), then each optimizer
 *   state vector of the same length, then the CRC-32 (zlib) of those bytes, 4 bytes LE.
 *
 * Writers go through a temporary file, fsync and rename: a reader sees the old file or the
 * new one. Parsers take a buffer (the fuzz harness drives them) and never trust a length. */
#ifndef GT_CKPT_H
#define GT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GT_CKPT_MAX_SIZES 17

typedef struct {
	int sizes[GT_CKPT_MAX_SIZES];
	int nsizes;
	float input_scale;
	size_t nparams;
	float *params; /* malloc'd, nparams */
} gt_model_t;

typedef struct {
	gt_model_t model;
	long step;	/* global steps done */
	long opt_steps; /* optimizer steps applied (skipped ones excluded) */
	int global_batch;
	uint64_t seed;
	char optimizer[16]; /* "sgd", "adamw" */
	char dtype[8];	    /* compute type: "f32", "f16", "bf16" */
	double loss_scale;
	int scale_good;
	long skipped;
	int nstate;
	float *state[2]; /* malloc'd, nparams each */
} gt_ckpt_t;

/* Parameters of an MLP with these sizes. 0 if the sizes are not a valid MLP. */
size_t gt_model_nparams(const int *sizes, int nsizes);

int gt_model_write(const char *path, const gt_model_t *m, gp_error_t *err);
int gt_model_parse(const void *buf, size_t len, gt_model_t *m, gp_error_t *err);
int gt_model_read(const char *path, gt_model_t *m, gp_error_t *err);
void gt_model_free(gt_model_t *m);

int gt_ckpt_write(const char *path, const gt_ckpt_t *c, gp_error_t *err);
int gt_ckpt_parse(const void *buf, size_t len, gt_ckpt_t *c, gp_error_t *err);
int gt_ckpt_read(const char *path, gt_ckpt_t *c, gp_error_t *err);
void gt_ckpt_free(gt_ckpt_t *c);

#endif
