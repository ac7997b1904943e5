/* nn.cu - the layer kernels of an MLP around the GEMMs: bias + activation, ReLU's gradient,
 * the bias gradient (column sums) and softmax cross-entropy (one source for CUDA and HIP).
 *
 * Each element's arithmetic is gk_scalar.h's, so bias_act, relu_grad and bias_grad equal the
 * cpu backend bit for bit (bias_grad sums a column in gk_scalar.h's order: runs of rows in
 * parallel, then the runs' sums in order, as the cpu loop does in turn); softmax_xent goes
 * through the device expf/logf and agrees to a few ulp. These kernels are small next to the
 * GEMMs of a layer, so apart from bias_grad they are plain grid-stride loops. */
#include "kernels/gpu/gk_gpu.h"

#define NN_TPB 256

__global__ void k_bias_act(float *y, const float *bias, size_t rows, size_t cols, int relu)
{
	size_t n = rows * cols, stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		y[i] = gk_bias_act_step(y[i], bias[i % cols], relu);
}

__global__ void k_relu_grad(float *dy, const float *y, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		dy[i] = gk_relu_grad_step(dy[i], y[i]);
}

/* the column sums in gk_scalar.h's order: a block takes BG_COLS columns; its BG_GROUP rows
 * of threads each sum one run of GK_BIAS_GRAD_CHUNK rows (in row order, all loads of a
 * run in flight before its adds), then the first row of threads adds the runs' sums in
 * order. Neighbouring threads read neighbouring words of a row. */
#define BG_COLS	 32
#define BG_GROUP 16

__global__ void __launch_bounds__(BG_COLS *BG_GROUP)
    k_bias_grad(const float *dy, float *db, size_t rows, size_t cols, float alpha)
{
	__shared__ float part[BG_GROUP][BG_COLS];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const size_t c = (size_t)blockIdx.x * BG_COLS + tx;
	const size_t runs = (rows + GK_BIAS_GRAD_CHUNK - 1) / GK_BIAS_GRAD_CHUNK;
	float acc = 0.0f;
	for (size_t g0 = 0; g0 < runs; g0 += BG_GROUP) {
		const size_t k = g0 + ty, r0 = k * GK_BIAS_GRAD_CHUNK;
		float p = 0.0f;
		if (c < cols && k < runs) {
			if (r0 + GK_BIAS_GRAD_CHUNK <= rows) {
				float v[GK_BIAS_GRAD_CHUNK];
#pragma unroll
				for (int u = 0; u < GK_BIAS_GRAD_CHUNK; u++)
					v[u] = dy[(r0 + u) * cols + c];
#pragma unroll
				for (int u = 0; u < GK_BIAS_GRAD_CHUNK; u++)
					p = p + v[u];
			} else {
				for (size_t r = r0; r < rows; r++)
					p = p + dy[r * cols + c];
			}
		}
		part[ty][tx] = p;
		__syncthreads();
		if (ty == 0)
			for (int j = 0; j < BG_GROUP && g0 + j < runs; j++)
				acc = acc + part[j][tx];
		__syncthreads();
	}
	if (ty == 0 && c < cols)
		db[c] = alpha * acc;
}

/* one thread a row: a classifier has few classes */
__global__ void k_softmax_xent(const float *z, const int32_t *labels, size_t rows, size_t cols,
			       float scale, float *loss, float *dz)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
		float l = gk_softmax_xent_row(z + r * cols, labels[r], cols, scale,
					      dz ? dz + r * cols : NULL);
		if (loss)
			loss[r] = l;
	}
}

static int start(gpu_t *g)
{
	return gk_gpu_check(g, gkSetDevice(g->device), "set device");
}

extern "C" int gk_gpu_bias_act(void *ctx, float *y, const float *bias, size_t rows, size_t cols,
			       gk_act_t act, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_bias_act<<<gk_gpu_blocks(g, rows * cols, NN_TPB), NN_TPB, 0, GK_STREAM(s)>>>(
	    y, bias, rows, cols, act == GK_ACT_RELU);
	return gk_gpu_launched(g, "bias_act");
}

extern "C" int gk_gpu_relu_grad(void *ctx, float *dy, const float *y, size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_relu_grad<<<gk_gpu_blocks(g, n, NN_TPB), NN_TPB, 0, GK_STREAM(s)>>>(dy, y, n);
	return gk_gpu_launched(g, "relu_grad");
}

extern "C" int gk_gpu_bias_grad(void *ctx, const float *dy, float *db, size_t rows, size_t cols,
				float alpha, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	dim3 grid((unsigned)((cols + BG_COLS - 1) / BG_COLS)), block(BG_COLS, BG_GROUP);
	k_bias_grad<<<grid, block, 0, GK_STREAM(s)>>>(dy, db, rows, cols, alpha);
	return gk_gpu_launched(g, "bias_grad");
}

extern "C" int gk_gpu_softmax_xent(void *ctx, const float *z, const int32_t *labels, size_t rows,
				   size_t cols, float scale, float *loss, float *dz, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_softmax_xent<<<gk_gpu_blocks(g, rows, NN_TPB), NN_TPB, 0, GK_STREAM(s)>>>(
	    z, labels, rows, cols, scale, loss, dz);
	return gk_gpu_launched(g, "softmax_xent");
}
