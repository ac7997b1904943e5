/* gk_cpu.h - what the cpu backend's files share (internal) */
#ifndef GK_CPU_H
#define GK_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gk_backend.h"
#include "kernels/gk_scalar.h"

/* Element i of an f32, f16 or bf16 array, as f32 (the rounding of gk_scalar.h). */
static inline float gk_cpu_ld(gk_dtype_t t, const void *p, size_t i)
{
	switch (t) {
	case GK_F16:
		return gk_sw_f16_to_f32(((const uint16_t *)p)[i]);
	case GK_BF16:
		return gk_sw_bf16_to_f32(((const uint16_t *)p)[i]);
	default:
		return ((const float *)p)[i];
	}
}

/* Element i of an f32, f16 or bf16 array set to v (rounded to nearest even). */
static inline void gk_cpu_st(gk_dtype_t t, void *p, size_t i, float v)
{
	switch (t) {
	case GK_F16:
		((uint16_t *)p)[i] = gk_sw_f32_to_f16(v);
		break;
	case GK_BF16:
		((uint16_t *)p)[i] = gk_sw_f32_to_bf16(v);
		break;
	default:
		((float *)p)[i] = v;
	}
}

int gk_cpu_fail(void *ctx, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int gk_cpu_sgemm(void *ctx, int ta, int tb, int m, int n, int k, float alpha, const float *a,
		 int lda, const float *b, int ldb, float beta, float *c, int ldc, gk_stream_t *s);

/* mixed precision: gk_cpu_amp.c */
int gk_cpu_gemm(void *ctx, const gk_gemm_t *p, gk_stream_t *s);
int gk_cpu_amp_scale(void *ctx, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
		     gk_stream_t *s);
int gk_cpu_adamw_amp(void *ctx, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		     float *v, gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *grad, size_t n,
		     gk_stream_t *s);
int gk_cpu_amp_update(void *ctx, gk_amp_t *amp, gk_stream_t *s);

/* language-model layers: gk_cpu_llm.c */
int gk_cpu_qmatmul(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
		   int n, float *y, int ldy, gk_stream_t *s);
int gk_cpu_qget_rows(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
		     const int32_t *ids, int n, float *out, gk_stream_t *s);
int gk_cpu_rmsnorm(void *ctx, float *y, const float *x, const float *w, int n, int dim, float eps,
		   gk_stream_t *s);
int gk_cpu_rope(void *ctx, float *x, const int32_t *pos, int n, int nheads, int head_dim,
		int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s);
int gk_cpu_swiglu(void *ctx, float *out, const float *gate, const float *up, size_t n,
		  gk_stream_t *s);
int gk_cpu_add(void *ctx, float *y, const float *x, size_t n, gk_stream_t *s);
int gk_cpu_add_bias(void *ctx, float *x, const float *bias, int n, int cols, gk_stream_t *s);
int gk_cpu_kv_write(void *ctx, gk_dtype_t kv_t, void *cache, const int32_t *slots, const float *src,
		    int n, int row, gk_stream_t *s);
int gk_cpu_attention(void *ctx, const gk_attn_t *p, gk_stream_t *s);

#endif
