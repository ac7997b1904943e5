/* tp_tcp_base.c - what the files of the TCP transport share, under them all (tp_tcp_int.h):
 * a failure told, a request completed, the transport or one peer broken, the request queues, a
 * frame header checked against its receive, and a peer's published address read back. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "comm/src/tp_tcp_int.h"

int gc_tcp_fail(gc_tp_t *t, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

void gc_tcp_complete(gc_tpreq_t *r, int err)
{
	r->err = err;
	r->done = 1;
}

/* Fail every request on every peer and close the connections. */
void gc_tcp_breakdown(gc_tp_t *t, int e)
{
	if (!t->broken) {
		t->broken = 1;
		t->broken_err = e;
	}
	for (int i = 0; i < t->p.size; i++) {
		struct peer *pe = &t->peers[i];
		for (gc_tpreq_t *r = pe->sq; r; r = r->next)
			gc_tcp_complete(r, t->broken_err);
		for (gc_tpreq_t *r = pe->rq; r; r = r->next)
			gc_tcp_complete(r, t->broken_err);
		for (gc_tpreq_t *r = pe->aq; r; r = r->next)
			gc_tcp_complete(r, t->broken_err);
		pe->sq = pe->sq_tail = pe->rq = pe->rq_tail = pe->aq = pe->aq_tail = NULL;
		if (pe->fd >= 0) {
			close(pe->fd);
			pe->fd = -1;
		}
	}
}

int gc_tcp_peer_fail(gc_tp_t *t, int peer, int e, const char *what)
{
	gc_tcp_fail(t, e, "rank %d: %s rank %d: %s", t->p.rank, what, peer,
		    e == ECONNRESET ? "connection closed (the rank died or left)" : strerror(e));
	gc_tcp_breakdown(t, e);
	errno = e;
	return -1;
}

int gc_tcp_parse_blob(const void *blob, size_t len, char *addr, size_t alen, int *port, long *pid,
		      uint64_t *probe)
{
	char buf[GC_TP_BLOB_MAX + 1];
	if (len == 0 || len > GC_TP_BLOB_MAX)
		return -1;
	memcpy(buf, blob, len);
	buf[len] = 0;
	char a[64];
	*pid = 0;
	*probe = 0;
	if (sscanf(buf, "tcp %63s %d %ld %" SCNu64, a, port, pid, probe) < 2 || *port <= 0 ||
	    *port > 65535)
		return -1;
	snprintf(addr, alen, "%s", a);
	return 0;
}

void gc_tcp_enqueue(gc_tpreq_t **h, gc_tpreq_t **tl, gc_tpreq_t *r)
{
	r->next = NULL;
	if (*tl)
		(*tl)->next = r;
	else
		*h = r;
	*tl = r;
}

void gc_tcp_pop(gc_tpreq_t **h, gc_tpreq_t **tl)
{
	*h = (*h)->next;
	if (!*h)
		*tl = NULL;
}

/* Check the header just read against the receive at the head. */
int gc_tcp_header_ok(gc_tp_t *t, int j, gc_tpreq_t *r)
{
	struct peer *pe = &t->peers[j];
	uint32_t want =
	    pe->local ? pe->rh.magic == FRAME_PULL ? FRAME_PULL : FRAME_EAGER : FRAME_DATA;
	if (pe->rh.magic != want || pe->rh.tag != r->tag) {
		gc_tcp_fail(
		    t, EPROTO,
		    "rank %d: message from rank %d out of order (tag %u, expected %u): ranks "
		    "called different collectives",
		    t->p.rank, j, pe->rh.tag, r->tag);
		gc_tcp_breakdown(t, EPROTO);
		return -1;
	}
	if (pe->rh.len > r->size) {
		gc_tcp_fail(t, EMSGSIZE,
			    "rank %d: message from rank %d of %" PRIu64
			    " bytes, %zu expected: ranks "
			    "passed different counts",
			    t->p.rank, j, pe->rh.len, r->size);
		gc_tcp_breakdown(t, EMSGSIZE);
		return -1;
	}
	r->len = pe->rh.len;
	return 0;
}
