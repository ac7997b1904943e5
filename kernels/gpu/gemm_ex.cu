/* gemm_ex.cu - gk_gemm on a card: f16/bf16 (and TF32) products on the tensor cores with f32
 * accumulation, the bias + ReLU (forward) and bias-gradient (backward) epilogues fused into
 * the product.
 *
 * CUDA: cuBLASLt (libcublasLt, loaded with dlopen as gemm.cu loads cuBLAS; the few types,
 * constants and functions used are declared here with the values of CUDA 13's cublasLt.h, so
 * this builds without the header). A plan (descriptor, layouts, the heuristic's algorithm) is
 * kept per shape, types, epilogue and pointer alignment, so a step's products cost one
 * cublasLtMatmul each after the first step (GPOOL_KERNELS_LT_TUNE=1: the heuristic's best few
 * timed on the shape when the plan is made, the fastest kept). An epilogue cuBLASLt offers no
 * algorithm for, and GK_EPI_DRELU (cuBLASLt's DRELU reads a bit mask of its own RELU_AUX forward,
 * not the activation that gpool keeps), runs as a kernel of amp.cu after the product. Without
 * cuBLASLt: cublasGemmEx and the epilogue kernels. HIP: rocblas_gemm_ex (f32 accumulation) and the
 * epilogue kernels. Debian ships no rocBLAS and no AMD card was at hand: that path is compiled,
 * never run. Plain f32 (GK_MATH_DEFAULT) stays cuBLAS's / rocBLAS's sgemm (gemm.cu), as gk_sgemm.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu/gk_gpu.h"

int gk_gpu_blas_load(gpu_t *g);
int gk_gpu_epilogue(gpu_t *g, const gk_gemm_t *p, gk_stream_t *s);

/* The type's name for a message: the plugin does not link the host library's dtype.c (a
 * dlopened module sees only its own symbols and libc's). */
static const char *dt_name(gk_dtype_t t)
{
	static const char *const names[] = {"f32", "f16", "bf16", "f64", "i32"};
	static const gk_dtype_t types[] = {GK_F32, GK_F16, GK_BF16, GK_F64, GK_I32};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i] == t)
			return names[i];
	return "?";
}

#ifdef GK_CUDA
/* ---- cuBLASLt, as declared by cublasLt.h (CUDA 13) ---- */
typedef void *lt_handle_t, *lt_desc_t, *lt_layout_t, *lt_pref_t;
typedef struct {
	uint64_t data[8];
} lt_algo_t;
typedef struct {
	lt_algo_t algo;
	size_t workspace;
	int state;
	float waves;
	int reserved[4];
} lt_heur_t;
enum {
	LT_R_32F = 0,
	LT_R_16F = 2,
	LT_R_16BF = 14,
	LT_COMPUTE_32F = 68,
	LT_COMPUTE_32F_FAST_TF32 = 77,
	LT_DESC_TRANSA = 3,
	LT_DESC_TRANSB = 4,
	LT_DESC_EPILOGUE = 7,
	LT_DESC_BIAS_POINTER = 8,
	LT_EPI_DEFAULT = 1,
	LT_EPI_BIAS = 4,
	LT_EPI_RELU_BIAS = 6,
	LT_EPI_BGRADB = 512,
	LT_PREF_MAX_WORKSPACE = 1,
	LT_PREF_ALIGN_A = 5,
	LT_PREF_ALIGN_B = 6,
	LT_PREF_ALIGN_C = 7,
	LT_PREF_ALIGN_D = 8,
};
struct lt_api {
	int (*create)(lt_handle_t *);
	int (*destroy)(lt_handle_t);
	int (*desc_create)(lt_desc_t *, int, int);
	int (*desc_set)(lt_desc_t, int, const void *, size_t);
	int (*desc_destroy)(lt_desc_t);
	int (*layout_create)(lt_layout_t *, int, uint64_t, uint64_t, int64_t);
	int (*layout_destroy)(lt_layout_t);
	int (*pref_create)(lt_pref_t *);
	int (*pref_set)(lt_pref_t, int, const void *, size_t);
	int (*pref_destroy)(lt_pref_t);
	int (*heuristic)(lt_handle_t, lt_desc_t, lt_layout_t, lt_layout_t, lt_layout_t, lt_layout_t,
			 lt_pref_t, int, lt_heur_t *, int *);
	int (*matmul)(lt_handle_t, lt_desc_t, const void *, const void *, lt_layout_t, const void *,
		      lt_layout_t, const void *, const void *, lt_layout_t, void *, lt_layout_t,
		      const lt_algo_t *, void *, size_t, gkStream_t);
};

