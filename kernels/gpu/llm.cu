/* llm.cu - the language-model layers on a card (gpool/kernels.h), one source for CUDA and HIP:
 * the quantized matrix products, embedding rows, RMSNorm, RoPE, SwiGLU, the residual adds and
 * the paged cache's writes (attention is llm_attn.cu).
 *
 * Products. Decode (n <= 8 tokens) reads every weight once, so it is a matter of bandwidth:
 * - f32/f16/bf16: one warp a row, each lane loading 16-byte words of the row in turn (a warp
 *   reads 512 contiguous bytes a step, several steps in flight), converted in registers;
 * - the block formats (18-, 34-, 144-, 210-byte blocks, not 16-byte aligned): a warp copies
 *   a chunk of whole blocks of R rows with 16-byte loads into shared memory, then each lane
 *   dequantizes whole blocks from there; R rows share each load of x, which keeps the x
 *   traffic (4 bytes a value) from outrunning the weights' (0.56 bytes a value for q4_0).
 * Sums are f32 with explicit fma (the module builds with -fmad=false), then a warp shuffle.
 * Prefill (n > 8): 64x64 tiles of y; each step dequantizes a 64x32 tile of W into shared
 * memory once and multiplies it against 64 rows of x: on the tensor cores from sm_80 on
 * (TF32 with each operand split in two, as accurate as the f32 sums), else 4x4 outputs a
 * thread in registers on the f32 units (older cards, HIP).
 * It is also the path for shapes the decode kernels cannot take (unaligned pointers).
 * Dequantized values are gk_qblock.h's, evaluated in the same order, so gk_qget_rows matches
 * the cpu bit for bit. */
#include <stdint.h>

/* the runtime's headers first: they give gk_scalar.h's memcpy its device version */
#include "kernels/gpu/gk_gpu.h"
#include "kernels/gk_qblock.h"

#define QMV_WARPS  4   /* warps (rows, or groups of R rows) a block in the decode products */
#define QMV_UNROLL 4   /* 16-byte loads in flight a lane (plain types) */
#define TM	   64  /* prefill tile: weight rows */
#define TN	   64  /* tokens */
#define TK	   32  /* values of a row a step */
#define EW_TPB	   256 /* elementwise kernels */

static int start(gpu_t *g)
{
	return gk_gpu_check(g, gkSetDevice(g->device), "set device");
}

__device__ static inline float warp_sum(float v)
{
	for (int m = 16; m; m >>= 1)
		v += gkShflXor(v, m);
	return v;
}

/* ---- one value of a row, by the definition (get_rows, the prefill tiles) ---- */

template <gk_qtype_t WT> __device__ static inline float qval(const uint8_t *row, int c);
template <> __device__ inline float qval<GK_Q_F32>(const uint8_t *row, int c)
{
	return ((const float *)row)[c];
}
template <> __device__ inline float qval<GK_Q_F16>(const uint8_t *row, int c)
{
	return gk_d_f16_to_f32(((const uint16_t *)row)[c]);
}
template <> __device__ inline float qval<GK_Q_BF16>(const uint8_t *row, int c)
{
	return gk_sw_bf16_to_f32(((const uint16_t *)row)[c]);
}
template <> __device__ inline float qval<GK_Q_Q4_0>(const uint8_t *row, int c)
{
	return gk_q4_0_value((const gk_block_q4_0_t *)row + c / GK_QK4_0, c % GK_QK4_0);
}
template <> __device__ inline float qval<GK_Q_Q8_0>(const uint8_t *row, int c)
{
	return gk_q8_0_value((const gk_block_q8_0_t *)row + c / GK_QK8_0, c % GK_QK8_0);
}
template <> __device__ inline float qval<GK_Q_Q4_K>(const uint8_t *row, int c)
{
	return gk_q4_K_value((const gk_block_q4_K_t *)row + c / GK_QK_K, c % GK_QK_K);
}
template <> __device__ inline float qval<GK_Q_Q6_K>(const uint8_t *row, int c)
{
	return gk_q6_K_value((const gk_block_q6_K_t *)row + c / GK_QK_K, c % GK_QK_K);
}

/* ---- decode products, plain types ---- */

