/* rdv_tcp.c - rendezvous served by rank 0 over plain TCP (no ZeroMQ: builds anywhere).
 *
 * Rank 0 runs a small server thread at ADDR:PORT (gpool puts MASTER_ADDR/MASTER_PORT in
 * every job's environment); every rank, rank 0 included, is a client of it. Frames are
 * {op, rank, key length, value length} + key + value. The server exits when every rank
 * said goodbye, or after the timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/src/rdv_impl.h"
#include "comm/src/sock.h"

enum { OP_HELLO = 1, OP_PUT, OP_GET, OP_FENCE, OP_BYE, OP_VAL, OP_FENCED };

struct hdr {
	uint32_t op;
	uint32_t rank;
	uint32_t klen;
	uint32_t vlen;
};

struct kv {
	char *key;
	void *val;
	size_t len;
};

struct client {
	int fd;
	int rank;
	int bye;
	int fenced; /* waiting in the current fence */
	char *want; /* key of a pending get */
};

struct server {
	int lfd;
	int size;
	uint64_t digest;
	int timeout_ms;
	int stop_pipe[2];
	struct client *cl; /* size + a few strays */
	int ncl, cap;
	struct kv *kv;
	int nkv;
	pthread_t th;
};

struct gc_rdv {
	int fd;
	int rank, size;
	int timeout_ms;
	struct server *srv; /* rank 0 */
	char local[64];
	char err[256];
};

#define rfail(r, e, ...) gc_rdv_errf((r)->err, sizeof((r)->err), (e), __VA_ARGS__)

static int send_frame(int fd, uint32_t op, uint32_t rank, const char *key, const void *val,
		      size_t vlen, int64_t deadline)
{
	size_t klen = key ? strlen(key) : 0;
	struct hdr h = {op, rank, (uint32_t)klen, (uint32_t)vlen};
	if (gc_sock_send_all(fd, &h, sizeof(h), deadline) < 0 ||
	    (klen && gc_sock_send_all(fd, key, klen, deadline) < 0) ||
	    (vlen && gc_sock_send_all(fd, val, vlen, deadline) < 0))
		return -1;
	return 0;
}

/* Read one frame; key is NUL-terminated, *val malloc'ed (NULL when empty). */
static int recv_frame(int fd, struct hdr *h, char *key, void **val, int64_t deadline)
{
	*val = NULL;
	if (gc_sock_recv_all(fd, h, sizeof(*h), deadline) < 0)
		return -1;
	if (h->klen >= GC_RDV_KEY_MAX || h->vlen > GC_RDV_VAL_MAX)
		return errno = EPROTO, -1;
	if (h->klen && gc_sock_recv_all(fd, key, h->klen, deadline) < 0)
		return -1;
	key[h->klen] = 0;
	if (h->vlen) {
		*val = malloc(h->vlen);
		if (!*val)
			return -1;
		if (gc_sock_recv_all(fd, *val, h->vlen, deadline) < 0) {
			free(*val);
			*val = NULL;
			return -1;
		}
	}
	return 0;
}

/* ---- server (rank 0) ---- */

static struct kv *kv_find(struct server *s, const char *key)
{
	for (int i = 0; i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key))
			return &s->kv[i];
	return NULL;
}

static void drop(struct server *s, int i)
{
	close(s->cl[i].fd);
	free(s->cl[i].want);
	s->cl[i] = s->cl[--s->ncl];
}

static void answer_gets(struct server *s, int64_t deadline)
{
	for (int i = 0; i < s->ncl; i++) {
		struct client *c = &s->cl[i];
		struct kv *v = c->want ? kv_find(s, c->want) : NULL;
		if (!v)
			continue;
		send_frame(c->fd, OP_VAL, 0, v->key, v->val, v->len, deadline);
		free(c->want);
		c->want = NULL;
	}
}

static void answer_fence(struct server *s, int64_t deadline)
{
	int n = 0;
	for (int i = 0; i < s->ncl; i++)
		n += s->cl[i].rank >= 0 && s->cl[i].fenced;
	if (n < s->size)
		return;
	for (int i = 0; i < s->ncl; i++)
		if (s->cl[i].fenced) {
			s->cl[i].fenced = 0;
			send_frame(s->cl[i].fd, OP_FENCED, 0, NULL, NULL, 0, deadline);
		}
}

