/* nn.cu - the layer kernels of an MLP around the GEMMs: bias + activation, ReLU's gradient,
 * the bias gradient (column sums) and softmax cross-entropy (one source for CUDA and HIP).
 *
 * Each element's arithmetic is gk_scalar.h's, so bias_act, relu_grad and bias_grad equal the
 * cpu backend bit for bit (bias_grad sums a column in row order, one thread a column, as the
 * cpu loop does); softmax_xent goes through the device expf/logf and agrees to a few ulp.
 * These kernels are small next to the GEMMs of a layer, so they are plain grid-stride loops. */
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

/* one thread a column: neighbouring threads read neighbouring words of each row. The sum
 * runs in row order (the cpu backend's bits); the loads of BG_UNROLL rows are issued before
 * their adds, so that many reads are in flight although the adds form one chain. */
#define BG_UNROLL 16
#define BG_TPB	  64 /* small blocks: a layer of 4,096 columns spreads over 64 units, not 16 */

__global__ void k_bias_grad(const float *dy, float *db, size_t rows, size_t cols, float alpha)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += stride) {
		float acc = 0.0f;
		size_t r = 0;
		for (; r + BG_UNROLL <= rows; r += BG_UNROLL) {
			float v[BG_UNROLL];
#pragma unroll
			for (int u = 0; u < BG_UNROLL; u++)
				v[u] = dy[(r + u) * cols + c];
#pragma unroll
			for (int u = 0; u < BG_UNROLL; u++)
				acc = acc + v[u];
		}
		for (; r < rows; r++)
			acc = acc + dy[r * cols + c];
		db[c] = alpha * acc;
	}
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
	k_bias_grad<<<gk_gpu_blocks(g, cols, BG_TPB), BG_TPB, 0, GK_STREAM(s)>>>(dy, db, rows, cols,
										 alpha);
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
