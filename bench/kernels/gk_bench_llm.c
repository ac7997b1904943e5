/* gk_bench_llm.c - gk-bench's llm mode: the language-model layers at a 7B model's shapes
 *
 *   decode products (n = 1) of f16 and q4_0 weights, 4096x4096, 11008x4096, 4096x11008,
 *     32000x4096: GB/s of weight bytes read, against a device-to-device copy of the same run
 *     (bytes read + written), the fraction of it;
 *   prefill products (n = 512): TFLOP/s;
 *   attention decode over an f16 paged cache (32 heads of 128, blocks of 16) at contexts
 *     512, 2048, 4096 and batches 1, 8, 32: GB/s of K and V read.
 * One line a measure, "llm <what>: <figures>", so a log greps well. Each figure is the median
 * of --runs timed runs after --warmup, timed with the backend's events. --quick divides the
 * shapes by 8 and the batches and contexts by 4 (a smoke run for the cpu backend). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/kernels/gk_bench.h"
#include "gpool/kernels.h"

typedef enum { J_COPY, J_QMM, J_ATTN } kind_t;

typedef struct {
	kind_t kind;
	/* copy */
	void *dst, *src;
	size_t bytes;
	/* qmatmul */
	gk_qtype_t wt;
	const void *w;
	int rows, cols, n;
	const float *x;
	float *y;
	/* attention */
	gk_attn_t attn;
} job_t;

static gk_backend_t *b;
static gk_event_t *e0, *e1;

static void run_once(job_t *j)
{
	switch (j->kind) {
	case J_COPY:
		GKB_TRY(b, gk_copy_async(b, j->dst, j->src, j->bytes, GK_D2D, NULL));
		break;
	case J_QMM:
		GKB_TRY(b, gk_qmatmul(b, j->wt, j->w, j->rows, j->cols, j->x, j->n, j->y, j->rows,
				      NULL));
		break;
	case J_ATTN:
		GKB_TRY(b, gk_attention(b, &j->attn, NULL));
		break;
	}
}

static int cmpf(const void *a, const void *c)
{
	float x = *(const float *)a, y = *(const float *)c;
	return (x > y) - (x < y);
}

static double median_ms(job_t *j, int runs, int warmup)
{
	float *ms = calloc((size_t)runs, sizeof(float));
	for (int i = 0; i < warmup; i++)
		run_once(j);
	GKB_TRY(b, gk_stream_sync(b, NULL));
	for (int i = 0; i < runs; i++) {
		GKB_TRY(b, gk_event_record(b, e0, NULL));
		run_once(j);
		GKB_TRY(b, gk_event_record(b, e1, NULL));
		GKB_TRY(b, gk_event_sync(b, e1));
		GKB_TRY(b, gk_event_elapsed(b, e0, e1, &ms[i]));
	}
	qsort(ms, (size_t)runs, sizeof(float), cmpf);
	double med = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
	free(ms);
	return med;
}

/* device buffer of BYTES filled with the f16 0.1 (0x2e66) in every 16-bit word: finite
 * values and sane block scales for every weight type */
static void *dev_filled(size_t bytes)
{
	size_t chunk = (size_t)8 << 20;
	void *d;
	uint16_t *h = malloc(chunk);
	for (size_t i = 0; i < chunk / 2; i++)
		h[i] = 0x2e66;
	GKB_TRY(b, gk_dev_alloc(b, bytes, &d));
	for (size_t off = 0; off < bytes; off += chunk)
		GKB_TRY(b, gk_copy(b, (char *)d + off, h, bytes - off < chunk ? bytes - off : chunk,
				   GK_H2D));
	free(h);
	return d;
}

static void bench_qmatmul(int quick, int runs, int warmup, double copy_gbs)
{
	static const struct {
		int rows, cols;
	} shapes[] = {{4096, 4096}, {11008, 4096}, {4096, 11008}, {32000, 4096}};
	static const gk_qtype_t types[] = {GK_Q_F16, GK_Q_Q4_0};
	int div = quick ? 8 : 1, npre = quick ? 64 : 512;
	for (size_t t = 0; t < 2; t++)
		for (size_t s = 0; s < 4; s++) {
			int rows = shapes[s].rows / div, cols = shapes[s].cols / div;
			size_t wb = gk_qtype_row_bytes(types[t], (size_t)cols) * rows;
			job_t j = {
			    .kind = J_QMM, .wt = types[t], .rows = rows, .cols = cols, .n = 1};
			j.w = dev_filled(wb);
			j.x = dev_filled((size_t)npre * cols * 4);
			j.y = dev_filled((size_t)npre * rows * 4);
			double ms = median_ms(&j, runs, warmup),
			       gbs = (double)wb / (ms * 1e-3) / 1e9;
			printf("llm qmatmul decode %s %dx%d n=1: %.4f ms, %.0f GB/s of weights, "
			       "%.2f of "
			       "the copy\n",
			       gk_qtype_name(types[t]), rows, cols, ms, gbs, gbs / copy_gbs);
			j.n = npre;
			ms = median_ms(&j, runs, warmup);
			printf("llm qmatmul prefill %s %dx%d n=%d: %.3f ms, %.2f TFLOP/s\n",
			       gk_qtype_name(types[t]), rows, cols, npre, ms,
			       2.0 * rows * (double)cols * npre / (ms * 1e-3) / 1e12);
			fflush(stdout);
			GKB_TRY(b, gk_dev_free(b, (void *)j.w));
			GKB_TRY(b, gk_dev_free(b, (void *)j.x));
			GKB_TRY(b, gk_dev_free(b, j.y));
		}
}

