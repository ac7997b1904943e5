/* gk_cpu_qdot.h - the cpu backend's vector path for qmatmul (internal; gk_cpu_qdot.c) */
#ifndef GK_CPU_QDOT_H
#define GK_CPU_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "gpool/kernels.h"

typedef void (*gk_cpu_deq_row_f)(const void *w, int cols, float *out);

/* Rows R0..R1-1 of the product y[i][r] = dot(w row r, x[i]) for i < N, on the processor's
 * vector units (x86-64 with AVX2, FMA and F16C; chosen at run time). W holds the weight rows
 * of ROW_BYTES each in type WT; DEQ is the reference dequantizer of WT (large N: a tile of
 * rows is widened once, then dotted with every x); BUF has room for 8 * COLS floats.
 * The weights' values are the reference's (gk_qblock.h); only the order and the fused
 * multiply-adds of the f32 sums differ. Returns 0 when done, -1 (nothing written) when this
 * processor or WT has no vector path: the caller runs its reference loop. */
int gk_cpu_qmm_rows_vec(gk_qtype_t wt, gk_cpu_deq_row_f deq, const uint8_t *w, size_t row_bytes,
			int r0, int r1, int cols, const float *x, int n, float *y, int ldy,
			float *buf);

#endif