static int handle(struct server *s, int i, int64_t deadline)
{
	struct client *c = &s->cl[i];
	struct hdr h;
	char key[GC_RDV_KEY_MAX];
	void *val;
	if (recv_frame(c->fd, &h, key, &val, deadline) < 0)
		return -1;
	int rc = 0;
	if (c->rank < 0 && h.op != OP_HELLO) {
		rc = -1;
	} else if (h.op == OP_HELLO) {
		uint64_t d = 0;
		if (h.vlen == sizeof(d))
			memcpy(&d, val, sizeof(d));
		int taken = 0;
		for (int k = 0; k < s->ncl; k++)
			taken |= s->cl[k].rank == (int)h.rank;
		if (d != s->digest || h.rank >= (uint32_t)s->size || taken || h.klen != 0)
			rc = -1;
		else
			c->rank = (int)h.rank;
	} else if (h.op == OP_PUT) {
		struct kv *v = kv_find(s, key);
		if (!v && s->nkv < 16 * s->size + 16) {
			struct kv *nk = realloc(s->kv, (size_t)(s->nkv + 1) * sizeof(*nk));
			if (nk) {
				s->kv = nk;
				v = &s->kv[s->nkv++];
				v->key = strdup(key);
				v->val = NULL;
			}
		}
		if (!v || !v->key) {
			rc = -1;
		} else {
			free(v->val);
			v->val = val;
			v->len = h.vlen;
			val = NULL;
			answer_gets(s, deadline);
		}
	} else if (h.op == OP_GET) {
		free(c->want);
		c->want = strdup(key);
		answer_gets(s, deadline);
	} else if (h.op == OP_FENCE) {
		c->fenced = 1;
		answer_fence(s, deadline);
	} else if (h.op == OP_BYE) {
		c->bye = 1;
	} else {
		rc = -1;
	}
	free(val);
	return rc;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	int64_t end = gc_now_ms() + 2 * (int64_t)s->timeout_ms + 5000;
	for (;;) {
		int byes = 0;
		for (int i = 0; i < s->ncl; i++)
			byes += s->cl[i].bye;
		if (byes >= s->size || gc_now_ms() > end)
			break;
		struct pollfd p[s->cap + 2];
		int n = 0;
		p[n++] = (struct pollfd){.fd = s->stop_pipe[0], .events = POLLIN};
		p[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (int i = 0; i < s->ncl; i++)
			p[n++] = (struct pollfd){.fd = s->cl[i].fd, .events = POLLIN};
		if (poll(p, (nfds_t)n, 500) <= 0)
			continue;
		if (p[0].revents)
			break;
		int64_t deadline = gc_now_ms() + 2000;
		for (int i = s->ncl - 1; i >= 0; i--)
			if (p[i + 2].revents && !s->cl[i].bye && handle(s, i, deadline) < 0)
				drop(s, i);
			else if (p[i + 2].revents & (POLLHUP | POLLERR))
				drop(s, i);
		if (p[1].revents & POLLIN && s->ncl < s->cap) {
			int fd = gc_sock_accept(s->lfd, deadline);
			if (fd >= 0)
				s->cl[s->ncl++] = (struct client){.fd = fd, .rank = -1};
		}
	}
	return NULL;
}

static void server_free(struct server *s)
{
	for (int i = 0; i < s->ncl; i++) {
		close(s->cl[i].fd);
		free(s->cl[i].want);
	}
	for (int i = 0; i < s->nkv; i++) {
		free(s->kv[i].key);
		free(s->kv[i].val);
	}
	free(s->kv);
	free(s->cl);
	close(s->lfd);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	free(s);
}

/* Stop at once (a failed open). */
static void server_stop(struct server *s)
{
	if (!s)
		return;
	if (write(s->stop_pipe[1], "x", 1) < 0) {
		/* the thread ends by its deadline anyway */
	}
	pthread_join(s->th, NULL);
	server_free(s);
}

static struct server *server_start(const char *host, int port, int size, uint64_t digest,
				   int timeout_ms, char *err, size_t errlen)
{
	struct server *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->size = size;
	s->digest = digest;
	s->timeout_ms = timeout_ms;
	s->cap = size + 8;
	s->cl = calloc((size_t)s->cap, sizeof(*s->cl));
	int p = port;
	s->lfd = gc_sock_listen(host, &p, size + 8);
	if (s->lfd < 0 && errno == EADDRNOTAVAIL) {
		p = port;
		s->lfd = gc_sock_listen(NULL, &p, size + 8);
	}
	if (s->lfd < 0 || !s->cl || pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "rendezvous: rank 0 cannot listen on %.64s:%d: %s", host,
			 port, strerror(errno));
		if (s->lfd >= 0)
			close(s->lfd);
		free(s->cl);
		free(s);
		return NULL;
	}
	if (pthread_create(&s->th, NULL, serve, s) != 0) {
		snprintf(err, errlen, "rendezvous: cannot start the server thread");
		close(s->lfd);
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
		free(s->cl);
		free(s);
		return NULL;
	}
	return s;
}

/* ---- client ---- */

