/* ring.c - the ring: reduce-scatter then allgather around the members, each message cut
 * into chunks and pipelined so that the reduction of chunk k overlaps the transfer of
 * chunk k+1.
 *
 * Segment k of the buffer travels the ring; in reduce-scatter step s a member sends
 * segment (me+shift-s) to the right and reduces segment (me+shift-s-1) arriving from the
 * left into its own; after n-1 steps it owns segment (me+shift+1) fully reduced, and the
 * allgather steps pass the owned segments on. Messages between two neighbours are in
 * order, so both sides agree on every chunk without headers of our own.
 *
 * Device buffers: the transfers go through a pinned host mirror H of the buffer. A chunk
 * arriving in reduce-scatter is copied to the card, reduced there into the result and
 * copied back into H, from where it is sent on; all on one stream, an event per chunk.
 * In allgather a chunk lands in H, is sent on from H and copied to the card.
 * Wire compression (f32 sums as f16/bf16): H holds the wire type; chunks are cast on the
 * way out and back, the reduction stays in f32; the owner rounds its own segment too so
 * every rank ends with the same bits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm/src/comm_int.h"
#include "comm/src/ring.h"

struct ring {
	gc_comm_t *c;
	const gc_ring_args_t *a;
	gk_backend_t *k; /* where the reductions run */
	int n, me, left, right;
	size_t es, ws;	      /* element size of the data / on the wire */
	gc_dtype_t wt;	      /* wire type */
	int wire;	      /* wt != t */
	int mirror;	      /* sends and allgather receives go through H */
	size_t C;	      /* chunk, elements */
	int W;		      /* chunks in flight */
	int G;		      /* global steps */
	int *sstart, *rstart; /* first message index of each step, sends / receives */
	int S, R;	      /* messages sent, received */
	char *H;	      /* host mirror (wire type) */
	char *DH;	      /* device mirror (wire type; dev && wire) */
	char *rslot;	      /* W host chunks (wire type) for reduce-scatter receives */
	char *tmp;	      /* host: W chunks of the data type (wire -> data casts) */
	char *dtmp;	      /* device: W chunks of wire + W of data type */
	gc_tpreq_t *sreq, *rreq;
	gk_event_t **ev, **ev0;
	uint32_t tag;
	/* progress */
	int spost, sdone;	      /* sends posted, completed */
	int rpost, issued, processed; /* receives posted, processing queued, done */
	int prep0;		      /* sends of step 0 prepared (mirror) */
	int rc;
};

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

static int is_rs(const struct ring *r, int g)
{
	return r->a->do_rs && g < r->n - 1;
}

static int step_of(const struct ring *r, int g)
{
	return r->a->do_rs && g >= r->n - 1 ? g - (r->n - 1) : g;
}

static int send_seg(const struct ring *r, int g)
{
	int s = step_of(r, g);
	return is_rs(r, g) ? mod(r->me + r->a->shift - s, r->n)
			   : mod(r->me + r->a->shift + 1 - s, r->n);
}

static int recv_seg(const struct ring *r, int g)
{
	int s = step_of(r, g);
	return is_rs(r, g) ? mod(r->me + r->a->shift - s - 1, r->n)
			   : mod(r->me + r->a->shift - s, r->n);
}

static int nchunks(const struct ring *r, int seg)
{
	return (int)((r->a->len[seg] + r->C - 1) / r->C);
}

/* Message M (send or receive list) -> step and chunk; start is sstart or rstart. */
static void locate(const struct ring *r, const int *start, int m, int *g, int *j)
{
	int lo = 0, hi = r->G - 1;
	while (lo < hi) { /* last step whose start <= m */
		int mid = (lo + hi + 1) / 2;
		if (start[mid] <= m)
			lo = mid;
		else
			hi = mid - 1;
	}
	*g = lo;
	*j = m - start[lo];
}

/* Element range of chunk J of segment SEG. */
static void chunk_range(const struct ring *r, int seg, int j, size_t *off, size_t *cnt)
{
	size_t o = (size_t)j * r->C;
	*off = r->a->off[seg] + o;
	*cnt = r->a->len[seg] - o < r->C ? r->a->len[seg] - o : r->C;
}

