/* mpi.c - the mpi data path: gcomm's collectives as MPI's, on a duplicate of
 * MPI_COMM_WORLD (for jobs already under mpirun, and as the reference beside the native
 * algorithms).
 *
 * Types: f32, f64 and i32 are MPI's own. f16 and bf16 have no MPI type: each is a
 * 2-byte contiguous type of its own, reduced by user-defined operations (sum, max, min)
 * that call gk_reduce on the cpu kernels backend, so they round exactly as the native
 * path does. AVG is a sum, then a scale by 1/size on the host; i32's AVG sums in 64 bits
 * (as gk_reduce does) and divides toward zero.
 *
 * Device buffers (the communicator's GPU backend) are staged through pinned host
 * memory: copied to the host, the MPI operation runs in place there, copied back.
 *
 * MPI is started here (MPI_Init_thread, MPI_THREAD_SERIALIZED: the communicator's
 * worker thread runs non-blocking operations) unless the program started it; then the
 * last communicator's destroy finalizes it, and MPI cannot start again in this
 * process (MPI's rule). The datatypes and operations are per process, shared by every
 * mpi communicator.
 *
 * Errors: the communicator uses MPI_ERRORS_RETURN; a failed MPI call breaks the
 * communicator with MPI's message.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm/src/comm_int.h"

#define MAX_COUNT   INT_MAX    /* MPI counts are ints */
#define BCAST_CHUNK (1u << 30) /* bytes per MPI_Bcast */

typedef struct {
	MPI_Comm comm;
} mpi_state_t;

/* Process-wide: MPI's handles belong to the process, not to a communicator. */
static struct {
	pthread_mutex_t mu;
	int refs;	      /* open mpi communicators */
	int we_inited;	      /* MPI_Init_thread was ours: the last destroy finalizes */
	MPI_Datatype half[2]; /* f16, bf16 */
	MPI_Op ops[3];	      /* sum, max, min over half[] */
	gk_backend_t *cpu;    /* the operations' reductions */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const struct {
	gc_dtype_t gc;
	gk_dtype_t gk;
	int half; /* index into g.half, or -1: MPI's own type */
} dtypes[] = {
    {GC_F32, GK_F32, -1}, {GC_F16, GK_F16, 0},	{GC_BF16, GK_BF16, 1},
    {GC_F64, GK_F64, -1}, {GC_I32, GK_I32, -1},
};

static MPI_Datatype mpi_type(gc_dtype_t t)
{
	const MPI_Datatype own[] = {
	    [GC_F32] = MPI_FLOAT, [GC_F64] = MPI_DOUBLE, [GC_I32] = MPI_INT32_T};

	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].gc == t)
			return dtypes[i].half >= 0 ? g.half[dtypes[i].half] : own[t];
	return MPI_DATATYPE_NULL;
}

static int is_half(gc_dtype_t t)
{
	return t == GC_F16 || t == GC_BF16;
}

/* AVG is a sum here; the scale comes after. */
static MPI_Op mpi_op(gc_dtype_t t, gc_op_t op)
{
	static const int slot[] = {[GC_SUM] = 0, [GC_MAX] = 1, [GC_MIN] = 2, [GC_AVG] = 0};
	const MPI_Op own[] = {MPI_SUM, MPI_MAX, MPI_MIN};

	if ((unsigned)op > GC_AVG)
		return MPI_OP_NULL;
	return is_half(t) ? g.ops[slot[op]] : own[slot[op]];
}

/* ---- the f16/bf16 operations ---- */

static void half_reduce(void *in, void *inout, const int *len, const MPI_Datatype *dt,
			gk_redop_t op)
{
	gk_dtype_t t = *dt == g.half[0] ? GK_F16 : GK_BF16;
	const void *srcs[2] = {in, inout};

	/* MPI gives this no way to fail; the cpu backend does not fail on host memory */
	gk_reduce(g.cpu, t, op, inout, srcs, 2, (size_t)*len, NULL);
}

