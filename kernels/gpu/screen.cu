/* screen.cu - kernels for screening a card: memory test steps, read / write / copy
 * bandwidth and FMA throughput (one source for CUDA and HIP) */
#include "kernels/gpu/gk_gpu.h"

#define TPB	   256
#define FMA_CHAINS 8

/* ---- memory test ---- */

__global__ void __launch_bounds__(TPB)
    k_mt(uint32_t *buf, size_t n, gk_mt_word_t chk, int has_chk, gk_mt_word_t wr, int has_wr,
	 unsigned long long *counter)
{
	unsigned long long bad = 0;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		if (has_chk && buf[i] != gk_mt_word(chk.kind, chk.value, chk.seed, chk.invert, i))
			bad++;
		if (has_wr)
			buf[i] = gk_mt_word(wr.kind, wr.value, wr.seed, wr.invert, i);
	}
	if (bad)
		atomicAdd(counter, bad);
}

extern "C" int gk_gpu_mt_step(void *ctx, uint32_t *buf, size_t nwords, const gk_mt_word_t *check,
			      const gk_mt_word_t *write, uint64_t *errors)
{
	gpu_t *g = (gpu_t *)ctx;
	gk_mt_word_t none = {0, 0, 0, 0};
	unsigned long long bad = 0;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0 ||
	    gk_gpu_check(g, gkMemsetAsync(g->counter, 0, sizeof(*g->counter), 0), "memset") < 0)
		return -1;
	k_mt<<<gk_gpu_blocks(g, nwords, TPB), TPB>>>(buf, nwords, check ? *check : none,
						     check != NULL, write ? *write : none,
						     write != NULL, g->counter);
	if (gk_gpu_launched(g, "memtest") < 0 ||
	    gk_gpu_check(g, gkMemcpy(&bad, g->counter, sizeof(bad), gkMemcpyDeviceToHost),
			 "memtest result") < 0)
		return -1;
	*errors += bad;
	return 0;
}

/* ---- bandwidth ---- */

/* BW_U independent 16-byte accesses in flight per thread */
#define BW_U 4

__global__ void __launch_bounds__(TPB) k_read(const uint4 *p, size_t n, uint32_t *sink)
{
	uint32_t acc = 0;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += BW_U * stride) {
		uint4 v[BW_U];
#pragma unroll
		for (int k = 0; k < BW_U; k++)
			v[k] = i + k * stride < n ? p[i + k * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int k = 0; k < BW_U; k++)
			acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
	}
	if (acc == 0x9e3779b9u) /* data dependent, so the loads stay */
		*sink = acc;
}

__global__ void __launch_bounds__(TPB) k_write(uint4 *p, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		p[i] = make_uint4((uint32_t)i, 0x5a5a5a5au, 0xa5a5a5a5u, (uint32_t)(i >> 32));
}

__global__ void __launch_bounds__(TPB) k_copy(uint4 *d, const uint4 *s, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += BW_U * stride) {
		uint4 v[BW_U];
#pragma unroll
		for (int k = 0; k < BW_U; k++)
			if (i + k * stride < n)
				v[k] = s[i + k * stride];
#pragma unroll
		for (int k = 0; k < BW_U; k++)
			if (i + k * stride < n)
				d[i + k * stride] = v[k];
	}
}

extern "C" int gk_gpu_bw_read(void *ctx, const void *buf, size_t bytes, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	size_t n = bytes / 16;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	k_read<<<gk_gpu_blocks(g, n, TPB), TPB, 0, GK_STREAM(s)>>>((const uint4 *)buf, n, g->sink);
	return gk_gpu_launched(g, "bw read");
}

extern "C" int gk_gpu_bw_write(void *ctx, void *buf, size_t bytes, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	size_t n = bytes / 16;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	k_write<<<gk_gpu_blocks(g, n, TPB), TPB, 0, GK_STREAM(s)>>>((uint4 *)buf, n);
	return gk_gpu_launched(g, "bw write");
}

extern "C" int gk_gpu_bw_copy(void *ctx, void *dst, const void *src, size_t bytes, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	size_t n = bytes / 16;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	k_copy<<<gk_gpu_blocks(g, n, TPB), TPB, 0, GK_STREAM(s)>>>((uint4 *)dst, (const uint4 *)src,
								   n);
	return gk_gpu_launched(g, "bw copy");
}

/* ---- FMA throughput: FMA_CHAINS independent chains a thread, every thread resident ---- */

__global__ void __launch_bounds__(TPB) k_fma_f32(float *out, int iters, float a, float b)
{
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	float x[FMA_CHAINS];
#pragma unroll
	for (int j = 0; j < FMA_CHAINS; j++)
		x[j] = (float)(t + j) * 1e-6f;
	for (int it = 0; it < iters; it++) {
#pragma unroll
		for (int j = 0; j < FMA_CHAINS; j++)
			x[j] = fmaf(x[j], a, b);
	}
	float sum = 0;
#pragma unroll
	for (int j = 0; j < FMA_CHAINS; j++)
		sum += x[j];
	out[t] = sum;
}

__global__ void __launch_bounds__(TPB) k_fma_f16(__half2 *out, int iters, float a, float b)
{
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	__half2 x[FMA_CHAINS];
	__half2 a2 = __float2half2_rn(a), b2 = __float2half2_rn(b);
#pragma unroll
	for (int j = 0; j < FMA_CHAINS; j++)
		x[j] = __float2half2_rn((float)((t + j) & 1023) * 1e-3f);
	for (int it = 0; it < iters; it++) {
#pragma unroll
		for (int j = 0; j < FMA_CHAINS; j++) {
#if defined(GK_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 530
			/* no half arithmetic before sm_53: same work in f32 */
			float2 xf = __half22float2(x[j]), af = __half22float2(a2),
			       bf = __half22float2(b2);
			x[j] = __floats2half2_rn(fmaf(xf.x, af.x, bf.x), fmaf(xf.y, af.y, bf.y));
#else
			x[j] = __hfma2(x[j], a2, b2);
#endif
		}
	}
	float2 sum = __half22float2(x[0]);
#pragma unroll
	for (int j = 1; j < FMA_CHAINS; j++) {
		float2 xf = __half22float2(x[j]);
		sum.x += xf.x;
		sum.y += xf.y;
	}
	out[t] = __floats2half2_rn(sum.x, sum.y);
}

static size_t fma_threads(gpu_t *g)
{
	return (size_t)g->sms * (size_t)(g->max_threads_per_sm / TPB) * TPB;
}

extern "C" size_t gk_gpu_fma_scratch_bytes(void *ctx)
{
	return fma_threads((gpu_t *)ctx) * 4;
}

extern "C" int gk_gpu_fma(void *ctx, gk_dtype_t t, void *buf, int iters, double *flops,
			  gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	size_t threads = fma_threads(g);
	unsigned blocks = (unsigned)(threads / TPB);
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	if (t == GK_F16) {
		k_fma_f16<<<blocks, TPB, 0, GK_STREAM(s)>>>((__half2 *)buf, iters, 0.999f, 0.001f);
		*flops = 4.0 * FMA_CHAINS * (double)iters * (double)threads;
	} else {
		k_fma_f32<<<blocks, TPB, 0, GK_STREAM(s)>>>((float *)buf, iters, 0.999f, 0.001f);
		*flops = 2.0 * FMA_CHAINS * (double)iters * (double)threads;
	}
	return gk_gpu_launched(g, "fma");
}