/* the values of one 16-byte word: 4 f32 or 8 f16/bf16 */
template <gk_qtype_t WT> __device__ static inline void unpack(const uint4 &v, float *f)
{
	const uint32_t u[4] = {v.x, v.y, v.z, v.w};
	if constexpr (WT == GK_Q_F32) {
		for (int k = 0; k < 4; k++)
			f[k] = __uint_as_float(u[k]);
	} else {
		for (int k = 0; k < 4; k++) {
			uint16_t lo = (uint16_t)(u[k] & 0xffffu), hi = (uint16_t)(u[k] >> 16);
			f[2 * k] = WT == GK_Q_F16 ? gk_d_f16_to_f32(lo) : gk_sw_bf16_to_f32(lo);
			f[2 * k + 1] = WT == GK_Q_F16 ? gk_d_f16_to_f32(hi) : gk_sw_bf16_to_f32(hi);
		}
	}
}

/* y[i][r] for the N_ <= N tokens, one warp a row; rows 16-byte aligned, cols whole words */
template <gk_qtype_t WT, int N>
__global__ void __launch_bounds__(QMV_WARPS * 32)
    k_qmv_plain(const uint8_t *__restrict__ w, size_t rb, int rows, int cols,
		const float *__restrict__ x, int n_, float *__restrict__ y, int ldy)
{
	constexpr int VPW = WT == GK_Q_F32 ? 4 : 8; /* values a word */
	const int lane = threadIdx.x & 31, r = blockIdx.x * QMV_WARPS + (threadIdx.x >> 5);
	if (r >= rows)
		return; /* the whole warp */
	const uint4 *wr = (const uint4 *)(w + (size_t)r * rb);
	const int nw = cols / VPW;
	float acc[N];
#pragma unroll
	for (int i = 0; i < N; i++)
		acc[i] = 0.0f;
	for (int k0 = lane; k0 < nw; k0 += 32 * QMV_UNROLL) {
		uint4 v[QMV_UNROLL];
#pragma unroll
		for (int u = 0; u < QMV_UNROLL; u++)
			v[u] = k0 + 32 * u < nw ? wr[k0 + 32 * u] : make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int u = 0; u < QMV_UNROLL; u++) {
			const int k = k0 + 32 * u;
			if (k >= nw)
				continue;
			float f[VPW];
			unpack<WT>(v[u], f);
#pragma unroll
			for (int i = 0; i < N; i++) {
				if (i >= n_)
					continue;
				const float4 *xp =
				    (const float4 *)(x + (size_t)i * cols + (size_t)k * VPW);
#pragma unroll
				for (int q = 0; q < VPW / 4; q++) {
					float4 a = xp[q];
					acc[i] = gkFma(f[4 * q], a.x, acc[i]);
					acc[i] = gkFma(f[4 * q + 1], a.y, acc[i]);
					acc[i] = gkFma(f[4 * q + 2], a.z, acc[i]);
					acc[i] = gkFma(f[4 * q + 3], a.w, acc[i]);
				}
			}
		}
	}
#pragma unroll
	for (int i = 0; i < N; i++) {
		float s = warp_sum(acc[i]);
		if (lane == 0 && i < n_)
			y[(size_t)i * ldy + r] = s;
	}
}

/* ---- decode products, block formats: one block of R rows against N tokens ---- */

/* Per format: values and bytes a block, blocks a chunk (staged in shared memory), rows a warp,
 * warps a block (shared memory: WARPS * R * chunk). */
template <gk_qtype_t WT> struct qcfg;
template <> struct qcfg<GK_Q_Q4_0> {
	enum { QB = 32, BB = 18, CB = 64, R = 2, WARPS = 4 };
};
template <> struct qcfg<GK_Q_Q8_0> {
	enum { QB = 32, BB = 34, CB = 64, R = 2, WARPS = 4 };
};
template <> struct qcfg<GK_Q_Q4_K> {
	enum { QB = 256, BB = 144, CB = 32, R = 2, WARPS = 2 };
};
template <> struct qcfg<GK_Q_Q6_K> {
	enum { QB = 256, BB = 210, CB = 32, R = 2, WARPS = 2 };
};

#include "kernels/gpu/gk_qdot.h"

