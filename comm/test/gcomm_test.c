/* gcomm_test.c - correctness of libgcomm: every collective, data type, operation and
 * algorithm, in place and not, on counts that do not divide by the rank count; and the
 * failure test (SIGKILL of a rank in the middle of a 256 MiB allreduce).
 *
 *   gcomm-test --np N [--transport T] [--backend B]   N ranks forked on this host
 *   gcomm-test --np N --backend cuda --mixed          odd ranks on host buffers (cpu)
 *   gcomm-test --env [...]                            one rank of a job (gsub, mpirun)
 *   gcomm-test --np 3 --kill-test                     the failure test, every algorithm
 * Exit 0 when everything passed, 1 on a failure, 77 when skipped (a missing backend). */
#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpool/gcomm.h"
#include "gpool/kernels.h"
#include "comm/test/spawn.h"

static const char *transport = "tcp", *backend = "cpu";
static int quick, fake_hosts = 1;
static int mixed;	 /* --mixed: odd ranks use host buffers and the cpu backend */
static gk_backend_t *gk; /* for device buffers */
static int failures;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		failures++;                                                                        \
	} while (0)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Small integers: every sum of up to 8 ranks is exact in every type (bf16 included). */
static int value(int rank, size_t i, int salt)
{
	uint64_t x =
	    (uint64_t)rank * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL + (uint64_t)salt;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (int)(x % 9) - 4;
}

static void store(gc_dtype_t t, void *buf, size_t i, double v)
{
	switch (t) {
	case GC_F32:
		((float *)buf)[i] = (float)v;
		break;
	case GC_F64:
		((double *)buf)[i] = v;
		break;
	case GC_I32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case GC_F16:
		((uint16_t *)buf)[i] = gk_f32_to_f16((float)v);
		break;
	case GC_BF16:
		((uint16_t *)buf)[i] = gk_f32_to_bf16((float)v);
		break;
	}
}

static double load(gc_dtype_t t, const void *buf, size_t i)
{
	switch (t) {
	case GC_F32:
		return ((const float *)buf)[i];
	case GC_F64:
		return ((const double *)buf)[i];
	case GC_I32:
		return ((const int32_t *)buf)[i];
	case GC_F16:
		return gk_f16_to_f32(((const uint16_t *)buf)[i]);
	case GC_BF16:
		return gk_bf16_to_f32(((const uint16_t *)buf)[i]);
	}
	return NAN;
}

static double expect(gc_op_t op, gc_dtype_t t, int size, size_t i, int salt)
{
	double acc = value(0, i, salt);
	for (int r = 1; r < size; r++) {
		double v = value(r, i, salt);
		acc = op == GC_MAX ? fmax(acc, v) : op == GC_MIN ? fmin(acc, v) : acc + v;
	}
	if (op == GC_AVG)
		acc = t == GC_I32 ? trunc(acc / size) : acc / size;
	return acc;
}

static int tol_as = -1; /* compare as this type (wire compression rounds to it) */

static int close_enough(gc_dtype_t t, double got, double want)
{
	if (tol_as >= 0)
		t = (gc_dtype_t)tol_as;
	static const double tol[] = {
	    [GC_F32] = 1e-6, [GC_F16] = 1e-3, [GC_BF16] = 8e-3, [GC_F64] = 1e-12, [GC_I32] = 0};
	return fabs(got - want) <= tol[t] * fmax(1.0, fabs(want));
}

/* Host <-> test buffer (device memory when a GPU backend is used). */
static void *tb_alloc(size_t bytes)
{
	void *p = NULL;
	if (gk) {
		if (gk_dev_alloc(gk, bytes ? bytes : 1, &p) < 0)
			return NULL;
		return p;
	}
	return malloc(bytes ? bytes : 1);
}

static void tb_free(void *p)
{
	if (gk)
		gk_dev_free(gk, p);
	else
		free(p);
}

static void tb_put(void *dst, const void *host, size_t bytes)
{
	if (gk)
		gk_copy(gk, dst, host, bytes, GK_H2D);
	else
		memcpy(dst, host, bytes);
}

static void tb_get(void *host, const void *src, size_t bytes)
{
	if (gk)
		gk_copy(gk, host, src, bytes, GK_D2H);
	else
		memcpy(host, src, bytes);
}

static uint32_t hash(const void *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 16777619u;
	return h & 0x7fffffff;
}

