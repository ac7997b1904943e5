/* optover.h - the optimizer step overlapped with backward on one rank: as soon as backward has
 * finished with a layer (its gradient is complete and its weights are read no more), that
 * layer's Inf/NaN check and fused AdamW are queued on a second stream, which waits for the
 * layer on the model's stream through an event; backward goes on with the layers below. The
 * AdamW of a large model streams every f32 master weight, both moments, the gradient and the
 * compute copy (28 bytes a parameter in bf16): memory traffic that then runs beside the
 * products of the layers still in backward instead of after them. A graph captures both
 * streams (the events become its edges).
 *
 * For one rank (nothing to allreduce) with the card-side scaler not dynamic (bf16, tf32,
 * f32): an f16 step must see the whole gradient before deciding to skip, so it is not
 * overlapped. The check is per layer, in backward's order, into the one amp->found: a layer
 * with Inf/NaN skips its own update and every layer after it, while the layers before it have
 * taken theirs (with loss scaling off, Inf/NaN in bf16 means the run has diverged; PyTorch's
 * autocast takes the step in every layer then). The parts are exact: the same values as one
 * gt_optim_step_amp over the whole vector. */
#ifndef GT_OPTOVER_H
#define GT_OPTOVER_H

#include "common/error.h"
#include "gpool/kernels.h"
#include "train/mlp.h"
#include "train/optim.h"

typedef struct gt_optover gt_optover_t;

/* For model M (its stream, its layers), optimizer O and the device scaler AMP: NULL with err
 * filled when the backend cannot make a stream or an event. Sets M's late READY.
 * gt_optover_ready reports its errors into ERR, which must outlive X (backward's caller reads
 * it when backward fails). */
gt_optover_t *gt_optover_create(gk_backend_t *b, gt_mlp_t *m, gt_optim_t *o, gk_amp_t *amp,
				gp_error_t *err);
/* Unsets M's late READY. */
void gt_optover_destroy(gt_optover_t **x);
/* A gt_grad_ready_f (ARG: the gt_optover_t): queue layer LAYER's check and AdamW. */
int gt_optover_ready(void *arg, int layer);
/* After backward: the model's stream waits for the second one, then the scaler's update and
 * (where the model keeps no compute copy) the weights' rounding, on the model's stream. */
int gt_optover_finish(gt_optover_t *x, gp_error_t *err);

#endif