template <gk_qtype_t WT, int N>
__global__ void __launch_bounds__(qcfg<WT>::WARPS * 32)
    k_qmv_blocks(const uint8_t *__restrict__ w, size_t rb, int rows, int cols,
		 const float *__restrict__ x, int n_, float *__restrict__ y, int ldy)
{
	typedef qcfg<WT> C;
	constexpr int WORDS = (C::CB * C::BB + 15) / 16 + 1; /* + 1: a row's misaligned start */
	__shared__ uint4 stage[C::WARPS][C::R][WORDS];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int r0 = (blockIdx.x * C::WARPS + warp) * C::R, nblk = cols / C::QB;
	float acc[C::R][N];
#pragma unroll
	for (int r = 0; r < C::R; r++)
#pragma unroll
		for (int i = 0; i < N; i++)
			acc[r][i] = 0.0f;
	for (int c0 = 0; c0 < nblk; c0 += C::CB) {
		const int nb = nblk - c0 < C::CB ? nblk - c0 : C::CB;
		int delta[C::R];
#pragma unroll
		for (int r = 0; r < C::R; r++) {
			delta[r] = 0;
			if (r0 + r >= rows)
				continue;
			const uint8_t *s = w + (size_t)(r0 + r) * rb + (size_t)c0 * C::BB;
			const uint4 *al = (const uint4 *)((uintptr_t)s & ~(uintptr_t)15);
			delta[r] = (int)(s - (const uint8_t *)al);
			/* whole words that hold a byte of the chunk: never a page past the row */
			const int nwords = (delta[r] + nb * C::BB + 15) / 16;
#pragma unroll 4
			for (int k = lane; k < nwords; k += 32)
				stage[warp][r][k] = al[k];
		}
		__syncthreads();
		for (int j = lane; j < nb; j += 32) {
			const uint16_t *blk[C::R];
#pragma unroll
			for (int r = 0; r < C::R; r++)
				blk[r] = (const uint16_t *)((const uint8_t *)stage[warp][r] +
							    delta[r] + j * C::BB);
			qdot<WT, N, C::R>::run(blk, x + (size_t)(c0 + j) * C::QB, cols, n_, acc);
		}
		__syncthreads();
	}
#pragma unroll
	for (int r = 0; r < C::R; r++)
#pragma unroll
		for (int i = 0; i < N; i++) {
			float s = warp_sum(acc[r][i]);
			if (lane == 0 && i < n_ && r0 + r < rows)
				y[(size_t)i * ldy + r0 + r] = s;
		}
}

/* ---- prefill: tiles of y, W dequantized into shared memory once a step ---- */

/* The tensor cores on sm_80 and later: TF32 products of m16n8k8, each f32 operand split into
 * a TF32 high part and a TF32 remainder, three products a step (hi*hi + hi*lo + lo*hi), which
 * keeps about 22 bits of each input, so the sums stay within qmatmul's bound (plain TF32
 * keeps 10 bits: 5e-4 a term). Fragments as PTX's mma.m16n8k8 .tf32: lane = 4 * g + t. */
#if defined(GK_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GK_TF32_MMA 1
__device__ static inline void tf32_split(float v, uint32_t *hi, uint32_t *lo)
{
	uint32_t h, l;
	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(h) : "f"(v));
	h &= 0xffffe000u;
	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(l) : "f"(v - __uint_as_float(h)));
	*hi = h, *lo = l;
}

