/* algo.c - the native collectives: algorithm choice, recursive doubling, the hierarchical
 * allreduce, broadcast, barrier; the ring engine (ring.c) does the heavy lifting. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm/src/comm_int.h"
#include "comm/src/ring.h"

static const char *const algo_names[] = {[GC_ALGO_AUTO] = "auto",
					 [GC_ALGO_RING] = "ring",
					 [GC_ALGO_RHD] = "rhd",
					 [GC_ALGO_HIER] = "hier",
					 [GC_ALGO_RING2] = "ring2"};

const char *gc_algo_name(gc_algo_t a)
{
	return a >= GC_ALGO_AUTO && a <= GC_ALGO_LAST ? algo_names[a] : "?";
}

int gc_algo_parse(const char *name, gc_algo_t *a)
{
	for (int i = GC_ALGO_AUTO; name && i <= GC_ALGO_LAST; i++)
		if (!strcmp(name, algo_names[i])) {
			*a = (gc_algo_t)i;
			return 0;
		}
	errno = EINVAL;
	return -1;
}

/* Two rings for a ring of N members over BYTES? Both directions of every link carry
 * data, but each rank drives twice the connections: measured on 3-4 netns hosts it
 * pays between 2 and 16 MiB and costs 5-10 % above (docs/benchmarks.md). */
static int ring2_pays(const gc_comm_t *c, int n, size_t bytes)
{
	return n >= 3 && bytes >= c->ring2_min && bytes < c->ring2_max;
}

gc_algo_t gc_algo_for(const gc_comm_t *c, size_t count, gc_dtype_t t)
{
	size_t bytes = count * gc_dtype_size(t);
	if (c->algo != GC_ALGO_AUTO)
		return c->algo;
	if (bytes <= c->small)
		return GC_ALGO_RHD;
	if (c->nhosts > 1 && c->nhosts < c->size)
		return GC_ALGO_HIER;
	return ring2_pays(c, c->size, bytes) ? GC_ALGO_RING2 : GC_ALGO_RING;
}

static int kfail(gc_comm_t *c, gk_backend_t *k, const char *what)
{
	return gc_fail(c, errno ? errno : EIO, "%s: %s", what, gk_backend_error(k));
}

static int copy(gc_comm_t *c, void *d, const void *s, size_t bytes, int dev)
{
	if (d == s || !bytes)
		return 0;
	if (!dev) {
		memcpy(d, s, bytes);
		return 0;
	}
	return gk_copy(c->gk, d, s, bytes, GK_D2D) < 0 ? kfail(c, c->gk, "copy") : 0;
}

static int xfer(gc_comm_t *c, int to, const void *sb, size_t sl, int from, void *rb, size_t rl)
{
	gc_tpreq_t r[2];
	int n = 0;
	if (to >= 0 && c->tpo->isend(c->tp, to, c->seq, sb, sl, &r[n++]) < 0)
		return gc_break(c, "send");
	if (from >= 0 && c->tpo->irecv(c->tp, from, c->seq, rb, rl, &r[n++]) < 0)
		return gc_break(c, "receive");
	return gc_waitall(c, r, n);
}

/* d = a op b on the host, the lower rank's data first (every rank adds in one order). */
static int host_reduce(gc_comm_t *c, gc_dtype_t t, gc_op_t op, void *d, const void *a,
		       const void *b, size_t n)
{
	const void *srcs[2] = {a, b};
	if (gk_reduce(c->cpu, (gk_dtype_t)t, (gk_redop_t)(op == GC_AVG ? GC_SUM : op), d, srcs, 2,
		      n, NULL) < 0)
		return kfail(c, c->cpu, "reduce");
	return 0;
}

static int host_div(gc_comm_t *c, gc_dtype_t t, void *d, size_t n, int by)
{
	if (t == GC_I32) {
		for (size_t i = 0; i < n; i++)
			((int32_t *)d)[i] /= by;
		return 0;
	}
	return gk_scale(c->cpu, (gk_dtype_t)t, d, d, 1.0 / by, n, NULL) < 0
		   ? kfail(c, c->cpu, "scale")
		   : 0;
}

/* Recursive doubling on host buffers; ranks beyond the largest power of two first fold
 * their data into a partner and get the result back at the end. */
