/* llm_attn.cu - causal attention over the paged KV cache on a card (gk_attention), one source
 * for CUDA and HIP, in the manner of flash-decoding.
 *
 * A block takes one query row, HPB heads that share a kv head (grouped-query attention reads
 * each key once for all of them) and one split of the row's context. Its 128 threads are 16
 * groups of 8 lanes; a group takes a key at a time (a warp four neighbouring keys), its 8
 * lanes each a stride of the head's dimensions, so a group's loads of a key row are
 * contiguous. Every group keeps its own online softmax (running max, sum and the weighted sum
 * of V) over the keys it saw; the 16 are merged in shared memory at the end. With one split
 * the block writes the output; with several (a batch too small to fill the card, a long
 * context) each writes its max, sum and partial output to a workspace and a second kernel
 * combines the splits. The row's sequence is found by a binary search of q_start, and its keys
 * through the block table; no score is stored.
 *
 * Sequences with more than PREFILL_MIN new rows (a prompt, a chunk of one) take a tiled kernel
 * instead: 32 query rows of one head against tiles of keys and values in shared memory, so a
 * tile is read once for 32 rows rather than once a row. Keys and values are f32 or f16
 * (converted in registers); sums are f32. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu/gk_gpu.h"

#define AT_THREADS   128
#define AT_LPK	     8 /* lanes a key */
#define AT_GROUPS    (AT_THREADS / AT_LPK)
#define AT_SPLIT_MIN 256 /* keys a split at least */

typedef struct {
	int seq, q0, nq, ctx;
	int status; /* 0: the row is no sequence's (left alone), 1: its sequence is bad (NaN), 2 */
} row_info_t;

/* The row's sequence; sequences of more than MAX_NQ rows are the prefill kernel's (status 0). */
__device__ static row_info_t find_row(const gk_attn_t &p, int row, int max_nq)
{
	row_info_t r = {0, 0, 0, 0, 0};
	if (p.q_start[0] > row)
		return r;
	int lo = 0, hi = p.nseq - 1; /* the last sequence starting at or before the row */
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (p.q_start[mid] <= row)
			lo = mid;
		else
			hi = mid - 1;
	}
	const int q0 = p.q_start[lo], q1 = p.q_start[lo + 1];
	if (q0 < 0 || q1 > p.ntok || row >= q1 || q1 <= q0 || q1 - q0 > max_nq)
		return r;
	r.seq = lo, r.q0 = q0, r.nq = q1 - q0, r.ctx = p.ctx_len[lo];
	r.status = r.ctx < r.nq || r.ctx > p.max_blocks * p.block_size ? 1 : 2;
	return r;
}

template <int F16> __device__ static inline float ld_kv(const void *c, size_t i)
{
	return F16 ? gk_d_f16_to_f32(((const uint16_t *)c)[i]) : ((const float *)c)[i];
}

/* One group's keys of the split folded into its online softmax (M, L, ACC of HPB heads). */
template <int DPL, int HPB, int F16>
__device__ static void attn_keys(const gk_attn_t &p, const row_info_t &ri, const float *qs, int hpb,
				 int kvh, int kbeg, int kend, float *m, float *l, float (*acc)[DPL],
				 int *bad)
{
	const int hd = p.head_dim, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int sub = threadIdx.x % AT_LPK;
	const size_t rowlen = (size_t)p.n_kv_heads * hd;
	const int32_t *table = p.block_table + (size_t)ri.seq * p.max_blocks;
	/* warp-uniform trip count: the shuffles below need every lane */
	for (int k0 = kbeg + warp * (32 / AT_LPK); k0 < kend; k0 += AT_GROUPS) {
		const int k = k0 + lane / AT_LPK;
		const int phys = k < kend ? table[k / p.block_size] : 0;
		const bool use = k < kend && phys >= 0;
		*bad |= k < kend && phys < 0;
		const size_t base =
		    ((size_t)(use ? phys : 0) * p.block_size + k % p.block_size) * rowlen +
		    (size_t)kvh * hd;
		float kk[DPL], vv[DPL];
#pragma unroll
		for (int i = 0; i < DPL; i++) {
			const int d = sub + AT_LPK * i;
			kk[i] = use && d < hd ? ld_kv<F16>(p.k_cache, base + d) : 0.0f;
			vv[i] = use && d < hd ? ld_kv<F16>(p.v_cache, base + d) : 0.0f;
		}
#pragma unroll
		for (int h = 0; h < HPB; h++) {
			if (h >= hpb)
				continue;
			float s = 0.0f;
#pragma unroll
			for (int i = 0; i < DPL; i++) {
				const int d = sub + AT_LPK * i;
				s = gkFma(d < hd ? qs[h * hd + d] : 0.0f, kk[i], s);
			}
			for (int msk = AT_LPK / 2; msk; msk >>= 1)
				s += gkShflXor(s, msk);
			if (!use)
				continue;
			s *= p.scale;
			const float mx = fmaxf(m[h], s), corr = expf(m[h] - mx), e = expf(s - mx);
			l[h] = l[h] * corr + e;
#pragma unroll
			for (int i = 0; i < DPL; i++)
				acc[h][i] = gkFma(e, vv[i], acc[h][i] * corr);
			m[h] = mx;
		}
	}
}

