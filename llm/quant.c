/* quant.c - f32 rows into GGUF's weight types and back (llm/quant.h). The block layouts are
 * kernels/gk_qblock.h's; the quantizers follow ggml's reference ones (ggml-quants.c:
 * quantize_row_q8_0_ref, q4_0, and the scale searches make_qkx2_quants for q4_K and
 * make_qx_quants for q6_K), written again here from their description. */
#include "llm/quant.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "kernels/gk_qblock.h"
#include "kernels/gk_scalar.h"

typedef void (*qrow_f)(const float *x, void *dst, size_t nblocks);
typedef void (*dqrow_f)(const void *src, float *y, size_t nblocks);

/* X rounded half to even, for |X| < 2^22 (ggml's nearest_int: adding 1.5 * 2^23 leaves the
 * integer in the low mantissa bits). Outside that range, NaN included, some int, never UB:
 * callers clamp. A call to lrintf here cost more than the whole search around it. */
static int nearest(float x)
{
	float v = x + 12582912.0f;
	int32_t i;
	memcpy(&i, &v, sizeof i);
	return (i & 0x007fffff) - 0x00400000;
}

/* ---- plain types ---- */

static void q_f32(const float *x, void *dst, size_t n)
{
	memcpy(dst, x, n * sizeof *x);
}

static void dq_f32(const void *src, float *y, size_t n)
{
	memcpy(y, src, n * sizeof *y);
}

static void q_f16(const float *x, void *dst, size_t n)
{
	uint16_t *h = dst;
	for (size_t i = 0; i < n; i++)
		h[i] = gk_sw_f32_to_f16(x[i]);
}

static void dq_f16(const void *src, float *y, size_t n)
{
	const uint16_t *h = src;
	for (size_t i = 0; i < n; i++)
		y[i] = gk_sw_f16_to_f32(h[i]);
}

static void q_bf16(const float *x, void *dst, size_t n)
{
	uint16_t *h = dst;
	for (size_t i = 0; i < n; i++)
		h[i] = gk_sw_f32_to_bf16(x[i]);
}

static void dq_bf16(const void *src, float *y, size_t n)
{
	const uint16_t *h = src;
	for (size_t i = 0; i < n; i++)
		y[i] = gk_sw_bf16_to_f32(h[i]);
}

/* ---- q8_0, q4_0 ---- */

static void q_q8_0(const float *x, void *dst, size_t nb)
{
	gk_block_q8_0_t *b = dst;
	for (size_t i = 0; i < nb; i++, x += GK_QK8_0) {
		float amax = 0;
		for (int j = 0; j < GK_QK8_0; j++)
			amax = fmaxf(amax, fabsf(x[j]));
		float d = amax / 127, id = d ? 1 / d : 0;
		b[i].d = gk_sw_f32_to_f16(d);
		for (int j = 0; j < GK_QK8_0; j++)
			b[i].qs[j] = (int8_t)roundf(x[j] * id);
	}
}

static void q_q4_0(const float *x, void *dst, size_t nb)
{
	gk_block_q4_0_t *b = dst;
	for (size_t i = 0; i < nb; i++, x += GK_QK4_0) {
		float amax = 0, max = 0;
		for (int j = 0; j < GK_QK4_0; j++)
			if (amax < fabsf(x[j])) {
				amax = fabsf(x[j]);
				max = x[j];
			}
		float d = max / -8, id = d ? 1 / d : 0;
		b[i].d = gk_sw_f32_to_f16(d);
		for (int j = 0; j < GK_QK4_0 / 2; j++) {
			int lo = (int)(int8_t)(x[j] * id + 8.5f),
			    hi = (int)(int8_t)(x[j + 16] * id + 8.5f);
			lo = lo > 15 ? 15 : lo;
			hi = hi > 15 ? 15 : hi;
			b[i].qs[j] = (uint8_t)(lo | (hi << 4));
		}
	}
}

#define DQ_BLOCKS(NAME, BLOCK_T, QK, VALUE)                                                        \
	static void NAME(const void *src, float *y, size_t nb)                                     \
	{                                                                                          \
		const BLOCK_T *b = src;                                                            \
		for (size_t i = 0; i < nb; i++)                                                    \
			for (int j = 0; j < (QK); j++)                                             \
				*y++ = VALUE(&b[i], j);                                            \
	}
DQ_BLOCKS(dq_q8_0, gk_block_q8_0_t, GK_QK8_0, gk_q8_0_value)
DQ_BLOCKS(dq_q4_0, gk_block_q4_0_t, GK_QK4_0, gk_q4_0_value)
DQ_BLOCKS(dq_q4_K, gk_block_q4_K_t, GK_QK_K, gk_q4_K_value)
DQ_BLOCKS(dq_q6_K, gk_block_q6_K_t, GK_QK_K, gk_q6_K_value)

/* ---- q4_K ---- */