__device__ static inline void mma_tf32(float *d, const uint32_t *a, const uint32_t *b)
{
	asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* a warp's 32 x 16 of the 64 x 64 tile: warps 2 along the rows, 4 along the tokens */
__device__ static inline void tile_mma(const float (*ws)[TM + 8], const float (*xs)[TN + 8],
				       float (*acc)[2][4])
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	const int wm = (warp & 1) * 32, wn = (warp >> 1) * 16;
#pragma unroll
	for (int ks = 0; ks < TK; ks += 8) {
		uint32_t ah[2][4], al[2][4], bh[2][2], bl[2][2];
#pragma unroll
		for (int mi = 0; mi < 2; mi++) {
			const int rb = wm + 16 * mi + g;
			tf32_split(ws[ks + t][rb], &ah[mi][0], &al[mi][0]);
			tf32_split(ws[ks + t][rb + 8], &ah[mi][1], &al[mi][1]);
			tf32_split(ws[ks + t + 4][rb], &ah[mi][2], &al[mi][2]);
			tf32_split(ws[ks + t + 4][rb + 8], &ah[mi][3], &al[mi][3]);
		}
#pragma unroll
		for (int ni = 0; ni < 2; ni++) {
			const int cb = wn + 8 * ni + g;
			tf32_split(xs[ks + t][cb], &bh[ni][0], &bl[ni][0]);
			tf32_split(xs[ks + t + 4][cb], &bh[ni][1], &bl[ni][1]);
		}
#pragma unroll
		for (int mi = 0; mi < 2; mi++)
#pragma unroll
			for (int ni = 0; ni < 2; ni++) {
				mma_tf32(acc[mi][ni], al[mi], bh[ni]);
				mma_tf32(acc[mi][ni], ah[mi], bl[ni]);
				mma_tf32(acc[mi][ni], ah[mi], bh[ni]);
			}
	}
}
#else
/* a thread's 4 x 4 outputs (rows tm + 16 i, tokens tn + 16 j) on the f32 units */
__device__ static inline void tile_fma(const float (*ws)[TM + 8], const float (*xs)[TN + 8],
				       float (*acc)[4])
{
	const int tm = threadIdx.x & 15, tn = threadIdx.x >> 4;
#pragma unroll 8
	for (int kk = 0; kk < TK; kk++) {
		float a[4], bx[4];
#pragma unroll
		for (int i = 0; i < 4; i++)
			a[i] = ws[kk][tm + 16 * i], bx[i] = xs[kk][tn + 16 * i];
#pragma unroll
		for (int i = 0; i < 4; i++)
#pragma unroll
			for (int j = 0; j < 4; j++)
				acc[i][j] = gkFma(a[i], bx[j], acc[i][j]);
	}
}
#endif

template <gk_qtype_t WT>
__global__ void __launch_bounds__(256)
    k_qmm_tiled(const uint8_t *__restrict__ w, size_t rb, int rows, int cols,
		const float *__restrict__ x, int n, float *__restrict__ y, int ldy)
{
	/* rows of TM + 8: the fragments' reads (k = t, rows g) fall on distinct banks */
	__shared__ float ws[TK][TM + 8];
	__shared__ float xs[TK][TN + 8];
	const int tid = threadIdx.x, m0 = blockIdx.x * TM, n0 = blockIdx.y * TN;
	const int lr = tid >> 2, lc = (tid & 3) * 8; /* the tile elements a thread loads */
	float acc[16];
#pragma unroll
	for (int i = 0; i < 16; i++)
		acc[i] = 0.0f;
	const uint8_t *wrow = m0 + lr < rows ? w + (size_t)(m0 + lr) * rb : NULL;
	const float *xrow = n0 + lr < n ? x + (size_t)(n0 + lr) * cols : NULL;
	for (int k0 = 0; k0 < cols; k0 += TK) {
#pragma unroll
		for (int e = 0; e < 8; e++) {
			const int c = k0 + lc + e;
			ws[lc + e][lr] = wrow && c < cols ? qval<WT>(wrow, c) : 0.0f;
			xs[lc + e][lr] = xrow && c < cols ? xrow[c] : 0.0f;
		}
		__syncthreads();
#ifdef GK_TF32_MMA
		tile_mma(ws, xs, (float(*)[2][4])acc);
#else
		tile_fma(ws, xs, (float(*)[4])acc);
#endif
		__syncthreads();
	}
#ifdef GK_TF32_MMA
	const int lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
	const float(*am)[2][4] = (const float(*)[2][4])acc;
#pragma unroll
	for (int mi = 0; mi < 2; mi++)
#pragma unroll
		for (int ni = 0; ni < 2; ni++)
#pragma unroll
			for (int q = 0; q < 4; q++) {
				const int r = m0 + (warp & 1) * 32 + 16 * mi + g + 8 * (q >> 1);
				const int tok = n0 + (warp >> 1) * 16 + 8 * ni + 2 * t + (q & 1);
				if (r < rows && tok < n)
					y[(size_t)tok * ldy + r] = am[mi][ni][q];
			}
#else
	const int tm = tid & 15, tn = tid >> 4;
	const float(*af)[4] = (const float(*)[4])acc;
#pragma unroll
	for (int j = 0; j < 4; j++) {
		const int tok = n0 + tn + 16 * j;
		if (tok >= n)
			continue;
#pragma unroll
		for (int i = 0; i < 4; i++)
			if (m0 + tm + 16 * i < rows)
				y[(size_t)tok * ldy + m0 + tm + 16 * i] = af[i][j];
	}
#endif
}