static int kfail(struct ring *r, const char *what)
{
	return gc_fail(r->c, errno ? errno : EIO, "%s: %s", what, gk_backend_error(r->k));
}

/* AVG: scale CNT elements at P (on the card when dev) by 1/nranks. */
static int scale(struct ring *r, void *p, size_t cnt)
{
	const gc_ring_args_t *a = r->a;
	if (a->scale_by <= 1)
		return 0;
	if (a->t != GC_I32) {
		if (gk_scale(r->k, (gk_dtype_t)a->t, p, p, 1.0 / a->scale_by, cnt, r->c->stream) <
		    0)
			return kfail(r, "scale");
		return 0;
	}
	int32_t *h = p;
	if (a->dev) { /* no integer division kernel: do the (rare) i32 average on the host */
		h = (int32_t *)(void *)r->tmp;
		if (gk_stream_sync(r->k, r->c->stream) < 0 ||
		    gk_copy(r->k, h, p, cnt * 4, GK_D2H) < 0)
			return kfail(r, "copy");
	}
	for (size_t i = 0; i < cnt; i++)
		h[i] = h[i] / a->scale_by;
	if (a->dev && gk_copy(r->k, p, h, cnt * 4, GK_H2D) < 0)
		return kfail(r, "copy");
	return 0;
}

static char *at(const struct ring *r, const void *base, size_t off, size_t es)
{
	return (char *)base + off * es;
}

/* Prepare send (0, j) from the local data: into H (cast / copy off the card). */
static int prep_send0(struct ring *r, int j)
{
	const gc_ring_args_t *a = r->a;
	int seg = send_seg(r, 0);
	size_t off, cnt;
	chunk_range(r, seg, j, &off, &cnt);
	const void *src = at(r, a->do_rs ? a->src : a->dst, off, r->es);
	char *h = at(r, r->H, off, r->ws);
	if (!a->dev) { /* host with wire compression */
		if (gk_cast(r->k, (gk_dtype_t)r->wt, h, (gk_dtype_t)a->t, src, cnt, NULL) < 0)
			return kfail(r, "cast");
		return 0;
	}
	gk_stream_t *s = r->c->stream;
	if (r->wire) {
		char *dh = at(r, r->DH, off, r->ws);
		if (gk_cast(r->k, (gk_dtype_t)r->wt, dh, (gk_dtype_t)a->t, src, cnt, s) < 0 ||
		    gk_copy_async(r->k, h, dh, cnt * r->ws, GK_D2H, s) < 0)
			return kfail(r, "stage out");
	} else if (gk_copy_async(r->k, h, src, cnt * r->es, GK_D2H, s) < 0) {
		return kfail(r, "stage out");
	}
	if (gk_event_record(r->k, r->ev0[j % r->W], s) < 0)
		return kfail(r, "event");
	return 0;
}

/* Where send M comes from. */
static const void *send_src(const struct ring *r, int g, int j, size_t *bytes)
{
	int seg = send_seg(r, g);
	size_t off, cnt;
	chunk_range(r, seg, j, &off, &cnt);
	if (r->mirror) {
		*bytes = cnt * r->ws;
		return at(r, r->H, off, r->ws);
	}
	*bytes = cnt * r->es;
	if (g == 0 && r->a->do_rs)
		return at(r, r->a->src, off, r->es);
	return at(r, r->a->dst, off, r->es);
}

/* Where receive M goes. */
static void *recv_dst(const struct ring *r, int m, int g, int j, size_t *bytes)
{
	int seg = recv_seg(r, g);
	size_t off, cnt;
	chunk_range(r, seg, j, &off, &cnt);
	*bytes = cnt * r->ws;
	if (is_rs(r, g))
		return r->rslot + (size_t)(m % r->W) * r->C * r->ws;
	if (r->mirror)
		return at(r, r->H, off, r->ws);
	return at(r, r->a->dst, off, r->es);
}

