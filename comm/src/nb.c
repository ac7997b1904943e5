/* nb.c - the collectives' entry points, non-blocking operations, and the waits on any request
 * (a point-to-point one is p2p.c's).
 *
 * A non-blocking operation is queued to the communicator's worker thread, which runs the
 * queue in order (it blocks on the transport's events, never spins). A blocking call
 * made while operations are queued joins the queue, so every rank sees every
 * communicator's operations in the order they were called; with nothing queued it runs
 * in the caller's thread (no hand-off: the small-message latency stays the network's). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/src/comm_int.h"

enum { K_ALLREDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BROADCAST, K_BARRIER, K_COUNT };

static int do_allreduce(gc_comm_t *c, struct gc_req *q)
{
	return c->coll->allreduce(c, q->s, q->d, q->n, q->t, q->op);
}

static int do_reduce_scatter(gc_comm_t *c, struct gc_req *q)
{
	return c->coll->reduce_scatter(c, q->s, q->d, q->n, q->t, q->op);
}

static int do_allgather(gc_comm_t *c, struct gc_req *q)
{
	return c->coll->allgather(c, q->s, q->d, q->n, q->t);
}

static int do_broadcast(gc_comm_t *c, struct gc_req *q)
{
	return c->coll->broadcast(c, q->d, q->n, q->t, q->root);
}

static int do_barrier(gc_comm_t *c, struct gc_req *q)
{
	(void)q;
	return c->coll->barrier(c);
}

static int (*const runners[K_COUNT])(gc_comm_t *, struct gc_req *) = {
    [K_ALLREDUCE] = do_allreduce, [K_REDUCE_SCATTER] = do_reduce_scatter,
    [K_ALLGATHER] = do_allgather, [K_BROADCAST] = do_broadcast,
    [K_BARRIER] = do_barrier,
};

static const char *const kind_names[K_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "barrier",
};

static int run(gc_comm_t *c, struct gc_req *q)
{
	if (c->broken) {
		if (!strstr(c->err, "communicator is broken")) {
			char first[sizeof(c->err)];
			snprintf(first, sizeof(first), "%s", c->err);
			gc_fail(c, EPIPE,
				"the communicator is broken by an earlier failure: %.200s", first);
		}
		return errno = EPIPE, -1;
	}
	c->seq++;
	errno = 0;
	return runners[q->kind](c, q);
}

/* Run q as the one running request: called and returning with c->mu held, released while q
 * runs; *e is the errno it ended with. */
static int run_unlocked(gc_comm_t *c, struct gc_req *q, int *e)
{
	c->running = 1;
	pthread_mutex_unlock(&c->mu);
	int rc = run(c, q);
	*e = errno;
	pthread_mutex_lock(&c->mu);
	c->running = 0;
	return rc;
}

