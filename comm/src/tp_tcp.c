/* tp_tcp.c - gpool's own TCP transport: one connection per pair of ranks, frames of
 * {tag, length, payload}, epoll to wait.
 *
 * Receiving: a peer's socket is read only while a receive from it is posted. Headers and
 * small payloads come through a small per-peer inbound buffer (one recv() takes a header
 * and its payload, or several small frames at once); the bulk of a large payload is read
 * straight into the posted buffer. A peer's end of file is an error only when something
 * from it is pending (a rank that finished closes its connections cleanly while others
 * read what it sent last).
 *
 * Ranks on one host exchange payloads through memory: tp_tcp_local.c. Waits poll or sleep
 * as spin.c decides. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "comm/src/sock.h"
#include "comm/src/tp_tcp_int.h"

#define HELLO_MAGIC 0x47435450u /* "GCTP" */

struct hello {
	uint32_t magic;
	uint32_t rank;
	uint64_t comm_key;
	uint64_t digest;
};

static gc_tp_t *tcp_create(const gc_tp_params_t *p, void *blob, size_t *blob_len, gc_error_t *err)
{
	gc_tp_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->p = *p;
	snprintf(t->token, sizeof(t->token), "%s", p->token ? p->token : "");
	t->p.token = t->token;
	snprintf(t->addr, sizeof(t->addr), "%s", p->addr && *p->addr ? p->addr : "0.0.0.0");
	t->p.addr = t->addr;
	t->ep = -1;
	gc_spin_init(&t->spin, p->spin_us);
	t->peers = calloc((size_t)p->size, sizeof(*t->peers));
	if (!t->peers) {
		free(t);
		return NULL;
	}
	for (int i = 0; i < p->size; i++)
		t->peers[i].fd = -1;
	int port = 0;
	t->lfd = gc_sock_listen(t->addr, &port, p->size + 8);
	if (t->lfd < 0) {
		if (err)
			snprintf(err->text, sizeof(err->text), "tcp: cannot listen on %s: %s",
				 t->addr, strerror(errno));
		free(t->peers);
		free(t);
		return NULL;
	}
	t->probe[0] = gc_digest(t->token, p->comm_key ^ 0x70726f6265ULL);
	t->probe[1] = (uint64_t)p->rank;
	int n = snprintf(blob, GC_TP_BLOB_MAX, "tcp %s %d %ld %" PRIu64, t->addr, port,
			 (long)getpid(), (uint64_t)(uintptr_t)t->probe);
	*blob_len = (size_t)n + 1;
	return t;
}