/* Every rank holds the same bits: compare hashes with a max and a min allreduce. */
static int same_everywhere(gc_comm_t *c, const void *host, size_t bytes)
{
	int32_t h = (int32_t)hash(host, bytes), hi, lo;
	if (gc_allreduce(c, &h, &hi, 1, GC_I32, GC_MAX) < 0 ||
	    gc_allreduce(c, &h, &lo, 1, GC_I32, GC_MIN) < 0)
		return -1;
	return hi == lo && hi == h;
}

static void test_allreduce(gc_comm_t *c, size_t n, gc_dtype_t t, gc_op_t op, int inplace, int salt)
{
	int rank = gc_rank(c), size = gc_size(c);
	size_t es = gc_dtype_size(t), bytes = n * es;
	char *h = malloc(bytes + 1), *out = malloc(bytes + 1);
	void *s = tb_alloc(bytes), *d = inplace ? s : tb_alloc(bytes);
	for (size_t i = 0; i < n; i++)
		store(t, h, i, value(rank, i, salt));
	tb_put(s, h, bytes);
	int rc = gc_allreduce(c, inplace ? GC_IN_PLACE : s, d, n, t, op);
	if (rc < 0) {
		FAIL("rank %d: allreduce n=%zu %s %s: %s", rank, n, gc_dtype_name(t),
		     gc_op_name(op), gc_error(c));
	} else {
		tb_get(out, d, bytes);
		size_t bad = 0, first = 0;
		for (size_t i = 0; i < n; i++)
			if (!close_enough(t, load(t, out, i), expect(op, t, size, i, salt)) &&
			    !bad++)
				first = i;
		if (bad)
			FAIL("rank %d: allreduce n=%zu %s %s %s algo=%s: %zu wrong, first [%zu] = "
			     "%g, "
			     "expected %g",
			     rank, n, gc_dtype_name(t), gc_op_name(op), inplace ? "in-place" : "",
			     gc_algo_name(gc_algo_for(c, n, t)), bad, first, load(t, out, first),
			     expect(op, t, size, first, salt));
		if (!inplace) { /* the input is untouched */
			tb_get(out, s, bytes);
			if (memcmp(out, h, bytes))
				FAIL("rank %d: allreduce n=%zu changed its send buffer", rank, n);
		} else if (same_everywhere(c, out, bytes) != 1) {
			FAIL("rank %d: allreduce n=%zu %s %s: ranks hold different bits", rank, n,
			     gc_dtype_name(t), gc_op_name(op));
		}
	}
	tb_free(s);
	if (!inplace)
		tb_free(d);
	free(h);
	free(out);
}

static void test_reduce_scatter(gc_comm_t *c, size_t rn, gc_dtype_t t, gc_op_t op, int inplace)
{
	int rank = gc_rank(c), size = gc_size(c);
	size_t es = gc_dtype_size(t), all = rn * (size_t)size;
	char *h = malloc(all * es + 1), *out = malloc(all * es + 1);
	for (size_t i = 0; i < all; i++)
		store(t, h, i, value(rank, i, 7));
	void *s = tb_alloc(all * es), *d = inplace ? s : tb_alloc(rn * es);
	tb_put(s, h, all * es);
	if (gc_reduce_scatter(c, inplace ? GC_IN_PLACE : s, d, rn, t, op) < 0) {
		FAIL("rank %d: reduce_scatter rn=%zu: %s", rank, rn, gc_error(c));
	} else {
		size_t base = inplace ? (size_t)rank * rn : 0;
		tb_get(out, d, (inplace ? all : rn) * es);
		for (size_t i = 0; i < rn; i++) {
			double want = expect(op, t, size, (size_t)rank * rn + i, 7);
			if (!close_enough(t, load(t, out, base + i), want)) {
				FAIL(
				    "rank %d: reduce_scatter rn=%zu %s %s: [%zu] = %g, expected %g",
				    rank, rn, gc_dtype_name(t), gc_op_name(op), i,
				    load(t, out, base + i), want);
				break;
			}
		}
	}
	tb_free(s);
	if (!inplace)
		tb_free(d);
	free(h);
	free(out);
}

