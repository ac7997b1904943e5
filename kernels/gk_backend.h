/* gk_backend.h - the function table every kernels backend provides (internal)
 *
 * loader.c validates arguments and then calls through this table, so backends may
 * assume: valid dtype/op/kind enums, non-NULL pointers, n > 0, 1 <= nsrc <= 16.
 * Every entry returns 0, or -1 with errno set and a lowercase message written to the
 * error buffer handed to open() (GK_ERRLEN bytes, owned by the loader).
 * A GPU backend is a shared object exporting GK_PLUGIN_SYMBOL, a function returning its
 * table; the table's abi must equal GK_ABI_VERSION.
 */
#ifndef GK_BACKEND_H
#define GK_BACKEND_H

#include "gpool/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GK_ABI_VERSION	 6
#define GK_ERRLEN	 256
#define GK_PLUGIN_SYMBOL "gk_plugin_ops"

/* One word pattern of the memory test: word(i) = f(kind, ...) ^ (invert ? ~0 : 0). */
typedef struct {
	int kind; /* GK_MTW_* */
	uint32_t value;
	uint64_t seed;
	int invert;
} gk_mt_word_t;

enum { GK_MTW_CONST = 0, GK_MTW_WALK = 1, GK_MTW_ADDRESS = 2, GK_MTW_RANDOM = 3 };

struct gk_ops {
	int abi;
	const char *name;
	int (*open)(int device, char *err, void **ctx);
	void (*close)(void *ctx);
	int (*device_info)(void *ctx, gk_device_info_t *info);

	int (*dev_alloc)(void *ctx, size_t bytes, void **p);
	int (*dev_free)(void *ctx, void *p);
	int (*host_alloc)(void *ctx, size_t bytes, void **p);
	int (*host_free)(void *ctx, void *p);
	int (*memset)(void *ctx, void *dst, int byte, size_t bytes, gk_stream_t *s);

	int (*stream_create)(void *ctx, gk_stream_t **s);
	int (*stream_destroy)(void *ctx, gk_stream_t *s);
	int (*stream_sync)(void *ctx, gk_stream_t *s);
	int (*event_create)(void *ctx, gk_event_t **e);
	int (*event_destroy)(void *ctx, gk_event_t *e);
	int (*event_record)(void *ctx, gk_event_t *e, gk_stream_t *s);
	int (*event_sync)(void *ctx, gk_event_t *e);
	int (*stream_wait_event)(void *ctx, gk_stream_t *s, gk_event_t *e);
	int (*event_elapsed)(void *ctx, gk_event_t *a, gk_event_t *b, float *ms);
	int (*copy_async)(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind,
			  gk_stream_t *s);
	int (*copy)(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind);

	int (*reduce)(void *ctx, gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs,
		      int nsrc, size_t n, gk_stream_t *s);
	int (*cast)(void *ctx, gk_dtype_t dt, void *dst, gk_dtype_t st, const void *src, size_t n,
		    gk_stream_t *s);
	int (*scale)(void *ctx, gk_dtype_t t, void *dst, const void *src, double alpha, size_t n,
		     gk_stream_t *s);
	int (*find_nonfinite)(void *ctx, gk_dtype_t t, const void *buf, size_t n, uint32_t *dflag,
			      gk_stream_t *s);
	int (*sgd)(void *ctx, const gk_sgd_t *p, float *w, float *v, gk_dtype_t gt,
		   const void *grad, size_t n, gk_stream_t *s);
	int (*adamw)(void *ctx, const gk_adamw_t *p, float bc1, float bc2, float *w, float *m,
		     float *v, gk_dtype_t gt, const void *grad, size_t n, gk_stream_t *s);