/* Receive M arrived: reduce it in (reduce-scatter) or put it in place (allgather).
 * Host work is done when this returns; device work is queued, with ev[m % W] after it. */
static int process(struct ring *r, int m)
{
	const gc_ring_args_t *a = r->a;
	int g, j;
	locate(r, r->rstart, m, &g, &j);
	int seg = recv_seg(r, g);
	size_t off, cnt;
	chunk_range(r, seg, j, &off, &cnt);
	char *dst = at(r, a->dst, off, r->es);
	const char *src = at(r, a->src, off, r->es);
	char *h = r->mirror ? at(r, r->H, off, r->ws) : NULL;
	gk_stream_t *s = a->dev ? r->c->stream : NULL;
	int last_rs = is_rs(r, g) && step_of(r, g) == r->n - 2;
	int slot = m % r->W;
	if (is_rs(r, g)) {
		const char *in = r->rslot + (size_t)slot * r->C * r->ws;
		if (a->dev) {
			char *dw = r->dtmp + (size_t)slot * r->C * r->ws;
			if (gk_copy_async(r->k, dw, in, cnt * r->ws, GK_H2D, s) < 0)
				return kfail(r, "stage in");
			in = dw;
		}
		if (r->wire) {
			char *d32 = (a->dev ? r->dtmp + (size_t)r->W * r->C * r->ws : r->tmp) +
				    (size_t)slot * r->C * r->es;
			if (gk_cast(r->k, (gk_dtype_t)a->t, d32, (gk_dtype_t)r->wt, in, cnt, s) < 0)
				return kfail(r, "cast");
			in = d32;
		}
		const void *srcs[2] = {src, in};
		if (gk_reduce(r->k, (gk_dtype_t)a->t, (gk_redop_t)a->op, dst, srcs, 2, cnt, s) < 0)
			return kfail(r, "reduce");
		if (last_rs && scale(r, dst, cnt) < 0)
			return -1;
		if (r->mirror && (!last_rs || a->do_ag)) {
			/* what goes on to the right comes from H */
			if (r->wire) {
				char *wdst = a->dev ? at(r, r->DH, off, r->ws) : h;
				if (gk_cast(r->k, (gk_dtype_t)r->wt, wdst, (gk_dtype_t)a->t, dst,
					    cnt, s) < 0)
					return kfail(r, "cast");
				/* the owner keeps the rounded value, as everyone else will */
				if (last_rs && gk_cast(r->k, (gk_dtype_t)a->t, dst,
						       (gk_dtype_t)r->wt, wdst, cnt, s) < 0)
					return kfail(r, "cast");
				if (a->dev &&
				    gk_copy_async(r->k, h, wdst, cnt * r->ws, GK_D2H, s) < 0)
					return kfail(r, "stage out");
			} else if (gk_copy_async(r->k, h, dst, cnt * r->es, GK_D2H, s) < 0) {
				return kfail(r, "stage out");
			}
		}
	} else if (r->mirror) { /* allgather: H -> result */
		if (a->dev) {
			if (r->wire) {
				char *dh = at(r, r->DH, off, r->ws);
				if (gk_copy_async(r->k, dh, h, cnt * r->ws, GK_H2D, s) < 0 ||
				    gk_cast(r->k, (gk_dtype_t)a->t, dst, (gk_dtype_t)r->wt, dh, cnt,
					    s) < 0)
					return kfail(r, "stage in");
			} else if (gk_copy_async(r->k, dst, h, cnt * r->es, GK_H2D, s) < 0) {
				return kfail(r, "stage in");
			}
		} else if (gk_cast(r->k, (gk_dtype_t)a->t, dst, (gk_dtype_t)r->wt, h, cnt, NULL) <
			   0) {
			return kfail(r, "cast");
		}
	}
	if (a->dev && gk_event_record(r->k, r->ev[slot], s) < 0)
		return kfail(r, "event");
	return 0;
}

