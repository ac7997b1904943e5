/* tp_tcp.c - gpool's own TCP transport: one connection per pair of ranks, frames of
 * {tag, length, payload} read straight into the posted receive buffer, epoll to wait.
 *
 * Flow control is TCP's: a peer's socket is read only while a receive from it is posted,
 * so nothing is ever buffered twice. A peer's end of file is an error only when a
 * receive from it is pending (a rank that finished closes its connections cleanly while
 * others read what it sent last). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sock.h"
#include "tp.h"

#define HELLO_MAGIC 0x47435450u /* "GCTP" */
#define FRAME_MAGIC 0x4743u

struct hello {
	uint32_t magic;
	uint32_t rank;
	uint64_t comm_key;
	uint64_t digest;
};

struct frame {
	uint32_t tag;
	uint32_t magic;
	uint64_t len;
};

struct peer {
	int fd;
	uint32_t events;	  /* registered with epoll */
	int closed;		  /* end of file seen, or hung up */
	gc_tpreq_t *sq, *sq_tail; /* sends, in order */
	gc_tpreq_t *rq, *rq_tail; /* receives, in order */
	struct frame sh;	  /* header of the send at the head */
	size_t sh_off;
	struct frame rh; /* header of the message being read */
	size_t rh_off;
};

struct gc_tp {
	gc_tp_params_t p;
	char token[128];
	char addr[64];
	int lfd;
	int ep;
	int broken;
	int broken_err;
	struct peer *peers;
	char err[256];
};