template <int DPL, int HPB, int F16>
__global__ void __launch_bounds__(AT_THREADS)
    k_attn(gk_attn_t p, int hpb, int nsplit, int split_len, float *ws, int max_nq)
{
	constexpr int SLOTS = HPB * AT_LPK * DPL; /* hpb * head_dim at most */
	__shared__ float qs[SLOTS];
	__shared__ float sm_m[AT_GROUPS][HPB], sm_l[AT_GROUPS][HPB];
	__shared__ float sm_acc[AT_GROUPS][SLOTS];
	__shared__ int sbad;
	const int row = blockIdx.x, h0 = blockIdx.y * hpb, split = blockIdx.z;
	const row_info_t ri = find_row(p, row, max_nq);
	if (ri.status == 0)
		return; /* the whole block */
	const int hd = p.head_dim, kvh = h0 / (p.n_heads / p.n_kv_heads);
	const int tid = threadIdx.x, grp = tid / AT_LPK, sub = tid % AT_LPK;
	const int last = ri.ctx - ri.nq + (row - ri.q0); /* the row's own position */
	const int kbeg = split * split_len;
	const int kend = last + 1 < kbeg + split_len ? last + 1 : kbeg + split_len;
	for (int i = tid; i < hpb * hd; i += AT_THREADS)
		qs[i] = p.q[((size_t)row * p.n_heads + h0) * hd + i];
	if (tid == 0)
		sbad = ri.status == 1;
	__syncthreads();
	float m[HPB], l[HPB], acc[HPB][DPL];
#pragma unroll
	for (int h = 0; h < HPB; h++) {
		m[h] = -INFINITY, l[h] = 0.0f;
#pragma unroll
		for (int i = 0; i < DPL; i++)
			acc[h][i] = 0.0f;
	}
	int bad = 0;
	if (ri.status == 2)
		attn_keys<DPL, HPB, F16>(p, ri, qs, hpb, kvh, kbeg, kend, m, l, acc, &bad);
#pragma unroll
	for (int h = 0; h < HPB; h++) {
		if (h >= hpb)
			continue;
#pragma unroll
		for (int i = 0; i < DPL; i++)
			if (sub + AT_LPK * i < hd)
				sm_acc[grp][h * hd + sub + AT_LPK * i] = acc[h][i];
		if (sub == 0)
			sm_m[grp][h] = m[h], sm_l[grp][h] = l[h];
	}
	if (bad)
		sbad = 1;
	__syncthreads();
	/* merge the groups: one thread an output value */
	for (int idx = tid; idx < hpb * hd; idx += AT_THREADS) {
		const int h = idx / hd, d = idx % hd;
		float mx = -INFINITY, sum = 0.0f, a = 0.0f;
		for (int gq = 0; gq < AT_GROUPS; gq++)
			mx = fmaxf(mx, sm_m[gq][h]);
		for (int gq = 0; gq < AT_GROUPS && mx != -INFINITY; gq++) {
			if (sm_m[gq][h] == -INFINITY)
				continue;
			const float e = expf(sm_m[gq][h] - mx);
			sum = gkFma(sm_l[gq][h], e, sum);
			a = gkFma(sm_acc[gq][idx], e, a);
		}
		if (sbad)
			sum = a = __int_as_float(0x7fc00000);
		if (nsplit == 1) {
			p.out[((size_t)row * p.n_heads + h0) * hd + idx] = a / sum;
			continue;
		}
		float *w = ws + (((size_t)row * p.n_heads + h0 + h) * nsplit + split) * (hd + 2);
		if (d == 0)
			w[0] = mx, w[1] = sum;
		w[2 + d] = a;
	}
}

