/* forward.h - the forward pass of an MLP (model.h's layout) on a kernels backend
 * (gpool/kernels.h): for each layer l, act[l+1] = act(W_l act[l] + b_l) as one gk_sgemm and
 * one gk_bias_act, ReLU between hidden layers, logits out of the last. The one forward pass:
 * gtrain's (train/mlp.c, keeping every layer's output for backward) and gserve's
 * (model/infer.c, two buffers in turn) on the cpu backend (OpenBLAS) or a card. */
#ifndef GM_FORWARD_H
#define GM_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"

/* Mixed precision (training's f16/bf16): values rounded to CT and back after each step, in
 * the device SCRATCH (2 bytes a value, as many as the largest activation). CT GK_F32 rounds
 * nothing and needs no scratch. */
typedef struct {
	gk_dtype_t ct;
	uint16_t *scratch;
} gm_round_t;

/* Round N floats at P (device) to r->ct and back, in place; r may be NULL. 0 / -1. */
int gm_round(gk_backend_t *b, const gm_round_t *r, float *p, size_t n, gk_stream_t *s,
	     gp_error_t *err);

/* NSIZES widths SIZES; PARAMS the device copy of the parameters; ACT[0..nsizes) device
 * buffers of ROWS x sizes[l] (row-major), ACT[0] holding the (scaled) input; consecutive ones
 * distinct, others may be the same buffer. Queued on stream S (NULL: the default).
 * 0 / -1 with err set (the backend's reason). */
int gm_forward(gk_backend_t *b, gk_stream_t *s, const int *sizes, int nsizes, const float *params,
	       float *const *act, size_t rows, const gm_round_t *r, gp_error_t *err);

/* The forward pass on typed buffers through gk_gemm (tensor cores on a card): PARAMS and
 * ACT[0..nsizes) of type T (f32, f16, bf16), every layer one product with its bias (and the
 * ReLU between hidden layers) fused into the epilogue, accumulation in f32, each layer's
 * output rounded once to T. MATH GK_MATH_TF32 lets f32 products use TF32. 0 / -1. */
int gm_forward_ex(gk_backend_t *b, gk_stream_t *s, const int *sizes, int nsizes, const void *params,
		  gk_dtype_t t, void *const *act, size_t rows, gk_math_t math, gp_error_t *err);

#endif
