/* gk_cpu_llm.c - the cpu backend's language-model layers (gpool/kernels.h): the reference the
 * cards are checked against, and the path a PC with no card runs a model on.
 *
 * Weights are dequantized a few rows at a time into f32 with the values gk_qblock.h defines
 * (the per-type loops below are those functions unrolled: the same operations in the same
 * order, so the same floats), then dotted with the f32 activations; sums are f32 with eight
 * partial sums, so the compiler can vectorize them without reordering what the source says.
 * Attention walks each sequence's block table one block (a tile of keys) at a time with an
 * online softmax, for all the query rows and grouped heads that share the tile's kv head, so
 * a tile is widened to f32 once and no score matrix exists. The products and attention split
 * their work over threads (GPOOL_KERNELS_THREADS, default the online processors, at most 32)
 * when it is large enough to pay for them. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/gk_cpu.h"
#include "kernels/cpu/gk_cpu_qdot.h"
#include "kernels/gk_qblock.h"

#define MAX_THREADS 32
#define QMM_TILE    8	       /* weight rows dequantized together, then dotted with every x */
#define PAR_MIN_OPS (1L << 21) /* multiply-adds below which one thread does the whole call */

/* ---- f16 as a table: 256 KiB that stay in cache, one load per value ---- */

static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

static void f16_table_init(void)
{
	for (uint32_t h = 0; h < 65536; h++)
		f16_table[h] = gk_sw_f16_to_f32((uint16_t)h);
}

static inline float h2f(uint16_t h)
{
	return f16_table[h];
}

/* ---- threads: a parallel for over [0, n) in contiguous chunks ---- */

typedef void (*range_f)(void *arg, int tid, int lo, int hi);

typedef struct {
	range_f fn;
	void *arg;
	int tid, lo, hi;
} chunk_t;

static int cpu_threads(void)
{
	static int cached;
	if (!cached) {
		const char *e = getenv("GPOOL_KERNELS_THREADS");
		long n = e && atoi(e) > 0 ? atoi(e) : sysconf(_SC_NPROCESSORS_ONLN);
		cached = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
	}
	return cached;
}

static void *chunk_main(void *a)
{
	chunk_t *c = a;
	c->fn(c->arg, c->tid, c->lo, c->hi);
	return NULL;
}

/* Runs fn over [0, n) on at most NT threads (the caller's being one); a thread that cannot be
 * started leaves its chunk to the caller, so the work is always done. */