#define LT_WORKSPACE ((size_t)32 << 20)
#define LT_PLANS     128

typedef struct {
	int ta, tb, m, n, k, ab, ct, epi, math, lda, ldb, ldc;
	uint32_t align; /* alignments of a, b, c, bias: 4 x 8 bits of log2 */
	lt_desc_t desc;
	lt_layout_t la, lb, lc;
	lt_algo_t algo;
	int fused; /* the epilogue is in the product */
} lt_plan_t;

typedef struct {
	void *dl;
	struct lt_api f;
	lt_handle_t h;
	void *ws;
	lt_plan_t plan[LT_PLANS];
	int nplan;
} lt_t;

static const char *lt_libs[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
				"libcublasLt.so", NULL};

/* NULL when the library, a symbol or the handle is missing (then cublasGemmEx serves) */
static lt_t *lt_load(gpu_t *g)
{
	if (g->lt_tried)
		return (lt_t *)g->lt;
	g->lt_tried = 1;
	if (getenv("GPOOL_KERNELS_NO_CUBLASLT"))
		return NULL;
	lt_t *lt = (lt_t *)calloc(1, sizeof(*lt));
	for (int i = 0; lt && lt_libs[i] && !lt->dl; i++)
		lt->dl = dlopen(lt_libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!lt || !lt->dl) {
		free(lt);
		return NULL;
	}
#define SYM(field, name) *(void **)&lt->f.field = dlsym(lt->dl, name)
	SYM(create, "cublasLtCreate");
	SYM(destroy, "cublasLtDestroy");
	SYM(desc_create, "cublasLtMatmulDescCreate");
	SYM(desc_set, "cublasLtMatmulDescSetAttribute");
	SYM(desc_destroy, "cublasLtMatmulDescDestroy");
	SYM(layout_create, "cublasLtMatrixLayoutCreate");
	SYM(layout_destroy, "cublasLtMatrixLayoutDestroy");
	SYM(pref_create, "cublasLtMatmulPreferenceCreate");
	SYM(pref_set, "cublasLtMatmulPreferenceSetAttribute");
	SYM(pref_destroy, "cublasLtMatmulPreferenceDestroy");
	SYM(heuristic, "cublasLtMatmulAlgoGetHeuristic");
	SYM(matmul, "cublasLtMatmul");
#undef SYM
	void **fp = (void **)&lt->f;
	int ok = 1;
	for (size_t i = 0; i < sizeof(lt->f) / sizeof(void *); i++)
		ok = ok && fp[i];
	if (!ok || lt->f.create(&lt->h) != 0 || gkMalloc(&lt->ws, LT_WORKSPACE) != gkSuccess) {
		(void)gkGetLastError();
		if (lt->h && ok)
			lt->f.destroy(lt->h);
		free(lt); /* the library stays mapped, as cuBLAS */
		return NULL;
	}
	g->lt = lt;
	return lt;
}

void gk_gpu_lt_close(gpu_t *g)
{
	lt_t *lt = (lt_t *)g->lt;
	if (!lt)
		return;
	for (int i = 0; i < lt->nplan; i++) {
		lt->f.desc_destroy(lt->plan[i].desc);
		lt->f.layout_destroy(lt->plan[i].la);
		lt->f.layout_destroy(lt->plan[i].lb);
		lt->f.layout_destroy(lt->plan[i].lc);
	}
	lt->f.destroy(lt->h);
	gkFree(lt->ws);
	free(lt);
	g->lt = NULL;
}