	/* One synchronous memtest step over NWORDS 32-bit words: if CHECK, count words that
	 * differ from it into *errors; then if WRITE, store it. */
	int (*mt_step)(void *ctx, uint32_t *buf, size_t nwords, const gk_mt_word_t *check,
		       const gk_mt_word_t *write, uint64_t *errors);
	int (*bw_read)(void *ctx, const void *buf, size_t bytes, gk_stream_t *s);
	int (*bw_write)(void *ctx, void *buf, size_t bytes, gk_stream_t *s);
	int (*bw_copy)(void *ctx, void *dst, const void *src, size_t bytes, gk_stream_t *s);
	size_t (*fma_scratch_bytes)(void *ctx);
	int (*fma)(void *ctx, gk_dtype_t t, void *buf, int iters, double *flops, gk_stream_t *s);
	int (*sgemm)(void *ctx, int ta, int tb, int m, int n, int k, float alpha, const float *a,
		     int lda, const float *b, int ldb, float beta, float *c, int ldc,
		     gk_stream_t *s);
	/* 1: E has completed, 0: not yet, -1: error */
	int (*event_query)(void *ctx, gk_event_t *e);
	/* 1: P is device (or managed) memory of this runtime, 0: host or unknown */
	int (*is_device_ptr)(void *ctx, const void *p);
	/* neural-network layers (abi 3): sizes > 0, pointers valid */
	int (*bias_act)(void *ctx, float *y, const float *bias, size_t rows, size_t cols,
			gk_act_t act, gk_stream_t *s);
	int (*relu_grad)(void *ctx, float *dy, const float *y, size_t n, gk_stream_t *s);
	int (*bias_grad)(void *ctx, const float *dy, float *db, size_t rows, size_t cols,
			 float alpha, gk_stream_t *s);
	int (*softmax_xent)(void *ctx, const float *z, const int32_t *labels, size_t rows,
			    size_t cols, float scale, float *loss, float *dz, gk_stream_t *s);
	/* mixed precision (abi 4): validated as gpool/kernels.h says */
	int (*gemm)(void *ctx, const gk_gemm_t *p, gk_stream_t *s);
	int (*amp_scale)(void *ctx, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
			 gk_stream_t *s);
	int (*adamw_amp)(void *ctx, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
			 float *v, gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *grad,
			 size_t n, gk_stream_t *s);
	int (*amp_update)(void *ctx, gk_amp_t *amp, gk_stream_t *s);
	/* graphs: NULL where the backend has none */
	int (*graph_begin)(void *ctx, gk_stream_t *s);
	int (*graph_end)(void *ctx, gk_stream_t *s, gk_graph_t **g);
	int (*graph_launch)(void *ctx, gk_graph_t *g, gk_stream_t *s);
	int (*graph_destroy)(void *ctx, gk_graph_t *g);
	/* language-model layers (abi 5): validated as gpool/kernels.h says (sizes > 0, a valid
	 * qtype, cols a multiple of its block, rot_dim even and <= head_dim, n_heads a multiple
	 * of n_kv_heads, head_dim <= GK_ATTN_MAX_HEAD_DIM, kv_t f32 or f16); the int arrays'
	 * contents are not (they are device memory) */
	int (*qmatmul)(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
		       int n, float *y, int ldy, gk_stream_t *s);
	int (*qget_rows)(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
			 const int32_t *ids, int n, float *out, gk_stream_t *s);
	int (*rmsnorm)(void *ctx, float *y, const float *x, const float *w, int n, int dim,
		       float eps, gk_stream_t *s);
	int (*rope)(void *ctx, float *x, const int32_t *pos, int n, int nheads, int head_dim,
		    int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s);
	int (*swiglu)(void *ctx, float *out, const float *gate, const float *up, size_t n,
		      gk_stream_t *s);
	int (*add)(void *ctx, float *y, const float *x, size_t n, gk_stream_t *s);
	int (*add_bias)(void *ctx, float *x, const float *bias, int n, int cols, gk_stream_t *s);
	int (*kv_write)(void *ctx, gk_dtype_t kv_t, void *cache, const int32_t *slots,
			const float *src, int n, int row, gk_stream_t *s);
	int (*attention)(void *ctx, const gk_attn_t *p, gk_stream_t *s);
};

/* The largest head the attention kernels take (their per-thread accumulators are sized by it). */
#define GK_ATTN_MAX_HEAD_DIM 256

typedef const struct gk_ops *(*gk_plugin_f)(void);

extern const struct gk_ops gk_cpu_ops;

#ifdef __cplusplus
}
#endif
#endif
