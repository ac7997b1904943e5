/* tp_tcp_local.c - the tcp transport between ranks on one host.
 *
 * Ranks on one host (same host name, and each can read the other's memory: checked at
 * connect) do not push payloads through the socket: a message up to EAGER_MAX travels
 * inline, a larger one as a PULL frame with its address, which the receiver copies
 * straight out of the sender's memory (process_vm_readv: one copy instead of two and no
 * TCP stack) and acknowledges with an ACK frame; the send completes on the ACK. Such a
 * peer's socket is read whenever it is readable: frames that come before their receive
 * wait in a FIFO, so an ACK is never stuck behind them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "comm/src/sock.h"
#include "comm/src/tp_tcp_int.h"

/* Same-host peers: can each of us read the other's memory (same user, no ptrace
 * restriction, same pid namespace)? Each reads the other's probe, then they swap the
 * answers; a pair is local only when both can. */
int gc_tcp_local_pairs(gc_tp_t *t, const void *const *blobs, const size_t *lens, const int *host_of,
		       int64_t deadline)
{
	int me = t->p.rank;
	if (!host_of || !t->p.local_pull)
		return 0;
	uint8_t *can = calloc((size_t)t->p.size, 1);
	if (!can)
		return gc_tcp_fail(t, ENOMEM, "out of memory");
	int rc = 0;
	for (int j = 0; j < t->p.size; j++) {
		if (j == me || host_of[j] != host_of[me])
			continue;
		char a[64];
		int port;
		long pid;
		uint64_t probe, expect[2] = {t->probe[0], (uint64_t)j};
		if (gc_tcp_parse_blob(blobs[j], lens[j], a, sizeof(a), &port, &pid, &probe) == 0 &&
		    pid > 0 && gc_cma_check((pid_t)pid, probe, expect, sizeof(expect))) {
			can[j] = 1;
			t->peers[j].pid = (pid_t)pid;
		}
		if (gc_sock_send_all(t->peers[j].fd, &can[j], 1, deadline) < 0) {
			rc = gc_tcp_fail(t, errno, "tcp: rank %d: %s", j, strerror(errno));
			break;
		}
	}
	for (int j = 0; rc == 0 && j < t->p.size; j++) {
		if (j == me || host_of[j] != host_of[me])
			continue;
		uint8_t theirs = 0;
		if (gc_sock_recv_all(t->peers[j].fd, &theirs, 1, deadline) < 0) {
			rc = gc_tcp_fail(t, errno, "tcp: rank %d: %s", j, strerror(errno));
			break;
		}
		t->peers[j].local = can[j] && theirs == 1;
	}
	free(can);
	return rc;
}

/* Hand frame H (payload P when eager) from same-host peer J to its receive R. */
static int deliver(gc_tp_t *t, int j, gc_tpreq_t *r, const struct frame *h, const void *p)
{
	struct peer *pe = &t->peers[j];
	pe->rh = *h;
	if (gc_tcp_header_ok(t, j, r) < 0)
		return -1;
	if (h->magic == FRAME_PULL) {
		if (r->len && gc_cma_pull(pe->pid, r->buf, h->addr, r->len) < 0)
			return gc_tcp_peer_fail(t, j, errno == ESRCH ? ECONNRESET : errno,
						"copying from");
		pe->acks_owed++;
	} else if (r->len) {
		memcpy(r->buf, p, r->len);
	}
	gc_tcp_pop(&pe->rq, &pe->rq_tail);
	gc_tcp_complete(r, 0);
	return 1;
}

static int proto(gc_tp_t *t, int j, const char *what)
{
	gc_tcp_fail(t, EPROTO, "rank %d: %s from rank %d", t->p.rank, what, j);
	gc_tcp_breakdown(t, EPROTO);
	return -1;
}

/* A same-host peer: read every frame there is. ACKs complete sends; the others go to the
 * posted receives in order, or wait in the FIFO until theirs is posted. */
int gc_tcp_drive_recv_local(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int done = 0;
	for (;;) {
		size_t avail;
		char *e;
		while (pe->rq && (e = gc_fifo_head(&pe->early, &avail))) {
			struct frame h;
			memcpy(&h, e, sizeof(h));
			int c = deliver(t, j, pe->rq, &h, e + sizeof(h));
			if (c < 0)
				return -1;
			gc_fifo_drop(&pe->early, sizeof(h) + (h.magic == FRAME_EAGER ? h.len : 0));
			done += c;
		}
		while (pe->ib_hi - pe->ib_lo >= sizeof(struct frame)) {
			struct frame h;
			memcpy(&h, pe->ib + pe->ib_lo, sizeof(h));
			size_t pl = 0;
			if (h.magic == FRAME_EAGER) {
				if (h.len > EAGER_MAX)
					return proto(t, j, "an oversized inline message");
				pl = h.len;
			} else if (h.magic != FRAME_PULL && h.magic != FRAME_ACK) {
				return proto(t, j, "a malformed frame");
			}
			if (pe->ib_hi - pe->ib_lo < sizeof(h) + pl)
				break; /* the rest of its payload is still to come */
			const char *payload = pe->ib + pe->ib_lo + sizeof(h);
			if (h.magic == FRAME_ACK) {
				for (uint64_t k = 0; k < h.len; k++) {
					if (!pe->aq)
						return proto(t, j, "an acknowledgement of nothing");
					gc_tpreq_t *r = pe->aq;
					gc_tcp_pop(&pe->aq, &pe->aq_tail);
					gc_tcp_complete(r, 0);
					done++;
				}
			} else if (pe->rq && !gc_fifo_head(&pe->early, &avail)) {
				int c = deliver(t, j, pe->rq, &h, payload);
				if (c < 0)
					return -1;
				done += c;
			} else if (gc_fifo_push(&pe->early, &h, sizeof(h), payload, pl) < 0) {
				return gc_tcp_peer_fail(t, j, ENOMEM, "keeping a message from");
			}
			pe->ib_lo += sizeof(h) + pl;
		}
		if (pe->ib_lo) { /* keep a partial frame at the front */
			memmove(pe->ib, pe->ib + pe->ib_lo, pe->ib_hi - pe->ib_lo);
			pe->ib_hi -= pe->ib_lo;
			pe->ib_lo = 0;
		}
		if (pe->closed) { /* it left earlier: what it sent is all there will be */
			if (pe->rq || pe->aq)
				return gc_tcp_peer_fail(t, j, ECONNRESET, "receiving from");
			break;
		}
		ssize_t n = recv(pe->fd, pe->ib + pe->ib_hi, pe->ib_cap - pe->ib_hi, MSG_DONTWAIT);
		if (n > 0) {
			pe->ib_hi += (size_t)n;
			continue;
		}
		if (n == 0) {
			if (pe->rq || pe->aq)
				return gc_tcp_peer_fail(t, j, ECONNRESET, "receiving from");
			pe->closed = 1; /* it finished: nothing of ours depends on it */
			break;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		return gc_tcp_peer_fail(t, j, errno, "receiving from");
	}
	return done;
}