static void ring_free(struct ring *r)
{
	free(r->sstart);
	free(r->rstart);
	free(r->sreq);
	free(r->rreq);
	if (r->ev)
		for (int i = 0; i < r->W; i++)
			if (r->ev[i])
				gk_event_destroy(r->k, &r->ev[i]);
	if (r->ev0)
		for (int i = 0; i < r->W; i++)
			if (r->ev0[i])
				gk_event_destroy(r->k, &r->ev0[i]);
	free(r->ev);
	free(r->ev0);
}

static int setup(struct ring *r, gc_comm_t *c, const gc_ring_args_t *a, int which)
{
	memset(r, 0, sizeof(*r));
	r->c = c;
	r->a = a;
	r->n = a->n;
	r->me = a->me;
	r->left = a->members[mod(a->me - 1, a->n)];
	r->right = a->members[mod(a->me + 1, a->n)];
	r->k = a->dev ? c->gk : c->cpu;
	r->es = gc_dtype_size(a->t);
	r->wt = a->wire;
	r->wire = a->wire != a->t;
	r->ws = gc_dtype_size(r->wt);
	r->mirror = a->dev || r->wire;
	/* the same on every rank (it shapes the messages): a communicator with a card anywhere
	 * uses 1 MiB, as a device chunk pays a copy each way and a kernel (measured on the H200:
	 * 256 KiB 0.8 GB/s, 1 MiB 2.1 GB/s busbw, 4 ranks) */
	size_t chunk = c->chunk ? c->chunk : c->chunk_default;
	r->C = chunk / r->es ? chunk / r->es : 1;
	r->W = c->window > 0 ? c->window : 1;
	r->G = (a->do_rs ? r->n - 1 : 0) + (a->do_ag ? r->n - 1 : 0);
	r->tag = a->tag;
	r->sstart = calloc((size_t)r->G + 1, sizeof(int));
	r->rstart = calloc((size_t)r->G + 1, sizeof(int));
	r->sreq = calloc((size_t)r->W, sizeof(gc_tpreq_t));
	r->rreq = calloc((size_t)r->W, sizeof(gc_tpreq_t));
	if (!r->sstart || !r->rstart || !r->sreq || !r->rreq)
		return gc_fail(c, ENOMEM, "out of memory");
	for (int g = 0; g < r->G; g++) {
		r->sstart[g + 1] = r->sstart[g] + nchunks(r, send_seg(r, g));
		r->rstart[g + 1] = r->rstart[g] + nchunks(r, recv_seg(r, g));
	}
	r->S = r->sstart[r->G];
	r->R = r->rstart[r->G];
	size_t total = 0;
	for (int k = 0; k < r->n; k++)
		if (a->off[k] + a->len[k] > total)
			total = a->off[k] + a->len[k];
	size_t slot_bytes = (size_t)r->W * r->C * r->ws;
	size_t tmp_bytes = (size_t)r->W * r->C * r->es;
	/* host scratch: [H][rslot][tmp] */
	size_t hb = (r->mirror ? total * r->ws : 0) + slot_bytes + tmp_bytes + 3 * 64;
	char *hs = gc_buf(c, GC_BUF_RING + which, hb, 0);
	if (!hs)
		return -1;
	size_t o = 0;
	if (r->mirror) {
		r->H = hs;
		o = (total * r->ws + 63) & ~(size_t)63;
	}
	r->rslot = hs + o;
	o += (slot_bytes + 63) & ~(size_t)63;
	r->tmp = hs + o;
	if (a->dev) {
		size_t db = slot_bytes + tmp_bytes + (r->wire ? total * r->ws : 0) + 3 * 64;
		char *ds = gc_buf(c, GC_BUF_RING + which, db, 1);
		if (!ds)
			return -1;
		r->dtmp = ds;
		if (r->wire)
			r->DH = ds + ((slot_bytes + tmp_bytes + 63) & ~(size_t)63);
		r->ev = calloc((size_t)r->W, sizeof(*r->ev));
		r->ev0 = calloc((size_t)r->W, sizeof(*r->ev0));
		if (!r->ev || !r->ev0)
			return gc_fail(c, ENOMEM, "out of memory");
		for (int i = 0; i < r->W; i++)
			if (gk_event_create(r->k, &r->ev[i]) < 0 ||
			    gk_event_create(r->k, &r->ev0[i]) < 0)
				return kfail(r, "event");
	}
	return 0;
}

