/* mlp.h - a multi-layer perceptron classifier on a kernels backend (gpool/kernels.h): forward,
 * softmax cross-entropy and backward, with f32 master weights and an optional f16/bf16 compute
 * precision.
 *
 * Layout: parameters are one flat f32 vector, layer by layer W_l ([out][in], row-major) then
 * b_l ([out]), the order of the model (model/model.h). Activations are row-major [rows][width].
 * Gradients are one flat vector of the same layout in the compute type (f32, f16 or bf16),
 * ready for the allreduce.
 *
 * Mixed precision: with compute type f16/bf16 on a card, the weights (a compute copy beside
 * the f32 master), activations and gradients are held in that type and every product runs on
 * the tensor cores (gk_gemm: f32 accumulation, bias/ReLU and bias-gradient epilogues fused);
 * on the cpu backend the same values are f32 rounded to the type after each step (the GEMMs
 * run in f32 on values the type can hold: what a tensor core does). The loss is multiplied
 * by a scale so that small gradients do not flush to zero, and a gradient that overflows the
 * type becomes Inf (the caller skips the step, optim.h). f32 with GK_MATH_TF32 (gtrain -p
 * tf32) runs its products on the tensor cores in TF32.
 * Functions return 0 or -1 with err filled. All pointers named _dev are backend memory. */
#ifndef GT_MLP_H
#define GT_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"

#define GT_MAX_LAYERS 16

typedef struct gt_mlp gt_mlp_t;

/* Called by backward as soon as layer LAYER's gradient is complete (layers come last to
 * first); the gradients of layers >= LAYER may then be sent while the rest is computed. */
typedef int (*gt_grad_ready_f)(void *arg, int layer);

/* LAYERS[0..nsizes) are the widths, input first (at least 2 sizes); MAX_ROWS the most rows a
 * forward pass takes; COMPUTE f32, f16 or bf16. */
gt_mlp_t *gt_mlp_create(gk_backend_t *b, const int *sizes, int nsizes, size_t max_rows,
			gk_dtype_t compute, gp_error_t *err);
/* The same with the products' math mode (GK_MATH_TF32: f32 on the tensor cores). */
gt_mlp_t *gt_mlp_create_ex(gk_backend_t *b, const int *sizes, int nsizes, size_t max_rows,
			   gk_dtype_t compute, gk_math_t math, gp_error_t *err);
void gt_mlp_destroy(gt_mlp_t **m);
/* The stream every kernel of the model is queued on (a graph captures it). */
gk_stream_t *gt_mlp_stream(gt_mlp_t *m);
/* The f16/bf16 compute copy of the weights that the optimizer writes beside the master
 * (gt_optim_step_amp), or NULL where there is none (f32, the cpu's rounding way: then call
 * gt_mlp_weights_changed after a step). */
void *gt_mlp_compute_copy(gt_mlp_t *m);
/* With AMP set (device memory), backward multiplies the loss gradient by amp->scale on the
 * card: the SCALE argument then carries only 1/global_batch. NULL: off. */
void gt_mlp_set_amp(gt_mlp_t *m, const gk_amp_t *amp);

/* LATE: backward calls READY for a layer only once nothing of the step reads that layer's
 * weights any more (after its input gradient, not right after its weight gradient), so that
 * READY may start the layer's optimizer step (optover.h). Off: as soon as the gradient is. */
void gt_mlp_set_ready_late(gt_mlp_t *m, int late);

int gt_mlp_nlayers(const gt_mlp_t *m); /* weight layers: nsizes - 1 */
size_t gt_mlp_nparams(const gt_mlp_t *m);
/* First parameter of layer L (its W), and the count of W and b together. */
size_t gt_mlp_layer_offset(const gt_mlp_t *m, int l);
size_t gt_mlp_layer_count(const gt_mlp_t *m, int l);
float *gt_mlp_params_dev(gt_mlp_t *m);
void *gt_mlp_grads_dev(gt_mlp_t *m);
gk_dtype_t gt_mlp_grad_dtype(const gt_mlp_t *m);

/* He-uniform weights and zero biases from SEED (the same on every rank). */
int gt_mlp_init(gt_mlp_t *m, uint64_t seed, gp_error_t *err);
int gt_mlp_get_params(gt_mlp_t *m, float *host, gp_error_t *err);
int gt_mlp_set_params(gt_mlp_t *m, const float *host, gp_error_t *err);
/* After the master weights changed: refresh the compute copy (f16/bf16 rounding). */
int gt_mlp_weights_changed(gt_mlp_t *m, gp_error_t *err);

/* Copy ROWS rows of input (host, already scaled) and labels to the backend and run the
 * forward pass. */
int gt_mlp_forward(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err);
/* The same with X and Y in pinned host memory (gk_host_alloc): the copies are queued, so X
 * and Y must stay unchanged until the next gt_mlp_outputs or gt_mlp_sync. */
int gt_mlp_forward_pinned(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows,
			  gp_error_t *err);
/* The same with X and Y (Y may be NULL) in backend memory (gk_dev_alloc), copied on the
 * backend's stream. */
int gt_mlp_forward_dev(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err);
/* Queue the copy of ROWS rows (backend memory) into the model's input buffers, then run the
 * forward pass on what was staged: the two halves of gt_mlp_forward_dev, so that a graph
 * can capture the second (fixed pointers) and the first change every step. */
int gt_mlp_stage_dev(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err);
int gt_mlp_forward_staged(gt_mlp_t *m, size_t rows, gp_error_t *err);
/* A graph replayed a step of ROWS rows (captured with gt_mlp_forward_staged): what
 * gt_mlp_outputs_read then reads (another forward, an evaluation, may have run between). */
void gt_mlp_set_rows(gt_mlp_t *m, size_t rows);
/* After forward: per-row loss into loss[rows] and predicted classes into pred[rows] (host;
 * either may be NULL). Waits once for all the work queued on the backend so far (so a
 * caller may queue its own read-backs before and have them covered by the same wait). */
int gt_mlp_outputs(gt_mlp_t *m, float *loss, int32_t *pred, gp_error_t *err);
/* After forward: the gradients of SCALE * (sum of the rows' losses) into the gradient vector,
 * calling READY (may be NULL) after each layer. SCALE is loss_scale / global_batch, so that
 * summing the ranks' gradients gives the global batch's mean, scaled. Zero rows gives a zero
 * gradient. */
int gt_mlp_backward(gt_mlp_t *m, float scale, gt_grad_ready_f ready, void *arg, gp_error_t *err);
/* gt_mlp_outputs in two halves: queue the loss kernel and the read-backs (LOSS, PRED: which),
 * then wait and fill the host arrays; a graph captures the first half. */
int gt_mlp_outputs_queue(gt_mlp_t *m, int loss, int pred, gp_error_t *err);
int gt_mlp_outputs_read(gt_mlp_t *m, float *loss, int32_t *pred, gp_error_t *err);
/* Queue the copy of ROWS rows from pinned host memory into the model's input buffers (the
 * staging half of gt_mlp_forward_pinned). */
int gt_mlp_stage_pinned(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows,
			gp_error_t *err);
/* Wait until the backend has finished the work queued so far (before sending gradients). */
int gt_mlp_sync(gt_mlp_t *m, gp_error_t *err);

#endif