static void half_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	half_reduce(in, inout, len, dt, GK_SUM);
}

static void half_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	half_reduce(in, inout, len, dt, GK_MAX);
}

static void half_min(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	half_reduce(in, inout, len, dt, GK_MIN);
}

/* ---- errors ---- */

static int mpi_fail(gc_comm_t *c, int rc, const char *what)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
		snprintf(s, sizeof(s), "error %d", rc);
	c->broken = 1;
	return gc_fail(c, EIO, "mpi: %s: %s", what, s);
}

static int kfail(gc_comm_t *c, const char *what, gk_backend_t *k)
{
	return gc_fail(c, errno ? errno : EIO, "mpi: %s: %s", what, gk_backend_error(k));
}

/* ---- staging ---- */

/* HOST (host memory) <- SRC (host or device). */
static int copy_in(gc_comm_t *c, void *host, const void *src, size_t len)
{
	if (len == 0 || host == src)
		return 0;
	if (!gc_is_device(c, src)) {
		memmove(host, src, len);
		return 0;
	}
	if (gk_copy(c->gk, host, src, len, GK_D2H) < 0)
		return kfail(c, "copy from the card", c->gk);
	return 0;
}

/* DST (host or device) <- HOST (host memory). */
static int copy_out(gc_comm_t *c, void *dst, const void *host, size_t len)
{
	if (len == 0 || dst == host)
		return 0;
	if (!gc_is_device(c, dst)) {
		memmove(dst, host, len);
		return 0;
	}
	if (gk_copy(c->gk, dst, host, len, GK_H2D) < 0)
		return kfail(c, "copy to the card", c->gk);
	return 0;
}

/* The host buffer results go to: DST itself when it is host memory, else staging. */
static void *host_for(gc_comm_t *c, void *dst, size_t len)
{
	return gc_is_device(c, dst) ? gc_buf(c, GC_BUF_STAGE, len, 0) : dst;
}

static int scale_avg(gc_comm_t *c, gc_dtype_t t, void *buf, size_t n)
{
	if (gk_scale(c->cpu, (gk_dtype_t)t, buf, buf, 1.0 / c->size, n, NULL) < 0)
		return kfail(c, "average", c->cpu);
	return 0;
}

/* i32 <- the 64-bit sums / size, toward zero, wrapped (as gk_reduce's AVG). */
static void avg_i64_to_i32(int32_t *dst, const int64_t *sum, size_t n, int size)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (int32_t)(uint32_t)(uint64_t)(sum[i] / size);
}

static MPI_Comm comm_of(gc_comm_t *c)
{
	return ((mpi_state_t *)c->mpi)->comm;
}

/* ---- the collectives ---- */

/* In-place allreduce of N elements of BUF (host), in pieces MPI's int count can hold. */
static int allreduce_host(gc_comm_t *c, const void *s, void *buf, size_t n, MPI_Datatype dt,
			  size_t es, MPI_Op op)
{
	for (size_t off = 0; off < n; off += MAX_COUNT) {
		int m = n - off < MAX_COUNT ? (int)(n - off) : MAX_COUNT;
		const void *sp = s == buf ? MPI_IN_PLACE : (const char *)s + off * es;
		int rc = MPI_Allreduce(sp, (char *)buf + off * es, m, dt, op, comm_of(c));

		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "allreduce");
	}
	return 0;
}