/* The splits of a row and head: out = sum_s A_s e^(m_s - M) / sum_s L_s e^(m_s - M). */
__global__ void k_attn_combine(gk_attn_t p, int nsplit, const float *ws, int max_nq)
{
	const int row = blockIdx.x, h = blockIdx.y, hd = p.head_dim;
	const row_info_t ri = find_row(p, row, max_nq);
	if (ri.status == 0)
		return;
	const float *w = ws + ((size_t)row * p.n_heads + h) * nsplit * (hd + 2);
	float mx = -INFINITY;
	int bad = ri.status == 1;
	for (int sp = 0; sp < nsplit; sp++) {
		mx = fmaxf(mx, w[sp * (hd + 2)]);
		bad |= isnan(w[sp * (hd + 2) + 1]);
	}
	for (int d = threadIdx.x; d < hd; d += blockDim.x) {
		float sum = 0.0f, a = 0.0f;
		for (int sp = 0; sp < nsplit; sp++) {
			const float *ws_ = w + sp * (hd + 2);
			if (ws_[0] == -INFINITY)
				continue;
			const float e = expf(ws_[0] - mx);
			sum = gkFma(ws_[1], e, sum);
			a = gkFma(ws_[2 + d], e, a);
		}
		p.out[((size_t)row * p.n_heads + h) * hd + d] =
		    bad ? __int_as_float(0x7fc00000) : a / sum;
	}
}

/* ---- prefill: a tile of PQ query rows of one sequence and one head against tiles of PK keys
 * in shared memory. 4 lanes a row, each holding a stride of the head's dimensions of q and of
 * the output; a key tile's scores are computed first, then one rescale of the running sum and
 * output a tile (FlashAttention-2's order). Keys past a row's position are masked. ---- */

#define PQ	    32
#define PK	    16
#define P_LPR	    4 /* lanes a row */
#define P_MAX_HD    128
#define PREFILL_MIN 8 /* sequences of more rows than this take the prefill kernel */

