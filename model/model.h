/* model.h - a trained MLP classifier in memory: its layer sizes, what its inputs are multiplied
 * by, and its parameters. What gtrain (train/) produces and gserve (serve/) answers with; the
 * model file (model/file.h) stores it, the forward pass (model/forward.h, model/infer.h) runs it.
 *
 * Layout: one flat f32 vector, layer by layer W_l ([sizes[l+1]][sizes[l]], row-major) then
 * b_l ([sizes[l+1]]). ReLU between hidden layers; the outputs are logits (softmax on top).
 * libc only: it builds wherever the kernels do (the GPU machine's standalone builds). */
#ifndef GM_MODEL_H
#define GM_MODEL_H

#include <stddef.h>

#include "common/error.h"

#define GM_MAX_LAYERS 16		  /* weight layers */
#define GM_MAX_SIZES  (GM_MAX_LAYERS + 1) /* widths, the inputs first */
#define GM_MAX_WIDTH  (1 << 20)		  /* units in one layer */
#define GM_MAX_PARAMS (1ull << 31)	  /* floats in all: 8 GiB */

typedef struct gm_model gm_model_t;

/* The type a model's parameters are stored (and, on a card, served) in: the values of
 * gpool/kernels.h's GK_F32, GK_F16, GK_BF16. In memory the parameters are always f32; a model
 * of type f16/bf16 holds values that type represents exactly (widened from it). */
typedef enum { GM_F32 = 0, GM_F16 = 1, GM_BF16 = 2 } gm_dtype_t;

/* "f32", "f16", "bf16" into *t; -1 (EINVAL) for anything else. */
int gm_dtype_parse(const char *name, gm_dtype_t *t);
const char *gm_dtype_name(gm_dtype_t t);

/* Parameters of an MLP with these sizes; 0 if they are not 2..GM_MAX_SIZES widths of
 * 1..GM_MAX_WIDTH or need more than GM_MAX_PARAMS. */
size_t gm_nparams(const int *sizes, int nsizes);

/* A model of these sizes with its parameters zero. NULL with errno (EINVAL, ENOMEM) and err
 * set. */
gm_model_t *gm_model_create(const int *sizes, int nsizes, float input_scale, gp_error_t *err);
/* Takes NULL; sets *m to NULL. */
void gm_model_destroy(gm_model_t **m);

int gm_model_nsizes(const gm_model_t *m);
const int *gm_model_sizes(const gm_model_t *m);
int gm_model_inputs(const gm_model_t *m);  /* sizes[0] */
int gm_model_outputs(const gm_model_t *m); /* the last size: classes */
float gm_model_input_scale(const gm_model_t *m);
/* "64-256-256-10" */
const char *gm_model_shape(const gm_model_t *m);

size_t gm_model_nparams(const gm_model_t *m);
float *gm_model_params(gm_model_t *m);
const float *gm_model_data(const gm_model_t *m);
/* The storage type (GM_F32 for a new model). Setting f16/bf16 rounds every parameter to it
 * (nearest even; a value beyond f16's range becomes Inf): 0, or -1 (EINVAL) if one did. */
gm_dtype_t gm_model_dtype(const gm_model_t *m);
int gm_model_set_dtype(gm_model_t *m, gm_dtype_t t, gp_error_t *err);
/* the first parameter of layer L (its W; its b follows W) */
size_t gm_model_layer_offset(const gm_model_t *m, int l);

#endif
