/* gemm.cu - f32 matrix product: the vendor BLAS (cuBLAS / rocBLAS) loaded with dlopen
 * when present, else a 64x64-tiled kernel of our own (one source for CUDA and HIP).
 *
 * Why dlopen rather than link: the backend then needs only the driver (the CUDA runtime
 * is linked statically), so it loads on a PC whose driver came without the multi-hundred
 * megabyte BLAS, and the HIP backend works where Debian ships no rocBLAS at all. */
#include <dlfcn.h>
#include <stdlib.h>

#include "kernels/gpu/gk_gpu.h"

#define TS 64
#define TK 16

typedef int (*create_f)(void **);
typedef int (*destroy_f)(void *);
typedef int (*set_stream_f)(void *, gkStream_t);
typedef int (*sgemm_f)(void *, int, int, int, int, int, const float *, const float *, int,
		       const float *, int, const float *, float *, int);

#ifdef GK_CUDA
static const char *blas_libs[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
				  "libcublas.so", NULL};
static const char *sym_create = "cublasCreate_v2", *sym_destroy = "cublasDestroy_v2",
		  *sym_stream = "cublasSetStream_v2", *sym_sgemm = "cublasSgemm_v2";
enum { OP_N = 0, OP_T = 1 };
#else
static const char *blas_libs[] = {"librocblas.so.4", "librocblas.so.3", "librocblas.so.0",
				  "librocblas.so", NULL};
static const char *sym_create = "rocblas_create_handle", *sym_destroy = "rocblas_destroy_handle",
		  *sym_stream = "rocblas_set_stream", *sym_sgemm = "rocblas_sgemm";
enum { OP_N = 111, OP_T = 112 };
#endif

/* 0 if the BLAS library is loaded and its handle made (once; later calls repeat the answer). */
int gk_gpu_blas_load(gpu_t *g)
{
	if (g->blas_tried)
		return g->blas_dl ? 0 : -1;
	g->blas_tried = 1;
	if (g->no_blas)
		return -1;
	for (int i = 0; blas_libs[i] && !g->blas_dl; i++)
		g->blas_dl = dlopen(blas_libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!g->blas_dl)
		return -1;
	g->blas_sgemm = (sgemm_f)dlsym(g->blas_dl, sym_sgemm);
	g->blas_set_stream = (set_stream_f)dlsym(g->blas_dl, sym_stream);
	g->blas_destroy = (destroy_f)dlsym(g->blas_dl, sym_destroy);
	create_f create = (create_f)dlsym(g->blas_dl, sym_create);
	if (!g->blas_sgemm || !g->blas_set_stream || !g->blas_destroy || !create ||
	    create(&g->blas_handle) != 0) {
		g->blas_handle = NULL;
		dlclose(g->blas_dl);
		g->blas_dl = NULL;
		return -1;
	}
	return 0;
}

void gk_gpu_blas_close(gpu_t *g)
{
	if (g->blas_handle)
		g->blas_destroy(g->blas_handle);
	g->blas_handle = NULL;
	/* the library stays mapped: it may have registered exit handlers */
}

__global__ void __launch_bounds__(256)
    k_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
	    const float *B, int ldb, float beta, float *C, int ldc)
{
	__shared__ float as[TK][TS + 1];
	__shared__ float bs[TK][TS + 1];
	const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
	const int i0 = blockIdx.x * TS, j0 = blockIdx.y * TS;
	float acc[4][4];
#pragma unroll
	for (int r = 0; r < 4; r++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			acc[r][c] = 0.0f;
	for (int k0 = 0; k0 < k; k0 += TK) {
		for (int e = tid; e < TS * TK; e += 256) {
			int ii = e % TS, kk = e / TS, gi = i0 + ii, gk = k0 + kk;
			float v = 0.0f;
			if (gi < m && gk < k)
				v = ta ? A[gk + (size_t)gi * lda] : A[gi + (size_t)gk * lda];
			as[kk][ii] = v;
		}
		for (int e = tid; e < TS * TK; e += 256) {
			int kk = e % TK, jj = e / TK, gj = j0 + jj, gk = k0 + kk;
			float v = 0.0f;
			if (gj < n && gk < k)
				v = tb ? B[gj + (size_t)gk * ldb] : B[gk + (size_t)gj * ldb];
			bs[kk][jj] = v;
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < TK; kk++) {
			float a[4], b[4];
#pragma unroll
			for (int r = 0; r < 4; r++)
				a[r] = as[kk][tx + 16 * r];
#pragma unroll
			for (int c = 0; c < 4; c++)
				b[c] = bs[kk][ty + 16 * c];
#pragma unroll
			for (int r = 0; r < 4; r++)
#pragma unroll
				for (int c = 0; c < 4; c++)
					acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
		}
		__syncthreads();
	}
#pragma unroll
	for (int r = 0; r < 4; r++)
#pragma unroll
		for (int c = 0; c < 4; c++) {
			int i = i0 + tx + 16 * r, j = j0 + ty + 16 * c;
			if (i < m && j < n) {
				float *cij = &C[i + (size_t)j * ldc];
				*cij = alpha * acc[r][c] + (beta == 0.0f ? 0.0f : beta * *cij);
			}
		}
}

extern "C" int gk_gpu_sgemm(void *ctx, int ta, int tb, int m, int n, int k, float alpha,
			    const float *a, int lda, const float *b, int ldb, float beta, float *c,
			    int ldc, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	if (gk_gpu_blas_load(g) == 0) {
		int rc = g->blas_set_stream(g->blas_handle, GK_STREAM(s));
		if (rc == 0)
			rc = g->blas_sgemm(g->blas_handle, ta ? OP_T : OP_N, tb ? OP_T : OP_N, m, n,
					   k, &alpha, a, lda, b, ldb, &beta, c, ldc);
		if (rc != 0)
			return gk_gpu_fail(g, EIO, GK_API ": blas sgemm failed with status %d", rc);
		return 0;
	}
	dim3 grid((m + TS - 1) / TS, (n + TS - 1) / TS), block(16, 16);
	k_sgemm<<<grid, block, 0, GK_STREAM(s)>>>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
						  ldc);
	return gk_gpu_launched(g, "sgemm");
}