static int allreduce_avg_i32(gc_comm_t *c, const void *s, void *r, size_t n)
{
	int64_t *w = gc_buf(c, GC_BUF_WORK, n * sizeof(int64_t), 0);
	int32_t *in = gc_is_device(c, s) ? gc_buf(c, GC_BUF_STAGE, n * 4, 0) : (int32_t *)s;
	int32_t *out;

	if (!w || !in || copy_in(c, in, s, n * 4) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		w[i] = in[i];
	if (allreduce_host(c, w, w, n, MPI_INT64_T, sizeof(int64_t), MPI_SUM) < 0)
		return -1;
	out = host_for(c, r, n * 4);
	if (!out)
		return -1;
	avg_i64_to_i32(out, w, n, c->size);
	return copy_out(c, r, out, n * 4);
}

static int mpi_allreduce(gc_comm_t *c, const void *s, void *r, size_t n, gc_dtype_t t, gc_op_t op)
{
	size_t es = gc_dtype_size(t), bytes = n * es;
	const void *hs = s;
	void *h;

	if (n == 0)
		return 0;
	if (t == GC_I32 && op == GC_AVG)
		return allreduce_avg_i32(c, s, r, n);
	h = host_for(c, r, bytes);
	if (!h)
		return -1;
	if (gc_is_device(c, s)) {
		if (copy_in(c, h, s, bytes) < 0)
			return -1;
		hs = h;
	}
	if (allreduce_host(c, hs, h, n, mpi_type(t), es, mpi_op(t, op)) < 0)
		return -1;
	if (op == GC_AVG && scale_avg(c, t, h, n) < 0)
		return -1;
	return copy_out(c, r, h, bytes);
}

static int mpi_reduce_scatter(gc_comm_t *c, const void *s, void *r, size_t rn, gc_dtype_t t,
			      gc_op_t op)
{
	size_t es = gc_dtype_size(t), out_bytes = rn * es, in_bytes = out_bytes * c->size;
	int in_place = s == r, dev = gc_is_device(c, s) || gc_is_device(c, r);
	char *dst = in_place ? (char *)r + (size_t)c->rank * out_bytes : r;
	int rc;

	if (rn == 0)
		return 0;
	if (rn > MAX_COUNT)
		return gc_fail(c, EOVERFLOW,
			       "mpi: reduce_scatter of %zu elements per rank: mpi "
			       "counts stop at %d",
			       rn, MAX_COUNT);
	if (t == GC_I32 && op == GC_AVG) {
		size_t total = rn * c->size;
		int64_t *w = gc_buf(c, GC_BUF_WORK, total * sizeof(int64_t), 0);
		int32_t *in =
		    gc_is_device(c, s) ? gc_buf(c, GC_BUF_STAGE, in_bytes, 0) : (int32_t *)s;
		int32_t *out;

		if (!w || !in || copy_in(c, in, s, in_bytes) < 0)
			return -1;
		for (size_t i = 0; i < total; i++)
			w[i] = in[i];
		rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, w, (int)rn, MPI_INT64_T, MPI_SUM,
					      comm_of(c));
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "reduce_scatter");
		out = host_for(c, dst, out_bytes);
		if (!out)
			return -1;
		avg_i64_to_i32(out, w, rn, c->size);
		return copy_out(c, dst, out, out_bytes);
	}
	if (!dev) {
		/* in place, MPI leaves block "rank" at the front of r: moved where gcomm wants */
		rc = MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : s, r, (int)rn, mpi_type(t),
					      mpi_op(t, op), comm_of(c));
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "reduce_scatter");
		if (in_place && c->rank)
			memcpy(dst, r, out_bytes);
		return op == GC_AVG ? scale_avg(c, t, dst, rn) : 0;
	} else {
		char *h = gc_buf(c, GC_BUF_STAGE, in_bytes, 0);

		if (!h || copy_in(c, h, s, in_bytes) < 0)
			return -1;
		rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, h, (int)rn, mpi_type(t), mpi_op(t, op),
					      comm_of(c));
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "reduce_scatter");
		if (op == GC_AVG && scale_avg(c, t, h, rn) < 0)
			return -1;
		return copy_out(c, dst, h, out_bytes);
	}
}