/* BATCH sequences of CTX tokens each decoding one row: 32 heads of 128, f16 cache */
static void bench_attention(int ctx, int batch, int runs, int warmup)
{
	const int heads = 32, hd = 128, bs = 16, maxb = (ctx + bs - 1) / bs;
	const size_t row = (size_t)heads * hd, slots = (size_t)batch * maxb * bs;
	int32_t *qs = malloc(sizeof(int32_t) * (batch + 1)), *cl = malloc(sizeof(int32_t) * batch);
	int32_t *tab = malloc(sizeof(int32_t) * batch * maxb);
	for (int i = 0; i <= batch; i++)
		qs[i] = i;
	for (int i = 0; i < batch; i++) {
		cl[i] = ctx;
		for (int k = 0; k < maxb;
		     k++) /* interleaved: sequences' blocks are not contiguous */
			tab[i * maxb + k] = k * batch + i;
	}
	job_t j = {.kind = J_ATTN};
	void *dqs, *dcl, *dtab;
	GKB_TRY(b, gk_dev_alloc(b, sizeof(int32_t) * (batch + 1), &dqs));
	GKB_TRY(b, gk_dev_alloc(b, sizeof(int32_t) * batch, &dcl));
	GKB_TRY(b, gk_dev_alloc(b, sizeof(int32_t) * batch * maxb, &dtab));
	GKB_TRY(b, gk_copy(b, dqs, qs, sizeof(int32_t) * (batch + 1), GK_H2D));
	GKB_TRY(b, gk_copy(b, dcl, cl, sizeof(int32_t) * batch, GK_H2D));
	GKB_TRY(b, gk_copy(b, dtab, tab, sizeof(int32_t) * batch * maxb, GK_H2D));
	j.attn = (gk_attn_t){.nseq = batch,
			     .ntok = batch,
			     .q_start = dqs,
			     .ctx_len = dcl,
			     .block_table = dtab,
			     .max_blocks = maxb,
			     .block_size = bs,
			     .n_heads = heads,
			     .n_kv_heads = heads,
			     .head_dim = hd,
			     .scale = 0.088388f,
			     .kv_t = GK_F16,
			     .k_cache = dev_filled(slots * row * 2),
			     .v_cache = dev_filled(slots * row * 2),
			     .q = dev_filled((size_t)batch * row * 4),
			     .out = dev_filled((size_t)batch * row * 4)};
	double ms = median_ms(&j, runs, warmup);
	double kv = 2.0 * batch * (double)ctx * row * 2;
	printf("llm attention decode f16 ctx %d batch %d: %.4f ms, %.0f GB/s of K and V\n", ctx,
	       batch, ms, kv / (ms * 1e-3) / 1e9);
	fflush(stdout);
	GKB_TRY(b, gk_dev_free(b, (void *)j.attn.k_cache));
	GKB_TRY(b, gk_dev_free(b, (void *)j.attn.v_cache));
	GKB_TRY(b, gk_dev_free(b, (void *)j.attn.q));
	GKB_TRY(b, gk_dev_free(b, j.attn.out));
	GKB_TRY(b, gk_dev_free(b, dqs));
	GKB_TRY(b, gk_dev_free(b, dcl));
	GKB_TRY(b, gk_dev_free(b, dtab));
	free(qs), free(cl), free(tab);
}

int gk_bench_llm(gk_backend_t *be, int quick, int runs, int warmup)
{
	b = be;
	GKB_TRY(b, gk_event_create(b, &e0));
	GKB_TRY(b, gk_event_create(b, &e1));
	size_t cb = quick ? (size_t)64 << 20 : (size_t)1 << 30;
	job_t c = {.kind = J_COPY, .bytes = cb};
	c.src = dev_filled(cb);
	c.dst = dev_filled(cb);
	double ms = median_ms(&c, runs, warmup), copy_gbs = 2.0 * (double)cb / (ms * 1e-3) / 1e9;
	printf("llm copy d2d %zu MiB: %.3f ms, %.0f GB/s (read + written)\n", cb >> 20, ms,
	       copy_gbs);
	GKB_TRY(b, gk_dev_free(b, c.src));
	GKB_TRY(b, gk_dev_free(b, c.dst));
	bench_qmatmul(quick, runs, warmup, copy_gbs);
	static const int ctxs[] = {512, 2048, 4096}, batches[] = {1, 8, 32};
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 3; k++)
			bench_attention(quick ? ctxs[i] / 4 : ctxs[i],
					quick ? (batches[k] + 3) / 4 : batches[k], runs, warmup);
	GKB_TRY(b, gk_event_destroy(b, &e0));
	GKB_TRY(b, gk_event_destroy(b, &e1));
	return 0;
}
