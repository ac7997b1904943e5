/* gk_bench.c - gk-bench: bandwidth of the kernels measured against the device-to-device
 * copy of the same run, plus FMA and sgemm throughput
 *
 * usage: gk-bench [llm] [--backend NAME] [--size BYTES[K|M|G]] [--runs N] [--warmup N] [--quick]
 *                 [--check] [--check-ratio R]
 * (llm: the language-model layers instead, gk_bench_llm.c)
 *
 * Bytes are counted as read plus written (a copy of S bytes moves 2S). Each figure is the
 * median of --runs timed runs after --warmup untimed ones, timed with the backend's
 * events. --check exits 1 if reduce-sum f32/f16/bf16 or a cast reaches under --check-ratio
 * (default 0.90) of the copy's GB/s. On the cpu backend only reduce-sum f32 is gated: the
 * 16-bit conversions are compute-bound there by design (a scalar rounding per element). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/kernels/gk_bench.h"
#include "gpool/kernels.h"

static gk_backend_t *b;
static gk_event_t *e0, *e1;
static int runs = 30, warmup = 3;

#define TRY(call)                                                                                  \
	do {                                                                                       \
		if ((call) != 0) {                                                                 \
			fprintf(stderr, "gk-bench: %s: %s\n", #call, gk_backend_error(b));         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

typedef enum {
	OP_COPY,
	OP_KCOPY,
	OP_READ,
	OP_WRITE,
	OP_REDUCE,
	OP_CAST,
	OP_SCALE,
	OP_FMA,
	OP_GEMM
} op_t;

typedef struct {
	op_t op;
	gk_dtype_t t, t2;
	int nsrc;
	void *dst, *src[4];
	size_t n, bytes;
	int iters, gm;
	double flops;
} job_t;

static void run_once(job_t *j)
{
	switch (j->op) {
	case OP_COPY:
		TRY(gk_copy_async(b, j->dst, j->src[0], j->bytes, GK_D2D, NULL));
		break;
	case OP_KCOPY:
		TRY(gk_bw_copy(b, j->dst, j->src[0], j->bytes, NULL));
		break;
	case OP_READ:
		TRY(gk_bw_read(b, j->src[0], j->bytes, NULL));
		break;
	case OP_WRITE:
		TRY(gk_bw_write(b, j->dst, j->bytes, NULL));
		break;
	case OP_REDUCE:
		TRY(gk_reduce(b, j->t, GK_SUM, j->dst, (const void *const *)j->src, j->nsrc, j->n,
			      NULL));
		break;
	case OP_CAST:
		TRY(gk_cast(b, j->t2, j->dst, j->t, j->src[0], j->n, NULL));
		break;
	case OP_SCALE:
		TRY(gk_scale(b, j->t, j->dst, j->dst, 0.5, j->n, NULL));
		break;
	case OP_FMA:
		TRY(gk_fma(b, j->t, j->dst, j->iters, &j->flops, NULL));
		break;
	case OP_GEMM:
		TRY(gk_sgemm(b, 0, 0, j->gm, j->gm, j->gm, 1.0f, j->src[0], j->gm, j->src[1], j->gm,
			     0.0f, j->dst, j->gm, NULL));
		j->flops = 2.0 * j->gm * (double)j->gm * j->gm;
		break;
	}
}

static int cmpf(const void *a, const void *b2)
{
	float x = *(const float *)a, y = *(const float *)b2;
	return (x > y) - (x < y);
}

/* median milliseconds of RUNS timed runs */
static float measure(job_t *j)
{
	float *ms = calloc((size_t)runs, sizeof(float)), med;
	for (int i = 0; i < warmup; i++)
		run_once(j);
	TRY(gk_stream_sync(b, NULL));
	for (int i = 0; i < runs; i++) {
		TRY(gk_event_record(b, e0, NULL));
		run_once(j);
		TRY(gk_event_record(b, e1, NULL));
		TRY(gk_event_sync(b, e1));
		TRY(gk_event_elapsed(b, e0, e1, &ms[i]));
	}
	qsort(ms, (size_t)runs, sizeof(float), cmpf);
	med = runs % 2 ? ms[runs / 2] : 0.5f * (ms[runs / 2 - 1] + ms[runs / 2]);
	free(ms);
	return med;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'G':
	case 'g':
		v *= 1024;
		/* fall through */
	case 'M':
	case 'm':
		v *= 1024;
		/* fall through */
	case 'K':
	case 'k':
		v *= 1024;
	}
	return (size_t)v;
}