static int mpi_allgather(gc_comm_t *c, const void *s, void *r, size_t sn, gc_dtype_t t)
{
	size_t bytes = sn * gc_dtype_size(t), total = bytes * c->size;
	char *mine = (char *)r + (size_t)c->rank * bytes;
	/* in place: the input is this rank's block of r (also when s points there) */
	const void *in = s == r ? mine : s;
	char *h;
	int rc;

	if (sn == 0)
		return 0;
	if (sn > MAX_COUNT)
		return gc_fail(c, EOVERFLOW,
			       "mpi: allgather of %zu elements per rank: mpi counts "
			       "stop at %d",
			       sn, MAX_COUNT);
	h = host_for(c, r, total);
	if (!h)
		return -1;
	if (in != mine || h != r) {
		if (copy_in(c, h + (size_t)c->rank * bytes, in, bytes) < 0)
			return -1;
	}
	rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h, (int)sn, mpi_type(t), comm_of(c));
	if (rc != MPI_SUCCESS)
		return mpi_fail(c, rc, "allgather");
	return copy_out(c, r, h, total);
}

static int mpi_broadcast(gc_comm_t *c, void *buf, size_t n, gc_dtype_t t, int root)
{
	size_t bytes = n * gc_dtype_size(t);
	char *h;

	if (root < 0 || root >= c->size)
		return gc_fail(c, EINVAL, "mpi: broadcast from rank %d of %d", root, c->size);
	if (n == 0)
		return 0;
	h = host_for(c, buf, bytes);
	if (!h || (c->rank == root && copy_in(c, h, buf, bytes) < 0))
		return -1;
	/* bytes: the same on every rank, whatever the type */
	for (size_t off = 0; off < bytes; off += BCAST_CHUNK) {
		int m = bytes - off < BCAST_CHUNK ? (int)(bytes - off) : (int)BCAST_CHUNK;
		int rc = MPI_Bcast(h + off, m, MPI_BYTE, root, comm_of(c));

		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "broadcast");
	}
	return c->rank == root ? 0 : copy_out(c, buf, h, bytes);
}

static int mpi_barrier(gc_comm_t *c)
{
	int rc = MPI_Barrier(comm_of(c));

	return rc == MPI_SUCCESS ? 0 : mpi_fail(c, rc, "barrier");
}

/* ---- process-wide state ---- */

/* With g.mu held: the types and operations, when the first communicator opens. */
static int globals_take(gc_comm_t *c)
{
	MPI_User_function *fn[3] = {half_sum, half_max, half_min};
	gk_error_t ge;

	if (g.refs++ > 0)
		return 0;
	g.cpu = gk_backend_open("cpu", &ge);
	if (!g.cpu) {
		g.refs--;
		return gc_fail(c, errno ? errno : EIO, "mpi: kernels: %s", ge.text);
	}
	for (int i = 0; i < 2; i++) {
		MPI_Type_contiguous(2, MPI_BYTE, &g.half[i]);
		MPI_Type_commit(&g.half[i]);
	}
	for (int i = 0; i < 3; i++)
		MPI_Op_create(fn[i], 1, &g.ops[i]);
	return 0;
}

/* With g.mu held: the last communicator gone, MPI's handles go (and MPI, if ours). */
static void globals_drop(void)
{
	int fin = 0;

	if (--g.refs > 0)
		return;
	MPI_Finalized(&fin);
	if (!fin) {
		for (int i = 0; i < 3; i++)
			MPI_Op_free(&g.ops[i]);
		for (int i = 0; i < 2; i++)
			MPI_Type_free(&g.half[i]);
		if (g.we_inited)
			MPI_Finalize();
	}
	g.we_inited = 0;
	gk_backend_close(&g.cpu);
}

/* Host layout: ranks that share memory (MPI_COMM_TYPE_SHARED) are one host, hosts
 * numbered in order of their first rank. */
