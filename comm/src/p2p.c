/* p2p.c - point-to-point sends and receives between two ranks (gcomm.h), for pipelines whose
 * stages pass activations along instead of reducing them.
 *
 * A request is posted on the transport at once and progressed by whoever waits or tests it,
 * in the caller's thread: a pipeline stage keeps a receive from its left and a send to its
 * right in flight together, so two stages sending to each other cannot deadlock on full
 * socket buffers. The tags live above the collectives' (which count up from 0 with c->seq),
 * so a point-to-point message mistaken for a collective's is caught as EPROTO, not summed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/src/comm_int.h"

#define P2P_TAG_BIT 0x80000000u

static int kfail(gc_comm_t *c, const char *what)
{
	return gc_fail(c, errno ? errno : EIO, "%s: %s", what, gk_backend_error(c->gk));
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Why C cannot take a point-to-point request now: 0 if it can. */
static int refuse(gc_comm_t *c, int peer, uint32_t tag, const void *buf, size_t len)
{
	if (!c)
		return errno = EINVAL, -1;
	if (!c->tpo)
		return gc_fail(c, ENOTSUP, "point-to-point needs the tcp or ucx transport, not %s",
			       c->coll ? c->coll->name : "this one");
	if (peer < 0 || peer >= c->size || peer == c->rank)
		return gc_fail(c, EINVAL, "point-to-point: peer %d is not another rank of %d", peer,
			       c->size);
	if (tag > GC_TAG_MAX)
		return gc_fail(c, EINVAL, "point-to-point: tag %u is above %u", tag, GC_TAG_MAX);
	if (len && !buf)
		return gc_fail(c, EINVAL, "point-to-point: the buffer is NULL");
	if (c->broken)
		return gc_fail(c, EPIPE, "the communicator is broken by an earlier failure: %.200s",
			       c->err);
	pthread_mutex_lock(&c->mu);
	int busy = c->head || c->running;
	pthread_mutex_unlock(&c->mu);
	if (busy)
		return gc_fail(c, EBUSY, "point-to-point while a non-blocking collective runs");
	return 0;
}

static void req_free(gc_req_t *q)
{
	if (q->stage)
		gk_host_free(q->c->gk, q->stage);
	free(q);
}

/* Post a send (SEND) or a receive of BUF; a device buffer goes through q->stage. */
static int post(gc_comm_t *c, int send, int peer, uint32_t tag, const void *buf, size_t len,
		size_t *lenp, gc_req_t **req)
{
	*req = NULL;
	if (refuse(c, peer, tag, buf, len) < 0)
		return -1;
	gc_req_t *q = calloc(1, sizeof(*q));
	if (!q)
		return gc_fail(c, ENOMEM, "out of memory");
	q->c = c;
	q->kind = send ? GC_REQ_SEND : GC_REQ_RECV;
	q->d = (void *)buf;
	q->n = len;
	q->lenp = lenp;
	const void *wire = buf;
	if (len && gc_is_device(c, buf)) {
		if (gk_host_alloc(c->gk, len, &q->stage) < 0) {
			free(q);
			return gc_fail(c, ENOMEM, "cannot allocate %zu bytes of pinned memory",
				       len);
		}
		if (send && gk_copy(c->gk, q->stage, buf, len, GK_D2H) < 0) {
			kfail(c, "copy off the card");
			req_free(q);
			return -1;
		}
		wire = q->stage;
	}
	uint32_t t = tag | P2P_TAG_BIT;
	int rc = send ? c->tpo->isend(c->tp, peer, t, wire, len, &q->tr)
		      : c->tpo->irecv(c->tp, peer, t, (void *)wire, len, &q->tr);
	if (rc < 0) {
		int e = errno;
		req_free(q);
		errno = e;
		return gc_break(c, send ? "send" : "receive");
	}
	*req = q;
	return 0;
}

int gc_isend(gc_comm_t *c, int peer, uint32_t tag, const void *buf, size_t len, gc_req_t **req)
{
	if (!req)
		return errno = EINVAL, -1;
	return post(c, 1, peer, tag, buf, len, NULL, req);
}

int gc_irecv(gc_comm_t *c, int peer, uint32_t tag, void *buf, size_t cap, size_t *len,
	     gc_req_t **req)
{
	if (!req)
		return errno = EINVAL, -1;
	return post(c, 0, peer, tag, buf, cap, len, req);
}

/* Q's transfer is done: its result (the staged bytes copied to the card), and Q freed. */
static int collect(gc_req_t **qp)
{
	gc_req_t *q = *qp;
	gc_comm_t *c = q->c;
	int rc = 0, e = 0;
	if (q->tr.err) {
		errno = q->tr.err;
		rc = gc_break(c, q->kind == GC_REQ_SEND ? "send" : "receive");
		e = errno;
	} else if (q->kind == GC_REQ_RECV) {
		if (q->stage && q->tr.len && gk_copy(c->gk, q->d, q->stage, q->tr.len, GK_H2D) < 0)
			rc = kfail(c, "copy to the card"), e = errno;
		if (q->lenp)
			*q->lenp = q->tr.len;
	}
	req_free(q);
	*qp = NULL;
	errno = e;
	return rc;
}

int gc_p2p_wait(gc_req_t **qp, int timeout_ms)
{
	gc_req_t *q = *qp;
	gc_comm_t *c = q->c;
	long long end = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	while (!q->tr.done) {
		int left = -1;
		if (end >= 0) {
			long long l = end - now_ms();
			if (l <= 0)
				return 0;
			left = (int)l;
		}
		if (c->broken) /* the transport is closed: nothing will finish Q */
			return gc_fail(c, EPIPE, "%s", c->err);
		if (c->tpo->progress(c->tp, left) < 0 && !q->tr.done)
			return gc_break(c, q->kind == GC_REQ_SEND ? "send" : "receive");
	}
	return collect(qp) < 0 ? -1 : 1;
}

int gc_p2p_test(gc_req_t *q, int *done)
{
	if (!q->tr.done && !q->c->broken)
		q->c->tpo->progress(q->c->tp, 0); /* a failure shows in q->tr.err */
	*done = q->tr.done || q->c->broken;
	return 0;
}

int gc_send(gc_comm_t *c, int peer, uint32_t tag, const void *buf, size_t len)
{
	gc_req_t *q;
	if (post(c, 1, peer, tag, buf, len, NULL, &q) < 0)
		return -1;
	return gc_p2p_wait(&q, -1) < 0 ? -1 : 0;
}

int gc_recv(gc_comm_t *c, int peer, uint32_t tag, void *buf, size_t cap, size_t *len)
{
	gc_req_t *q;
	if (post(c, 0, peer, tag, buf, cap, len, &q) < 0)
		return -1;
	return gc_p2p_wait(&q, -1) < 0 ? -1 : 0;
}