/* One pass of a ring's state machine: post what can be posted, take what arrived.
 * Returns the number of things that moved, or -1 (the ring then ends: r->rc). */
static int poll_ring(struct ring *r)
{
	gc_comm_t *c = r->c;
	const gc_ring_args_t *a = r->a;
	const gc_tp_ops_t *tp = c->tpo;
	int W = r->W, moved = 0;
	/* receives: at most W ahead of the processing */
	while (r->rpost < r->R && r->rpost < r->processed + W) {
		int g, j;
		size_t bytes;
		locate(r, r->rstart, r->rpost, &g, &j);
		void *d = recv_dst(r, r->rpost, g, j, &bytes);
		if (tp->irecv(c->tp, r->left, r->tag, d, bytes, &r->rreq[r->rpost % W]) < 0)
			return r->rc = gc_break(c, "ring");
		r->rpost++;
		moved++;
	}
	/* device work finished, in order */
	while (a->dev && r->processed < r->issued) {
		int q = gk_event_query(r->k, r->ev[r->processed % W]);
		if (q < 0)
			return r->rc = kfail(r, "event");
		if (!q)
			break;
		r->processed++;
		moved++;
	}
	/* arrived receives, in order */
	while (r->issued < r->rpost && r->rreq[r->issued % W].done) {
		gc_tpreq_t *q = &r->rreq[r->issued % W];
		if (q->err) {
			errno = q->err;
			return r->rc = gc_break(c, "ring");
		}
		if (process(r, r->issued) < 0)
			return r->rc = -1;
		r->issued++;
		if (!a->dev)
			r->processed = r->issued;
		moved++;
	}
	/* stage the first step's sends */
	int K0 = r->G ? r->sstart[1] : 0;
	while (r->mirror && r->prep0 < K0 && r->prep0 < r->spost + W) {
		if (prep_send0(r, r->prep0) < 0)
			return r->rc = -1;
		r->prep0++;
	}
	/* sends, in order, once their data is ready */
	while (r->spost < r->S && r->spost < r->sdone + W) {
		int g, j;
		locate(r, r->sstart, r->spost, &g, &j);
		if (g == 0) {
			if (r->mirror && j >= r->prep0)
				break;
			if (a->dev) {
				int q = gk_event_query(r->k, r->ev0[j % W]);
				if (q < 0)
					return r->rc = kfail(r, "event");
				if (!q)
					break;
			}
		} else if (r->processed <= r->rstart[g - 1] + j) {
			break;
		}
		size_t bytes;
		const void *src = send_src(r, g, j, &bytes);
		if (tp->isend(c->tp, r->right, r->tag, src, bytes, &r->sreq[r->spost % W]) < 0)
			return r->rc = gc_break(c, "ring");
		r->spost++;
		moved++;
	}
	while (r->sdone < r->spost && r->sreq[r->sdone % W].done) {
		if (r->sreq[r->sdone % W].err) {
			errno = r->sreq[r->sdone % W].err;
			return r->rc = gc_break(c, "ring");
		}
		r->sdone++;
		moved++;
	}
	return moved;
}

static int ring_done(const struct ring *r)
{
	return r->sdone >= r->S && r->processed >= r->R;
}

/* Waiting on the card, not the network? Then the event to wait for. */
static gk_event_t *gpu_wait(const struct ring *r)
{
	if (!r->a->dev || ring_done(r))
		return NULL;
	if (r->processed < r->issued)
		return r->ev[r->processed % r->W];
	if (r->prep0 > 0 && r->spost < r->prep0)
		return r->ev0[r->spost % r->W];
	return NULL;
}