static int tfail(gc_tp_t *t, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int tfail(gc_tp_t *t, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static void complete(gc_tpreq_t *r, int err)
{
	r->err = err;
	r->done = 1;
}

/* Fail every request on every peer and close the connections. */
static void breakdown(gc_tp_t *t, int e)
{
	if (!t->broken) {
		t->broken = 1;
		t->broken_err = e;
	}
	for (int i = 0; i < t->p.size; i++) {
		struct peer *pe = &t->peers[i];
		for (gc_tpreq_t *r = pe->sq; r; r = r->next)
			complete(r, t->broken_err);
		for (gc_tpreq_t *r = pe->rq; r; r = r->next)
			complete(r, t->broken_err);
		pe->sq = pe->sq_tail = pe->rq = pe->rq_tail = NULL;
		if (pe->fd >= 0) {
			close(pe->fd);
			pe->fd = -1;
		}
	}
}

static int peer_fail(gc_tp_t *t, int peer, int e, const char *what)
{
	tfail(t, e, "rank %d: %s rank %d: %s", t->p.rank, what, peer,
	      e == ECONNRESET ? "connection closed (the rank died or left)" : strerror(e));
	breakdown(t, e);
	errno = e;
	return -1;
}

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
	int n = snprintf(blob, GC_TP_BLOB_MAX, "tcp %s %d", t->addr, port);
	*blob_len = (size_t)n + 1;
	return t;
}

static int parse_blob(const void *blob, size_t len, char *addr, size_t alen, int *port)
{
	char buf[GC_TP_BLOB_MAX + 1];
	if (len == 0 || len > GC_TP_BLOB_MAX)
		return -1;
	memcpy(buf, blob, len);
	buf[len] = 0;
	char a[64];
	if (sscanf(buf, "tcp %63s %d", a, port) != 2 || *port <= 0 || *port > 65535)
		return -1;
	snprintf(addr, alen, "%s", a);
	return 0;
}

static int tcp_connect(gc_tp_t *t, const void *const *blobs, const size_t *lens, gc_error_t *err)
{
	int64_t deadline = gc_now_ms() + t->p.timeout_ms;
	int me = t->p.rank;
	uint64_t dg = gc_digest(t->token, t->p.comm_key);
	/* connect to every lower rank, then accept every higher one */
	for (int j = 0; j < me; j++) {
		char a[64];
		int port;
		if (parse_blob(blobs[j], lens[j], a, sizeof(a), &port) < 0) {
			tfail(t, EPROTO, "tcp: rank %d published a bad address", j);
			goto fail;
		}
		int fd = gc_sock_connect(a, port, deadline);
		if (fd < 0) {
			tfail(t, errno, "tcp: cannot connect to rank %d at %s:%d: %s", j, a, port,
			      strerror(errno));
			goto fail;
		}
		struct hello h = {HELLO_MAGIC, (uint32_t)me, t->p.comm_key, dg}, back;
		if (gc_sock_send_all(fd, &h, sizeof(h), deadline) < 0 ||
		    gc_sock_recv_all(fd, &back, sizeof(back), deadline) < 0 ||
		    back.magic != HELLO_MAGIC || back.rank != (uint32_t)j ||
		    back.comm_key != t->p.comm_key || back.digest != dg) {
			tfail(t, errno ? errno : EPROTO,
			      "tcp: handshake with rank %d at %s:%d failed", j, a, port);
			close(fd);
			goto fail;
		}
		t->peers[j].fd = fd;
	}
	for (int left = t->p.size - 1 - me; left > 0;) {
		int fd = gc_sock_accept(t->lfd, deadline);
		if (fd < 0) {
			tfail(t, errno, "tcp: waiting for %d higher ranks to connect: %s", left,
			      strerror(errno));
			goto fail;
		}
		struct hello h;
		errno = 0;
		if (gc_sock_recv_all(fd, &h, sizeof(h), deadline) < 0 || h.magic != HELLO_MAGIC ||
		    h.comm_key != t->p.comm_key || h.digest != dg || h.rank <= (uint32_t)me ||
		    h.rank >= (uint32_t)t->p.size || t->peers[h.rank].fd >= 0) {
			close(fd); /* a stray or foreign connection: ignore it */
			continue;
		}
		struct hello back = {HELLO_MAGIC, (uint32_t)me, t->p.comm_key, dg};
		if (gc_sock_send_all(fd, &back, sizeof(back), deadline) < 0) {
			close(fd);
			continue;
		}
		t->peers[h.rank].fd = fd;
		left--;
	}
	close(t->lfd);
	t->lfd = -1;
	t->ep = epoll_create1(EPOLL_CLOEXEC);
	if (t->ep < 0) {
		tfail(t, errno, "tcp: epoll: %s", strerror(errno));
		goto fail;
	}
	for (int j = 0; j < t->p.size; j++) {
		struct peer *pe = &t->peers[j];
		if (j == me)
			continue;
		struct epoll_event ev = {.events = 0, .data.u32 = (uint32_t)j};
		if (gc_sock_tune(pe->fd, t->p.timeout_ms) < 0 || gc_sock_nonblock(pe->fd, 1) < 0 ||
		    epoll_ctl(t->ep, EPOLL_CTL_ADD, pe->fd, &ev) < 0) {
			tfail(t, errno, "tcp: socket setup: %s", strerror(errno));
			goto fail;
		}
	}
	return 0;
fail:
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", t->err);
	breakdown(t, errno ? errno : EIO);
	return -1;
}

static void enqueue(gc_tpreq_t **h, gc_tpreq_t **tl, gc_tpreq_t *r)
{
	r->next = NULL;
	if (*tl)
		(*tl)->next = r;
	else
		*h = r;
	*tl = r;
}

static void prep(gc_tpreq_t *r, int peer, uint32_t tag, const void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->peer = peer;
	r->tag = tag;
	r->buf = (void *)buf;
	r->size = len;
}

static int tcp_isend(gc_tp_t *t, int peer, uint32_t tag, const void *buf, size_t len, gc_tpreq_t *r)
{
	prep(r, peer, tag, buf, len);
	if (t->broken) {
		complete(r, t->broken_err);
		return errno = t->broken_err, -1;
	}
	if (peer < 0 || peer >= t->p.size || peer == t->p.rank)
		return errno = EINVAL, -1;
	struct peer *pe = &t->peers[peer];
	if (!pe->sq)
		pe->sh_off = 0;
	enqueue(&pe->sq, &pe->sq_tail, r);
	return 0;
}

static int tcp_irecv(gc_tp_t *t, int peer, uint32_t tag, void *buf, size_t len, gc_tpreq_t *r)
{
	prep(r, peer, tag, buf, len);
	if (t->broken) {
		complete(r, t->broken_err);
		return errno = t->broken_err, -1;
	}
	if (peer < 0 || peer >= t->p.size || peer == t->p.rank)
		return errno = EINVAL, -1;
	struct peer *pe = &t->peers[peer];
	enqueue(&pe->rq, &pe->rq_tail, r);
	return 0;
}

/* Write what the socket takes. Returns completions, -1 on failure. */
static int drive_send(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int done = 0;
	while (pe->sq) {
		gc_tpreq_t *r = pe->sq;
		struct iovec iov[2];
		int n = 0;
		if (r->off == 0 && pe->sh_off == 0) {
			pe->sh.tag = r->tag;
			pe->sh.magic = FRAME_MAGIC;
			pe->sh.len = r->size;
		}
		if (pe->sh_off < sizeof(pe->sh)) {
			iov[n].iov_base = (char *)&pe->sh + pe->sh_off;
			iov[n++].iov_len = sizeof(pe->sh) - pe->sh_off;
		}
		if (r->off < r->size) {
			iov[n].iov_base = (char *)r->buf + r->off;
			iov[n++].iov_len = r->size - r->off;
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = n ? sendmsg(pe->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return peer_fail(t, j, errno == EPIPE ? ECONNRESET : errno, "sending to");
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
		r->off += left;
		if (pe->sh_off == sizeof(pe->sh) && r->off == r->size) {
			pe->sq = r->next;
			if (!pe->sq)
				pe->sq_tail = NULL;
			pe->sh_off = 0;
			complete(r, 0);
			done++;
			continue;
		}
		break; /* partial write: the socket is full */
	}
	return done;
}

/* Read into the posted receives. Returns completions, -1 on failure. */
static int drive_recv(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	int done = 0;
	while (pe->rq) {
		gc_tpreq_t *r = pe->rq;
		ssize_t n;
		if (pe->rh_off < sizeof(pe->rh)) {
			n = recv(pe->fd, (char *)&pe->rh + pe->rh_off, sizeof(pe->rh) - pe->rh_off,
				 MSG_DONTWAIT);
			if (n > 0) {
				pe->rh_off += (size_t)n;
				if (pe->rh_off < sizeof(pe->rh))
					continue;
				if (pe->rh.magic != FRAME_MAGIC || pe->rh.tag != r->tag) {
					tfail(t, EPROTO,
					      "rank %d: message from rank %d out of order (tag %u, "
					      "expected %u): ranks called different collectives",
					      t->p.rank, j, pe->rh.tag, r->tag);
					breakdown(t, EPROTO);
					return -1;
				}
				if (pe->rh.len > r->size) {
					tfail(t, EMSGSIZE,
					      "rank %d: message from rank %d of %" PRIu64
					      " bytes, %zu expected: ranks passed different counts",
					      t->p.rank, j, pe->rh.len, r->size);
					breakdown(t, EMSGSIZE);
					return -1;
				}
				r->len = pe->rh.len;
			}
		} else {
			if (r->off == r->len) {
				n = 1; /* zero-length payload */
			} else {
				n = recv(pe->fd, (char *)r->buf + r->off, r->len - r->off,
					 MSG_DONTWAIT);
				if (n > 0)
					r->off += (size_t)n;
			}
			if (n > 0 && r->off == r->len) {
				pe->rq = r->next;
				if (!pe->rq)
					pe->rq_tail = NULL;
				pe->rh_off = 0;
				complete(r, 0);
				done++;
				continue;
			}
		}
		if (n == 0)
			return peer_fail(t, j, ECONNRESET, "receiving from");
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return peer_fail(t, j, errno, "receiving from");
		}
	}
	return done;
}

static int drive(gc_tp_t *t, int j)
{
	int a = drive_send(t, j);
	if (a < 0)
		return -1;
	int b = drive_recv(t, j);
	if (b < 0)
		return -1;
	return a + b;
}

static int sync_events(gc_tp_t *t, int j)
{
	struct peer *pe = &t->peers[j];
	uint32_t want = (pe->sq ? EPOLLOUT : 0) | (pe->rq ? EPOLLIN : 0);
	if (want == pe->events)
		return 0;
	struct epoll_event ev = {.events = want, .data.u32 = (uint32_t)j};
	if (epoll_ctl(t->ep, EPOLL_CTL_MOD, pe->fd, &ev) < 0)
		return peer_fail(t, j, errno, "watching");
	pe->events = want;
	return 0;
}

static int tcp_progress(gc_tp_t *t, int timeout_ms)
{
	if (t->broken)
		return errno = t->broken_err, -1;
	int total = 0;
	for (int j = 0; j < t->p.size; j++) {
		if (j == t->p.rank || (!t->peers[j].sq && !t->peers[j].rq))
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
		pending |= t->peers[j].events != 0;
	}
	if (!pending)
		return 0;
	struct epoll_event evs[64];
	int n = epoll_wait(t->ep, evs, 64, timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		tfail(t, errno, "tcp: epoll_wait: %s", strerror(errno));
		breakdown(t, errno);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int j = (int)evs[i].data.u32;
		if (evs[i].events & EPOLLERR) {
			int e = 0;
			socklen_t el = sizeof(e);
			getsockopt(t->peers[j].fd, SOL_SOCKET, SO_ERROR, &e, &el);
			return peer_fail(t, j, e ? e : ECONNRESET, "connection to");
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
		tfail(t, ECANCELED, "rank %d: communicator aborted", t->p.rank);
	breakdown(t, t->broken ? t->broken_err : ECANCELED);
}

static void tcp_destroy(gc_tp_t *t)
{
	if (!t)
		return;
	for (int j = 0; j < t->p.size; j++)
		if (t->peers[j].fd >= 0)
			close(t->peers[j].fd);
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
