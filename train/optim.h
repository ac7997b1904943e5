/* optim.h - the optimizer step of gtrain (SGD with momentum or AdamW, the kernels of
 * gpool/kernels.h on f32 master weights) and dynamic loss scaling for f16/bf16 gradients.
 *
 * Loss scaling: the loss is multiplied by `scale` before backward so that small gradients
 * survive f16; the optimizer divides it out (grad_scale = 1/scale). A step whose averaged
 * gradient holds Inf or NaN is skipped and the scale halved; after `window` good steps in a row
 * it doubles. Every rank sees the same allreduced gradient, so every rank decides the same. */
#ifndef GT_OPTIM_H
#define GT_OPTIM_H

#include <stddef.h>

#include "common/error.h"
#include "gpool/kernels.h"

typedef enum { GT_SGD = 0, GT_ADAMW = 1 } gt_optim_kind_t;

typedef struct {
	gt_optim_kind_t kind;
	float lr, momentum, beta1, beta2, eps, weight_decay;
} gt_optim_conf_t;

typedef struct gt_optim gt_optim_t;

gt_optim_t *gt_optim_create(gk_backend_t *b, const gt_optim_conf_t *conf, size_t n,
			    gp_error_t *err);
void gt_optim_destroy(gt_optim_t **o);
/* One step on W (n f32, backend memory) with gradient G (n of type GT) times GRAD_SCALE. */
int gt_optim_step(gt_optim_t *o, float *w, gk_dtype_t gt, const void *g, float grad_scale,
		  gp_error_t *err);
/* The mixed-precision step, all on the card (AdamW only): gk_adamw_amp with the device loss
 * scale AMP (the gradient times 1/amp->scale, the step skipped while amp->found is set, t from
 * amp->steps), writing the compute copy WC (wc_t; NULL: none) beside the f32 master W, then
 * gk_amp_update. Queued on S; nothing is read back. ENOTSUP for SGD. */
int gt_optim_step_amp(gt_optim_t *o, float *w, gk_amp_t *amp, gk_dtype_t wc_t, void *wc,
		      gk_dtype_t gt, const void *g, gk_stream_t *s, gp_error_t *err);
/* The same in parts, for an optimizer that runs layer by layer beside backward (optover.h):
 * gk_adamw_amp on W, M, V, WC and G from parameter OFF for N parameters (the step skipped while
 * amp->found is set, t from amp->steps), without the scaler's update; then, once every part of
 * the step is queued, gt_optim_amp_update. */
int gt_optim_step_amp_part(gt_optim_t *o, size_t off, size_t n, float *w, gk_amp_t *amp,
			   gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *g, gk_stream_t *s,
			   gp_error_t *err);
int gt_optim_amp_update(gt_optim_t *o, gk_amp_t *amp, gk_stream_t *s, gp_error_t *err);
/* State vectors (1 for SGD: velocity; 2 for AdamW: m, v) and the applied-step count, for
 * checkpoints. */
int gt_optim_nstate(const gt_optim_t *o);
float *gt_optim_state_dev(gt_optim_t *o, int i);
long gt_optim_steps(const gt_optim_t *o);
void gt_optim_set_steps(gt_optim_t *o, long steps);
const char *gt_optim_name(gt_optim_kind_t k);

typedef struct {
	double scale;	 /* current loss scale (1 and never changed when dynamic is 0) */
	double min, max; /* bounds */
	int window;	 /* good steps before the scale doubles */
	int good;	 /* good steps since the last change */
	int dynamic;
	long skipped; /* steps skipped for Inf/NaN */
} gt_scaler_t;

void gt_scaler_init(gt_scaler_t *s, double initial, int window, int dynamic);
/* After a step's gradient was checked: returns 1 if the step is to be applied, 0 if skipped
 * (OVERFLOW set: scale halved). */
int gt_scaler_update(gt_scaler_t *s, int overflow);

#endif
