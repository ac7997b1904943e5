/* gk_gpu.h - state and helpers shared by the GPU backend's source files (internal) */
#ifndef GK_GPU_H
#define GK_GPU_H

#include <errno.h>

#include "kernels/gpu/gk_port.h"
#include "kernels/gk_backend.h"

typedef struct {
	char *err;
	int device;
	int sms;
	int max_threads_per_sm;
	int waves; /* grid-stride grids are this many full waves of resident blocks */
	unsigned long long *counter; /* device word for memtest error counts */
	uint32_t *sink;		     /* device word the read-bandwidth kernel may write */
	/* BLAS loaded with dlopen: cuBLAS / rocBLAS, NULL when absent */
	void *blas_dl;
	void *blas_handle;
	int (*blas_sgemm)(void *, int, int, int, int, int, const float *, const float *, int,
			  const float *, int, const float *, float *, int);
	int (*blas_set_stream)(void *, gkStream_t);
	int (*blas_destroy)(void *);
	int blas_tried;
	int no_blas;
	void *lt; /* cuBLASLt (gemm_ex.cu), NULL when absent */
	int lt_tried;
	void *llm_ws; /* attention's split partials (llm.cu), grown on demand */
	size_t llm_ws_bytes;
} gpu_t;

int gk_gpu_fail(gpu_t *g, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Returns 0 if RC is success, else records WHAT and the runtime's message. */
int gk_gpu_check(gpu_t *g, gkError_t rc, const char *what);
/* Checks the launch that just happened. */
int gk_gpu_launched(gpu_t *g, const char *what);
/* Number of blocks for a grid-stride loop over N items with THREADS threads a block. */
unsigned gk_gpu_blocks(gpu_t *g, size_t n, unsigned threads);

extern "C" {
int gk_gpu_reduce(void *ctx, gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs,
		  int nsrc, size_t n, gk_stream_t *s);
int gk_gpu_cast(void *ctx, gk_dtype_t dt, void *dst, gk_dtype_t st, const void *src, size_t n,
		gk_stream_t *s);
int gk_gpu_scale(void *ctx, gk_dtype_t t, void *dst, const void *src, double alpha, size_t n,
		 gk_stream_t *s);
int gk_gpu_find_nonfinite(void *ctx, gk_dtype_t t, const void *buf, size_t n, uint32_t *dflag,
			  gk_stream_t *s);
int gk_gpu_sgd(void *ctx, const gk_sgd_t *p, float *w, float *v, gk_dtype_t gt, const void *grad,
	       size_t n, gk_stream_t *s);
int gk_gpu_adamw(void *ctx, const gk_adamw_t *p, float bc1, float bc2, float *w, float *m, float *v,
		 gk_dtype_t gt, const void *grad, size_t n, gk_stream_t *s);
int gk_gpu_mt_step(void *ctx, uint32_t *buf, size_t nwords, const gk_mt_word_t *check,
		   const gk_mt_word_t *write, uint64_t *errors);
int gk_gpu_bw_read(void *ctx, const void *buf, size_t bytes, gk_stream_t *s);
int gk_gpu_bw_write(void *ctx, void *buf, size_t bytes, gk_stream_t *s);
int gk_gpu_bw_copy(void *ctx, void *dst, const void *src, size_t bytes, gk_stream_t *s);
size_t gk_gpu_fma_scratch_bytes(void *ctx);
int gk_gpu_fma(void *ctx, gk_dtype_t t, void *buf, int iters, double *flops, gk_stream_t *s);
int gk_gpu_sgemm(void *ctx, int ta, int tb, int m, int n, int k, float alpha, const float *a,
		 int lda, const float *b, int ldb, float beta, float *c, int ldc, gk_stream_t *s);
int gk_gpu_bias_act(void *ctx, float *y, const float *bias, size_t rows, size_t cols, gk_act_t act,
		    gk_stream_t *s);
int gk_gpu_relu_grad(void *ctx, float *dy, const float *y, size_t n, gk_stream_t *s);
int gk_gpu_bias_grad(void *ctx, const float *dy, float *db, size_t rows, size_t cols, float alpha,
		     gk_stream_t *s);
int gk_gpu_gemm(void *ctx, const gk_gemm_t *p, gk_stream_t *s);
int gk_gpu_amp_scale(void *ctx, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
		     gk_stream_t *s);
int gk_gpu_adamw_amp(void *ctx, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		     float *v, gk_dtype_t wt, void *wc, gk_dtype_t gt, const void *grad, size_t n,
		     gk_stream_t *s);
int gk_gpu_amp_update(void *ctx, gk_amp_t *amp, gk_stream_t *s);
int gk_gpu_graph_begin(void *ctx, gk_stream_t *s);
int gk_gpu_graph_end(void *ctx, gk_stream_t *s, gk_graph_t **out);
int gk_gpu_graph_launch(void *ctx, gk_graph_t *gr, gk_stream_t *s);
int gk_gpu_graph_destroy(void *ctx, gk_graph_t *gr);
int gk_gpu_softmax_xent(void *ctx, const float *z, const int32_t *labels, size_t rows, size_t cols,
			float scale, float *loss, float *dz, gk_stream_t *s);
/* language-model layers: llm.cu */
int gk_gpu_qmatmul(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
		   int n, float *y, int ldy, gk_stream_t *s);
int gk_gpu_qget_rows(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
		     const int32_t *ids, int n, float *out, gk_stream_t *s);
int gk_gpu_rmsnorm(void *ctx, float *y, const float *x, const float *w, int n, int dim, float eps,
		   gk_stream_t *s);
int gk_gpu_rope(void *ctx, float *x, const int32_t *pos, int n, int nheads, int head_dim,
		int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s);
int gk_gpu_swiglu(void *ctx, float *out, const float *gate, const float *up, size_t n,
		  gk_stream_t *s);
int gk_gpu_add(void *ctx, float *y, const float *x, size_t n, gk_stream_t *s);
int gk_gpu_add_bias(void *ctx, float *x, const float *bias, int n, int cols, gk_stream_t *s);
int gk_gpu_kv_write(void *ctx, gk_dtype_t kv_t, void *cache, const int32_t *slots, const float *src,
		    int n, int row, gk_stream_t *s);
int gk_gpu_attention(void *ctx, const gk_attn_t *p, gk_stream_t *s);
}
void gk_gpu_llm_close(gpu_t *g);

#define GK_STREAM(s) ((gkStream_t)(s))

#endif