/* Run rings A[0..n) together (they must use different neighbours per direction). */
static int run_rings(gc_comm_t *c, const gc_ring_args_t *const *a, int n)
{
	struct ring r[2];
	int rc = 0, k;
	for (k = 0; k < n; k++)
		if (setup(&r[k], c, a[k], k) < 0) {
			for (int i = 0; i <= k; i++)
				ring_free(&r[i]);
			return -1;
		}
	for (;;) {
		int moved = 0, left = 0;
		for (k = 0; k < n; k++) {
			if (ring_done(&r[k]))
				continue;
			int m = poll_ring(&r[k]);
			if (m < 0) {
				rc = -1;
				goto out;
			}
			moved += m;
			left += !ring_done(&r[k]);
		}
		if (!left)
			break;
		if (moved)
			continue;
		gk_event_t *e = NULL;
		int kk = 0;
		for (k = 0; k < n && !e; k++)
			if ((e = gpu_wait(&r[k])))
				kk = k;
		int got = c->tpo->progress(c->tp, e ? 0 : -1);
		if (got < 0) {
			rc = gc_break(c, "ring");
			goto out;
		}
		if (got == 0 && e && gk_event_sync(r[kk].k, e) < 0) { /* wait for the card */
			rc = kfail(&r[kk], "event");
			goto out;
		}
	}
	for (k = 0; k < n; k++)
		if (a[k]->dev && gk_stream_sync(r[k].k, c->stream) < 0) {
			rc = kfail(&r[k], "stream");
			break;
		}
out:
	for (k = 0; k < n; k++)
		ring_free(&r[k]);
	return rc;
}

int gc_ring_run(gc_comm_t *c, const gc_ring_args_t *a)
{
	return run_rings(c, &a, 1);
}

/* Segment layout of COUNT elements from BASE over N members, balanced. */
static void balance(size_t *off, size_t *len, int n, size_t base_off, size_t count)
{
	size_t base = count / (size_t)n, rem = count % (size_t)n, o = base_off;
	for (int k = 0; k < n; k++) {
		off[k] = o;
		len[k] = base + ((size_t)k < rem);
		o += len[k];
	}
}

int gc_ring_allreduce_members(gc_comm_t *c, const int *members, int n, int me, const void *s,
			      void *d, size_t count, gc_dtype_t t, gc_op_t op, int scale_by,
			      int dev, int two)
{
	/* Two rings in opposite directions, each on half the buffer, use both directions of
	 * every link (gloo does the same). With two members left and right are one peer: one
	 * ring then. */
	two = two && n >= 3 && count >= (size_t)(4 * n);
	size_t *off = calloc((size_t)n * 2, sizeof(size_t)),
	       *len = calloc((size_t)n * 2, sizeof(size_t));
	int *rev = calloc((size_t)n, sizeof(int));
	if (!off || !len || !rev) {
		free(off);
		free(len);
		free(rev);
		return gc_fail(c, ENOMEM, "out of memory");
	}
	size_t half = two ? count / 2 : count;
	balance(off, len, n, 0, half);
	gc_dtype_t wire = t;
	if (t == GC_F32 && (op == GC_SUM || op == GC_AVG))
		wire = c->wire;
	gc_ring_args_t a[2] = {{
	    .members = members,
	    .n = n,
	    .me = me,
	    .shift = 0,
	    .do_rs = 1,
	    .do_ag = 1,
	    .off = off,
	    .len = len,
	    .t = t,
	    .op = op == GC_AVG ? GC_SUM : op,
	    .scale_by = op == GC_AVG ? scale_by : 0,
	    .src = s,
	    .dst = d,
	    .dev = dev,
	    .wire = wire,
	    .tag = c->seq,
	}};
	if (two) {
		for (int k = 0; k < n; k++)
			rev[k] = members[n - 1 - k];
		balance(off + n, len + n, n, half, count - half);
		a[1] = a[0];
		a[1].members = rev;
		a[1].me = n - 1 - me;
		a[1].off = off + n;
		a[1].len = len + n;
	}
	const gc_ring_args_t *pa[2] = {&a[0], &a[1]};
	int rc = run_rings(c, pa, two ? 2 : 1);
	free(off);
	free(len);
	free(rev);
	return rc;
}