static int tcp_connect(gc_tp_t *t, const void *const *blobs, const size_t *lens, const int *host_of,
		       gc_error_t *err)
{
	int64_t deadline = gc_now_ms() + t->p.timeout_ms;
	int me = t->p.rank;
	uint64_t dg = gc_digest(t->token, t->p.comm_key);
	if (t->p.auth_munge && gc_tcp_auth_open(t) < 0)
		goto fail;
	/* connect to every lower rank, then accept every higher one */
	for (int j = 0; j < me; j++) {
		char a[64];
		int port;
		long pid;
		uint64_t probe;
		if (gc_tcp_parse_blob(blobs[j], lens[j], a, sizeof(a), &port, &pid, &probe) < 0) {
			gc_tcp_fail(t, EPROTO, "tcp: rank %d published a bad address", j);
			goto fail;
		}
		int fd = gc_sock_connect(a, port, deadline);
		if (fd < 0) {
			gc_tcp_fail(t, errno, "tcp: cannot connect to rank %d at %s:%d: %s", j, a,
				    port, strerror(errno));
			goto fail;
		}
		struct hello h = {HELLO_MAGIC, (uint32_t)me, t->p.comm_key, dg}, back;
		int from = j;
		errno = 0;
		if ((t->p.auth_munge && gc_tcp_auth_send(t, fd, j, deadline) < 0) ||
		    gc_sock_send_all(fd, &h, sizeof(h), deadline) < 0 ||
		    (t->p.auth_munge && gc_tcp_auth_recv(t, fd, &from, deadline) < 0) ||
		    gc_sock_recv_all(fd, &back, sizeof(back), deadline) < 0 || from != j ||
		    back.magic != HELLO_MAGIC || back.rank != (uint32_t)j ||
		    back.comm_key != t->p.comm_key || back.digest != dg) {
			gc_tcp_fail(t, errno ? errno : EPROTO,
				    "tcp: handshake with rank %d at %s:%d failed%s", j, a, port,
				    t->p.auth_munge ? " (it gave no MUNGE credential of this job's "
						      "user, or refused ours)"
						    : "");
			close(fd);
			goto fail;
		}
		t->peers[j].fd = fd;
	}
	for (int left = t->p.size - 1 - me; left > 0;) {
		int fd = gc_sock_accept(t->lfd, deadline);
		if (fd < 0) {
			gc_tcp_fail(t, errno, "tcp: waiting for %d higher ranks to connect: %s",
				    left, strerror(errno));
			goto fail;
		}
		/* a peer has a few seconds to prove itself: a silent one cannot hold the others */
		int64_t hs_end = gc_now_ms() + 5000 < deadline ? gc_now_ms() + 5000 : deadline;
		struct hello h;
		int from = -1;
		errno = 0;
		if ((t->p.auth_munge && gc_tcp_auth_recv(t, fd, &from, hs_end) < 0) ||
		    gc_sock_recv_all(fd, &h, sizeof(h), hs_end) < 0 || h.magic != HELLO_MAGIC ||
		    h.comm_key != t->p.comm_key || h.digest != dg || h.rank <= (uint32_t)me ||
		    h.rank >= (uint32_t)t->p.size || t->peers[h.rank].fd >= 0 ||
		    (t->p.auth_munge && h.rank != (uint32_t)from)) {
			close(fd); /* a stray or foreign connection: closed unanswered */
			t->refused++;
			continue;
		}
		struct hello back = {HELLO_MAGIC, (uint32_t)me, t->p.comm_key, dg};
		if ((t->p.auth_munge && gc_tcp_auth_send(t, fd, (int)h.rank, deadline) < 0) ||
		    gc_sock_send_all(fd, &back, sizeof(back), deadline) < 0) {
			close(fd);
			continue;
		}
		t->peers[h.rank].fd = fd;
		left--;
	}
	close(t->lfd);
	t->lfd = -1;
	gc_tcp_auth_close(t);
	if (gc_tcp_local_pairs(t, blobs, lens, host_of, deadline) < 0)
		goto fail;
	for (int j = 0; j < t->p.size; j++) {
		struct peer *pe = &t->peers[j];
		pe->ib_cap = pe->local ? IB_LOCAL : IB_SIZE;
		if (j != me && !(pe->ib = malloc(pe->ib_cap))) {
			gc_tcp_fail(t, ENOMEM, "out of memory");
			goto fail;
		}
	}
	t->ep = epoll_create1(EPOLL_CLOEXEC);
	if (t->ep < 0) {
		gc_tcp_fail(t, errno, "tcp: epoll: %s", strerror(errno));
		goto fail;
	}
	for (int j = 0; j < t->p.size; j++) {
		struct peer *pe = &t->peers[j];
		if (j == me)
			continue;
		struct epoll_event ev = {.events = 0, .data.u32 = (uint32_t)j};
		if (gc_sock_tune(pe->fd, t->p.timeout_ms) < 0 || gc_sock_nonblock(pe->fd, 1) < 0 ||
		    epoll_ctl(t->ep, EPOLL_CTL_ADD, pe->fd, &ev) < 0) {
			gc_tcp_fail(t, errno, "tcp: socket setup: %s", strerror(errno));
			goto fail;
		}
	}
	return 0;
fail:
	gc_tcp_auth_close(t);
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", t->err);
	gc_tcp_breakdown(t, errno ? errno : EIO);
	return -1;
}

