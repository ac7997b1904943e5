/* amp.cu - mixed precision on a card, around the products of gemm_ex.cu: the loss scaler's
 * state kept on the device (gk_amp_t: scale, Inf/NaN flag, step count) so that a step needs
 * no read-back, the fused AdamW step that writes the f32 master and the f16/bf16 compute
 * copy in one pass over the whole flat parameter vector (every layer's tensors in one launch),
 * the epilogue kernels for products whose epilogue the vendor library does not fuse, and
 * graph capture (CUDA Graphs / HIP graphs). One source for CUDA and HIP.
 *
 * The arithmetic is gk_scalar.h's (gk_adamw_step, gk_amp_step, gk_bias_act_step), so the
 * results equal the cpu backend's gk_cpu_amp.c bit for bit. */
#include "kernels/gpu/gk_gpu.h"

#define AMP_TPB 256

__device__ static inline float ld_t(int t, const void *p, size_t i)
{
	if (t == GK_F16)
		return gk_d_f16_to_f32(((const uint16_t *)p)[i]);
	if (t == GK_BF16)
		return gk_d_bf16_to_f32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

__device__ static inline void st_t(int t, void *p, size_t i, float v)
{
	if (t == GK_F16)
		((uint16_t *)p)[i] = gk_d_f32_to_f16(v);
	else if (t == GK_BF16)
		((uint16_t *)p)[i] = gk_d_f32_to_bf16(v);
	else
		((float *)p)[i] = v;
}

#define GRID_STRIDE(i, n)                                                                          \
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                    \
	     i += (size_t)gridDim.x * blockDim.x)

__global__ void k_amp_scale(int t, void *buf, size_t n, const gk_amp_t *amp)
{
	const float s = amp->scale;
	GRID_STRIDE(i, n)
	st_t(t, buf, i, ld_t(t, buf, i) * s);
}

extern "C" int gk_gpu_amp_scale(void *ctx, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
				gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	k_amp_scale<<<gk_gpu_blocks(g, n, AMP_TPB), AMP_TPB, 0, GK_STREAM(s)>>>((int)t, buf, n,
										amp);
	return gk_gpu_launched(g, "amp scale");
}

/* GT and WT as template arguments: the step is memory-bound, a branch an element would not
 * cost much, but the loads then vectorize */
template <int GT, int WT>
__global__ void __launch_bounds__(AMP_TPB)
    k_adamw_amp(gk_adamw_t p, const gk_amp_t *amp, float *w, float *m, float *v, void *wc,
		const void *grad, size_t n)
{
	if (amp->found)
		return;
	const float gs = p.grad_scale / amp->scale, bc1 = amp->bc1, bc2 = amp->bc2;
	GRID_STRIDE(i, n)
	{
		float ww = w[i], mm = m[i], vv = v[i];
		gk_adamw_step(p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, gs, bc1, bc2,
			      ld_t(GT, grad, i), &ww, &mm, &vv);
		w[i] = ww, m[i] = mm, v[i] = vv;
		if (WT != GK_F32)
			st_t(WT, wc, i, ww);
	}
}

template <int GT>
static int adamw_amp_g(gpu_t *g, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		       float *v, gk_dtype_t wt, void *wc, const void *grad, size_t n,
		       gk_stream_t *s)
{
	unsigned nb = gk_gpu_blocks(g, n, AMP_TPB);
	gkStream_t st = GK_STREAM(s);
	if (!wc)
		k_adamw_amp<GT, GK_F32><<<nb, AMP_TPB, 0, st>>>(*p, amp, w, m, v, wc, grad, n);
	else if (wt == GK_F16)
		k_adamw_amp<GT, GK_F16><<<nb, AMP_TPB, 0, st>>>(*p, amp, w, m, v, wc, grad, n);
	else
		k_adamw_amp<GT, GK_BF16><<<nb, AMP_TPB, 0, st>>>(*p, amp, w, m, v, wc, grad, n);
	return gk_gpu_launched(g, "adamw amp");
}

extern "C" int gk_gpu_adamw_amp(void *ctx, const gk_adamw_t *p, const gk_amp_t *amp, float *w,
				float *m, float *v, gk_dtype_t wt, void *wc, gk_dtype_t gt,
				const void *grad, size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (gt) {
	case GK_F32:
		return adamw_amp_g<GK_F32>(g, p, amp, w, m, v, wt, wc, grad, n, s);
	case GK_F16:
		return adamw_amp_g<GK_F16>(g, p, amp, w, m, v, wt, wc, grad, n, s);
	default:
		return adamw_amp_g<GK_BF16>(g, p, amp, w, m, v, wt, wc, grad, n, s);
	}
}

__global__ void k_amp_update(gk_amp_t *amp)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		gk_amp_step(amp);
}