/* ---- launchers, one table row a weight type ---- */

typedef struct {
	const uint8_t *w;
	size_t rb;
	int rows, cols;
	const float *x;
	int n;
	float *y;
	int ldy;
	gkStream_t st;
} qmm_args_t;

static int aligned(const void *p, uintptr_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

template <gk_qtype_t WT> static void launch_tiled(const qmm_args_t *a)
{
	dim3 grid((unsigned)((a->rows + TM - 1) / TM), (unsigned)((a->n + TN - 1) / TN));
	k_qmm_tiled<WT>
	    <<<grid, 256, 0, a->st>>>(a->w, a->rb, a->rows, a->cols, a->x, a->n, a->y, a->ldy);
}

/* the decode kernel for n_ tokens, instantiated for N = 1, 2, 4, 8 */
template <gk_qtype_t WT, int N> static void launch_plain_n(const qmm_args_t *a)
{
	unsigned blocks = (unsigned)((a->rows + QMV_WARPS - 1) / QMV_WARPS);
	k_qmv_plain<WT, N><<<blocks, QMV_WARPS * 32, 0, a->st>>>(a->w, a->rb, a->rows, a->cols,
								 a->x, a->n, a->y, a->ldy);
}

template <gk_qtype_t WT, int N> static void launch_blocks_n(const qmm_args_t *a)
{
	typedef qcfg<WT> C;
	unsigned per = C::WARPS * C::R, blocks = (unsigned)((a->rows + per - 1) / per);
	k_qmv_blocks<WT, N><<<blocks, C::WARPS * 32, 0, a->st>>>(a->w, a->rb, a->rows, a->cols,
								 a->x, a->n, a->y, a->ldy);
}

template <gk_qtype_t WT> static void launch_plain(const qmm_args_t *a)
{
	const int vpw = WT == GK_Q_F32 ? 4 : 8;
	if (a->n > 8 || a->cols % vpw || a->rb % 16 || !aligned(a->w, 16) || !aligned(a->x, 16))
		return launch_tiled<WT>(a);
	if (a->n == 1)
		launch_plain_n<WT, 1>(a);
	else if (a->n == 2)
		launch_plain_n<WT, 2>(a);
	else if (a->n <= 4)
		launch_plain_n<WT, 4>(a);
	else
		launch_plain_n<WT, 8>(a);
}

template <gk_qtype_t WT> static void launch_blocks(const qmm_args_t *a)
{
	if (a->n > 8 || !aligned(a->w, 2) || !aligned(a->x, 8))
		return launch_tiled<WT>(a);
	if (a->n == 1)
		launch_blocks_n<WT, 1>(a);
	else if (a->n == 2)
		launch_blocks_n<WT, 2>(a);
	else if (a->n <= 4)
		launch_blocks_n<WT, 4>(a);
	else
		launch_blocks_n<WT, 8>(a);
}

template <gk_qtype_t WT>
__global__ void k_get_rows(const uint8_t *__restrict__ w, size_t rb, int rows, int cols,
			   const int32_t *__restrict__ ids, int n, float *__restrict__ out)
{
	const size_t total = (size_t)n * cols, stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
		const int t = (int)(i / cols), c = (int)(i % cols), id = ids[t];
		out[i] = id >= 0 && id < rows ? qval<WT>(w + (size_t)id * rb, c)
					      : __int_as_float(0x7fc00000);
	}
}

template <gk_qtype_t WT>
static void launch_get_rows(gpu_t *g, const qmm_args_t *a, const int32_t *ids)
{
	k_get_rows<WT><<<gk_gpu_blocks(g, (size_t)a->n * a->cols, EW_TPB), EW_TPB, 0, a->st>>>(
	    a->w, a->rb, a->rows, a->cols, ids, a->n, a->y);
}

