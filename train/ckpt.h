/* ckpt.h - gtrain's checkpoint (resumable training state), in the frame of the model file
 * (model/container.h: a magic line, one line of JSON, then little-endian binary; the model file
 * itself is model/file.h). Format in docs/training.md.
 *
 * Checkpoint ("GPCKPT1\n"): a JSON line with the layer sizes, input scale and the training
 *   state (step, optimizer, loss scale, global batch, seed, ...), then the parameters (the
 *   model file's order), then each optimizer state vector of the same length, then the CRC-32
 *   (zlib) of those bytes, 4 bytes LE.
 *
 * The writer goes through a temporary file, fsync and rename: a reader sees the old file or
 * the new one. The parser takes a buffer (the fuzz harness drives it) and never trusts a
 * length. Without jansson and zlib (ckpt_none.c) each call fails with ENOTSUP. */
#ifndef GT_CKPT_H
#define GT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "model/model.h"

typedef struct {
	gm_model_t *model; /* sizes, input scale, parameters */
	long step;	   /* global steps done */
	long opt_steps;	   /* optimizer steps applied (skipped ones excluded) */
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

int gt_ckpt_write(const char *path, const gt_ckpt_t *c, gp_error_t *err);
int gt_ckpt_parse(const void *buf, size_t len, gt_ckpt_t *c, gp_error_t *err);
int gt_ckpt_read(const char *path, gt_ckpt_t *c, gp_error_t *err);
/* frees what a parse or the caller allocated (model, state) and zeroes those pointers */
void gt_ckpt_free(gt_ckpt_t *c);

#endif
