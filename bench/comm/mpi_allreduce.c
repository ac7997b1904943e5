/*
 * mpi_allreduce — MPI_Allreduce (float, sum) benchmark in the style of nccl-tests.
 *
 * The rival of gcomm-bench in the side-by-side benchmark (bench/comm/README.md).
 * For each size from --min to --max (doubling):
 *   - every rank fills its send buffer with rank-dependent small integers (exact in float),
 *   - warm-up iterations, then timed iterations, each one preceded by MPI_Barrier;
 *     an iteration's time is the slowest rank's (MPI_MAX over ranks), the reported
 *     time is the median over iterations,
 *   - algbw = bytes / time, busbw = algbw * 2(n-1)/n (GB/s, 1 GB = 1e9 bytes),
 *   - the result of the last iteration is checked against the exact sum on every rank.
 * Out-of-place (separate send and receive buffers), so every iteration reduces the same data.
 * Big sizes get fewer iterations: the count is capped so one size takes about --size-time
 * seconds (but never fewer than --min-iters).
 *
 * Output (rank 0, stdout), one row per size:
 *   size_bytes count time_us algbw_GBps busbw_GBps check
 * Comment lines start with '#'. --json FILE writes the same rows (plus iteration counts).
 */
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
	size_t min_bytes, max_bytes;
	int iters, warmup, min_iters;
	double size_time;
	const char *json, *label;
	int check;
};

struct row {
	size_t bytes, count;
	double time_us, tmin_us, tmax_us, algbw, busbw;
	int iters, errors;
};

static int rank, nranks;

static void die(const char *msg)
{
	if (rank == 0)
		fprintf(stderr, "mpi_allreduce: %s\n", msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

/* "8", "64K", "1M", "256M", "1G" (binary multiples) */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = (size_t)v;
	return 0;
}

static void usage(void)
{
	if (rank == 0)
		fprintf(stderr, "usage: mpirun ... mpi_allreduce [--min BYTES] [--max BYTES] "
				"[--iters N] [--warmup N]\n"
				"                  [--min-iters N] [--size-time SECONDS] [--json "
				"FILE] [--label NAME]\n"
				"                  [--no-check]\n"
				"  sizes take K/M/G suffixes (binary); defaults: --min 8 --max "
				"256M --iters 20\n"
				"  --warmup 5 --min-iters 5 --size-time 2\n");
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.min_bytes = 8,
			   .max_bytes = 256u << 20,
			   .iters = 20,
			   .warmup = 5,
			   .min_iters = 5,
			   .size_time = 2.0,
			   .json = NULL,
			   .label = "mpi",
			   .check = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int used = 1;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			MPI_Finalize();
			exit(0);
		} else if (!strcmp(a, "--no-check")) {
			o->check = 0;
			used = 0;
		} else if (!v) {
			usage();
			die("missing value");
		} else if (!strcmp(a, "--min") || !strcmp(a, "-b")) {
			if (parse_size(v, &o->min_bytes))
				die("bad --min");
		} else if (!strcmp(a, "--max") || !strcmp(a, "-e")) {
			if (parse_size(v, &o->max_bytes))
				die("bad --max");
		} else if (!strcmp(a, "--iters") || !strcmp(a, "-n")) {
			o->iters = atoi(v);
		} else if (!strcmp(a, "--warmup") || !strcmp(a, "-w")) {
			o->warmup = atoi(v);
		} else if (!strcmp(a, "--min-iters")) {
			o->min_iters = atoi(v);
		} else if (!strcmp(a, "--size-time")) {
			o->size_time = atof(v);
		} else if (!strcmp(a, "--json")) {
			o->json = v;
		} else if (!strcmp(a, "--label")) {
			o->label = v;
		} else {
			usage();
			die("unknown option");
		}
		i += used;
	}
	if (o->min_bytes < sizeof(float))
		o->min_bytes = sizeof(float);
	if (o->max_bytes < o->min_bytes || o->iters < 1 || o->warmup < 0 || o->min_iters < 1)
		die("bad sizes or iteration counts");
	if (o->min_iters > o->iters)
		o->min_iters = o->iters;
}

/* Rank r's value at index i: a small integer, so that every partial sum is exact in float. */
static inline float fill_value(int r, size_t i)
{
	return (float)(((i * 7u + (size_t)r * 3u) % 17u) + 1u);
}