static void par_for(int n, int nt, range_f fn, void *arg)
{
	chunk_t c[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	int started[MAX_THREADS] = {0};

	if (nt > n)
		nt = n;
	if (nt <= 1) {
		fn(arg, 0, 0, n);
		return;
	}
	for (int t = 0; t < nt; t++) {
		c[t] =
		    (chunk_t){fn, arg, t, (int)((long)n * t / nt), (int)((long)n * (t + 1) / nt)};
		if (t > 0)
			started[t] = pthread_create(&th[t], NULL, chunk_main, &c[t]) == 0;
	}
	chunk_main(&c[0]);
	for (int t = 1; t < nt; t++) {
		if (started[t])
			pthread_join(th[t], NULL);
		else
			chunk_main(&c[t]);
	}
}

static int threads_for(double ops)
{
	return ops < (double)PAR_MIN_OPS ? 1 : cpu_threads();
}

/* ---- dequantization: one row of COLS values to f32 ---- */

typedef void (*deq_row_f)(const void *w, int cols, float *out);

static void deq_f32(const void *w, int cols, float *out)
{
	memcpy(out, w, (size_t)cols * sizeof(float));
}

static void deq_f16(const void *w, int cols, float *out)
{
	const uint16_t *h = w;
	for (int i = 0; i < cols; i++)
		out[i] = h2f(h[i]);
}

static void deq_bf16(const void *w, int cols, float *out)
{
	const uint16_t *h = w;
	for (int i = 0; i < cols; i++)
		out[i] = gk_sw_bf16_to_f32(h[i]);
}

static void deq_q4_0(const void *w, int cols, float *out)
{
	const gk_block_q4_0_t *bl = w;
	for (int b = 0; b < cols / GK_QK4_0; b++, out += GK_QK4_0) {
		float d = h2f(bl[b].d);
		for (int j = 0; j < GK_QK4_0 / 2; j++) {
			out[j] = (float)((bl[b].qs[j] & 0xF) - 8) * d;
			out[j + GK_QK4_0 / 2] = (float)((bl[b].qs[j] >> 4) - 8) * d;
		}
	}
}

static void deq_q8_0(const void *w, int cols, float *out)
{
	const gk_block_q8_0_t *bl = w;
	for (int b = 0; b < cols / GK_QK8_0; b++, out += GK_QK8_0) {
		float d = h2f(bl[b].d);
		for (int j = 0; j < GK_QK8_0; j++)
			out[j] = (float)bl[b].qs[j] * d;
	}
}

/* gk_q4_K_value: d * sc * q - dmin * m, evaluated as (d * sc) * q - (dmin * m) */
static void deq_q4_K(const void *w, int cols, float *out)
{
	const gk_block_q4_K_t *bl = w;
	for (int b = 0; b < cols / GK_QK_K; b++, out += GK_QK_K) {
		float d = h2f(bl[b].d), dmin = h2f(bl[b].dmin);
		for (int g = 0; g < 4; g++) {
			uint8_t sc0, m0, sc1, m1;
			gk_q4k_scale_min(2 * g, bl[b].scales, &sc0, &m0);
			gk_q4k_scale_min(2 * g + 1, bl[b].scales, &sc1, &m1);
			float d0 = d * (float)sc0, o0 = dmin * (float)m0;
			float d1 = d * (float)sc1, o1 = dmin * (float)m1;
			const uint8_t *q = bl[b].qs + 32 * g;
			for (int l = 0; l < 32; l++) {
				out[64 * g + l] = d0 * (float)(q[l] & 0xF) - o0;
				out[64 * g + 32 + l] = d1 * (float)(q[l] >> 4) - o1;
			}
		}
	}
}

/* gk_q6_K_value: d * scale * (q - 32), evaluated as (d * scale) * (q - 32) */
static void deq_q6_K(const void *w, int cols, float *out)
{
	const gk_block_q6_K_t *bl = w;
	for (int b = 0; b < cols / GK_QK_K; b++, out += GK_QK_K) {
		float d = h2f(bl[b].d);
		for (int h = 0; h < 2; h++) {
			const uint8_t *ql = bl[b].ql + 64 * h, *qh = bl[b].qh + 32 * h;
			const int8_t *sc = bl[b].scales + 8 * h;
			for (int k = 0; k < 4; k++)
				for (int l = 0; l < 32; l++) {
					uint8_t lb = ql[l + 32 * (k & 1)];
					int lo = (k & 2) ? (lb >> 4) : (lb & 0xF);
					int hi = (qh[l] >> (2 * k)) & 3;
					int is = l / 16 + 2 * k;
					float ds = d * (float)sc[is];
					out[128 * h + 32 * k + l] =
					    ds * (float)((lo | (hi << 4)) - 32);
				}
		}
	}
}

static const struct {
	gk_qtype_t t;
	deq_row_f row;
} dequant[] = {
    {GK_Q_F32, deq_f32},   {GK_Q_F16, deq_f16},	  {GK_Q_BF16, deq_bf16}, {GK_Q_Q4_0, deq_q4_0},
    {GK_Q_Q8_0, deq_q8_0}, {GK_Q_Q4_K, deq_q4_K}, {GK_Q_Q6_K, deq_q6_K},
};

static deq_row_f find_dequant(gk_qtype_t t)
{
	for (size_t i = 0; i < sizeof dequant / sizeof dequant[0]; i++)
		if (dequant[i].t == t)
			return dequant[i].row;
	return NULL;
}

/* f32 dot product in eight interleaved partial sums, added pairwise at the end */
static float dot(const float *a, const float *b, int n)
{
	float s[8] = {0};
	int i = 0;
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			s[k] += a[i + k] * b[i + k];
	for (int k = 0; i < n; i++, k++)
		s[k] += a[i] * b[i];
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* ---- qmatmul ---- */

typedef struct {
	deq_row_f deq;
	gk_qtype_t wt;
	const uint8_t *w;
	size_t row_bytes;
	int rows, cols, n, ldy;
	const float *x;
	float *y;
	float *buf; /* QMM_TILE * cols floats per thread */
} qmm_t;

static void qmm_range(void *arg, int tid, int lo, int hi)
{
	qmm_t *q = arg;
	float *buf = q->buf + (size_t)tid * QMM_TILE * q->cols;
	const float *wr[QMM_TILE];
	int r1 = hi * QMM_TILE < q->rows ? hi * QMM_TILE : q->rows;
	if (gk_cpu_qmm_rows_vec(q->wt, q->deq, q->w, q->row_bytes, lo * QMM_TILE, r1, q->cols, q->x,
				q->n, q->y, q->ldy, buf) == 0)
		return;
	for (int t = lo; t < hi; t++) {
		int r0 = t * QMM_TILE, nr = q->rows - r0 < QMM_TILE ? q->rows - r0 : QMM_TILE;
		for (int r = 0; r < nr; r++) {
			const uint8_t *src = q->w + (size_t)(r0 + r) * q->row_bytes;
			if (q->wt == GK_Q_F32) { /* already f32: dot the weights where they are */
				wr[r] = (const float *)src;
				continue;
			}
			wr[r] = buf + (size_t)r * q->cols;
			q->deq(src, q->cols, buf + (size_t)r * q->cols);
		}
		for (int i = 0; i < q->n; i++) {
			const float *xi = q->x + (size_t)i * q->cols;
			float *yi = q->y + (size_t)i * q->ldy + r0;
			for (int r = 0; r < nr; r++)
				yi[r] = dot(wr[r], xi, q->cols);
		}
	}
}

int gk_cpu_qmatmul(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
		   int n, float *y, int ldy, gk_stream_t *s)
{
	(void)s;
	pthread_once(&f16_once, f16_table_init);
	int tiles = (rows + QMM_TILE - 1) / QMM_TILE;
	int nt = threads_for((double)rows * cols * n);
	qmm_t q = {find_dequant(wt),
		   wt,
		   w,
		   gk_qtype_row_bytes(wt, (size_t)cols),
		   rows,
		   cols,
		   n,
		   ldy,
		   x,
		   y,
		   NULL};
	if (!(q.buf = malloc((size_t)(nt < tiles ? nt : tiles) * QMM_TILE * cols * sizeof(float))))
		return gk_cpu_fail(ctx, ENOMEM, "qmatmul: out of memory");
	par_for(tiles, nt, qmm_range, &q);
	free(q.buf);
	return 0;
}

int gk_cpu_qget_rows(void *ctx, gk_qtype_t wt, const void *w, int rows, int cols,
		     const int32_t *ids, int n, float *out, gk_stream_t *s)
{
	(void)ctx, (void)s;
	pthread_once(&f16_once, f16_table_init);
	deq_row_f deq = find_dequant(wt);
	size_t rb = gk_qtype_row_bytes(wt, (size_t)cols);
	for (int i = 0; i < n; i++) {
		float *o = out + (size_t)i * cols;
		if (ids[i] < 0 || ids[i] >= rows) {
			for (int c = 0; c < cols; c++)
				o[c] = NAN;
			continue;
		}
		deq((const uint8_t *)w + (size_t)ids[i] * rb, cols, o);
	}
	return 0;
}

/* ---- the small layers ---- */

int gk_cpu_rmsnorm(void *ctx, float *y, const float *x, const float *w, int n, int dim, float eps,
		   gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (int i = 0; i < n; i++) {
		const float *xi = x + (size_t)i * dim;
		float *yi = y + (size_t)i * dim;
		float ss = dot(xi, xi, dim);
		float scale = 1.0f / sqrtf(ss / (float)dim + eps);
		for (int c = 0; c < dim; c++)
			yi[c] = (xi[c] * scale) * w[c];
	}
	return 0;
}

int gk_cpu_rope(void *ctx, float *x, const int32_t *pos, int n, int nheads, int head_dim,
		int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s)
{
	(void)s;
	int half = rot_dim / 2;
	float *cs = malloc((size_t)rot_dim * sizeof(float));
	if (!cs)
		return gk_cpu_fail(ctx, ENOMEM, "rope: out of memory");
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < half; j++) {
			double theta = gk_rope_angle(pos[i], freq_scale, freq_base, j, rot_dim);
			cs[2 * j] = (float)cos(theta);
			cs[2 * j + 1] = (float)sin(theta);
		}
		for (int h = 0; h < nheads; h++) {
			float *v = x + ((size_t)i * nheads + h) * head_dim;
			for (int j = 0; j < half; j++) {
				int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
				float x0 = v[a], x1 = v[b], c = cs[2 * j], sn = cs[2 * j + 1];
				v[a] = x0 * c - x1 * sn;
				v[b] = x0 * sn + x1 * c;
			}
		}
	}
	free(cs);
	return 0;
}