static int layout(gc_comm_t *c, MPI_Comm comm)
{
	MPI_Comm node;
	int lead = c->rank, rc, *leads = calloc((size_t)c->size, sizeof(int));
	int *host_of = calloc((size_t)c->size, sizeof(int));

	if (!leads || !host_of) {
		free(leads);
		free(host_of);
		return gc_fail(c, ENOMEM, "out of memory");
	}
	rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
	if (rc == MPI_SUCCESS) {
		rc = MPI_Allreduce(&c->rank, &lead, 1, MPI_INT, MPI_MIN, node);
		MPI_Comm_free(&node);
	}
	if (rc == MPI_SUCCESS)
		rc = MPI_Allgather(&lead, 1, MPI_INT, leads, 1, MPI_INT, comm);
	if (rc != MPI_SUCCESS) {
		free(leads);
		free(host_of);
		return mpi_fail(c, rc, "host layout");
	}
	c->nhosts = 0;
	for (int i = 0; i < c->size; i++) /* a host's lead is its lowest rank: seen first */
		host_of[i] = leads[i] == i ? c->nhosts++ : host_of[leads[i]];
	free(c->host_of);
	c->host_of = host_of;
	free(leads);
	return 0;
}

int gc_mpi_open(gc_comm_t *c, gc_error_t *err)
{
	mpi_state_t *st = NULL;
	int ini = 0, fin = 0, rc;

	pthread_mutex_lock(&g.mu);
	MPI_Initialized(&ini);
	MPI_Finalized(&fin);
	if (fin) {
		pthread_mutex_unlock(&g.mu);
		gc_fail(c, EALREADY,
			"mpi: already finalized (mpi cannot start twice in a process)");
		goto fail;
	}
	if (!ini) {
		int provided = 0;

		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
		if (rc != MPI_SUCCESS) {
			pthread_mutex_unlock(&g.mu);
			mpi_fail(c, rc, "init");
			goto fail;
		}
		g.we_inited = 1;
	}
	if (globals_take(c) < 0) {
		/* nothing of ours holds MPI now: finalize what we started */
		if (g.refs == 0 && g.we_inited) {
			MPI_Finalize();
			g.we_inited = 0;
		}
		pthread_mutex_unlock(&g.mu);
		goto fail;
	}
	pthread_mutex_unlock(&g.mu);

	st = calloc(1, sizeof(*st));
	if (!st) {
		gc_fail(c, ENOMEM, "out of memory");
		goto fail_drop;
	}
	st->comm = MPI_COMM_NULL;
	rc = MPI_Comm_dup(MPI_COMM_WORLD, &st->comm);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_set_errhandler(st->comm, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(st->comm, &c->rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(st->comm, &c->size);
	if (rc != MPI_SUCCESS) {
		mpi_fail(c, rc, "joining MPI_COMM_WORLD");
		goto fail_drop;
	}
	c->mpi = st;
	if (layout(c, st->comm) < 0) {
		c->mpi = NULL;
		goto fail_drop;
	}
	return 0;
fail_drop : {
	int e = errno;

	if (st && st->comm != MPI_COMM_NULL)
		MPI_Comm_free(&st->comm);
	free(st);
	pthread_mutex_lock(&g.mu);
	globals_drop();
	pthread_mutex_unlock(&g.mu);
	errno = e;
}
fail:
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", c->err);
	return -1;
}

static void mpi_destroy(gc_comm_t *c)
{
	mpi_state_t *st = c->mpi;
	int fin = 0;

	if (!st)
		return;
	MPI_Finalized(&fin);
	if (!fin)
		MPI_Comm_free(&st->comm);
	free(st);
	c->mpi = NULL;
	pthread_mutex_lock(&g.mu);
	globals_drop();
	pthread_mutex_unlock(&g.mu);
}

const gc_coll_ops_t gc_coll_mpi = {
    .name = "mpi",
    .allreduce = mpi_allreduce,
    .reduce_scatter = mpi_reduce_scatter,
    .allgather = mpi_allgather,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .destroy = mpi_destroy,
};