static void test_allgather(gc_comm_t *c, size_t sn, gc_dtype_t t, int inplace)
{
	int rank = gc_rank(c), size = gc_size(c);
	size_t es = gc_dtype_size(t), all = sn * (size_t)size;
	char *h = malloc(all * es + 1), *out = malloc(all * es + 1);
	for (size_t i = 0; i < sn; i++)
		store(t, h + (inplace ? (size_t)rank * sn * es : 0), i, value(rank, i, 3));
	void *d = tb_alloc(all * es), *s = inplace ? d : tb_alloc(sn * es);
	tb_put(inplace ? d : s, h, (inplace ? all : sn) * es);
	if (gc_allgather(c, inplace ? GC_IN_PLACE : s, d, sn, t) < 0) {
		FAIL("rank %d: allgather sn=%zu: %s", rank, sn, gc_error(c));
	} else {
		tb_get(out, d, all * es);
		for (int r = 0; r < size; r++)
			for (size_t i = 0; i < sn; i++)
				if (load(t, out, (size_t)r * sn + i) != value(r, i, 3)) {
					FAIL("rank %d: allgather sn=%zu %s: block %d [%zu] wrong",
					     rank, sn, gc_dtype_name(t), r, i);
					r = size;
					break;
				}
	}
	tb_free(d);
	if (!inplace)
		tb_free(s);
	free(h);
	free(out);
}

static void test_broadcast(gc_comm_t *c, size_t n, int root)
{
	int rank = gc_rank(c);
	int32_t *h = malloc(n * 4 + 4);
	for (size_t i = 0; i < n; i++)
		h[i] = rank == root ? value(root, i, 11) : -99;
	void *d = tb_alloc(n * 4);
	tb_put(d, h, n * 4);
	if (gc_broadcast(c, d, n, GC_I32, root) < 0) {
		FAIL("rank %d: broadcast n=%zu root %d: %s", rank, n, root, gc_error(c));
	} else {
		tb_get(h, d, n * 4);
		for (size_t i = 0; i < n; i++)
			if (h[i] != value(root, i, 11)) {
				FAIL("rank %d: broadcast n=%zu root %d: [%zu] wrong", rank, n, root,
				     i);
				break;
			}
	}
	tb_free(d);
	free(h);
}

static void test_nonblocking(gc_comm_t *c)
{
	int rank = gc_rank(c), size = gc_size(c);
	enum { K = 4 };
	size_t n = 100003;
	float *buf[K];
	gc_req_t *req[K];
	for (int k = 0; k < K; k++) {
		buf[k] = malloc(n * 4);
		for (size_t i = 0; i < n; i++)
			buf[k][i] = (float)value(rank, i, 100 + k);
	}
	for (int k = 0; k < K; k++) {
		if (gc_iallreduce(c, GC_IN_PLACE, buf[k], n, GC_F32, GC_SUM, &req[k]) < 0)
			FAIL("rank %d: iallreduce %d: %s", rank, k, gc_error(c));
		if (k == 1) { /* a blocking call between: it waits its turn */
			int32_t one = 1, sum = 0;
			if (gc_allreduce(c, &one, &sum, 1, GC_I32, GC_SUM) < 0 || sum != size)
				FAIL("rank %d: blocking allreduce between non-blocking ones", rank);
		}
	}
	int done = 0;
	gc_test(req[K - 1], &done); /* either answer is right; it must not fail */
	for (int k = 0; k < K; k++) {
		if (gc_wait(&req[k]) < 0)
			FAIL("rank %d: wait %d: %s", rank, k, gc_error(c));
		for (size_t i = 0; i < n; i++)
			if (buf[k][i] != (float)expect(GC_SUM, GC_F32, size, i, 100 + k)) {
				FAIL("rank %d: iallreduce %d: [%zu] wrong", rank, k, i);
				break;
			}
		free(buf[k]);
	}
}