int gk_cpu_swiglu(void *ctx, float *out, const float *gate, const float *up, size_t n,
		  gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t i = 0; i < n; i++)
		out[i] = gk_silu(gate[i]) * up[i];
	return 0;
}

int gk_cpu_add(void *ctx, float *y, const float *x, size_t n, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t i = 0; i < n; i++)
		y[i] += x[i];
	return 0;
}

int gk_cpu_add_bias(void *ctx, float *x, const float *bias, int n, int cols, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (int i = 0; i < n; i++)
		for (int c = 0; c < cols; c++)
			x[(size_t)i * cols + c] += bias[c];
	return 0;
}

int gk_cpu_kv_write(void *ctx, gk_dtype_t kv_t, void *cache, const int32_t *slots, const float *src,
		    int n, int row, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (int i = 0; i < n; i++) {
		if (slots[i] < 0)
			continue;
		for (int c = 0; c < row; c++)
			gk_cpu_st(kv_t, cache, (size_t)slots[i] * row + c,
				  src[(size_t)i * row + c]);
	}
	return 0;
}

/* ---- attention ---- */

typedef struct {
	const gk_attn_t *p;
	int failed; /* out of memory in a worker */
} attn_job_t;

/* Row t of sequence J's NQ rows, head H: out = NaN (a sequence the kernels cannot read). */
static void attn_nan_rows(const gk_attn_t *p, int q0, int nq, int h0, int g)
{
	for (int t = 0; t < nq; t++)
		for (int h = h0; h < h0 + g; h++)
			for (int d = 0; d < p->head_dim; d++)
				p->out[((size_t)(q0 + t) * p->n_heads + h) * p->head_dim + d] = NAN;
}