static void fill(void *dev, size_t bytes)
{
	size_t chunk = (size_t)16 << 20;
	float *h = malloc(chunk);
	for (size_t i = 0; i < chunk / 4; i++)
		h[i] = (float)((i * 2654435761u) % 2000) * 0.001f - 1.0f;
	for (size_t off = 0; off < bytes; off += chunk)
		TRY(gk_copy(b, (char *)dev + off, h, bytes - off < chunk ? bytes - off : chunk,
			    GK_H2D));
	free(h);
}

int main(int argc, char **argv)
{
	const char *name = "auto";
	size_t S = (size_t)1 << 30;
	int quick = 0, check = 0, failed = 0, llm = 0;
	double gate = 0.90;
	gk_error_t err;
	gk_device_info_t info;

	for (int i = 1; i < argc; i++) {
		if (i == 1 && !strcmp(argv[i], "llm"))
			llm = 1;
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			name = argv[++i];
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			S = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--check"))
			check = 1;
		else if (!strcmp(argv[i], "--check-ratio") && i + 1 < argc)
			gate = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: gk-bench [llm] [--backend NAME] [--size "
					"BYTES[K|M|G]] [--runs N] "
					"[--warmup N] [--quick] [--check] [--check-ratio R]\n");
			return 2;
		}
	}
	S &= ~(size_t)63;
	if (runs < 1 || S < 64) {
		fprintf(stderr, "gk-bench: invalid --runs or --size\n");
		return 2;
	}
	if (!(b = gk_backend_open(name, &err))) {
		fprintf(stderr, "gk-bench: cannot open backend '%s': %s\n", name, err.text);
		return errno == ENOENT || errno == ENODEV ? 77 : 1;
	}
	TRY(gk_device_info(b, &info));
	printf("gk-bench: backend %s, device '%s' (cc %d.%d, %d units), buffers %.3f GiB, "
	       "median of %d runs after %d warm-up\n",
	       info.backend, info.name, info.major, info.minor, info.multiprocessors,
	       (double)S / (1u << 30), runs, warmup);
	if (llm) {
		int rc = gk_bench_llm(b, quick, runs, warmup);
		gk_backend_close(&b);
		return rc;
	}
	TRY(gk_event_create(b, &e0));
	TRY(gk_event_create(b, &e1));

	void *x, *y, *z;
	TRY(gk_dev_alloc(b, S, &x));
	TRY(gk_dev_alloc(b, S, &y));
	TRY(gk_dev_alloc(b, S, &z));
	fill(x, S);
	fill(y, S);
	fill(z, S);

	struct {
		const char *label;
		job_t j;
		int gated;
	} rows[] = {
	    {"copy d2d (copy engine)", {OP_COPY, 0, 0, 0, z, {x}, 0, S, 0, 0, 0}, 0},
	    {"copy kernel", {OP_KCOPY, 0, 0, 0, z, {x}, 0, S, 0, 0, 0}, 0},
	    {"read kernel", {OP_READ, 0, 0, 0, NULL, {x}, 0, S, 0, 0, 0}, 0},
	    {"write kernel", {OP_WRITE, 0, 0, 0, z, {NULL}, 0, S, 0, 0, 0}, 0},
	    {"reduce-sum f32 (2 srcs)", {OP_REDUCE, GK_F32, 0, 2, z, {x, y}, S / 4, 0, 0, 0, 0}, 1},
	    {"reduce-sum f16 (2 srcs)", {OP_REDUCE, GK_F16, 0, 2, z, {x, y}, S / 2, 0, 0, 0, 0}, 1},
	    {"reduce-sum bf16 (2 srcs)",
	     {OP_REDUCE, GK_BF16, 0, 2, z, {x, y}, S / 2, 0, 0, 0, 0},
	     1},
	    {"reduce-sum f32 in place", {OP_REDUCE, GK_F32, 0, 2, x, {x, y}, S / 4, 0, 0, 0, 0}, 0},
	    {"cast f32->f16", {OP_CAST, GK_F32, GK_F16, 0, z, {x}, S / 4, 0, 0, 0, 0}, 1},
	    {"cast f32->bf16", {OP_CAST, GK_F32, GK_BF16, 0, z, {x}, S / 4, 0, 0, 0, 0}, 1},
	    {"cast f16->f32", {OP_CAST, GK_F16, GK_F32, 0, z, {x}, S / 4, 0, 0, 0, 0}, 1},
	    {"cast bf16->f32", {OP_CAST, GK_BF16, GK_F32, 0, z, {x}, S / 4, 0, 0, 0, 0}, 1},
	    {"scale f32 in place", {OP_SCALE, GK_F32, 0, 0, z, {NULL}, S / 4, 0, 0, 0, 0}, 0},
	};
	size_t nrows = sizeof(rows) / sizeof(rows[0]);
	double copy_gbs = 0;

	printf("\n| kernel | bytes moved (GiB) | median ms | GB/s | ratio to d2d copy |\n");
	printf("|---|---:|---:|---:|---:|\n");
	for (size_t r = 0; r < nrows; r++) {
		job_t *j = &rows[r].j;
		double moved; /* bytes read + written */
		switch (j->op) {
		case OP_COPY:
		case OP_KCOPY:
			moved = 2.0 * (double)S;
			break;
		case OP_READ:
		case OP_WRITE:
			moved = (double)S;
			break;
		case OP_REDUCE:
			moved = (double)(j->dst == j->src[0] ? 3 : j->nsrc + 1) * (double)S;
			break;
		case OP_CAST: /* n = S/4: the f32 side is S bytes, the 16-bit side S/2 */
			moved = 1.5 * (double)S;
			break;
		default:
			moved = 2.0 * (double)S;
			break;
		}
		float ms = measure(j);
		double gbs = moved / (ms * 1e-3) / 1e9;
		if (r == 0)
			copy_gbs = gbs;
		double ratio = gbs / copy_gbs;
		const char *verdict = "";
		bool gated = rows[r].gated && (strcmp(info.backend, "cpu") ||
					       (j->op == OP_REDUCE && j->t == GK_F32));
		char vbuf[48];
		if (gated) {
			snprintf(vbuf, sizeof(vbuf), " (%s %.2f: %s)", ratio >= gate ? ">=" : "<",
				 gate, ratio >= gate ? "pass" : "FAIL");
			verdict = vbuf;
			failed += ratio < gate;
		}
		printf("| %s | %.3f | %.3f | %.0f | %.3f%s |\n", rows[r].label, moved / (1u << 30),
		       (double)ms, gbs, ratio, verdict);
		fflush(stdout);
	}

	/* compute */
	void *scratch;
	TRY(gk_dev_alloc(b, gk_fma_scratch_bytes(b), &scratch));
	printf("\n| compute | median ms | TFLOP/s |\n|---|---:|---:|\n");
	for (int t = 0; t < 2; t++) {
		job_t j = {OP_FMA,
			   t ? GK_F16 : GK_F32,
			   0,
			   0,
			   scratch,
			   {NULL},
			   0,
			   0,
			   quick ? 1000 : (strcmp(info.backend, "cpu") ? 20000 : 20000),
			   0,
			   0};
		float ms = measure(&j);
		printf("| fma %s | %.3f | %.2f |\n", t ? "f16 (half2)" : "f32", (double)ms,
		       j.flops / (ms * 1e-3) / 1e12);
	}
	int gm = quick ? 256 : strcmp(info.backend, "cpu") ? 8192 : 1024;
	if ((size_t)gm * gm * 4 <= S) {
		job_t j = {OP_GEMM, GK_F32, 0, 0, z, {x, y}, 0, 0, 0, gm, 0};
		float ms = measure(&j);
		printf("| sgemm %d (%s) | %.3f | %.2f |\n", gm, info.gemm_impl, (double)ms,
		       j.flops / (ms * 1e-3) / 1e12);
	}
	TRY(gk_dev_free(b, scratch));
	TRY(gk_dev_free(b, x));
	TRY(gk_dev_free(b, y));
	TRY(gk_dev_free(b, z));
	TRY(gk_event_destroy(b, &e0));
	TRY(gk_event_destroy(b, &e1));
	gk_backend_close(&b);
	if (check && failed) {
		printf("\ngk-bench: %d gated kernels under %.0f %% of the copy bandwidth\n", failed,
		       gate * 100);
		return 1;
	}
	return 0;
}
