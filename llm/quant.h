/* quant.h - rows of f32 values into GGUF's weight types and back: the writer of random-weight
 * models and the tests use it; engines read weights through the kernels (gk_qmatmul), never
 * through this. Dequantization reads each block with kernels/gk_qblock.h's element functions,
 * the one definition of the layouts the GPU kernels share.
 *
 * The quantizers: f16 and bf16 round to nearest even (kernels/gk_scalar.h); q8_0 and q4_0 are
 * ggml's reference ones (q8_0: d = absmax / 127, q rounded half away from zero; q4_0: d = the
 * value of largest magnitude, signed, / -8, q = trunc(x / d + 8.5) capped at 15); q4_K and q6_K
 * search each sub-block's scale (and q4_K's min) as ggml's reference quantizers do (weighted
 * least squares over a few candidate scales), then quantize the 6-bit (q4_K) or 8-bit (q6_K)
 * sub-block scales against the super-block's f16 d (and dmin), and the values against those.
 * They need not give ggml's bytes; they give valid blocks of about ggml's error.
 *
 * Relative RMS error, sqrt(sum (x - dq(q(x)))^2 / sum x^2), measured on normal random rows
 * (unit.llm.quant; gl_quant_rms_bound gives the bound tested, with a margin):
 *   f32 0 (exact)       f16 0.021 % (< 0.03 %)   bf16 0.17 % (< 0.25 %)
 *   q8_0 0.54 % (< 0.65 %)   q4_0 8.6 % (< 10 %)   q4_K 7.2 % (< 8 %)   q6_K 1.8 % (< 2.2 %)
 * ggml's reference quantizers measure about the same (q4_K's and q6_K's searches are theirs). */
#ifndef GL_QUANT_H
#define GL_QUANT_H

#include <stddef.h>

#include "gpool/kernels.h"

/* N values of SRC into gk_qtype_row_bytes(T, N) bytes at DST / back. 0, or -1 with errno
 * EINVAL when T is not a type of gpool/kernels.h or N is not a multiple of its block. */
int gl_quantize_row(gk_qtype_t t, const float *src, void *dst, size_t n);
int gl_dequantize_row(gk_qtype_t t, const void *src, float *dst, size_t n);

/* The relative RMS error T's round trip stays under on normal random data (above); -1 for a
 * type that is not one. */
double gl_quant_rms_bound(gk_qtype_t t);

#endif