/* The tile of keys at block BLK of the sequence (NK of them) folded into every row that sees
 * any of it: scores, the running max M and sum L, the accumulator ACC rescaled. */
static void attn_tile(const gk_attn_t *p, int q0, int nq, int base, int h0, int g, int p0, int nk,
		      const float *kt, const float *vt, float *m, float *l, float *acc, float *sc)
{
	int hd = p->head_dim;
	for (int t = 0; t < nq; t++) {
		int see = base + t - p0 + 1; /* keys of the tile at or before the row's position */
		if (see <= 0)
			continue;
		if (see > nk)
			see = nk;
		for (int hh = 0; hh < g; hh++) {
			const float *q = p->q + ((size_t)(q0 + t) * p->n_heads + h0 + hh) * hd;
			size_t st = (size_t)t * g + hh;
			float *a = acc + st * hd, mx = m[st];
			for (int k = 0; k < see; k++) {
				sc[k] = dot(q, kt + (size_t)k * hd, hd) * p->scale;
				mx = sc[k] > mx ? sc[k] : mx;
			}
			float corr = expf(m[st] - mx), sum = 0.0f;
			for (int d = 0; d < hd; d++)
				a[d] *= corr;
			for (int k = 0; k < see; k++) {
				float e = expf(sc[k] - mx);
				sum += e;
				for (int d = 0; d < hd; d++)
					a[d] += e * vt[(size_t)k * hd + d];
			}
			l[st] = l[st] * corr + sum;
			m[st] = mx;
		}
	}
}