static int rhd(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op)
{
	int N = c->size, me = c->rank;
	size_t bytes = n * gc_dtype_size(t);
	memmove(d, s, s == d ? 0 : bytes);
	char *tmp = gc_buf(c, GC_BUF_TMP, bytes, 0);
	if (!tmp)
		return -1;
	int p2 = 1;
	while (p2 * 2 <= N)
		p2 *= 2;
	int rem = N - p2, newr;
	if (me < 2 * rem) {
		if (me % 2 == 0) {
			if (xfer(c, me + 1, d, bytes, -1, NULL, 0) < 0)
				return -1;
			newr = -1;
		} else {
			if (xfer(c, -1, NULL, 0, me - 1, tmp, bytes) < 0 ||
			    host_reduce(c, t, op, d, tmp, d, n) < 0)
				return -1;
			newr = me / 2;
		}
	} else {
		newr = me - rem;
	}
	if (newr >= 0) {
		for (int mask = 1; mask < p2; mask <<= 1) {
			int pn = newr ^ mask;
			int peer = pn < rem ? pn * 2 + 1 : pn + rem;
			if (xfer(c, peer, d, bytes, peer, tmp, bytes) < 0)
				return -1;
			if (peer < me ? host_reduce(c, t, op, d, tmp, d, n) < 0
				      : host_reduce(c, t, op, d, d, tmp, n) < 0)
				return -1;
		}
		if (op == GC_AVG && host_div(c, t, d, n, N) < 0)
			return -1;
	}
	if (me < 2 * rem) {
		if (me % 2 == 0)
			return xfer(c, -1, NULL, 0, me + 1, d, bytes);
		return xfer(c, me - 1, d, bytes, -1, NULL, 0);
	}
	return 0;
}

/* Reduce within each host to its first rank, ring across those, back to the others. */
static int hier(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op)
{
	int me = c->rank, N = c->size, h = c->host_of[me];
	size_t bytes = n * gc_dtype_size(t);
	int leader = -1, *leaders = calloc((size_t)c->nhosts, sizeof(int)), my_leader_idx = 0;
	if (!leaders)
		return gc_fail(c, ENOMEM, "out of memory");
	for (int i = 0; i < c->nhosts; i++)
		leaders[i] = -1;
	for (int i = 0; i < N; i++)
		if (leaders[c->host_of[i]] < 0)
			leaders[c->host_of[i]] = i;
	leader = leaders[h];
	my_leader_idx = h;
	int rc = 0;
	memmove(d, s, s == d ? 0 : bytes);
	if (me != leader) {
		rc = xfer(c, leader, d, bytes, -1, NULL, 0);
		if (rc == 0)
			rc = xfer(c, -1, NULL, 0, leader, d, bytes);
		free(leaders);
		return rc;
	}
	for (int i = 0; i < N && rc == 0; i++) {
		if (i == me || c->host_of[i] != h)
			continue;
		char *tmp = gc_buf(c, GC_BUF_TMP, bytes, 0);
		if (!tmp || xfer(c, -1, NULL, 0, i, tmp, bytes) < 0 ||
		    host_reduce(c, t, op, d, d, tmp, n) < 0)
			rc = -1;
	}
	if (rc == 0 && c->nhosts > 1)
		rc = gc_ring_allreduce_members(c, leaders, c->nhosts, my_leader_idx, d, d, n, t, op,
					       N, 0, ring2_pays(c, c->nhosts, bytes));
	else if (rc == 0 && op == GC_AVG)
		rc = host_div(c, t, d, n, N);
	if (rc == 0) {
		int k = 0;
		for (int i = 0; i < N; i++)
			k += i != me && c->host_of[i] == h;
		gc_tpreq_t *r = calloc((size_t)k + 1, sizeof(*r));
		k = 0;
		for (int i = 0; r && i < N && rc == 0; i++)
			if (i != me && c->host_of[i] == h &&
			    c->tpo->isend(c->tp, i, c->seq, d, bytes, &r[k++]) < 0)
				rc = gc_break(c, "send");
		if (!r)
			rc = gc_fail(c, ENOMEM, "out of memory");
		else if (rc == 0)
			rc = gc_waitall(c, r, k);
		free(r);
	}
	free(leaders);
	return rc;
}

/* Run a host algorithm on device buffers through a host copy. */
typedef int (*host_algo_f)(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t,
			   gc_op_t op);