static int lt_type(gk_dtype_t t)
{
	return t == GK_F16 ? LT_R_16F : t == GK_BF16 ? LT_R_16BF : LT_R_32F;
}

static uint32_t log2_align(const void *p)
{
	uintptr_t u = (uintptr_t)p;
	uint32_t l = 0;
	while (l < 8 && !(u & ((uintptr_t)1 << l)))
		l++;
	return l; /* 2^l bytes, at most 256 */
}

static int lt_epi(gk_epilogue_t e)
{
	switch (e) {
	case GK_EPI_BIAS:
		return LT_EPI_BIAS;
	case GK_EPI_RELU_BIAS:
		return LT_EPI_RELU_BIAS;
	case GK_EPI_BGRADB:
		return LT_EPI_BGRADB;
	default:
		return LT_EPI_DEFAULT;
	}
}

#define LT_TUNE_ALGOS 8 /* the heuristic's best candidates timed when tuning */
#define LT_TUNE_RUNS  3

/* GPOOL_KERNELS_LT_TUNE=1: time the heuristic's first LT_TUNE_ALGOS algorithms on the plan's
 * own shape (once, when the plan is made; never while a graph is being captured) into scratch
 * outputs, the fastest of LT_TUNE_RUNS runs each, and keep the fastest; else its first. The
 * inputs are the call's own (only read); the product and the bias (gradient) go to scratch,
 * so nothing of the caller's is written. Returns the index chosen (0 where tuning is off or
 * cannot run). */
