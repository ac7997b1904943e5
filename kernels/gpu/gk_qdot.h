/* gk_qdot.h - the decode product's inner step: one block of R weight rows of a GGUF block
 * format (in shared memory) dotted with N tokens' x, for llm.cu. Dequantized values are
 * gk_qblock.h's, evaluated in the same order; the sums use gkFma.
 *
 * Device code, kept in a header of its own so that a host build can run it too: it needs
 * __device__, gk_d_f16_to_f32, gkFma, float2 and gk_qblock.h, which gk_port.h gives on a
 * card (test/gk_qdot_check.cc gives host versions and checks the index arithmetic against
 * gk_qblock.h's value functions on the cpu). */
#ifndef GK_QDOT_H
#define GK_QDOT_H

#include <stdint.h>

#include "kernels/gk_qblock.h"

/* BLK[r]: row r's block in shared memory (2-byte aligned: rows and blocks have even sizes);
 * XB: the block's first value in token 0's row of x (token i at XB + i * cols). */
template <gk_qtype_t WT, int N, int R> struct qdot;

template <int N, int R> struct qdot<GK_Q_Q4_0, N, R> {
	__device__ static inline void run(const uint16_t *const *blk, const float *xb, int cols,
					  int n_, float (*acc)[N])
	{
		float d[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			d[r] = gk_d_f16_to_f32(blk[r][0]);
#pragma unroll
		for (int q = 0; q < 8; q++) { /* bytes 2q, 2q+1: values 2q, 2q+1, 2q+16, 2q+17 */
#pragma unroll
			for (int i = 0; i < N; i++) {
				if (i >= n_)
					continue;
				const float2 lo = *(const float2 *)(xb + (size_t)i * cols + 2 * q);
				const float2 hi =
				    *(const float2 *)(xb + (size_t)i * cols + 16 + 2 * q);
#pragma unroll
				for (int r = 0; r < R; r++) {
					const uint32_t v = blk[r][1 + q];
					float a = acc[r][i];
					a = gkFma((float)((int)(v & 0xF) - 8) * d[r], lo.x, a);
					a = gkFma((float)((int)((v >> 8) & 0xF) - 8) * d[r], lo.y,
						  a);
					a = gkFma((float)((int)((v >> 4) & 0xF) - 8) * d[r], hi.x,
						  a);
					a = gkFma((float)((int)(v >> 12) - 8) * d[r], hi.y, a);
					acc[r][i] = a;
				}
			}
		}
	}
};

template <int N, int R> struct qdot<GK_Q_Q8_0, N, R> {
	__device__ static inline void run(const uint16_t *const *blk, const float *xb, int cols,
					  int n_, float (*acc)[N])
	{
		float d[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			d[r] = gk_d_f16_to_f32(blk[r][0]);
#pragma unroll 4
		for (int q = 0; q < 16; q++) {
#pragma unroll
			for (int i = 0; i < N; i++) {
				if (i >= n_)
					continue;
				const float2 xv = *(const float2 *)(xb + (size_t)i * cols + 2 * q);
#pragma unroll
				for (int r = 0; r < R; r++) {
					const uint32_t v = blk[r][1 + q];
					float a = acc[r][i];
					a = gkFma((float)(int8_t)(v & 0xFF) * d[r], xv.x, a);
					a = gkFma((float)(int8_t)(v >> 8) * d[r], xv.y, a);
					acc[r][i] = a;
				}
			}
		}
	}
};

/* q4_K: d @0, dmin @2, scales @4..15, qs @16..143 (u16 index 8 on) */
template <int N, int R> struct qdot<GK_Q_Q4_K, N, R> {
	__device__ static inline void run(const uint16_t *const *blk, const float *xb, int cols,
					  int n_, float (*acc)[N])
	{
		for (int g = 0; g < 4; g++) {
			float d0[R], o0[R], d1[R], o1[R];
#pragma unroll
			for (int r = 0; r < R; r++) {
				const float d = gk_d_f16_to_f32(blk[r][0]);
				const float dmin = gk_d_f16_to_f32(blk[r][1]);
				const uint8_t *scales = (const uint8_t *)(blk[r] + 2);
				uint8_t sc, m;
				gk_q4k_scale_min(2 * g, scales, &sc, &m);
				d0[r] = d * (float)sc, o0[r] = dmin * (float)m;
				gk_q4k_scale_min(2 * g + 1, scales, &sc, &m);
				d1[r] = d * (float)sc, o1[r] = dmin * (float)m;
			}
#pragma unroll 4
			for (int q = 0; q < 16; q++) {
#pragma unroll
				for (int i = 0; i < N; i++) {
					if (i >= n_)
						continue;
					const float *xr = xb + (size_t)i * cols + 64 * g + 2 * q;
					const float2 lo = *(const float2 *)xr;
					const float2 hi = *(const float2 *)(xr + 32);
#pragma unroll
					for (int r = 0; r < R; r++) {
						const uint32_t v = blk[r][8 + 16 * g + q];
						float a = acc[r][i];
						a = gkFma(d0[r] * (float)(v & 0xF) - o0[r], lo.x,
							  a);
						a = gkFma(d0[r] * (float)((v >> 8) & 0xF) - o0[r],
							  lo.y, a);
						a = gkFma(d1[r] * (float)((v >> 4) & 0xF) - o1[r],
							  hi.x, a);
						a = gkFma(d1[r] * (float)(v >> 12) - o1[r], hi.y,
							  a);
						acc[r][i] = a;
					}
				}
			}
		}
	}
};

/* q6_K: ql @0 (128 bytes), qh @128 (64), scales @192 (16 int8), d @208 */
template <int N, int R> struct qdot<GK_Q_Q6_K, N, R> {
	__device__ static inline void run(const uint16_t *const *blk, const float *xb, int cols,
					  int n_, float (*acc)[N])
	{
		float d[R];
#pragma unroll
		for (int r = 0; r < R; r++)
			d[r] = gk_d_f16_to_f32(blk[r][104]);
		for (int h = 0; h < 2; h++)
#pragma unroll
			for (int k = 0; k < 4; k++)
#pragma unroll 2
				for (int q = 0; q < 16; q++) { /* l = 2q, 2q + 1 */
					float w0[R], w1[R];
#pragma unroll
					for (int r = 0; r < R; r++) {
						const uint32_t lb =
						    blk[r][32 * h + 16 * (k & 1) + q];
						const uint32_t hb = blk[r][64 + 16 * h + q];
						const int8_t sc =
						    ((const int8_t *)(blk[r] +
								      96))[8 * h + q / 8 + 2 * k];
						const uint32_t l0 =
						    (k & 2) ? (lb >> 4) & 0xF : lb & 0xF;
						const uint32_t l1 =
						    (k & 2) ? (lb >> 12) & 0xF : (lb >> 8) & 0xF;
						const uint32_t h0 = ((hb & 0xFF) >> (2 * k)) & 3;
						const uint32_t h1 = ((hb >> 8) >> (2 * k)) & 3;
						const float ds = d[r] * (float)sc;
						w0[r] = ds * (float)((int)(l0 | (h0 << 4)) - 32);
						w1[r] = ds * (float)((int)(l1 | (h1 << 4)) - 32);
					}
#pragma unroll
					for (int i = 0; i < N; i++) {
						if (i >= n_)
							continue;
						const float2 xv =
						    *(const float2 *)(xb + (size_t)i * cols +
								      128 * h + 32 * k + 2 * q);
#pragma unroll
						for (int r = 0; r < R; r++)
							acc[r][i] =
							    gkFma(w1[r], xv.y,
								  gkFma(w0[r], xv.x, acc[r][i]));
					}
				}
	}
};

#endif