/* (values and bytes a block are qtype.c's, which lives in the loader's library, not here) */
static const struct {
	gk_qtype_t t;
	int qb;	   /* values a block */
	size_t bb; /* bytes a block */
	void (*matmul)(const qmm_args_t *a);
	void (*get_rows)(gpu_t *g, const qmm_args_t *a, const int32_t *ids);
} qtab[] = {
    {GK_Q_F32, 1, 4, launch_plain<GK_Q_F32>, launch_get_rows<GK_Q_F32>},
    {GK_Q_F16, 1, 2, launch_plain<GK_Q_F16>, launch_get_rows<GK_Q_F16>},
    {GK_Q_BF16, 1, 2, launch_plain<GK_Q_BF16>, launch_get_rows<GK_Q_BF16>},
    {GK_Q_Q4_0, GK_QK4_0, sizeof(gk_block_q4_0_t), launch_blocks<GK_Q_Q4_0>,
     launch_get_rows<GK_Q_Q4_0>},
    {GK_Q_Q8_0, GK_QK8_0, sizeof(gk_block_q8_0_t), launch_blocks<GK_Q_Q8_0>,
     launch_get_rows<GK_Q_Q8_0>},
    {GK_Q_Q4_K, GK_QK_K, sizeof(gk_block_q4_K_t), launch_blocks<GK_Q_Q4_K>,
     launch_get_rows<GK_Q_Q4_K>},
    {GK_Q_Q6_K, GK_QK_K, sizeof(gk_block_q6_K_t), launch_blocks<GK_Q_Q6_K>,
     launch_get_rows<GK_Q_Q6_K>},
};

static int find_qtype(gpu_t *g, gk_qtype_t t)
{
	for (size_t i = 0; i < sizeof qtab / sizeof qtab[0]; i++)
		if (qtab[i].t == t)
			return (int)i;
	return gk_gpu_fail(g, ENOTSUP, "weight type %d has no kernel", (int)t);
}

extern "C" int gk_gpu_qmatmul(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
			      const float *x, int n, float *y, int ldy, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	int i = find_qtype(g, wt);
	if (i < 0 || start(g) < 0)
		return -1;
	qmm_args_t a = {
	    (const uint8_t *)w, (size_t)(cols / qtab[i].qb) * qtab[i].bb, rows, cols, x, n, y, ldy,
	    GK_STREAM(s)};
	qtab[i].matmul(&a);
	return gk_gpu_launched(g, "qmatmul");
}

extern "C" int gk_gpu_qget_rows(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
				const int32_t *ids, int n, float *out, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	int i = find_qtype(g, wt);
	if (i < 0 || start(g) < 0)
		return -1;
	qmm_args_t a = {(const uint8_t *)w,
			(size_t)(cols / qtab[i].qb) * qtab[i].bb,
			rows,
			cols,
			NULL,
			n,
			out,
			0,
			GK_STREAM(s)};
	qtab[i].get_rows(g, &a, ids);
	return gk_gpu_launched(g, "get_rows");
}

/* ---- RMSNorm: a block a row ---- */

#define NORM_TPB 256

__global__ void __launch_bounds__(NORM_TPB)
    k_rmsnorm(float *y, const float *x, const float *__restrict__ w, int dim, float eps)
{
	__shared__ float part[NORM_TPB / 32];
	const float *xr = x + (size_t)blockIdx.x * dim;
	float *yr = y + (size_t)blockIdx.x * dim;
	float ss = 0.0f;
	for (int c = threadIdx.x; c < dim; c += NORM_TPB)
		ss = gkFma(xr[c], xr[c], ss);
	ss = warp_sum(ss);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x >> 5] = ss;
	__syncthreads();
	float tot = 0.0f;
	for (int k = 0; k < NORM_TPB / 32; k++)
		tot += part[k];
	const float scale = 1.0f / sqrtf(tot / (float)dim + eps);
	for (int c = threadIdx.x; c < dim; c += NORM_TPB)
		yr[c] = (xr[c] * scale) * w[c];
}