static gc_rdv_t *rdv_open(const char *spec, int rank, int size, const char *token, int timeout_ms,
			  gc_error_t *err)
{
	char host[256];
	int port = 0;
	const char *colon = spec ? strrchr(spec, ':') : NULL;
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) ||
	    sscanf(colon + 1, "%d", &port) != 1 || port <= 0 || port > 65535) {
		if (err)
			snprintf(err->text, sizeof(err->text), "rendezvous: '%s' is not ADDR:PORT",
				 spec ? spec : "");
		errno = EINVAL;
		return NULL;
	}
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = 0;
	gc_rdv_t *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fd = -1;
	r->rank = rank;
	r->size = size;
	r->timeout_ms = timeout_ms;
	uint64_t dg = gc_digest(token, 0x72647631);
	if (rank == 0) {
		r->srv = server_start(host, port, size, dg, timeout_ms, r->err, sizeof(r->err));
		if (!r->srv)
			goto fail;
	}
	int64_t deadline = gc_now_ms() + timeout_ms;
	r->fd = gc_sock_connect(host, port, deadline);
	if (r->fd < 0) {
		rfail(r, errno, "rendezvous: cannot reach rank 0 at %s:%d: %s", host, port,
		      strerror(errno));
		goto fail;
	}
	gc_sock_local_addr(r->fd, r->local, sizeof(r->local));
	if (send_frame(r->fd, OP_HELLO, (uint32_t)rank, NULL, &dg, sizeof(dg), deadline) < 0) {
		rfail(r, errno, "rendezvous: hello to %s:%d: %s", host, port, strerror(errno));
		goto fail;
	}
	return r;
fail:
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", r->err);
	if (r->fd >= 0)
		close(r->fd);
	server_stop(r->srv);
	free(r);
	return NULL;
}

static int rdv_put(gc_rdv_t *r, const char *key, const void *val, size_t len)
{
	if (strlen(key) >= GC_RDV_KEY_MAX || len > GC_RDV_VAL_MAX)
		return rfail(r, EMSGSIZE, "rendezvous: key or value too large");
	if (send_frame(r->fd, OP_PUT, (uint32_t)r->rank, key, val, len,
		       gc_now_ms() + r->timeout_ms) < 0)
		return rfail(r, errno, "rendezvous: put %s: %s", key, strerror(errno));
	return 0;
}

static int await(gc_rdv_t *r, uint32_t op, char *key, void **val, uint32_t *len, const char *what)
{
	struct hdr h;
	if (recv_frame(r->fd, &h, key, val, gc_now_ms() + r->timeout_ms) < 0)
		return rfail(r, errno == ECONNRESET ? EPIPE : errno, "rendezvous: %s: %s", what,
			     errno == ETIMEDOUT	   ? "not every rank arrived in time"
			     : errno == ECONNRESET ? "rank 0 went away"
						   : strerror(errno));
	if (h.op != op) {
		free(*val);
		*val = NULL;
		return rfail(r, EPROTO, "rendezvous: %s: unexpected answer", what);
	}
	*len = h.vlen;
	return 0;
}

static int rdv_fence(gc_rdv_t *r)
{
	if (send_frame(r->fd, OP_FENCE, (uint32_t)r->rank, NULL, NULL, 0,
		       gc_now_ms() + r->timeout_ms) < 0)
		return rfail(r, errno, "rendezvous: fence: %s", strerror(errno));
	char key[GC_RDV_KEY_MAX];
	void *val = NULL;
	uint32_t len;
	if (await(r, OP_FENCED, key, &val, &len, "fence") < 0)
		return -1;
	free(val);
	return 0;
}

static int rdv_get(gc_rdv_t *r, const char *key, void **val, size_t *len)
{
	if (strlen(key) >= GC_RDV_KEY_MAX)
		return rfail(r, EMSGSIZE, "rendezvous: key too long");
	if (send_frame(r->fd, OP_GET, (uint32_t)r->rank, key, NULL, 0,
		       gc_now_ms() + r->timeout_ms) < 0)
		return rfail(r, errno, "rendezvous: get %s: %s", key, strerror(errno));
	char k[GC_RDV_KEY_MAX];
	uint32_t l;
	if (await(r, OP_VAL, k, val, &l, key) < 0)
		return -1;
	*len = l;
	return 0;
}

static const char *rdv_local_addr(const gc_rdv_t *r)
{
	return r->local;
}

static void rdv_close(gc_rdv_t *r)
{
	if (!r)
		return;
	if (r->fd >= 0) {
		send_frame(r->fd, OP_BYE, (uint32_t)r->rank, NULL, NULL, 0, gc_now_ms() + 1000);
		close(r->fd);
	}
	if (r->srv) {
		/* rank 0 serves until every rank said goodbye (or the deadline passed) */
		pthread_join(r->srv->th, NULL);
		server_free(r->srv);
	}
	free(r);
}

static const char *rdv_error(const gc_rdv_t *r)
{
	return r->err;
}

const gc_rdv_ops_t gc_rdv_tcp = GC_RDV_OPS("tcp");