static void prep(gc_tpreq_t *r, int peer, uint32_t tag, const void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->peer = peer;
	r->tag = tag;
	r->buf = (void *)buf;
	r->size = len;
}

/* Queue r on the peer's send (send) or receive queue. */
static int post(gc_tp_t *t, int peer, uint32_t tag, const void *buf, size_t len, gc_tpreq_t *r,
		int send)
{
	prep(r, peer, tag, buf, len);
	if (t->broken) {
		gc_tcp_complete(r, t->broken_err);
		return errno = t->broken_err, -1;
	}
	if (peer < 0 || peer >= t->p.size || peer == t->p.rank)
		return errno = EINVAL, -1;
	struct peer *pe = &t->peers[peer];
	if (send)
		gc_tcp_enqueue(&pe->sq, &pe->sq_tail, r);
	else
		gc_tcp_enqueue(&pe->rq, &pe->rq_tail, r);
	return 0;
}

static int tcp_isend(gc_tp_t *t, int peer, uint32_t tag, const void *buf, size_t len, gc_tpreq_t *r)
{
	return post(t, peer, tag, buf, len, r, 1);
}

static int tcp_irecv(gc_tp_t *t, int peer, uint32_t tag, void *buf, size_t len, gc_tpreq_t *r)
{
	return post(t, peer, tag, buf, len, r, 0);
}

/* Begin the next frame to write: an acknowledgement owed, else the send at the head. */
static int next_frame(struct peer *pe)
{
	if (pe->acks_owed) {
		pe->sh = (struct frame){.magic = FRAME_ACK, .len = pe->acks_owed};
		pe->acks_owed = 0;
	} else if (pe->sq) {
		gc_tpreq_t *r = pe->sq;
		uint32_t kind = !pe->local	       ? FRAME_DATA
				: r->size <= EAGER_MAX ? FRAME_EAGER
						       : FRAME_PULL;
		pe->sh =
		    (struct frame){.tag = r->tag,
				   .magic = kind,
				   .len = r->size,
				   .addr = kind == FRAME_PULL ? (uint64_t)(uintptr_t)r->buf : 0};
	} else {
		return 0;
	}
	pe->sh_live = 1;
	pe->sh_off = 0;
	return 1;
}

