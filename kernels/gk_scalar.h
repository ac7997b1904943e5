/* gk_scalar.h - scalar arithmetic shared by the CPU reference and the GPU kernels
 *
 * Everything here is the definition of a result: the CPU backend calls these functions
 * and the GPU kernels call the same ones (or, for f16, the hardware conversion, which
 * rounds the same way), so GPU results can be compared with the CPU bit for bit.
 * Compiles as C99 and as CUDA/HIP device code.
 */
#ifndef GK_SCALAR_H
#define GK_SCALAR_H

#include <stdint.h>
#include <string.h>
#if !defined(__CUDACC__) && !defined(__HIPCC__)
#include <math.h>
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define GK_HD __host__ __device__ static inline
#else
#define GK_HD static inline
#endif

#include "gpool/kernels.h"

GK_HD uint32_t gk_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

GK_HD float gk_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* f32 -> f16, round to nearest even, overflow to inf, NaN stays a quiet NaN keeping its
 * sign and top payload bits. Also the bf16 shim's model for HIP 5.2 (see below). */
GK_HD uint16_t gk_sw_f32_to_f16(float f)
{
	uint32_t x = gk_f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	if (ax >= 0x477ff000u) /* >= 65520 rounds to inf; inf stays inf */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x38800000u) { /* normal in f16 */
		uint32_t r = ax - 0x38000000u;
		r += 0x0fffu + ((r >> 13) & 1u);
		return (uint16_t)(sign | (r >> 13));
	}
	if (ax <= 0x33000000u) /* <= 2^-25 rounds to zero (the tie goes to even 0) */
		return (uint16_t)sign;
	{
		uint32_t e = ax >> 23;
		uint32_t m = (ax & 0x7fffffu) | 0x800000u;
		uint32_t shift = 126u - e; /* 14..24 */
		uint32_t q = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1u);
		uint32_t half = 1u << (shift - 1u);
		if (rem > half || (rem == half && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
}

GK_HD float gk_sw_f16_to_f32(uint16_t h)
{
	uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
	uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
	uint32_t m = (uint32_t)h & 0x3ffu;
	if (e == 0x1fu)
		return gk_bits_f32(sign | 0x7f800000u | (m << 13));
	if (e == 0) {
		/* subnormal (or zero): m * 2^-24, exact in f32 */
		return gk_bits_f32(sign | gk_f32_bits((float)m * 5.9604644775390625e-8f));
	}
	return gk_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/* bf16: the top half of an f32. Round to nearest even; overflow carries into inf. */
GK_HD uint16_t gk_sw_f32_to_bf16(float f)
{
	uint32_t x = gk_f32_bits(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

GK_HD float gk_sw_bf16_to_f32(uint16_t h)
{
	return gk_bits_f32((uint32_t)h << 16);
}

GK_HD int gk_f16_bits_nonfinite(uint16_t h)
{
	return (h & 0x7c00u) == 0x7c00u;
}

GK_HD int gk_bf16_bits_nonfinite(uint16_t h)
{
	return (h & 0x7f80u) == 0x7f80u;
}

GK_HD int gk_f32_bits_nonfinite(uint32_t u)
{
	return (u & 0x7f800000u) == 0x7f800000u;
}

GK_HD int gk_f64_bits_nonfinite(uint64_t u)
{
	return (u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
}

/* Reduction steps. max/min propagate the first NaN they see. One definition for float and
 * double (C99 has no templates). */
#define GK_COMBINE_FLOAT(NAME, T)                                                                  \
	GK_HD T NAME(int op, T a, T b)                                                             \
	{                                                                                          \
		if (op == 1 || op == 2) { /* GK_MAX, GK_MIN */                                     \
			if (a != a)                                                                \
				return a;                                                          \
			if (b != b)                                                                \
				return b;                                                          \
			if (op == 1)                                                               \
				return a > b ? a : b;                                              \
			return a < b ? a : b;                                                      \
		}                                                                                  \
		return a + b;                                                                      \
	}
GK_COMBINE_FLOAT(gk_combine_f, float)
GK_COMBINE_FLOAT(gk_combine_d, double)

GK_HD long long gk_combine_i(int op, long long a, long long b)
{
	if (op == 1)
		return a > b ? a : b;
	if (op == 2)
		return a < b ? a : b;
	return a + b;
}

GK_HD int32_t gk_i64_to_i32_wrap(long long a)
{
	uint32_t u = (uint32_t)(unsigned long long)a;
	int32_t r;
	memcpy(&r, &u, 4);
	return r;
}

/* Memory test words. */
GK_HD uint64_t gk_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

GK_HD uint32_t gk_mt_word(int kind, uint32_t value, uint64_t seed, int invert, uint64_t i)
{
	uint32_t w;
	switch (kind) {
	case 1: /* GK_MTW_WALK: value is the pass */
		w = 1u << ((uint32_t)(i + value) & 31u);
		break;
	case 2: /* GK_MTW_ADDRESS */
		w = (uint32_t)i ^ ((uint32_t)(i >> 32) * 0x9e3779b9u);
		break;
	case 3: /* GK_MTW_RANDOM */
		w = (uint32_t)gk_splitmix64(seed ^ (i * 0xd1b54a32d192ed03ull));
		break;
	default:
		w = value;
		break;
	}
	return invert ? ~w : w;
}

/* Optimizer steps. Backends build these without floating-point contraction (gcc
 * -ffp-contract=off, nvcc -fmad=false, hipcc -ffp-contract=off), so each operation rounds
 * once and every backend computes the same bits. */
GK_HD void gk_sgd_step(float lr, float mom, float wd, float gs, int nesterov, float g, float *w,
		       float *v)
{
	float gg = g * gs + wd * *w;
	float vv = mom * *v + gg;
	float upd = nesterov ? gg + mom * vv : vv;
	*v = vv;
	*w = *w - lr * upd;
}

GK_HD void gk_adamw_step(float lr, float b1, float b2, float eps, float wd, float gs, float bc1,
			 float bc2, float g, float *w, float *m, float *v)
{
	float gg = g * gs;
	float ww = *w - (lr * wd) * *w;
	float mm = b1 * *m + (1.0f - b1) * gg;
	float vv = b2 * *v + (1.0f - b2) * (gg * gg);
	float mhat = mm / bc1;
	float vhat = vv / bc2;
	*m = mm;
	*v = vv;
	*w = ww - lr * (mhat / (sqrtf(vhat) + eps));
}

/* Layer steps of an MLP (see gk_bias_act, gk_relu_grad, gk_softmax_xent). */

/* gk_bias_grad's order of addition, the same on every backend: each run of this many rows is
 * summed in row order from 0, and the runs' sums are added in order from 0 (a card sums the
 * runs in parallel, the cpu loop in turn: the same bits). */
#define GK_BIAS_GRAD_CHUNK 32
GK_HD float gk_bias_act_step(float y, float bias, int relu)
{
	float v = y + bias;
	return relu && !(v > 0.0f) ? 0.0f : v;
}

GK_HD float gk_relu_grad_step(float dy, float y)
{
	return y > 0.0f ? dy : 0.0f;
}

/* One row of softmax cross-entropy (see gk_softmax_xent); exp and log are the platform's
 * expf/logf, so backends agree to a few ulp. DZ may equal Z. */
GK_HD float gk_softmax_xent_row(const float *z, int32_t label, size_t cols, float scale, float *dz)
{
	float m = z[0], sum = 0.0f, zl, nan = gk_bits_f32(0x7fc00000u);
	int ok = label >= 0 && (size_t)label < cols;
	for (size_t c = 1; c < cols; c++)
		m = z[c] > m ? z[c] : m;
	for (size_t c = 0; c < cols; c++)
		sum = sum + expf(z[c] - m);
	zl = ok ? z[label] - m : 0.0f;
	if (dz) {
		float inv = 1.0f / sum;
		for (size_t c = 0; c < cols; c++) {
			float p = expf(z[c] - m) * inv;
			float t = ok ? ((int32_t)c == label ? 1.0f : 0.0f) : nan;
			dz[c] = scale * (p - t);
		}
	}
	return ok ? logf(sum) - zl : nan;
}

/* The loss scaler's rule after a step (gk_amp_update): PyTorch GradScaler's, plus AdamW's
 * step count and bias corrections for the next step (pow in double, as gk_adamw's host side). */
GK_HD void gk_amp_step(gk_amp_t *a)
{
	if (a->found) {
		a->skipped++;
		a->good = 0;
		if (a->dynamic && a->scale * 0.5f >= a->min)
			a->scale = a->scale * 0.5f;
	} else {
		a->steps++;
		if (a->dynamic && ++a->good >= a->window) {
			a->good = 0;
			if (a->scale * 2.0f <= a->max)
				a->scale = a->scale * 2.0f;
		}
		a->bc1 = (float)(1.0 - pow((double)a->beta1, (double)(a->steps + 1)));
		a->bc2 = (float)(1.0 - pow((double)a->beta2, (double)(a->steps + 1)));
	}
	a->found = 0;
}

/* ---- language-model layers ---- */

/* RoPE's angle for pair J of ROT_DIM at position POS, in double so that every backend rounds
 * the same cos and sin to f32 (an f32 angle at position 4096 is off by 2e-4 rad). */
GK_HD double gk_rope_angle(int32_t pos, float freq_scale, float freq_base, int j, int rot_dim)
{
	return ((double)pos * (double)freq_scale) *
	       pow((double)freq_base, (double)(-2 * j) / (double)rot_dim);
}

/* SiLU (the swish gate of SwiGLU): g * sigmoid(g) */
GK_HD float gk_silu(float g)
{
	return g / (1.0f + expf(-g));
}

#endif