extern "C" int gk_gpu_rmsnorm(void *ctx, float *y, const float *x, const float *w, int n, int dim,
			      float eps, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_rmsnorm<<<(unsigned)n, NORM_TPB, 0, GK_STREAM(s)>>>(y, x, w, dim, eps);
	return gk_gpu_launched(g, "rmsnorm");
}

/* ---- RoPE: a block a token; a thread's pair rotates in every head ---- */

__global__ void k_rope(float *x, const int32_t *__restrict__ pos, int nheads, int head_dim,
		       int rot_dim, float freq_base, float freq_scale, int neox)
{
	const int i = blockIdx.x, half = rot_dim / 2, p = pos[i];
	for (int j = threadIdx.x; j < half; j += blockDim.x) {
		const double th = gk_rope_angle(p, freq_scale, freq_base, j, rot_dim);
		const float c = (float)cos(th), sn = (float)sin(th);
		const int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
		for (int h = 0; h < nheads; h++) {
			float *v = x + ((size_t)i * nheads + h) * head_dim;
			const float x0 = v[a], x1 = v[b];
			v[a] = x0 * c - x1 * sn;
			v[b] = x0 * sn + x1 * c;
		}
	}
}

extern "C" int gk_gpu_rope(void *ctx, float *x, const int32_t *pos, int n, int nheads, int head_dim,
			   int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	int tpb = rot_dim / 2 < 128 ? ((rot_dim / 2 + 31) / 32) * 32 : 128;
	k_rope<<<(unsigned)n, (unsigned)tpb, 0, GK_STREAM(s)>>>(x, pos, nheads, head_dim, rot_dim,
								freq_base, freq_scale, neox);
	return gk_gpu_launched(g, "rope");
}

/* ---- elementwise ---- */

__global__ void k_swiglu(float *out, const float *gate, const float *up, size_t n)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		out[i] = gk_silu(gate[i]) * up[i];
}

__global__ void k_add(float *y, const float *x, size_t n)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		y[i] += x[i];
}

__global__ void k_add_bias(float *x, const float *__restrict__ bias, size_t n, int cols)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		x[i] += bias[i % (size_t)cols];
}

template <int F16>
__global__ void k_kv_write(void *cache, const int32_t *__restrict__ slots,
			   const float *__restrict__ src, int n, int row)
{
	const size_t total = (size_t)n * row, stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
		const int t = (int)(i / row), c = (int)(i % row), slot = slots[t];
		if (slot < 0)
			continue;
		const size_t at = (size_t)slot * row + c;
		if (F16)
			((uint16_t *)cache)[at] = gk_d_f32_to_f16(src[i]);
		else
			((float *)cache)[at] = src[i];
	}
}

extern "C" int gk_gpu_swiglu(void *ctx, float *out, const float *gate, const float *up, size_t n,
			     gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_swiglu<<<gk_gpu_blocks(g, n, EW_TPB), EW_TPB, 0, GK_STREAM(s)>>>(out, gate, up, n);
	return gk_gpu_launched(g, "swiglu");
}

extern "C" int gk_gpu_add(void *ctx, float *y, const float *x, size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	k_add<<<gk_gpu_blocks(g, n, EW_TPB), EW_TPB, 0, GK_STREAM(s)>>>(y, x, n);
	return gk_gpu_launched(g, "add");
}

extern "C" int gk_gpu_add_bias(void *ctx, float *x, const float *bias, int n, int cols,
			       gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	size_t total = (size_t)n * cols;
	k_add_bias<<<gk_gpu_blocks(g, total, EW_TPB), EW_TPB, 0, GK_STREAM(s)>>>(x, bias, total,
										 cols);
	return gk_gpu_launched(g, "add_bias");
}

extern "C" int gk_gpu_kv_write(void *ctx, gk_dtype_t kv_t, void *cache, const int32_t *slots,
			       const float *src, int n, int row, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (start(g) < 0)
		return -1;
	unsigned blocks = gk_gpu_blocks(g, (size_t)n * row, EW_TPB);
	if (kv_t == GK_F16)
		k_kv_write<1><<<blocks, EW_TPB, 0, GK_STREAM(s)>>>(cache, slots, src, n, row);
	else
		k_kv_write<0><<<blocks, EW_TPB, 0, GK_STREAM(s)>>>(cache, slots, src, n, row);
	return gk_gpu_launched(g, "kv_write");
}