static int run_all(gc_comm_t *c)
{
	int size = gc_size(c);
	static const gc_algo_t algos[] = {GC_ALGO_RING, GC_ALGO_RING2, GC_ALGO_RHD, GC_ALGO_HIER,
					  GC_ALGO_AUTO};
	size_t counts[] = {
	    1,	  2,	 3,	(size_t)size - 1 > 0 ? (size_t)size - 1 : 1, (size_t)size + 1,
	    1000, 65537, 300007};
	int ncounts = quick ? 6 : 8;
	for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
		gc_set_algo(c, algos[a]);
		for (int t = GC_F32; t <= GC_I32; t++)
			for (int op = GC_SUM; op <= GC_AVG; op++)
				for (int k = 0; k < ncounts; k++) {
					if (counts[k] > 70000 && (op == GC_MAX || op == GC_MIN))
						continue; /* the big sizes: sum and avg carry it */
					test_allreduce(c, counts[k], (gc_dtype_t)t, (gc_op_t)op,
						       k % 2,
						       (int)(a * 1000 + t * 100 + op * 10 + k));
				}
	}
	gc_set_algo(c, GC_ALGO_AUTO);
	/* wire compression: f32 sums sent as f16 / bf16 (the values are exact in both) */
	for (int w = GC_F16; w <= GC_BF16; w++) {
		gc_set_wire(c, (gc_dtype_t)w);
		gc_set_algo(c, GC_ALGO_RING);
		test_allreduce(c, 300007, GC_F32, GC_SUM, 1, 500 + w);
		tol_as = w;
		test_allreduce(c, 65537, GC_F32, GC_AVG, 0, 600 + w);
		tol_as = -1;
		gc_set_wire(c, GC_F32);
		gc_set_algo(c, GC_ALGO_AUTO);
	}
	size_t rcounts[] = {1, 3, 1000, 70001};
	for (int k = 0; k < 4; k++)
		for (int t = GC_F32; t <= GC_I32; t++) {
			test_reduce_scatter(c, rcounts[k], (gc_dtype_t)t, k % 2 ? GC_AVG : GC_SUM,
					    k % 2);
			test_allgather(c, rcounts[k], (gc_dtype_t)t, k % 2);
		}
	size_t bcounts[] = {1, 17, 5000, 1000003};
	for (int k = 0; k < 4; k++)
		for (int root = 0; root < size; root++)
			test_broadcast(c, bcounts[k], root);
	for (int i = 0; i < 5; i++)
		if (gc_barrier(c) < 0)
			FAIL("rank %d: barrier: %s", gc_rank(c), gc_error(c));
	test_nonblocking(c);
	return failures;
}

static gc_comm_t *make(int rank, int size, const char *rdv)
{
	gc_params_t p = {.rank = rank,
			 .size = size,
			 .rdv = rdv,
			 .transport = transport,
			 .backend = backend,
			 .device = -1};
	gc_error_t e;
	gc_comm_t *c = gc_comm_create(&p, &e);
	if (!c)
		fprintf(stderr, "rank %d: cannot make a communicator: %s\n", rank, e.text);
	return c;
}

static int open_gk(void)
{
	if (!strcmp(backend, "cpu"))
		return 0;
	gk_error_t ge;
	gk = gk_backend_open(backend, &ge);
	if (!gk) {
		printf("SKIP: kernels backend %s: %s\n", backend, ge.text);
		return 77;
	}
	return 0;
}

/* A rank's start: with PRETEND_HOSTS, two ranks per pretend host (GCOMM_HOST), so the
 * hierarchy has work; then the kernels backend and the communicator. NULL on failure. */
static gc_comm_t *rank_start(int rank, int size, const char *rdv, int pretend_hosts)
{
	if (pretend_hosts) {
		char host[32];
		snprintf(host, sizeof(host), "host%d", rank / 2);
		setenv("GCOMM_HOST", host, 1);
	}
	if (open_gk())
		return NULL;
	return make(rank, size, rdv);
}

static int rank_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	if (mixed && rank % 2) /* odd ranks: a CPU-only rank among card ranks */
		backend = "cpu";
	gc_comm_t *c = rank_start(rank, size, rdv, fake_hosts);
	if (!c)
		return 1;
	double t0 = now();
	int bad = run_all(c);
	if (rank == 0)
		printf("%d ranks, %s transport, %s buffers%s: %s in %.1f s\n", size,
		       gc_transport(c), gk ? backend : "host",
		       mixed ? " (odd ranks: host buffers, cpu backend)" : "",
		       bad ? "FAILED" : "all passed", now() - t0);
	gc_comm_destroy(&c);
	gk_backend_close(&gk);
	return bad ? 1 : 0;
}

/* ---- failure: SIGKILL one rank in the middle of a 256 MiB allreduce ---- */

#define KILL_ITERS 40 /* allreduces in a row; the kill comes 150 ms into the first */

struct kill_arg {
	gc_algo_t algo;
	int ready_fd; /* ranks write one byte when they enter the allreduce */
	int victim;
	size_t count;
};