static void *worker(void *arg)
{
	gc_comm_t *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while ((!c->head || c->running) && !(c->stopping && !c->head))
			pthread_cond_wait(&c->cv, &c->mu);
		if (!c->head)
			break;
		struct gc_req *q = c->head;
		c->head = q->next;
		if (!c->head)
			c->tail = NULL;
		int e;
		int rc = run_unlocked(c, q, &e);
		q->rc = rc;
		q->err = rc < 0 ? e : 0;
		q->done = 1;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Run Q now (blocking) or queue it (non-blocking, or behind queued work). */
static int submit(gc_comm_t *c, struct gc_req *q, int blocking)
{
	pthread_mutex_lock(&c->mu);
	if (blocking && !c->head && !c->running) {
		int e;
		int rc = run_unlocked(c, q, &e);
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		errno = e;
		return rc;
	}
	if (!c->thread_up) {
		if (pthread_create(&c->thread, NULL, worker, c) != 0) {
			pthread_mutex_unlock(&c->mu);
			return gc_fail(c, EAGAIN, "cannot start the communicator's thread");
		}
		c->thread_up = 1;
	}
	q->next = NULL;
	if (c->tail)
		c->tail->next = q;
	else
		c->head = q;
	c->tail = q;
	pthread_cond_broadcast(&c->cv);
	if (blocking) {
		while (!q->done)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		errno = q->err;
		return q->rc;
	}
	pthread_mutex_unlock(&c->mu);
	return 0;
}

void gc_nb_stop(gc_comm_t *c)
{
	pthread_mutex_lock(&c->mu);
	c->stopping = 1;
	pthread_cond_broadcast(&c->cv);
	int up = c->thread_up;
	pthread_mutex_unlock(&c->mu);
	if (up)
		pthread_join(c->thread, NULL);
	c->thread_up = 0;
}

static int check(gc_comm_t *c, struct gc_req *q)
{
	if (!c)
		return errno = EINVAL, -1;
	if (q->kind != K_BARRIER && !gc_dtype_size(q->t))
		return gc_fail(c, EINVAL, "%s: unknown data type %d", kind_names[q->kind],
			       (int)q->t);
	if ((q->kind == K_ALLREDUCE || q->kind == K_REDUCE_SCATTER) &&
	    (q->op < GC_SUM || q->op > GC_AVG))
		return gc_fail(c, EINVAL, "%s: unknown operation %d", kind_names[q->kind],
			       (int)q->op);
	if (q->n && (!q->d || !q->s) && q->kind != K_BARRIER)
		return gc_fail(c, EINVAL, "%s: a buffer is NULL", kind_names[q->kind]);
	if (q->kind == K_BROADCAST && (q->root < 0 || q->root >= c->size))
		return gc_fail(c, EINVAL, "broadcast: root %d is not a rank of %d", q->root,
			       c->size);
	if (q->n > ((size_t)1 << 40))
		return gc_fail(c, EINVAL, "%s: %zu elements is too many", kind_names[q->kind],
			       q->n);
	return 0;
}

static int call(gc_comm_t *c, int kind, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op,
		int root)
{
	struct gc_req q = {.c = c,
			   .kind = kind,
			   .s = s == GC_IN_PLACE ? d : s,
			   .d = d,
			   .n = n,
			   .t = t,
			   .op = op,
			   .root = root};
	if (kind == K_BROADCAST)
		q.s = d;
	if (check(c, &q) < 0)
		return -1;
	if (n == 0 && kind != K_BARRIER)
		return 0;
	return submit(c, &q, 1);
}

int gc_allreduce(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op)
{
	return call(c, K_ALLREDUCE, s, d, n, t, op, 0);
}

int gc_reduce_scatter(gc_comm_t *c, const void *s, void *d, size_t rn, gc_dtype_t t, gc_op_t op)
{
	return call(c, K_REDUCE_SCATTER, s, d, rn, t, op, 0);
}

int gc_allgather(gc_comm_t *c, const void *s, void *d, size_t sn, gc_dtype_t t)
{
	return call(c, K_ALLGATHER, s, d, sn, t, GC_SUM, 0);
}

int gc_broadcast(gc_comm_t *c, void *buf, size_t n, gc_dtype_t t, int root)
{
	return call(c, K_BROADCAST, buf, buf, n, t, GC_SUM, root);
}

int gc_barrier(gc_comm_t *c)
{
	return call(c, K_BARRIER, NULL, NULL, 0, GC_I32, GC_SUM, 0);
}

int gc_iallreduce(gc_comm_t *c, const void *s, void *d, size_t n, gc_dtype_t t, gc_op_t op,
		  gc_req_t **req)
{
	if (!req)
		return errno = EINVAL, -1;
	*req = NULL;
	struct gc_req *q = calloc(1, sizeof(*q));
	if (!q)
		return gc_fail(c, ENOMEM, "out of memory");
	*q = (struct gc_req){.c = c,
			     .kind = K_ALLREDUCE,
			     .s = s == GC_IN_PLACE ? d : s,
			     .d = d,
			     .n = n,
			     .t = t,
			     .op = op};
	if (check(c, q) < 0) {
		free(q);
		return -1;
	}
	if (n == 0) {
		q->done = 1;
		*req = q;
		return 0;
	}
	if (submit(c, q, 0) < 0) {
		free(q);
		return -1;
	}
	*req = q;
	return 0;
}

int gc_wait(gc_req_t **req)
{
	if (!req || !*req)
		return errno = EINVAL, -1;
	struct gc_req *q = *req;
	if (q->kind >= GC_REQ_SEND)
		return gc_p2p_wait(req, -1) < 0 ? -1 : 0;
	gc_comm_t *c = q->c;
	pthread_mutex_lock(&c->mu);
	while (!q->done)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	int rc = q->rc, e = q->err;
	free(q);
	*req = NULL;
	errno = e;
	return rc;
}

int gc_test(gc_req_t *q, int *done)
{
	if (!q || !done)
		return errno = EINVAL, -1;
	if (q->kind >= GC_REQ_SEND)
		return gc_p2p_test(q, done);
	pthread_mutex_lock(&q->c->mu);
	*done = q->done;
	pthread_mutex_unlock(&q->c->mu);
	return 0;
}

int gc_wait_for(gc_req_t **req, int timeout_ms)
{
	if (!req || !*req)
		return errno = EINVAL, -1;
	if ((*req)->kind < GC_REQ_SEND)
		return gc_wait(req) < 0 ? -1 : 1; /* a collective: its thread has no timeout */
	return gc_p2p_wait(req, timeout_ms);
}