/* Write what the socket takes. Returns completions, -1 on failure. */
static int drive_send(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int done = 0;
	while (pe->sh_live || next_frame(pe)) {
		gc_tpreq_t *r = pe->sh.magic == FRAME_ACK ? NULL : pe->sq;
		int inline_data = r && pe->sh.magic != FRAME_PULL;
		struct iovec iov[2];
		int n = 0;
		if (pe->sh_off < sizeof(pe->sh)) {
			iov[n].iov_base = (char *)&pe->sh + pe->sh_off;
			iov[n++].iov_len = sizeof(pe->sh) - pe->sh_off;
		}
		if (inline_data && r->off < r->size) {
			iov[n].iov_base = (char *)r->buf + r->off;
			iov[n++].iov_len = r->size - r->off;
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = n ? sendmsg(pe->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return gc_tcp_peer_fail(t, j, errno == EPIPE ? ECONNRESET : errno,
						"sending to");
		}
		size_t left = (size_t)w;
		size_t hl = sizeof(pe->sh) - pe->sh_off;
		if (left >= hl) {
			pe->sh_off = sizeof(pe->sh);
			left -= hl;
		} else {
			pe->sh_off += left;
			left = 0;
		}
		if (inline_data)
			r->off += left;
		if (pe->sh_off < sizeof(pe->sh) || (inline_data && r->off < r->size))
			break; /* partial write: the socket is full */
		pe->sh_live = 0;
		if (!r)
			continue; /* an acknowledgement */
		gc_tcp_pop(&pe->sq, &pe->sq_tail);
		if (pe->sh.magic == FRAME_PULL) { /* done when the peer has copied it */
			gc_tcp_enqueue(&pe->aq, &pe->aq_tail, r);
			continue;
		}
		gc_tcp_complete(r, 0);
		done++;
	}
	return done;
}

/* recv() for drive_recv: > 0 bytes, 0 nothing now (*dry set), -1 failed. */
static ssize_t rd(gc_tp_t *t, int j, void *buf, size_t len, int *dry)
{
	ssize_t n = recv(t->peers[j].fd, buf, len, MSG_DONTWAIT);
	if (n > 0) {
		*dry = (size_t)n < len; /* short: the socket is empty for now */
		return n;
	}
	if (n == 0)
		return gc_tcp_peer_fail(t, j, ECONNRESET, "receiving from");
	if (errno == EAGAIN || errno == EINTR) {
		*dry = 1;
		return 0;
	}
	return gc_tcp_peer_fail(t, j, errno, "receiving from");
}

/* Read into the posted receives. Returns completions, -1 on failure. Stops at the first
 * short read: epoll is level-triggered, so what arrives later is seen by the next wait. */
static int drive_recv(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int done = 0, dry = 0;
	while (pe->rq) {
		gc_tpreq_t *r = pe->rq;
		size_t avail = pe->ib_hi - pe->ib_lo;
		if (pe->rh_off < sizeof(pe->rh)) {
			if (!avail) {
				if (dry)
					break;
				ssize_t n = rd(t, j, pe->ib, pe->ib_cap, &dry);
				if (n <= 0) {
					if (n < 0)
						return -1;
					break;
				}
				pe->ib_lo = 0;
				pe->ib_hi = (size_t)n;
				avail = (size_t)n;
			}
			size_t take = sizeof(pe->rh) - pe->rh_off;
			take = take < avail ? take : avail;
			memcpy((char *)&pe->rh + pe->rh_off, pe->ib + pe->ib_lo, take);
			pe->rh_off += take;
			pe->ib_lo += take;
			avail -= take;
			if (pe->rh_off < sizeof(pe->rh))
				continue;
			if (gc_tcp_header_ok(t, j, r) < 0)
				return -1;
		}
		if (r->off < r->len && avail) {
			size_t take = r->len - r->off < avail ? r->len - r->off : avail;
			memcpy((char *)r->buf + r->off, pe->ib + pe->ib_lo, take);
			r->off += take;
			pe->ib_lo += take;
		}
		if (r->off < r->len) {
			if (dry)
				break;
			size_t want = r->len - r->off;
			/* a small rest goes through ib, so the next header comes with it */
			if (want < pe->ib_cap / 2) {
				ssize_t n = rd(t, j, pe->ib, pe->ib_cap, &dry);
				if (n < 0)
					return -1;
				pe->ib_lo = 0;
				pe->ib_hi = (size_t)n;
				continue;
			}
			ssize_t n = rd(t, j, (char *)r->buf + r->off, want, &dry);
			if (n < 0)
				return -1;
			r->off += (size_t)n;
			if (r->off < r->len)
				continue;
		}
		pe->rq = r->next;
		if (!pe->rq)
			pe->rq_tail = NULL;
		pe->rh_off = 0;
		gc_tcp_complete(r, 0);
		done++;
	}
	return done;
}

static int drive(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int a = drive_send(t, j);
	if (a < 0)
		return -1;
	int b = pe->local ? gc_tcp_drive_recv_local(t, j) : drive_recv(t, j);
	if (b < 0)
		return -1;
	if (pe->acks_owed) { /* tell the peer its buffers are free at once */
		int c = drive_send(t, j);
		if (c < 0)
			return -1;
		a += c;
	}
	return a + b;
}

/* Anything outstanding with peer J? */
static int busy(const struct peer *pe)
{
	return pe->sq || pe->rq || pe->aq || pe->acks_owed || pe->sh_live;
}

static int sync_events(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	if (pe->fd < 0)
		return 0;
	uint32_t want = (pe->sq || pe->sh_live || pe->acks_owed ? EPOLLOUT : 0) |
			(pe->rq || (pe->local && !pe->closed) ? EPOLLIN : 0);
	if (want == pe->events)
		return 0;
	struct epoll_event ev = {.events = want, .data.u32 = (uint32_t)j};
	if (epoll_ctl(t->ep, EPOLL_CTL_MOD, pe->fd, &ev) < 0)
		return gc_tcp_peer_fail(t, j, errno, "watching");
	pe->events = want;
	return 0;
}

/* Is a receive about to complete (little left at the head of a peer's queue), or an
 * acknowledgement due (a same-host peer is copying)? Then a wait polls first (spin.c). */
static int about_to_complete(const gc_tp_t *t)
{
	for (int j = 0; j < t->p.size; j++) {
		const gc_tpreq_t *r = t->peers[j].rq;
		if ((r && r->size - r->off <= SPIN_MAX_BYTES) || t->peers[j].aq)
			return 1;
	}
	return 0;
}

static int tcp_progress(gc_tp_t *t, int timeout_ms)
{
	if (t->broken)
		return errno = t->broken_err, -1;
	int total = 0;
	for (int j = 0; j < t->p.size; j++) {
		if (j == t->p.rank || !busy(&t->peers[j]))
			continue;
		int n = drive(t, j);
		if (n < 0)
			return -1;
		total += n;
	}
	if (total || timeout_ms == 0)
		return total;
	int pending = 0;
	for (int j = 0; j < t->p.size; j++) {
		if (j == t->p.rank)
			continue;
		if (sync_events(t, j) < 0)
			return -1;
		pending |= busy(&t->peers[j]);
	}
	if (!pending)
		return 0;
	struct epoll_event evs[64];
	int polling = gc_spin_begin(&t->spin, about_to_complete(t)), n;
	for (;;) {
		/* polling epoll takes no socket lock: the sender's softirq is not held up */
		n = epoll_wait(t->ep, evs, 64, polling ? 0 : timeout_ms);
		if (n != 0 || !polling)
			break;
		polling = gc_spin_step(&t->spin);
	}
	if (polling && n > 0)
		gc_spin_hit(&t->spin);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		gc_tcp_fail(t, errno, "tcp: epoll_wait: %s", strerror(errno));
		gc_tcp_breakdown(t, errno);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int j = (int)evs[i].data.u32;
		if (evs[i].events & EPOLLERR) {
			int e = 0;
			socklen_t el = sizeof(e);
			getsockopt(t->peers[j].fd, SOL_SOCKET, SO_ERROR, &e, &el);
			return gc_tcp_peer_fail(t, j, e ? e : ECONNRESET, "connection to");
		}
		int c = drive(t, j);
		if (c < 0)
			return -1;
		total += c;
	}
	return total;
}

