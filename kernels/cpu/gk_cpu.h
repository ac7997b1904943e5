/* gk_cpu.h - what the cpu backend's files share (internal) */
#ifndef GK_CPU_H
#define GK_CPU_H

#include "kernels/gk_backend.h"

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

#endif