static int staged(gc_comm_t *c, host_algo_f f, const void *s, void *d, size_t n, gc_dtype_t t,
		  gc_op_t op)
{
	size_t bytes = n * gc_dtype_size(t);
	char *h = gc_buf(c, GC_BUF_STAGE, bytes, 0);
	if (!h)
		return -1;
	if (gk_copy(c->gk, h, s, bytes, GK_D2H) < 0)
		return kfail(c, c->gk, "copy off the card");
	if (f(c, h, h, n, t, op) < 0)
		return -1;
	if (gk_copy(c->gk, d, h, bytes, GK_H2D) < 0)
		return kfail(c, c->gk, "copy to the card");
	return 0;
}

static int all_members(gc_comm_t *c, int **m)
{
	*m = malloc((size_t)c->size * sizeof(int));
	if (!*m)
		return gc_fail(c, ENOMEM, "out of memory");
	for (int i = 0; i < c->size; i++)
		(*m)[i] = i;
	return 0;
}

static int ring_all(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op,
		    int two)
{
	int *m;
	if (all_members(c, &m) < 0)
		return -1;
	int rc = gc_ring_allreduce_members(c, m, c->size, c->rank, s, d, n, t, op, c->size,
					   gc_is_device(c, d), two);
	free(m);
	return rc;
}

static int native_allreduce(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t,
			    gc_op_t op)
{
	int dev = gc_is_device(c, d);
	if (c->size == 1)
		return copy(c, d, s, n * gc_dtype_size(t), dev);
	gc_algo_t a = gc_algo_for(c, n, t);
	if (a == GC_ALGO_RING || a == GC_ALGO_RING2)
		return ring_all(c, s, d, n, t, op, a == GC_ALGO_RING2);
	host_algo_f f = a == GC_ALGO_RHD ? rhd : c->nhosts > 1 && c->nhosts < c->size ? hier : NULL;
	if (!f) /* one rank per host, or one host: the ring is the hierarchy */
		return ring_all(c, s, d, n, t, op, ring2_pays(c, c->size, n * gc_dtype_size(t)));
	return dev ? staged(c, f, s, d, n, t, op) : f(c, s, d, n, t, op);
}

/* One half of the ring over every rank, on blocks of EACH elements (block r is rank r's):
 * reduce-scatter (rank r ends owning block r of DST) or allgather (rank r starts with it). */
static int ring_blocks(gc_comm_t *c, int do_rs, const void *src, void *dst, size_t each,
		       gc_dtype_t t, gc_op_t op, int dev)
{
	size_t *off = calloc((size_t)c->size, sizeof(size_t));
	size_t *len = calloc((size_t)c->size, sizeof(size_t));
	int *m = NULL, rc = -1;
	if (!off || !len) {
		gc_fail(c, ENOMEM, "out of memory");
		goto out;
	}
	if (all_members(c, &m) < 0)
		goto out;
	for (int k = 0; k < c->size; k++) {
		off[k] = (size_t)k * each;
		len[k] = each;
	}
	gc_ring_args_t a = {
	    .members = m,
	    .n = c->size,
	    .me = c->rank,
	    .shift = -1,
	    .do_rs = do_rs,
	    .do_ag = !do_rs,
	    .off = off,
	    .len = len,
	    .t = t,
	    .op = op == GC_AVG ? GC_SUM : op,
	    .scale_by = op == GC_AVG ? c->size : 0,
	    .src = src,
	    .dst = dst,
	    .dev = dev,
	    .wire = t,
	    .tag = c->seq,
	};
	rc = gc_ring_run(c, &a);
out:
	free(off);
	free(len);
	free(m);
	return rc;
}

static int native_reduce_scatter(gc_comm_t *c, const void *s, void *d, size_t rn, gc_dtype_t t,
				 gc_op_t op)
{
	size_t es = gc_dtype_size(t);
	int dev = gc_is_device(c, d);
	int inplace = s == d;
	if (c->size == 1)
		return copy(c, d, s, rn * es, dev);
	void *work = inplace ? d : gc_buf(c, GC_BUF_WORK, rn * es * (size_t)c->size, dev);
	if (!work || ring_blocks(c, 1, s, work, rn, t, op, dev) < 0)
		return -1;
	return inplace ? 0 : copy(c, d, (char *)work + (size_t)c->rank * rn * es, rn * es, dev);
}

static int native_allgather(gc_comm_t *c, const void *s, void *d, size_t sn, gc_dtype_t t)
{
	size_t es = gc_dtype_size(t);
	int dev = gc_is_device(c, d);
	char *mine = (char *)d + (size_t)c->rank * sn * es;
	if (s != d && copy(c, mine, s, sn * es, dev) < 0)
		return -1;
	if (c->size == 1)
		return 0;
	return ring_blocks(c, 0, d, d, sn, t, GC_SUM, dev);
}