template <int DPL, int F16> __global__ void __launch_bounds__(PQ *P_LPR) k_attn_prefill(gk_attn_t p)
{
	__shared__ float ks[PK][P_MAX_HD], vs[PK][P_MAX_HD];
	__shared__ int sbad;
	const int j = blockIdx.z, h = blockIdx.y, t0 = blockIdx.x * PQ, hd = p.head_dim;
	const int q0 = p.q_start[j], q1 = p.q_start[j + 1], nq = q1 - q0, ctx = p.ctx_len[j];
	if (q0 < 0 || q1 > p.ntok || nq <= PREFILL_MIN || t0 >= nq)
		return; /* the whole block: not this kernel's rows */
	const int tid = threadIdx.x, r = tid / P_LPR, sub = tid % P_LPR;
	const int nrows = nq - t0 < PQ ? nq - t0 : PQ, kvh = h / (p.n_heads / p.n_kv_heads);
	const bool valid = r < nrows;
	const int pos = valid ? ctx - nq + t0 + r : -1; /* the row's position: keys 0..pos */
	const int last = ctx - nq + t0 + nrows - 1;	/* the tile's last position */
	float *out = p.out + ((size_t)(q0 + t0 + r) * p.n_heads + h) * hd;
	if (tid == 0)
		sbad = ctx < nq || ctx > p.max_blocks * p.block_size;
	__syncthreads();
	if (sbad) {
		for (int i = 0; valid && i < DPL; i++)
			if (sub + P_LPR * i < hd)
				out[sub + P_LPR * i] = __int_as_float(0x7fc00000);
		return;
	}
	float q[DPL], acc[DPL], m = -INFINITY, l = 0.0f;
	const float *qr = p.q + ((size_t)(q0 + t0 + (valid ? r : 0)) * p.n_heads + h) * hd;
#pragma unroll
	for (int i = 0; i < DPL; i++) {
		const int d = sub + P_LPR * i;
		q[i] = d < hd ? qr[d] : 0.0f;
		acc[i] = 0.0f;
	}
	const size_t rowlen = (size_t)p.n_kv_heads * hd;
	const int32_t *table = p.block_table + (size_t)j * p.max_blocks;
	for (int kt = 0; kt <= last; kt += PK) {
		for (int idx = tid; idx < PK * hd; idx += PQ * P_LPR) {
			const int k = idx / hd, d = idx % hd, key = kt + k;
			float kv = 0.0f, vv = 0.0f;
			if (key <= last) {
				const int phys = table[key / p.block_size];
				if (phys < 0) {
					sbad = 1;
				} else {
					const size_t at =
					    ((size_t)phys * p.block_size + key % p.block_size) *
						rowlen +
					    (size_t)kvh * hd + d;
					kv = ld_kv<F16>(p.k_cache, at),
					vv = ld_kv<F16>(p.v_cache, at);
				}
			}
			ks[k][d] = kv, vs[k][d] = vv;
		}
		__syncthreads();
		float sc[PK], mt = -INFINITY;
#pragma unroll
		for (int k = 0; k < PK; k++) {
			float s = 0.0f;
#pragma unroll
			for (int i = 0; i < DPL; i++)
				s = gkFma(q[i],
					  sub + P_LPR * i < hd ? ks[k][sub + P_LPR * i] : 0.0f, s);
			s += gkShflXor(s, 1);
			s += gkShflXor(s, 2);
			sc[k] = kt + k <= pos ? s * p.scale : -INFINITY;
			mt = fmaxf(mt, sc[k]);
		}
		if (mt != -INFINITY) { /* the row sees a key of this tile */
			const float mx = fmaxf(m, mt), corr = expf(m - mx);
			l *= corr;
#pragma unroll
			for (int i = 0; i < DPL; i++)
				acc[i] *= corr;
#pragma unroll
			for (int k = 0; k < PK; k++) {
				const float e = expf(sc[k] - mx); /* masked: exp(-inf) = 0 */
				l += e;
#pragma unroll
				for (int i = 0; i < DPL; i++)
					acc[i] = gkFma(
					    e, sub + P_LPR * i < hd ? vs[k][sub + P_LPR * i] : 0.0f,
					    acc[i]);
			}
			m = mx;
		}
		__syncthreads();
	}
	if (!valid)
		return;
	const bool bad = sbad != 0;
#pragma unroll
	for (int i = 0; i < DPL; i++)
		if (sub + P_LPR * i < hd)
			out[sub + P_LPR * i] = bad ? __int_as_float(0x7fc00000) : acc[i] / l;
}

/* ---- host ---- */

typedef void (*attn_launch_f)(const gk_attn_t *p, dim3 grid, int hpb, int nsplit, int split_len,
			      float *ws, int max_nq, gkStream_t st);

template <int DPL, int HPB, int F16>
static void launch_attn(const gk_attn_t *p, dim3 grid, int hpb, int nsplit, int split_len,
			float *ws, int max_nq, gkStream_t st)
{
	k_attn<DPL, HPB, F16><<<grid, AT_THREADS, 0, st>>>(*p, hpb, nsplit, split_len, ws, max_nq);
}

template <int DPL, int F16> static void launch_prefill(const gk_attn_t *p, gkStream_t st)
{
	dim3 grid((unsigned)((p->ntok + PQ - 1) / PQ), (unsigned)p->n_heads, (unsigned)p->nseq);
	k_attn_prefill<DPL, F16><<<grid, PQ * P_LPR, 0, st>>>(*p);
}

/* by the head's size: lanes hold up to DPL of its dimensions, up to 64 / DPL heads a block;
 * a kernel for one head a block (no grouped query: its registers are a quarter) and one for
 * the most (launched for any hpb > 1; the heads past hpb idle) */
static const struct {
	int max_hd, dpl;
	attn_launch_f one_f32, one_f16, many_f32, many_f16;
} attn_tab[] = {
    {64, 8, launch_attn<8, 1, 0>, launch_attn<8, 1, 1>, launch_attn<8, 8, 0>, launch_attn<8, 8, 1>},
    {128, 16, launch_attn<16, 1, 0>, launch_attn<16, 1, 1>, launch_attn<16, 4, 0>,
     launch_attn<16, 4, 1>},
    {256, 32, launch_attn<32, 1, 0>, launch_attn<32, 1, 1>, launch_attn<32, 2, 0>,
     launch_attn<32, 2, 1>},
};