static void tcp_abort(gc_tp_t *t)
{
	for (int j = 0; j < t->p.size; j++) {
		if (t->peers[j].fd >= 0) {
			/* a reset, not a clean close: the peers must not mistake it for an end */
			struct linger lg = {1, 0};
			setsockopt(t->peers[j].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
	}
	if (!t->broken)
		gc_tcp_fail(t, ECANCELED, "rank %d: communicator aborted", t->p.rank);
	gc_tcp_breakdown(t, t->broken ? t->broken_err : ECANCELED);
}

static void tcp_destroy(gc_tp_t *t)
{
	if (!t)
		return;
	for (int j = 0; j < t->p.size; j++) {
		if (t->peers[j].fd >= 0)
			close(t->peers[j].fd);
		gc_fifo_free(&t->peers[j].early);
		free(t->peers[j].ib);
	}
	if (t->lfd >= 0)
		close(t->lfd);
	if (t->ep >= 0)
		close(t->ep);
	free(t->peers);
	free(t);
}

static const char *tcp_error(const gc_tp_t *t)
{
	return t->err;
}

const gc_tp_ops_t gc_tp_tcp = {
    .name = "tcp",
    .create = tcp_create,
    .connect = tcp_connect,
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .progress = tcp_progress,
    .abort = tcp_abort,
    .destroy = tcp_destroy,
    .error = tcp_error,
};