/* Small: binomial tree. Large: a pipelined chain in rank order from the root. */
static int bcast_host(gc_comm_t *c, void *buf, size_t bytes, int root)
{
	int N = c->size, v = (c->rank - root + N) % N;
	if (bytes <= c->small) {
		int mask = 1;
		while (mask < N) {
			if (v & mask) {
				if (xfer(c, -1, NULL, 0, (v - mask + root) % N, buf, bytes) < 0)
					return -1;
				break;
			}
			mask <<= 1;
		}
		for (mask >>= 1; mask > 0; mask >>= 1)
			if (v + mask < N &&
			    xfer(c, (v + mask + root) % N, buf, bytes, -1, NULL, 0) < 0)
				return -1;
		return 0;
	}
	int prev = (c->rank - 1 + N) % N, next = (c->rank + 1) % N;
	int has_next = (v + 1) < N;
	size_t C = c->chunk ? c->chunk : c->chunk_default;
	int K = (int)((bytes + C - 1) / C), W = c->window;
	gc_tpreq_t *rr = calloc((size_t)W, sizeof(*rr)), *sr = calloc((size_t)W, sizeof(*sr));
	if (!rr || !sr) {
		free(rr);
		free(sr);
		return gc_fail(c, ENOMEM, "out of memory");
	}
	int rpost = v == 0 ? K : 0, rdone = v == 0 ? K : 0, spost = 0, sdone = 0, rc = 0;
	while ((has_next && sdone < K) || rdone < K) {
		int moved = 0;
		while (rpost < K && rpost < rdone + W) {
			size_t o = (size_t)rpost * C, l = bytes - o < C ? bytes - o : C;
			if (c->tpo->irecv(c->tp, prev, c->seq, (char *)buf + o, l, &rr[rpost % W]) <
			    0)
				goto broken;
			rpost++, moved++;
		}
		while (rdone < rpost && rr[rdone % W].done) {
			if (rr[rdone % W].err) {
				errno = rr[rdone % W].err;
				goto broken;
			}
			rdone++, moved++;
		}
		while (has_next && spost < rdone && spost < sdone + W) {
			size_t o = (size_t)spost * C, l = bytes - o < C ? bytes - o : C;
			if (c->tpo->isend(c->tp, next, c->seq, (char *)buf + o, l, &sr[spost % W]) <
			    0)
				goto broken;
			spost++, moved++;
		}
		while (sdone < spost && sr[sdone % W].done) {
			if (sr[sdone % W].err) {
				errno = sr[sdone % W].err;
				goto broken;
			}
			sdone++, moved++;
		}
		if (!moved && c->tpo->progress(c->tp, -1) < 0)
			goto broken;
	}
	free(rr);
	free(sr);
	return rc;
broken:
	free(rr);
	free(sr);
	return gc_break(c, "broadcast");
}

static int native_broadcast(gc_comm_t *c, void *buf, size_t n, gc_dtype_t t, int root)
{
	size_t bytes = n * gc_dtype_size(t);
	if (c->size == 1 || !bytes)
		return 0;
	if (!gc_is_device(c, buf))
		return bcast_host(c, buf, bytes, root);
	char *h = gc_buf(c, GC_BUF_STAGE, bytes, 0);
	if (!h)
		return -1;
	if (c->rank == root && gk_copy(c->gk, h, buf, bytes, GK_D2H) < 0)
		return kfail(c, c->gk, "copy off the card");
	if (bcast_host(c, h, bytes, root) < 0)
		return -1;
	if (c->rank != root && gk_copy(c->gk, buf, h, bytes, GK_H2D) < 0)
		return kfail(c, c->gk, "copy to the card");
	return 0;
}

static int native_barrier(gc_comm_t *c)
{
	int32_t one = 1, sum = 0;
	if (c->size == 1)
		return 0;
	if (rhd(c, &one, &sum, 1, GC_I32, GC_SUM) < 0)
		return -1;
	if (sum != c->size)
		return gc_fail(c, EPROTO, "barrier: %d ranks arrived, %d expected", sum, c->size);
	return 0;
}

const gc_coll_ops_t gc_coll_native = {
    .name = "native",
    .allreduce = native_allreduce,
    .reduce_scatter = native_reduce_scatter,
    .allgather = native_allgather,
    .broadcast = native_broadcast,
    .barrier = native_barrier,
    .destroy = NULL,
};