/* The split workspace, grown outside graph capture only (an allocation cannot be captured):
 * 0 when it holds BYTES, -1 when it cannot grow now (the caller then does not split). */
static int ensure_ws(gpu_t *g, size_t bytes, gkStream_t st)
{
	gkStreamCaptureStatus cap = gkStreamCaptureStatusNone;
	if (g->llm_ws_bytes >= bytes)
		return 0;
	if (gkStreamIsCapturing(st, &cap) != gkSuccess || cap != gkStreamCaptureStatusNone)
		return -1;
	void *p = NULL;
	bytes += bytes / 2;
	if (gkMalloc(&p, bytes) != gkSuccess) {
		(void)gkGetLastError();
		return -1;
	}
	if (g->llm_ws)
		(void)gkFree(g->llm_ws); /* synchronizes: no kernel still uses it */
	g->llm_ws = p, g->llm_ws_bytes = bytes;
	return 0;
}

void gk_gpu_llm_close(gpu_t *g)
{
	if (g->llm_ws)
		(void)gkFree(g->llm_ws);
	g->llm_ws = NULL, g->llm_ws_bytes = 0;
}

extern "C" int gk_gpu_attention(void *ctx, const gk_attn_t *p, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	gkStream_t st = GK_STREAM(s);
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	size_t t = 0;
	while (p->head_dim > attn_tab[t].max_hd) /* the loader keeps head_dim <= 256 */
		t++;
	int gqa = p->n_heads / p->n_kv_heads, hpb = 64 / attn_tab[t].dpl;
	while (gqa % hpb)
		hpb--;
	const int groups = p->n_heads / hpb, maxctx = p->max_blocks * p->block_size;
	/* rows of sequences longer than PREFILL_MIN go to the prefill kernel when there are any
	 * (more rows than sequences) and the head fits it; GPOOL_KERNELS_ATTN=rowwise keeps
	 * every row on the decode kernel */
	const char *mode = getenv("GPOOL_KERNELS_ATTN");
	const int max_nq =
	    p->ntok > p->nseq && p->head_dim <= P_MAX_HD && !(mode && !strcmp(mode, "rowwise"))
		? PREFILL_MIN
		: INT_MAX;
	/* split the context when rows x head groups leave the card short of ~4 blocks an SM */
	long base = (long)p->ntok * groups, want = 4L * g->sms;
	int nsplit = 1;
	if (base < want) {
		long most = (maxctx + AT_SPLIT_MIN - 1) / AT_SPLIT_MIN;
		long n = (want + base - 1) / base;
		nsplit = (int)(n < most ? n : most);
		nsplit = nsplit < 1 ? 1 : nsplit > 1024 ? 1024 : nsplit;
	}
	size_t wsb = (size_t)p->ntok * p->n_heads * nsplit * (p->head_dim + 2) * sizeof(float);
	if (nsplit > 1 && ensure_ws(g, wsb, st) < 0)
		nsplit = 1;
	const int split_len = (maxctx + nsplit - 1) / nsplit;
	dim3 grid((unsigned)p->ntok, (unsigned)groups, (unsigned)nsplit);
	const int f16 = p->kv_t == GK_F16;
	attn_launch_f launch = hpb == 1 ? (f16 ? attn_tab[t].one_f16 : attn_tab[t].one_f32)
					: (f16 ? attn_tab[t].many_f16 : attn_tab[t].many_f32);
	launch(p, grid, hpb, nsplit, split_len, (float *)g->llm_ws, max_nq, st);
	if (gk_gpu_launched(g, "attention") < 0)
		return -1;
	if (nsplit > 1) {
		k_attn_combine<<<dim3((unsigned)p->ntok, (unsigned)p->n_heads), 128, 0, st>>>(
		    *p, nsplit, (const float *)g->llm_ws, max_nq);
		if (gk_gpu_launched(g, "attention combine") < 0)
			return -1;
	}
	if (max_nq == PREFILL_MIN) {
		if (p->head_dim <= 64)
			(p->kv_t == GK_F16 ? launch_prefill<16, 1> : launch_prefill<16, 0>)(p, st);
		else
			(p->kv_t == GK_F16 ? launch_prefill<32, 1> : launch_prefill<32, 0>)(p, st);
		return gk_gpu_launched(g, "attention prefill");
	}
	return 0;
}
