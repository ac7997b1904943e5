/* gcomm_bench.c - allreduce benchmark in the style of nccl-tests.
 *
 *   gcomm-bench --np N [options]      N ranks forked on this host
 *   gcomm-bench --env [options]       one rank of a job (gsub -n N, mpirun)
 * Options: -b MIN -e MAX (bytes, K/M/G suffixes; default 8 .. 256M), -f FACTOR (2),
 *   --iters N (per size; default by size), --warmup N, --dtype f32, --op sum,
 *   --algo auto|ring|ring2|rhd|hier, --wire f32|f16|bf16, --backend cpu|cuda|hip,
 *   --transport tcp|ucx|mpi, --json FILE, --no-check.
 * Each row: size, count, time (median over iterations of the slowest rank, a barrier
 * before each), algbw = size/time, busbw = algbw * 2(n-1)/n, and the check of the result. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpool/gcomm.h"
#include "gpool/kernels.h"
#include "comm/test/spawn.h"

static struct {
	size_t min, max;
	int factor, iters, warmup, check;
	gc_dtype_t t;
	gc_op_t op;
	const char *algo, *wire, *backend, *transport, *json;
} o = {8, 256u << 20, 2, 0, -1, 1, GC_F32, GC_SUM, "auto", "f32", "cpu", NULL, NULL};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int iters_for(size_t bytes)
{
	if (o.iters > 0)
		return o.iters;
	return bytes <= (1u << 20) ? 40 : bytes <= (16u << 20) ? 15 : 6;
}

static void fill(gc_dtype_t t, void *h, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++) {
		float v = (float)((rank + (int)(i % 7)) % 5);
		switch (t) {
		case GC_F32:
			((float *)h)[i] = v;
			break;
		case GC_F64:
			((double *)h)[i] = v;
			break;
		case GC_I32:
			((int32_t *)h)[i] = (int32_t)v;
			break;
		case GC_F16:
			((uint16_t *)h)[i] = gk_f32_to_f16(v);
			break;
		case GC_BF16:
			((uint16_t *)h)[i] = gk_f32_to_bf16(v);
			break;
		}
	}
}

static double get(gc_dtype_t t, const void *h, size_t i)
{
	switch (t) {
	case GC_F32:
		return ((const float *)h)[i];
	case GC_F64:
		return ((const double *)h)[i];
	case GC_I32:
		return ((const int32_t *)h)[i];
	case GC_F16:
		return gk_f16_to_f32(((const uint16_t *)h)[i]);
	default:
		return gk_bf16_to_f32(((const uint16_t *)h)[i]);
	}
}

static int check(gc_dtype_t t, const void *h, size_t n, int size)
{
	for (size_t i = 0; i < n; i++) {
		double want = 0;
		for (int r = 0; r < size; r++) {
			double v = (r + (int)(i % 7)) % 5;
			want = o.op == GC_MAX	? (r ? fmax(want, v) : v)
			       : o.op == GC_MIN ? (r ? fmin(want, v) : v)
						: want + v;
		}
		if (o.op == GC_AVG)
			want = t == GC_I32 ? trunc(want / size) : want / size;
		double got = get(t, h, i);
		if (fabs(got - want) > 1e-2 * fmax(1, fabs(want)))
			return 0;
	}
	return 1;
}

static int bench(gc_comm_t *c)
{
	int rank = gc_rank(c), size = gc_size(c);
	size_t es = gc_dtype_size(o.t);
	gk_backend_t *gk = NULL;
	gk_error_t ge;
	if (strcmp(o.backend, "cpu")) {
		gk = gk_backend_open(o.backend, &ge);
		if (!gk) {
			fprintf(stderr, "gcomm-bench: backend %s: %s\n", o.backend, ge.text);
			return 1;
		}
	}
	gc_algo_t algo;
	if (gc_algo_parse(o.algo, &algo) < 0) {
		fprintf(stderr, "gcomm-bench: unknown --algo %s (auto, ring, ring2, rhd, hier)\n",
			o.algo);
		return 2;
	}
	gc_set_algo(c, algo);
	gc_dtype_t wt;
	if (gc_dtype_parse(o.wire, &wt) == 0)
		gc_set_wire(c, wt);
	size_t maxb = o.max;
	void *h = malloc(maxb), *hs = malloc(maxb), *s, *d;
	if (gk) {
		if (gk_dev_alloc(gk, maxb, &s) < 0 || gk_dev_alloc(gk, maxb, &d) < 0) {
			fprintf(stderr, "gcomm-bench: %s\n", gk_backend_error(gk));
			return 1;
		}
	} else {
		s = malloc(maxb);
		d = malloc(maxb);
	}
	if (!h || !hs || !s || !d) {
		fprintf(stderr, "gcomm-bench: out of memory\n");
		return 1;
	}
	memset(d, 0, gk ? 0 : maxb);
	FILE *js = NULL;
	if (rank == 0) {
		printf("# gcomm-bench: %d ranks, transport %s, %s buffers, %s %s, algorithm %s, "
		       "wire %s\n",
		       size, gc_transport(c), gk ? o.backend : "host", gc_dtype_name(o.t),
		       gc_op_name(o.op), o.algo, o.wire);
		printf("# %12s %12s %10s %10s %10s %6s %6s\n", "size_bytes", "count", "time_us",
		       "algbw_GBps", "busbw_GBps", "check", "algo");
		if (o.json && !(js = fopen(o.json, "w")))
			fprintf(stderr, "gcomm-bench: %s: %s\n", o.json, strerror(errno));
		if (js)
			fprintf(js,
				"{\"peer\":\"gcomm\",\"ranks\":%d,\"transport\":\"%s\",\"rows\":[",
				size, gc_transport(c));
	}
	int bad = 0, first = 1;
	for (size_t bytes = o.min; bytes <= o.max; bytes *= (size_t)o.factor) {
		size_t n = bytes / es;
		if (!n)
			continue;
		fill(o.t, hs, n, rank);
		if (gk)
			gk_copy(gk, s, hs, n * es, GK_H2D);
		else
			memcpy(s, hs, n * es);
		int it = iters_for(bytes), wu = o.warmup >= 0 ? o.warmup : it > 10 ? 3 : 1;
		double *ts = calloc((size_t)it, sizeof(double));
		for (int k = 0; k < wu + it; k++) {
			if (gc_barrier(c) < 0)
				goto fail;
			double t0 = now();
			if (gc_allreduce(c, s, d, n, o.t, o.op) < 0)
				goto fail;
			double dt = now() - t0, mx;
			if (gc_allreduce(c, &dt, &mx, 1, GC_F64, GC_MAX) < 0)
				goto fail;
			if (k >= wu)
				ts[k - wu] = mx;
		}
		qsort(ts, (size_t)it, sizeof(double), cmpd);
		double t = ts[it / 2];
		free(ts);
		int ok = 1;
		if (o.check) {
			if (gk)
				gk_copy(gk, h, d, n * es, GK_D2H);
			else
				memcpy(h, d, n * es);
			int mine = check(o.t, h, n, size), all = 0;
			if (gc_allreduce(c, &mine, &all, 1, GC_I32, GC_MIN) < 0)
				goto fail;
			ok = all;
			bad |= !ok;
		}
		double alg = (double)(n * es) / t / 1e9, bus = alg * 2.0 * (size - 1) / size;
		if (rank == 0) {
			printf("  %12zu %12zu %10.1f %10.3f %10.3f %6s %6s\n", n * es, n, t * 1e6,
			       alg, bus, o.check ? (ok ? "ok" : "WRONG") : "-",
			       gc_algo_name(gc_algo_for(c, n, o.t)));
			fflush(stdout);
			if (js)
				fprintf(
				    js,
				    "%s{\"size\":%zu,\"count\":%zu,\"time_us\":%.2f,\"algbw\":%.4f,"
				    "\"busbw\":%.4f,\"check\":\"%s\",\"algo\":\"%s\"}",
				    first ? "" : ",", n * es, n, t * 1e6, alg, bus,
				    o.check ? (ok ? "ok" : "wrong") : "-",
				    gc_algo_name(gc_algo_for(c, n, o.t)));
		}
		first = 0;
	}
	if (js) {
		fprintf(js, "]}\n");
		fclose(js);
	}
	return bad;
fail:
	fprintf(stderr, "gcomm-bench: rank %d: %s\n", rank, gc_error(c));
	return 1;
}

static size_t bytes_arg(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (*end == 'K' || *end == 'k')
		v *= 1024;
	else if (*end == 'M' || *end == 'm')
		v *= 1024 * 1024;
	else if (*end == 'G' || *end == 'g')
		v *= 1024.0 * 1024 * 1024;
	return (size_t)v;
}

static int rank_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gc_params_t p = {.rank = rank,
			 .size = size,
			 .rdv = rdv,
			 .transport = o.transport,
			 .backend = o.backend,
			 .device = -1};
	gc_error_t e;
	gc_comm_t *c = gc_comm_create(&p, &e);
	if (!c) {
		fprintf(stderr, "gcomm-bench: rank %d: %s\n", rank, e.text);
		return 1;
	}
	int rc = bench(c);
	gc_comm_destroy(&c);
	return rc;
}

int main(int argc, char **argv)
{
	int np = 0, env = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--env"))
			env = 1;
		else if (!strcmp(a, "--no-check"))
			o.check = 0;
		else if (!v)
			goto usage;
		else if (!strcmp(a, "--np"))
			np = atoi(v), i++;
		else if (!strcmp(a, "-b"))
			o.min = bytes_arg(v), i++;
		else if (!strcmp(a, "-e"))
			o.max = bytes_arg(v), i++;
		else if (!strcmp(a, "-f"))
			o.factor = atoi(v), i++;
		else if (!strcmp(a, "--iters"))
			o.iters = atoi(v), i++;
		else if (!strcmp(a, "--warmup"))
			o.warmup = atoi(v), i++;
		else if (!strcmp(a, "--dtype") && gc_dtype_parse(v, &o.t) == 0)
			i++;
		else if (!strcmp(a, "--op") && gc_op_parse(v, &o.op) == 0)
			i++;
		else if (!strcmp(a, "--algo"))
			o.algo = v, i++;
		else if (!strcmp(a, "--wire"))
			o.wire = v, i++;
		else if (!strcmp(a, "--backend"))
			o.backend = v, i++;
		else if (!strcmp(a, "--transport"))
			o.transport = v, i++;
		else if (!strcmp(a, "--json"))
			o.json = v, i++;
		else
			goto usage;
	}
	if (o.min < 1 || o.max < o.min || o.factor < 2 || (!env && (np < 1 || np > 64)))
		goto usage;
	if (env) {
		gc_error_t e;
		gc_params_t p = {.device = -1, .transport = o.transport, .backend = o.backend};
		(void)p;
		if (o.transport)
			setenv("GCOMM_TRANSPORT", o.transport, 1);
		if (o.backend)
			setenv("GCOMM_BACKEND", o.backend, 1);
		double t0 = now();
		gc_comm_t *c = gc_comm_from_env(&e);
		if (!c) {
			fprintf(stderr, "gcomm-bench: %s\n", e.text);
			return 1;
		}
		/* the rendezvous and the connections (bench/sched/submit-start.sh reads it) */
		printf("# rank %d: communicator made in %.1f ms\n", gc_rank(c), (now() - t0) * 1e3);
		int rc = bench(c);
		gc_comm_destroy(&c);
		return rc;
	}
	return gc_spawn(np, rank_main, NULL, 3600);
usage:
	fprintf(stderr, "usage: gcomm-bench (--np N | --env) [-b MIN] [-e MAX] [-f FACTOR] "
			"[--iters N] [--warmup N] [--dtype T] [--op OP] [--algo A] [--wire W] "
			"[--backend B] [--transport T] [--json FILE] [--no-check]\n");
	return 2;
}