/* Sequence J, kv head KVH: its rows' G heads over all its cached tokens. */
static int attn_one(const gk_attn_t *p, int j, int kvh)
{
	int g = p->n_heads / p->n_kv_heads, h0 = kvh * g, hd = p->head_dim, bs = p->block_size;
	int q0 = p->q_start[j], q1 = p->q_start[j + 1], nq = q1 - q0, ctx = p->ctx_len[j];
	if (q0 < 0 || q1 > p->ntok || nq <= 0)
		return 0; /* no rows of its own to write */
	if (ctx < nq || ctx > p->max_blocks * bs) {
		attn_nan_rows(p, q0, nq, h0, g);
		return 0;
	}
	size_t ns = (size_t)nq * g, row = (size_t)p->n_kv_heads * hd;
	float *m =
	    malloc(ns * (2 + hd) * sizeof(float) + (2 * (size_t)hd + 1) * bs * sizeof(float));
	if (!m)
		return -1;
	float *l = m + ns, *acc = l + ns, *kt = acc + ns * hd, *vt = kt + (size_t)bs * hd,
	      *sc = vt + (size_t)bs * hd;
	for (size_t i = 0; i < ns; i++)
		m[i] = -INFINITY, l[i] = 0.0f;
	memset(acc, 0, ns * hd * sizeof(float));
	int base = ctx - nq, bad = 0;
	for (int blk = 0; blk * bs < ctx && !bad; blk++) {
		int phys = p->block_table[(size_t)j * p->max_blocks + blk];
		int p0 = blk * bs, nk = ctx - p0 < bs ? ctx - p0 : bs;
		if (phys < 0) {
			bad = 1;
			break;
		}
		for (int k = 0; k < nk; k++)
			for (int d = 0; d < hd; d++) {
				size_t at = ((size_t)phys * bs + k) * row + (size_t)kvh * hd + d;
				kt[(size_t)k * hd + d] = gk_cpu_ld(p->kv_t, p->k_cache, at);
				vt[(size_t)k * hd + d] = gk_cpu_ld(p->kv_t, p->v_cache, at);
			}
		attn_tile(p, q0, nq, base, h0, g, p0, nk, kt, vt, m, l, acc, sc);
	}
	if (bad)
		attn_nan_rows(p, q0, nq, h0, g);
	else
		for (int t = 0; t < nq; t++)
			for (int hh = 0; hh < g; hh++) {
				size_t st = (size_t)t * g + hh;
				float *o = p->out + ((size_t)(q0 + t) * p->n_heads + h0 + hh) * hd;
				for (int d = 0; d < hd; d++)
					o[d] = acc[st * hd + d] / l[st];
			}
	free(m);
	return 0;
}

static void attn_range(void *arg, int tid, int lo, int hi)
{
	attn_job_t *a = arg;
	(void)tid;
	for (int i = lo; i < hi; i++)
		if (attn_one(a->p, i / a->p->n_kv_heads, i % a->p->n_kv_heads) < 0)
			a->failed = 1;
}

int gk_cpu_attention(void *ctx, const gk_attn_t *p, gk_stream_t *s)
{
	(void)s;
	attn_job_t a = {p, 0};
	/* rough work: every row against the longest context it could have */
	double ops = (double)p->ntok * p->n_heads * p->head_dim * p->block_size * p->max_blocks;
	par_for(p->nseq * p->n_kv_heads, threads_for(ops), attn_range, &a);
	if (a.failed)
		return gk_cpu_fail(ctx, ENOMEM, "attention: out of memory");
	return 0;
}