static int kill_main(int rank, int size, const char *rdv, void *argp)
{
	struct kill_arg *a = argp;
	gc_comm_t *c = rank_start(rank, size, rdv, 1);
	if (!c)
		return 1;
	gc_set_algo(c, a->algo);
	float *h = malloc(a->count * 4), *buf = tb_alloc(a->count * 4);
	for (size_t i = 0; i < a->count; i++)
		h[i] = 1.0f;
	tb_put(buf, h, a->count * 4);
	free(h);
	if (gc_barrier(c) < 0)
		return 1;
	if (write(a->ready_fd, "x", 1) != 1)
		return 1;
	/* allreduce after allreduce until one fails, so the kill always lands in the middle
	 * of one, however fast the machine is (a survivor may still finish the one the kill
	 * hit when it got all it needed before: the next one must fail) */
	double t0 = now(), dt = 0;
	int rc = 0;
	for (int it = 0; it < KILL_ITERS && rc == 0; it++) {
		t0 = now();
		rc = gc_allreduce(c, GC_IN_PLACE, buf, a->count, GC_F32, GC_SUM);
		dt = now() - t0;
	}
	if (rank == a->victim)
		return 2; /* it should have died */
	if (rc == 0) {
		/* every allreduce finished: the kill never landed */
		printf("rank %d: %d allreduces finished before the kill\n", rank, KILL_ITERS);
		return 3;
	}
	int e = errno;
	printf("rank %d (%s): error after %.2f s: %s (%s)\n", rank, gc_algo_name(a->algo), dt,
	       gc_error(c), strerror(e));
	int second = gc_allreduce(c, GC_IN_PLACE, buf, 1, GC_F32, GC_SUM); /* must fail at once */
	gc_comm_destroy(&c);
	tb_free(buf);
	return second == 0 ? 4 : 0;
}

/* One rank of a job (--env --die-rank R): rank R kills itself 150 ms into a 256 MiB
 * allreduce; every other rank must fail cleanly, within the timeout. */
static void *die_later(void *arg)
{
	(void)arg;
	usleep(150 * 1000);
	kill(getpid(), SIGKILL);
	return NULL;
}

static int env_kill(gc_comm_t *c, int victim, const char *algo)
{
	int rank = gc_rank(c);
	gc_algo_t a = GC_ALGO_RING;
	if (gc_algo_parse(algo, &a) < 0)
		fprintf(stderr, "rank %d: unknown algorithm %s: ring\n", rank, algo);
	gc_set_algo(c, a);
	size_t n = quick ? 16u << 20 : 64u << 20;
	float *buf = tb_alloc(n * 4), *h = malloc(n * 4);
	for (size_t i = 0; i < n; i++)
		h[i] = 1.0f;
	tb_put(buf, h, n * 4);
	free(h);
	/* gpool stops the job's other ranks when one dies: let them see it themselves. Before
	 * the barrier: a loaded machine may leave a rank in it past the victim's 150 ms */
	if (rank != victim)
		signal(SIGTERM, SIG_IGN);
	if (gc_barrier(c) < 0) {
		fprintf(stderr, "rank %d: barrier: %s\n", rank, gc_error(c));
		return 1;
	}
	pthread_t th;
	if (rank == victim)
		pthread_create(&th, NULL, die_later, NULL);
	double t0 = now(), dt = 0;
	int rc = 0;
	for (int it = 0; it < KILL_ITERS && rc == 0; it++) { /* as in kill_main */
		t0 = now();
		rc = gc_allreduce(c, GC_IN_PLACE, buf, n, GC_F32, GC_SUM);
		dt = now() - t0;
	}
	if (rc == 0) {
		printf("rank %d: %d allreduces (%s) finished: the kill never landed\n", rank,
		       KILL_ITERS, gc_algo_name(a));
		return 3;
	}
	printf("rank %d: allreduce (%s) failed cleanly after %.2f s: %s\n", rank, gc_algo_name(a),
	       dt, gc_error(c));
	fflush(stdout); /* said before the stop's SIGKILL can come */
	return 0;
}