static inline float expected_sum(size_t i)
{
	unsigned s = 0;
	for (int r = 0; r < nranks; r++)
		s += (unsigned)(((i * 7u + (size_t)r * 3u) % 17u) + 1u);
	return (float)s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static struct row run_size(const struct opts *o, size_t bytes, float *sbuf, float *rbuf, double *t)
{
	struct row row = {.bytes = bytes, .count = bytes / sizeof(float)};
	size_t count = row.count;

	for (size_t i = 0; i < count; i++) {
		sbuf[i] = fill_value(rank, i);
		rbuf[i] = -1.0f;
	}

	/* Warm-up; the last warm-up iteration (barrier + allreduce, slowest rank) estimates the
	 * cost of one iteration, which caps the number of timed iterations to about --size-time.
	 * The decision to stop early is taken on the same (reduced) number by every rank. */
	double est = 0;
	int warm = o->warmup > 0 ? o->warmup : 1;
	for (int w = 0; w < warm; w++) {
		double t0 = MPI_Wtime(); /* the budget counts the barrier too */
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double dt = MPI_Wtime() - t0;
		MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		est = dt;
		if ((w + 1) * dt > o->size_time / 2) /* big message: enough warm-up */
			break;
	}

	int iters = o->iters;
	if (est > 0 && iters * est > o->size_time) {
		iters = (int)(o->size_time / est);
		if (iters < o->min_iters)
			iters = o->min_iters;
	}
	row.iters = iters;

	for (size_t i = 0; i < count; i++)
		rbuf[i] = -1.0f;
	for (int it = 0; it < iters; it++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Allreduce(sbuf, rbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		t[it] = MPI_Wtime() - t0;
	}
	/* an iteration lasts as long as its slowest rank */
	MPI_Allreduce(MPI_IN_PLACE, t, iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	qsort(t, (size_t)iters, sizeof(double), cmp_double);
	double med = iters % 2 ? t[iters / 2] : (t[iters / 2 - 1] + t[iters / 2]) / 2;
	row.time_us = med * 1e6;
	row.tmin_us = t[0] * 1e6;
	row.tmax_us = t[iters - 1] * 1e6;
	row.algbw = (double)bytes / med / 1e9;
	row.busbw = row.algbw * 2.0 * (nranks - 1) / nranks;

	int errors = 0;
	if (o->check) {
		for (size_t i = 0; i < count; i++)
			if (rbuf[i] != expected_sum(i))
				errors++;
		MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
	row.errors = errors;
	return row;
}

static const char *check_str(const struct opts *o, const struct row *r, char *buf, size_t n)
{
	if (!o->check)
		return "skip";
	if (r->errors == 0)
		return "ok";
	snprintf(buf, n, "FAIL(%d)", r->errors);
	return buf;
}

static void write_json(const struct opts *o, const struct row *rows, int nrows, const char *host)
{
	FILE *f = fopen(o->json, "w");
	if (!f) {
		fprintf(stderr, "mpi_allreduce: %s: %s\n", o->json, strerror(errno));
		return;
	}
	char buf[32];
	fprintf(
	    f,
	    "{\n  \"tool\": \"mpi_allreduce\",\n  \"label\": \"%s\",\n  \"op\": \"allreduce\",\n"
	    "  \"dtype\": \"float32\",\n  \"redop\": \"sum\",\n  \"nranks\": %d,\n  \"host\": "
	    "\"%s\",\n"
	    "  \"time\": \"median over iterations of the slowest rank, barrier before each\",\n"
	    "  \"rows\": [\n",
	    o->label, nranks, host);
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		fprintf(f,
			"    {\"size_bytes\": %zu, \"count\": %zu, \"time_us\": %.3f, "
			"\"algbw_GBps\": %.9g, "
			"\"busbw_GBps\": %.9g, \"check\": \"%s\", \"iters\": %d, \"time_us_min\": "
			"%.3f, "
			"\"time_us_max\": %.3f}%s\n",
			r->bytes, r->count, r->time_us, r->algbw, r->busbw,
			check_str(o, r, buf, sizeof buf), r->iters, r->tmin_us, r->tmax_us,
			i + 1 < nrows ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	fclose(f);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	struct opts o;
	parse_args(argc, argv, &o);
	if (o.max_bytes / sizeof(float) > INT32_MAX)
		die("--max too large for an int count");

	size_t maxcount = o.max_bytes / sizeof(float);
	float *sbuf = malloc(maxcount * sizeof(float));
	float *rbuf = malloc(maxcount * sizeof(float));
	double *t = malloc((size_t)o.iters * sizeof(double));
	if (!sbuf || !rbuf || !t)
		die("out of memory");

	char host[256] = "";
	gethostname(host, sizeof host - 1);
	if (rank == 0) {
		time_t now = time(NULL);
		char ts[64];
		strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S%z", localtime(&now));
		printf(
		    "# mpi_allreduce (%s): MPI_Allreduce float sum, out-of-place, nranks=%d, %s\n",
		    o.label, nranks, ts);
		printf("# iters<=%d warmup<=%d min-iters=%d size-time=%.1fs; time = median over "
		       "iterations "
		       "of the slowest rank (barrier before each)\n",
		       o.iters, o.warmup, o.min_iters, o.size_time);
		printf("# busbw = algbw * 2(n-1)/n; GB/s = 1e9 bytes/s\n");
		printf("#%11s %11s %11s %11s %11s %7s\n", "size_bytes", "count", "time_us",
		       "algbw_GBps", "busbw_GBps", "check");
		fflush(stdout);
	}

	int nrows = 0, cap = 64, failed = 0;
	struct row *rows = calloc((size_t)cap, sizeof *rows);
	for (size_t bytes = o.min_bytes; bytes <= o.max_bytes && bytes > 0; bytes *= 2) {
		struct row r = run_size(&o, bytes, sbuf, rbuf, t);
		if (r.errors)
			failed = 1;
		if (nrows < cap)
			rows[nrows++] = r;
		if (rank == 0) {
			char buf[32];
			printf("%12zu %11zu %11.1f %11.2f %11.2f %7s\n", r.bytes, r.count,
			       r.time_us, r.algbw, r.busbw, check_str(&o, &r, buf, sizeof buf));
			fflush(stdout);
		}
	}
	if (rank == 0 && o.json)
		write_json(&o, rows, nrows, host);

	free(rows);
	free(t);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return failed ? 1 : 0;
}
