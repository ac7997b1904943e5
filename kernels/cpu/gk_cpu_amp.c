/* gk_cpu_amp.c - the cpu backend's mixed-precision entries (gpool/kernels.h): gk_gemm as the
 * reference the cards are checked against (inputs widened exactly to f32, the f32 product,
 * the epilogue in f32, one rounding to the output type), the device-side loss scaler and the
 * fused AdamW step writing master and compute copies */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gk_cpu.h"
#include "kernels/gk_scalar.h"

/* a rows x cols column-major matrix of type T widened to a packed f32 one */
static float *widen(gk_dtype_t t, const void *p, int rows, int cols, int ld_)
{
	float *w = malloc((size_t)rows * cols * sizeof(float) + 1);
	if (!w)
		return NULL;
	for (int j = 0; j < cols; j++)
		for (int i = 0; i < rows; i++)
			w[i + (size_t)j * rows] = gk_cpu_ld(t, p, i + (size_t)j * ld_);
	return w;
}

int gk_cpu_gemm(void *ctx, const gk_gemm_t *p, gk_stream_t *s)
{
	int m = p->m, n = p->n, k = p->k;
	int ra = p->trans_a ? k : m, ca = p->trans_a ? m : k;
	int rb = p->trans_b ? n : k, cb = p->trans_b ? k : n;
	float *a = NULL, *b = NULL, *c = malloc((size_t)m * n * sizeof(float));
	if (c && k > 0) {
		a = widen(p->ab_t, p->a, ra, ca, p->lda);
		b = widen(p->ab_t, p->b, rb, cb, p->ldb);
	}
	if (!c || (k > 0 && (!a || !b))) {
		free(a), free(b), free(c);
		return gk_cpu_fail(ctx, ENOMEM, "gemm: out of memory");
	}
	if (k > 0)
		gk_cpu_sgemm(ctx, p->trans_a, p->trans_b, m, n, k, p->alpha, a, ra, b, rb, 0.0f, c,
			     m, s);
	else
		memset(c, 0, (size_t)m * n * sizeof(float));
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			size_t o = i + (size_t)j * p->ldc;
			float v = c[i + (size_t)j * m];
			if (p->beta != 0.0f)
				v = v + p->beta * gk_cpu_ld(p->c_t, p->c, o);
			if (p->epi == GK_EPI_BIAS || p->epi == GK_EPI_RELU_BIAS)
				v = gk_bias_act_step(v, gk_cpu_ld(p->c_t, p->bias, (size_t)i),
						     p->epi == GK_EPI_RELU_BIAS);
			else if (p->epi == GK_EPI_DRELU)
				v = gk_relu_grad_step(v, gk_cpu_ld(p->c_t, p->aux, o));
			gk_cpu_st(p->c_t, p->c, o, v);
		}
	if (p->epi == GK_EPI_BGRADB)
		for (int j = 0; j < n; j++) {
			float sum = 0.0f;
			for (int l = 0; l < k; l++)
				sum += p->trans_b ? b[j + (size_t)l * rb] : b[l + (size_t)j * rb];
			gk_cpu_st(p->c_t, p->bias, (size_t)j, sum);
		}
	free(a), free(b), free(c);
	return 0;
}

int gk_cpu_amp_scale(void *ctx, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
		     gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t i = 0; i < n; i++)
		gk_cpu_st(t, buf, i, gk_cpu_ld(t, buf, i) * amp->scale);
	return 0;
}

int gk_cpu_adamw_amp(void *ctx, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		     float *v, gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *grad, size_t n,
		     gk_stream_t *s)
{
	(void)ctx, (void)s;
	if (amp->found)
		return 0;
	float gs = p->grad_scale / amp->scale;
	for (size_t i = 0; i < n; i++) {
		gk_adamw_step(p->lr, p->beta1, p->beta2, p->eps, p->weight_decay, gs, amp->bc1,
			      amp->bc2, gk_cpu_ld(gt, grad, i), &w[i], &m[i], &v[i]);
		if (wc)
			gk_cpu_st(wc_t, wc, i, w[i]);
	}
	return 0;
}

int gk_cpu_amp_update(void *ctx, gk_amp_t *amp, gk_stream_t *s)
{
	(void)ctx, (void)s;
	gk_amp_step(amp);
	return 0;
}