static int kill_test(int size)
{
	static const gc_algo_t algos[] = {GC_ALGO_RING, GC_ALGO_RING2, GC_ALGO_RHD, GC_ALGO_HIER};
	int bad = 0;
	for (size_t k = 0; k < sizeof(algos) / sizeof(algos[0]); k++) {
		int pfd[2];
		if (pipe(pfd) < 0)
			return 1;
		struct kill_arg a = {.algo = algos[k],
				     .ready_fd = pfd[1],
				     .victim = 1,
				     .count = quick ? 16u << 20 : 64u << 20};
		char rdv[64];
		snprintf(rdv, sizeof(rdv), "tcp://127.0.0.1:%d", gc_free_port());
		pid_t pids[16];
		double t0 = now();
		fflush(NULL);
		for (int r = 0; r < size; r++) {
			pids[r] = fork();
			if (pids[r] == 0) {
				close(pfd[0]);
				alarm(60);
				int rc = kill_main(r, size, rdv, &a);
				fflush(NULL);
				_exit(rc);
			}
		}
		close(pfd[1]);
		char b;
		int ready = 0;
		while (ready < size && read(pfd[0], &b, 1) == 1)
			ready++;
		usleep(150 * 1000); /* in the middle of the transfer */
		kill(pids[a.victim], SIGKILL);
		double tk = now();
		for (int r = 0; r < size; r++) {
			int st;
			waitpid(pids[r], &st, 0);
			int ok = r == a.victim ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
					       : WIFEXITED(st) && WEXITSTATUS(st) == 0;
			if (!ok) {
				bad = 1;
				fprintf(stderr,
					"kill test %s: rank %d ended wrongly (status 0x%x)\n",
					gc_algo_name(algos[k]), r, st);
			}
		}
		printf(
		    "kill test %s: every survivor failed cleanly %.2f s after the kill (start to "
		    "end %.2f s)\n",
		    gc_algo_name(algos[k]), now() - tk, now() - t0);
		if (now() - tk > 10.0) {
			fprintf(stderr, "kill test %s: survivors took over 10 s\n",
				gc_algo_name(algos[k]));
			bad = 1;
		}
		close(pfd[0]);
	}
	return bad;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gcomm-test (--np N | --env) [--transport tcp|ucx|mpi] "
		"[--backend cpu|cuda|hip] [--mixed] [--quick] [--kill-test] [--real-hosts]\n"
		"       gcomm-test --env --die-rank R [--algo ring|ring2|rhd|hier]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	/* lines, not blocks: a job's ranks may be stopped by a signal right after they print */
	setvbuf(stdout, NULL, _IOLBF, 0);
	int np = 0, env = 0, killt = 0, die_rank = -1;
	const char *kill_algo = "ring";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--np") && i + 1 < argc)
			np = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--env"))
			env = 1;
		else if (!strcmp(argv[i], "--transport") && i + 1 < argc)
			transport = argv[++i];
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--kill-test"))
			killt = 1;
		else if (!strcmp(argv[i], "--die-rank") && i + 1 < argc)
			die_rank = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--algo") && i + 1 < argc)
			kill_algo = argv[++i];
		else if (!strcmp(argv[i], "--mixed"))
			mixed = 1;
		else if (!strcmp(argv[i], "--real-hosts"))
			fake_hosts = 0;
		else
			usage();
	}
	if (env) { /* one rank of a job: the layout is the job's */
		fake_hosts = 0;
		if (strcmp(transport, "tcp"))
			setenv("GCOMM_TRANSPORT", transport, 1);
		/* the communicator must know the card's runtime to see device buffers */
		if (strcmp(backend, "cpu"))
			setenv("GCOMM_BACKEND", backend, 1);
		if (open_gk())
			return 77;
		gc_error_t e;
		gc_comm_t *c = gc_comm_from_env(&e);
		if (!c) {
			fprintf(stderr, "gcomm-test: %s\n", e.text);
			return 1;
		}
		if (die_rank >= 0) {
			int rc = env_kill(c, die_rank, kill_algo);
			gc_comm_destroy(&c);
			return rc;
		}
		double t0 = now();
		int bad = run_all(c);
		printf("rank %d of %d (%s, %d hosts): %s in %.1f s\n", gc_rank(c), gc_size(c),
		       gc_transport(c), gc_host_count(c), bad ? "FAILED" : "all passed",
		       now() - t0);
		gc_comm_destroy(&c);
		return bad ? 1 : 0;
	}
	if (np < 1 || np > 16)
		usage();
	if (strcmp(backend, "cpu")) {
		/* is there a card at all? Asked in a child: a CUDA context made before fork()
		 * is unusable in the ranks */
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0) {
			int rc = open_gk();
			gk_backend_close(&gk);
			fflush(NULL);
			_exit(rc);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (killt)
		return kill_test(np) ? 1 : 0;
	return gc_spawn(np, rank_main, NULL, 600) ? 1 : 0;
}