static int lt_tune(lt_t *lt, const gk_gemm_t *p, lt_plan_t *pl, const lt_heur_t *h, int found,
		   int epi, gkStream_t st)
{
	const char *env = getenv("GPOOL_KERNELS_LT_TUNE");
	cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	if (found < 2 || !env || strcmp(env, "1") != 0 ||
	    cudaStreamIsCapturing(st, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone)
		return 0;
	size_t csz = p->c_t == GK_F32 ? 4 : 2, cbytes = (size_t)p->ldc * (size_t)p->n * csz;
	size_t bbytes = (size_t)(p->m > p->n ? p->m : p->n) * 4;
	void *c = NULL, *bias = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	int best = 0;
	float best_ms = 0;
	if (cudaMalloc(&c, cbytes) != cudaSuccess || cudaMalloc(&bias, bbytes) != cudaSuccess ||
	    cudaMemsetAsync(c, 0, cbytes, st) != cudaSuccess ||
	    cudaMemsetAsync(bias, 0, bbytes, st) != cudaSuccess ||
	    cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
		goto out;
	if (epi != LT_EPI_DEFAULT &&
	    lt->f.desc_set(pl->desc, LT_DESC_BIAS_POINTER, &bias, sizeof(bias)) != 0)
		goto out;
	for (int i = 0; i < found; i++) {
		float ms = 0, one;
		int ok = lt->f.matmul(lt->h, pl->desc, &p->alpha, p->a, pl->la, p->b, pl->lb,
				      &p->beta, c, pl->lc, c, pl->lc, &h[i].algo, lt->ws,
				      LT_WORKSPACE, st) == 0; /* warm-up */
		for (int r = 0; ok && r < LT_TUNE_RUNS; r++) {
			ok = cudaEventRecord(e0, st) == cudaSuccess &&
			     lt->f.matmul(lt->h, pl->desc, &p->alpha, p->a, pl->la, p->b, pl->lb,
					  &p->beta, c, pl->lc, c, pl->lc, &h[i].algo, lt->ws,
					  LT_WORKSPACE, st) == 0 &&
			     cudaEventRecord(e1, st) == cudaSuccess &&
			     cudaEventSynchronize(e1) == cudaSuccess &&
			     cudaEventElapsedTime(&one, e0, e1) == cudaSuccess;
			if (ok && (r == 0 || one < ms))
				ms = one;
		}
		if (ok && (i == 0 || ms < best_ms))
			best = i, best_ms = ms;
		if (!ok && i == 0)
			best_ms = 1e30f; /* the first failed: any other that runs is better */
	}
	if (getenv("GPOOL_KERNELS_LT_TUNE_LOG"))
		fprintf(stderr,
			"cublaslt tune: %s %c%c %d x %d x %d epi %d: algorithm %d of %d, %.3f ms\n",
			dt_name(p->ab_t), p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', p->m,
			p->n, p->k, epi, best, found, (double)best_ms);
out:
	(void)cudaGetLastError();
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	cudaStreamSynchronize(st); /* the scratch is in use until the runs are done */
	cudaFree(c);
	cudaFree(bias);
	return best;
}

/* a plan with the epilogue fused if FUSE and cuBLASLt has an algorithm for it; 0 / -1 */
static int lt_make(lt_t *lt, const gk_gemm_t *p, int fuse, lt_plan_t *pl, gkStream_t st)
{
	int ab = lt_type(p->ab_t), ct = lt_type(p->c_t);
	int compute = p->math == GK_MATH_TF32 && p->ab_t == GK_F32 ? LT_COMPUTE_32F_FAST_TF32
								   : LT_COMPUTE_32F;
	int ta = p->trans_a ? 1 : 0, tb = p->trans_b ? 1 : 0, epi = fuse ? lt_epi(p->epi) : 1;
	lt_pref_t pref = NULL;
	lt_heur_t h[LT_TUNE_ALGOS];
	int found = 0;
	uint64_t ws = LT_WORKSPACE;
	uint32_t al[4] = {1u << log2_align(p->a), 1u << log2_align(p->b), 1u << log2_align(p->c),
			  1u << log2_align(p->c)};
	memset(pl, 0, sizeof(*pl));
	if (lt->f.desc_create(&pl->desc, compute, LT_R_32F) != 0)
		return -1;
	int ok = lt->f.desc_set(pl->desc, LT_DESC_TRANSA, &ta, sizeof(ta)) == 0 &&
		 lt->f.desc_set(pl->desc, LT_DESC_TRANSB, &tb, sizeof(tb)) == 0 &&
		 lt->f.desc_set(pl->desc, LT_DESC_EPILOGUE, &epi, sizeof(epi)) == 0;
	if (ok && epi != LT_EPI_DEFAULT)
		ok = lt->f.desc_set(pl->desc, LT_DESC_BIAS_POINTER, &p->bias, sizeof(p->bias)) == 0;
	ok = ok &&
	     lt->f.layout_create(&pl->la, ab, ta ? p->k : p->m, ta ? p->m : p->k, p->lda) == 0 &&
	     lt->f.layout_create(&pl->lb, ab, tb ? p->n : p->k, tb ? p->k : p->n, p->ldb) == 0 &&
	     lt->f.layout_create(&pl->lc, ct, p->m, p->n, p->ldc) == 0 &&
	     lt->f.pref_create(&pref) == 0 &&
	     lt->f.pref_set(pref, LT_PREF_MAX_WORKSPACE, &ws, sizeof(ws)) == 0 &&
	     lt->f.pref_set(pref, LT_PREF_ALIGN_A, &al[0], 4) == 0 &&
	     lt->f.pref_set(pref, LT_PREF_ALIGN_B, &al[1], 4) == 0 &&
	     lt->f.pref_set(pref, LT_PREF_ALIGN_C, &al[2], 4) == 0 &&
	     lt->f.pref_set(pref, LT_PREF_ALIGN_D, &al[3], 4) == 0 &&
	     lt->f.heuristic(lt->h, pl->desc, pl->la, pl->lb, pl->lc, pl->lc, pref, LT_TUNE_ALGOS,
			     h, &found) == 0 &&
	     found > 0;
	if (pref)
		lt->f.pref_destroy(pref);
	if (!ok) {
		lt->f.desc_destroy(pl->desc);
		if (pl->la)
			lt->f.layout_destroy(pl->la);
		if (pl->lb)
			lt->f.layout_destroy(pl->lb);
		if (pl->lc)
			lt->f.layout_destroy(pl->lc);
		return -1;
	}
	pl->algo = h[lt_tune(lt, p, pl, h, found, epi, st)].algo;
	pl->fused = epi != LT_EPI_DEFAULT;
	return 0;
}

static lt_plan_t *lt_plan(lt_t *lt, const gk_gemm_t *p, gkStream_t st)
{
	uint32_t align = log2_align(p->a) | log2_align(p->b) << 8 | log2_align(p->c) << 16 |
			 (p->bias ? log2_align(p->bias) : 8) << 24;
	for (int i = 0; i < lt->nplan; i++) {
		lt_plan_t *q = &lt->plan[i];
		if (q->ta == p->trans_a && q->tb == p->trans_b && q->m == p->m && q->n == p->n &&
		    q->k == p->k && q->ab == p->ab_t && q->ct == p->c_t && q->epi == p->epi &&
		    q->math == p->math && q->lda == p->lda && q->ldb == p->ldb &&
		    q->ldc == p->ldc && q->align == align)
			return q;
	}
	lt_plan_t pl;
	/* DRELU: never fused (see the top); else fused if cuBLASLt can */
	int fuse = p->epi != GK_EPI_NONE && p->epi != GK_EPI_DRELU;
	if (!(fuse && lt_make(lt, p, 1, &pl, st) == 0) && lt_make(lt, p, 0, &pl, st) < 0)
		return NULL;
	pl.ta = p->trans_a, pl.tb = p->trans_b, pl.m = p->m, pl.n = p->n, pl.k = p->k;
	pl.ab = p->ab_t, pl.ct = p->c_t, pl.epi = p->epi, pl.math = p->math;
	pl.lda = p->lda, pl.ldb = p->ldb, pl.ldc = p->ldc, pl.align = align;
	if (lt->nplan == LT_PLANS) { /* full: the oldest goes */
		lt->f.desc_destroy(lt->plan[0].desc);
		lt->f.layout_destroy(lt->plan[0].la);
		lt->f.layout_destroy(lt->plan[0].lb);
		lt->f.layout_destroy(lt->plan[0].lc);
		memmove(&lt->plan[0], &lt->plan[1], sizeof(lt_plan_t) * (LT_PLANS - 1));
		lt->nplan--;
	}
	lt->plan[lt->nplan] = pl;
	return &lt->plan[lt->nplan++];
}

static int lt_gemm(gpu_t *g, lt_t *lt, const gk_gemm_t *p, gk_stream_t *s)
{
	lt_plan_t *pl = lt_plan(lt, p, GK_STREAM(s));
	if (!pl)
		return gk_gpu_fail(
		    g, ENOTSUP, "cublaslt: no algorithm for %s x %s -> %s, %d x %d x %d",
		    dt_name(p->ab_t), dt_name(p->ab_t), dt_name(p->c_t), p->m, p->n, p->k);
	if (pl->fused &&
	    lt->f.desc_set(pl->desc, LT_DESC_BIAS_POINTER, &p->bias, sizeof(p->bias)) != 0)
		return gk_gpu_fail(g, EIO, "cublaslt: cannot set the bias pointer");
	int rc =
	    lt->f.matmul(lt->h, pl->desc, &p->alpha, p->a, pl->la, p->b, pl->lb, &p->beta, p->c,
			 pl->lc, p->c, pl->lc, &pl->algo, lt->ws, LT_WORKSPACE, GK_STREAM(s));
	if (rc != 0)
		return gk_gpu_fail(g, EIO, "cublaslt: matmul failed with status %d", rc);
	return pl->fused ? 0 : gk_gpu_epilogue(g, p, s);
}

/* cublasGemmEx: CUDA data types and compute types as above; algorithm CUBLAS_GEMM_DEFAULT */
typedef int (*gemm_ex_f)(void *, int, int, int, int, int, const void *, const void *, int, int,
			 const void *, int, int, const void *, void *, int, int, int, int);
static const char *sym_gemm_ex = "cublasGemmEx";
#define EX_TYPE(t)    lt_type(t)
#define EX_COMPUTE(p) ((p)->math == GK_MATH_TF32 ? LT_COMPUTE_32F_FAST_TF32 : LT_COMPUTE_32F)
#define EX_ALGO	      (-1)
#define EX_OP(t)      ((t) ? 1 : 0)
#else
/* rocblas_gemm_ex (rocblas.h, ROCm 5): datatypes f16_r 150, f32_r 151, bf16_r 168; operation
 * none 111, transpose 112; algo standard 0, solution index 0, flags 0 */
typedef int (*gemm_ex_f)(void *, int, int, int, int, int, const void *, const void *, int, int,
			 const void *, int, int, const void *, const void *, int, int, void *, int,
			 int, int, int, int32_t, uint32_t);
static const char *sym_gemm_ex = "rocblas_gemm_ex";
#define EX_TYPE(t)    ((t) == GK_F16 ? 150 : (t) == GK_BF16 ? 168 : 151)
#define EX_COMPUTE(p) 151
#define EX_OP(t)      ((t) ? 112 : 111)
void gk_gpu_lt_close(gpu_t *g)
{
	(void)g;
}
#endif

extern "C" int gk_gpu_gemm(void *ctx, const gk_gemm_t *p, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	if (p->ab_t == GK_F32 && p->c_t == GK_F32 &&
	    (p->math == GK_MATH_DEFAULT || GK_CUDA_OR_HIP(0, 1))) {
		/* f32: the sgemm of gk_sgemm, then the epilogue (HIP has no TF32) */
		if (gk_gpu_sgemm(ctx, p->trans_a, p->trans_b, p->m, p->n, p->k, p->alpha,
				 (const float *)p->a, p->lda, (const float *)p->b, p->ldb, p->beta,
				 (float *)p->c, p->ldc, s) < 0)
			return -1;
		return gk_gpu_epilogue(g, p, s);
	}
#ifdef GK_CUDA
	lt_t *lt = lt_load(g);
	if (lt)
		return lt_gemm(g, lt, p, s);
#endif
	if (gk_gpu_blas_load(g) < 0)
		return gk_gpu_fail(g, ENOTSUP, "gemm: %s inputs need " GK_API " blas (not found)",
				   dt_name(p->ab_t));
	gemm_ex_f ex = (gemm_ex_f)dlsym(g->blas_dl, sym_gemm_ex);
	if (!ex)
		return gk_gpu_fail(g, ENOTSUP, "gemm: %s not in the blas library", sym_gemm_ex);
	int rc = g->blas_set_stream(g->blas_handle, GK_STREAM(s));
#ifdef GK_CUDA
	if (rc == 0)
		rc = ex(g->blas_handle, EX_OP(p->trans_a), EX_OP(p->trans_b), p->m, p->n, p->k,
			&p->alpha, p->a, EX_TYPE(p->ab_t), p->lda, p->b, EX_TYPE(p->ab_t), p->ldb,
			&p->beta, p->c, EX_TYPE(p->c_t), p->ldc, EX_COMPUTE(p), EX_ALGO);
#else
	if (rc == 0)
		rc = ex(g->blas_handle, EX_OP(p->trans_a), EX_OP(p->trans_b), p->m, p->n, p->k,
			&p->alpha, p->a, EX_TYPE(p->ab_t), p->lda, p->b, EX_TYPE(p->ab_t), p->ldb,
			&p->beta, p->c, EX_TYPE(p->c_t), p->ldc, p->c, EX_TYPE(p->c_t), p->ldc,
			EX_COMPUTE(p), 0, 0, 0);
#endif
	if (rc != 0)
		return gk_gpu_fail(g, EIO, "gemm: %s failed with status %d", sym_gemm_ex, rc);
	return gk_gpu_epilogue(g, p, s);
}