extern "C" int gk_gpu_amp_update(void *ctx, gk_amp_t *amp, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	k_amp_update<<<1, 32, 0, GK_STREAM(s)>>>(amp);
	return gk_gpu_launched(g, "amp update");
}

/* ---- epilogues the vendor library did not fuse (column-major m x n, leading dim ldc) ---- */

__global__ void k_epi(int ct, void *c, int ldc, int m, int n, int epi, const void *bias,
		      const void *aux)
{
	size_t total = (size_t)m * n;
	GRID_STRIDE(e, total)
	{
		size_t i = e % m, j = e / m, o = i + j * (size_t)ldc;
		float v = ld_t(ct, c, o);
		if (epi == GK_EPI_DRELU)
			v = gk_relu_grad_step(v, ld_t(ct, aux, o));
		else
			v = gk_bias_act_step(v, ld_t(ct, bias, i), epi == GK_EPI_RELU_BIAS);
		st_t(ct, c, o, v);
	}
}

/* bias[j] = sum over l < k of op(B)[l][j], in order from l = 0 (the cpu's order) */
__global__ void k_bgradb(int bt, const void *b, int ldb, int tb, int k, int n, int ct, void *bias)
{
	GRID_STRIDE(j, (size_t)n)
	{
		float sum = 0.0f;
		for (int l = 0; l < k; l++)
			sum += ld_t(bt, b, tb ? j + (size_t)l * ldb : l + j * (size_t)ldb);
		st_t(ct, bias, j, sum);
	}
}

int gk_gpu_epilogue(gpu_t *g, const gk_gemm_t *p, gk_stream_t *s)
{
	gkStream_t st = GK_STREAM(s);
	if (p->epi == GK_EPI_NONE)
		return 0;
	if (p->epi == GK_EPI_BGRADB) {
		k_bgradb<<<gk_gpu_blocks(g, (size_t)p->n, AMP_TPB), AMP_TPB, 0, st>>>(
		    (int)p->ab_t, p->b, p->ldb, p->trans_b, p->k, p->n, (int)p->c_t, p->bias);
		return gk_gpu_launched(g, "bias gradient epilogue");
	}
	k_epi<<<gk_gpu_blocks(g, (size_t)p->m * p->n, AMP_TPB), AMP_TPB, 0, st>>>(
	    (int)p->c_t, p->c, p->ldc, p->m, p->n, (int)p->epi, p->bias, p->aux);
	return gk_gpu_launched(g, "epilogue");
}

/* ---- graphs ---- */

struct gk_graph {
	gkGraph_t graph;
	gkGraphExec_t exec;
};

extern "C" int gk_gpu_graph_begin(void *ctx, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
#ifdef GK_CUDA
	gkError_t rc = cudaStreamBeginCapture(GK_STREAM(s), cudaStreamCaptureModeRelaxed);
#else
	gkError_t rc = hipStreamBeginCapture(GK_STREAM(s), hipStreamCaptureModeRelaxed);
#endif
	return gk_gpu_check(g, rc, "graph capture begin");
}

extern "C" int gk_gpu_graph_end(void *ctx, gk_stream_t *s, gk_graph_t **out)
{
	gpu_t *g = (gpu_t *)ctx;
	gk_graph_t *gr = (gk_graph_t *)calloc(1, sizeof(*gr));
#ifdef GK_CUDA
	gkError_t rc = cudaStreamEndCapture(GK_STREAM(s), &gr->graph);
	if (rc == gkSuccess)
		rc = cudaGraphInstantiate(&gr->exec, gr->graph, 0);
	if (rc != gkSuccess && gr->graph)
		(void)cudaGraphDestroy(gr->graph);
#else
	gkError_t rc = hipStreamEndCapture(GK_STREAM(s), &gr->graph);
	if (rc == gkSuccess)
		rc = hipGraphInstantiate(&gr->exec, gr->graph, NULL, NULL, 0);
	if (rc != gkSuccess && gr->graph)
		(void)hipGraphDestroy(gr->graph);
#endif
	if (rc != gkSuccess) {
		free(gr);
		(void)gkGetLastError();
		return gk_gpu_check(g, rc, "graph capture end");
	}
	*out = gr;
	return 0;
}

extern "C" int gk_gpu_graph_launch(void *ctx, gk_graph_t *gr, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g,
			    GK_CUDA_OR_HIP(cudaGraphLaunch, hipGraphLaunch)(gr->exec, GK_STREAM(s)),
			    "graph launch");
}

extern "C" int gk_gpu_graph_destroy(void *ctx, gk_graph_t *gr)
{
	gpu_t *g = (gpu_t *)ctx;
	gkError_t rc = GK_CUDA_OR_HIP(cudaGraphExecDestroy, hipGraphExecDestroy)(gr->exec);
	(void)GK_CUDA_OR_HIP(cudaGraphDestroy, hipGraphDestroy)(gr->graph);
	free(gr);
	return gk_gpu_check(g, rc, "graph destroy");
}