/* X[N] ~ scale * L + min with L in 0..NMAX, min <= 0, weights W: least squares over a few
 * candidate scales (ggml's make_qkx2_quants). Returns the scale; *NEG_MIN is -min. */
static float scale_min_search(int n, int nmax, const float *x, const float *w, uint8_t *L,
			      float *neg_min)
{
	float min = x[0], max = x[0], sum_w = 0, sum_x = 0;
	for (int i = 0; i < n; i++) {
		min = fminf(min, x[i]);
		max = fmaxf(max, x[i]);
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, (size_t)n);
		*neg_min = -min;
		return 0;
	}
	float iscale = (float)nmax / (max - min), scale = 1 / iscale, best = 0;
	for (int i = 0; i < n; i++) {
		int l = nearest(iscale * (x[i] - min));
		L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
		float diff = scale * L[i] + min - x[i];
		best += w[i] * diff * diff;
	}
	uint8_t Laux[GK_QK_K];
	for (int is = 0; is <= 20; is++) {
		float isc = (-1.0f + 0.1f * (float)is + (float)nmax) / (max - min);
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		for (int i = 0; i < n; i++) {
			int l = nearest(isc * (x[i] - min));
			Laux[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
			sum_l += w[i] * Laux[i];
			sum_l2 += w[i] * Laux[i] * Laux[i];
			sum_xl += w[i] * Laux[i] * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (D <= 0)
			continue;
		float s = (sum_w * sum_xl - sum_x * sum_l) / D,
		      m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
		if (m > 0) {
			m = 0;
			s = sum_xl / sum_l2;
		}
		float err = 0;
		for (int i = 0; i < n; i++) {
			float diff = s * Laux[i] + m - x[i];
			err += w[i] * diff * diff;
		}
		if (err < best) {
			memcpy(L, Laux, (size_t)n);
			best = err;
			scale = s;
			min = m;
		}
	}
	*neg_min = -min;
	return scale;
}

static void pack_q4k_scales(uint8_t *q, const uint8_t *ls, const uint8_t *lm)
{
	memset(q, 0, 12);
	for (int j = 0; j < 8; j++) {
		if (j < 4) {
			q[j] = ls[j];
			q[j + 4] = lm[j];
		} else {
			q[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
			q[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
			q[j] |= (uint8_t)((lm[j] >> 4) << 6);
		}
	}
}

static void q_q4_K_block(const float *x, gk_block_q4_K_t *b)
{
	uint8_t L[GK_QK_K], ls[8], lm[8];
	float w[32], scales[8], mins[8], max_scale = 0, max_min = 0;
	for (int j = 0; j < 8; j++) {
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += x[32 * j + l] * x[32 * j + l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av_x + fabsf(x[32 * j + l]);
		scales[j] = scale_min_search(32, 15, x + 32 * j, w, L + 32 * j, &mins[j]);
		max_scale = fmaxf(max_scale, scales[j]);
		max_min = fmaxf(max_min, mins[j]);
	}
	float inv_scale = max_scale > 0 ? 63 / max_scale : 0,
	      inv_min = max_min > 0 ? 63 / max_min : 0;
	for (int j = 0; j < 8; j++) {
		int s = nearest(inv_scale * scales[j]), m = nearest(inv_min * mins[j]);
		ls[j] = (uint8_t)(s < 0 ? 0 : s > 63 ? 63 : s);
		lm[j] = (uint8_t)(m < 0 ? 0 : m > 63 ? 63 : m);
	}
	pack_q4k_scales(b->scales, ls, lm);
	b->d = gk_sw_f32_to_f16(max_scale / 63);
	b->dmin = gk_sw_f32_to_f16(max_min / 63);
	/* the values again, against the scales as they were stored */
	for (int j = 0; j < 8; j++) {
		uint8_t sc, m;
		gk_q4k_scale_min(j, b->scales, &sc, &m);
		float d = gk_sw_f16_to_f32(b->d) * sc, dm = gk_sw_f16_to_f32(b->dmin) * m;
		for (int l = 0; l < 32; l++) {
			int q = d ? nearest((x[32 * j + l] + dm) / d) : 0;
			L[32 * j + l] = (uint8_t)(q < 0 ? 0 : q > 15 ? 15 : q);
		}
	}
	for (int g = 0; g < 4; g++)
		for (int l = 0; l < 32; l++)
			b->qs[32 * g + l] = (uint8_t)(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
}

static void q_q4_K(const float *x, void *dst, size_t nb)
{
	for (size_t i = 0; i < nb; i++)
		q_q4_K_block(x + i * GK_QK_K, (gk_block_q4_K_t *)dst + i);
}

/* ---- q6_K ---- */

/* X[N] ~ scale * (L - NMAX), L in 0..2 NMAX - 1, weights x^2: the scale of least error over a
 * few candidates around -NMAX / (the value of largest magnitude) (ggml's make_qx_quants). */
static float scale_search(int n, int nmax, const float *x, uint8_t *L)
{
	float amax = 0, max = 0;
	for (int i = 0; i < n; i++)
		if (amax < fabsf(x[i])) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	if (amax < 1e-15f) {
		memset(L, 0, (size_t)n);
		return 0;
	}
	float best_scale = 0, best = -1;
	for (int is = -9; is <= 9; is++) {
		float iscale = -((float)nmax + 0.1f * (float)is) / max, sumlx = 0, suml2 = 0;
		uint8_t Laux[16];
		for (int i = 0; i < n; i++) {
			int l = nearest(iscale * x[i]);
			l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
			Laux[i] = (uint8_t)(l + nmax);
			float w = x[i] * x[i];
			sumlx += w * x[i] * (float)l;
			suml2 += w * (float)l * (float)l;
		}
		/* maximizing sumlx^2 / suml2 minimizes the weighted error at scale sumlx / suml2 */
		if (suml2 > 0 && (best < 0 || sumlx * sumlx > best * suml2)) {
			best_scale = sumlx / suml2;
			best = best_scale * sumlx;
			memcpy(L, Laux, (size_t)n);
		}
	}
	return best_scale;
}

static void q_q6_K_block(const float *x, gk_block_q6_K_t *b)
{
	uint8_t L[GK_QK_K];
	float scales[16], max_scale = 0, max_abs = 0;
	for (int ib = 0; ib < 16; ib++) {
		scales[ib] = scale_search(16, 32, x + 16 * ib, L + 16 * ib);
		if (fabsf(scales[ib]) > max_abs) {
			max_abs = fabsf(scales[ib]);
			max_scale = scales[ib];
		}
	}
	memset(b, 0, sizeof *b);
	if (max_abs == 0)
		return; /* all zero: d = 0 */
	float iscale = -128 / max_scale;
	b->d = gk_sw_f32_to_f16(1 / iscale);
	for (int ib = 0; ib < 16; ib++) {
		int s = nearest(iscale * scales[ib]);
		b->scales[ib] = (int8_t)(s > 127 ? 127 : s < -128 ? -128 : s);
	}
	for (int ib = 0; ib < 16; ib++) {
		float d = gk_sw_f16_to_f32(b->d) * b->scales[ib];
		for (int l = 0; l < 16; l++) {
			int q = d ? nearest(x[16 * ib + l] / d) : 0;
			L[16 * ib + l] = (uint8_t)((q < -32 ? -32 : q > 31 ? 31 : q) + 32);
		}
	}
	for (int h = 0; h < 2; h++) {
		const uint8_t *Lh = L + 128 * h;
		uint8_t *ql = b->ql + 64 * h, *qh = b->qh + 32 * h;
		for (int l = 0; l < 32; l++) {
			ql[l] = (uint8_t)((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
			ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
			qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
					  ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
		}
	}
}

static void q_q6_K(const float *x, void *dst, size_t nb)
{
	for (size_t i = 0; i < nb; i++)
		q_q6_K_block(x + i * GK_QK_K, (gk_block_q6_K_t *)dst + i);
}

/* ---- the table ---- */

static const struct {
	gk_qtype_t t;
	qrow_f q;
	dqrow_f dq;
	double rms; /* the bound tested; the largest measured (unit.llm.quant: 64 Ki normal values
		     * at scales 0.02, 1 and 300) in the comment */
} ops[] = {
    {GK_Q_F32, q_f32, dq_f32, 0},	  {GK_Q_F16, q_f16, dq_f16, 0.0003}, /* measured 0.00021 */
    {GK_Q_BF16, q_bf16, dq_bf16, 0.0025},				     /* measured 0.00166 */
    {GK_Q_Q8_0, q_q8_0, dq_q8_0, 0.0065},				     /* measured 0.00538 */
    {GK_Q_Q4_0, q_q4_0, dq_q4_0, 0.10},					     /* measured 0.0864 */
    {GK_Q_Q4_K, q_q4_K, dq_q4_K, 0.08},					     /* measured 0.0715 */
    {GK_Q_Q6_K, q_q6_K, dq_q6_K, 0.022},				     /* measured 0.0178 */
};

static int find(gk_qtype_t t, size_t n)
{
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (ops[i].t == t)
			return n % (size_t)gk_qtype_block(t) ? -1 : (int)i;
	return -1;
}

int gl_quantize_row(gk_qtype_t t, const float *src, void *dst, size_t n)
{
	int i = find(t, n);
	if (i < 0)
		return errno = EINVAL, -1;
	ops[i].q(src, dst, n / (size_t)gk_qtype_block(t));
	return 0;
}

int gl_dequantize_row(gk_qtype_t t, const void *src, float *dst, size_t n)
{
	int i = find(t, n);
	if (i < 0)
		return errno = EINVAL, -1;
	ops[i].dq(src, dst, n / (size_t)gk_qtype_block(t));
	return 0;
}

double gl_quant_rms_bound(gk_qtype_t t)
{
	int i = find(t, 0);
	return i < 0 ? -1 : ops[i].rms;
}
