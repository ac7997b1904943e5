/* repl_auth.c: MUNGE on the standby group's Raft connections (repl_auth.h). The wire, after
 * libraft's own handshake (protocol, id, address): [4 bytes length, big-endian][credential],
 * the credential's payload "gpool-raft <id>". An accepted connection is read exactly that far
 * (each read asks for the bytes still missing, never more, so nothing of Raft's is consumed)
 * within 5 s, then given to Raft or closed. */
#include "scheduler/store/repl_auth.h"

#include <inttypes.h>
#include <raft.h>
#include <raft/uv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/auth.h"
#include "common/log.h"

#define MAX_CRED    4096
#define AUTH_MS	    5000
#define PAYLOAD_FMT "gpool-raft %" PRIu64

struct rauth {
	struct raft_uv_transport *inner;
	raft_uv_accept_cb accept_cb; /* Raft's */
	uv_loop_t *loop;
	gp_auth_t *auth;
	uid_t sched_uid;
	uint64_t self;
	struct incoming *pending; /* accepted, credential not read yet */
	raft_uv_transport_close_cb close_cb;
	struct raft_uv_transport *outer;
};

/* An accepted connection whose credential is being read. */
struct incoming {
	struct rauth *a;
	struct incoming *next;
	uv_stream_t *stream;
	uv_timer_t timer;
	raft_id id;
	char address[128];
	uint8_t buf[4 + MAX_CRED + 1];
	size_t got, need;
	int closing; /* handles still to close */
};

/* A connection being made: the credential goes out first. */
struct outgoing {
	struct rauth *a;
	struct raft_uv_connect inner_req;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	uv_write_t write;
	uint8_t *frame;
};

static void unlink_incoming(struct incoming *in)
{
	for (struct incoming **p = &in->a->pending; *p; p = &(*p)->next)
		if (*p == in) {
			*p = in->next;
			return;
		}
}

static void incoming_closed(uv_handle_t *h)
{
	struct incoming *in = h->data;
	if (h == (uv_handle_t *)in->stream)
		raft_free(in->stream);
	if (--in->closing == 0)
		free(in);
}

/* Refuse: close the connection and the timer. */
static void refuse(struct incoming *in, const char *why)
{
	gp_warn("replication: refused a connection claiming member %llu from %s: %s",
		(unsigned long long)in->id, in->address, why);
	unlink_incoming(in);
	in->closing = 2;
	in->stream->data = in;
	uv_close((uv_handle_t *)in->stream, incoming_closed);
	uv_close((uv_handle_t *)&in->timer, incoming_closed);
}

static void timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_timeout(uv_timer_t *t)
{
	struct incoming *in = t->data;
	uv_read_stop(in->stream);
	refuse(in, "no credential within 5 s");
}

static void check(struct incoming *in)
{
	struct rauth *a = in->a;
	in->buf[in->got] = 0;
	void *payload = NULL;
	size_t len = 0;
	uid_t uid = (uid_t)-1;
	gid_t gid;
	enum gp_auth_status st;
	gp_error_t err = {{0}};
	char want[64], why[600];
	snprintf(want, sizeof(want), PAYLOAD_FMT, (uint64_t)in->id);
	if (gp_auth_decode(a->auth, (const char *)in->buf + 4, &payload, &len, &uid, &gid, &st,
			   &err) < 0) {
		snprintf(why, sizeof(why), "%s", err.text);
		free(payload);
		refuse(in, why);
		return;
	}
	if (uid != a->sched_uid && uid != 0) {
		snprintf(why, sizeof(why), "credential of uid %u, not sched_uid %u", (unsigned)uid,
			 (unsigned)a->sched_uid);
		free(payload);
		refuse(in, why);
		return;
	}
	if (len != strlen(want) || memcmp(payload, want, len)) {
		free(payload);
		refuse(in, "the credential is for another member");
		return;
	}
	free(payload);
	/* given to Raft: the timer goes alone */
	unlink_incoming(in);
	uv_timer_stop(&in->timer);
	uv_stream_t *stream = in->stream;
	raft_id id = in->id;
	char address[sizeof(in->address)];
	snprintf(address, sizeof(address), "%s", in->address);
	in->timer.data = in;
	uv_close((uv_handle_t *)&in->timer, timer_closed);
	stream->data = NULL;
	a->accept_cb(a->outer, id, address, stream);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct incoming *in = h->data;
	(void)suggested;
	buf->base = (char *)in->buf + in->got;
	buf->len = in->need - in->got; /* never more than the frame: the rest is Raft's */
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct incoming *in = s->data;
	(void)buf;
	if (n == 0)
		return;
	if (n < 0) {
		uv_read_stop(s);
		refuse(in, "closed before its credential");
		return;
	}
	in->got += (size_t)n;
	if (in->got < in->need)
		return;
	if (in->need == 4) {
		uint32_t len = ((uint32_t)in->buf[0] << 24) | ((uint32_t)in->buf[1] << 16) |
			       ((uint32_t)in->buf[2] << 8) | in->buf[3];
		if (len == 0 || len > MAX_CRED) {
			uv_read_stop(s);
			refuse(in, "no credential");
			return;
		}
		in->need = 4 + len;
		return;
	}
	uv_read_stop(s);
	check(in);
}

static void on_inner_accept(struct raft_uv_transport *inner, raft_id id, const char *address,
			    struct uv_stream_s *stream)
{
	struct rauth *a = inner->data;
	struct incoming *in = calloc(1, sizeof(*in));
	if (!in) {
		uv_close((uv_handle_t *)stream, (uv_close_cb)raft_free);
		return;
	}
	in->a = a;
	in->stream = stream;
	in->id = id;
	snprintf(in->address, sizeof(in->address), "%s", address ? address : "?");
	in->need = 4;
	stream->data = in;
	uv_timer_init(a->loop, &in->timer);
	in->timer.data = in;
	uv_timer_start(&in->timer, on_timeout, AUTH_MS, 0);
	in->next = a->pending;
	a->pending = in;
	if (uv_read_start(stream, on_alloc, on_read) != 0)
		refuse(in, "cannot read");
}

static void on_written(uv_write_t *w, int status)
{
	struct outgoing *o = w->data;
	(void)status; /* a failed write fails Raft's next one on the same stream */
	free(o->frame);
	free(o);
}

static void on_inner_connect(struct raft_uv_connect *req, struct uv_stream_s *stream, int status)
{
	struct outgoing *o = req->data;
	struct rauth *a = o->a;
	if (status != 0) {
		o->cb(o->req, NULL, status);
		free(o);
		return;
	}
	char payload[64], *cred = NULL;
	gp_error_t err = {{0}};
	snprintf(payload, sizeof(payload), PAYLOAD_FMT, a->self);
	size_t len;
	if (gp_auth_encode(a->auth, payload, strlen(payload), &cred, &err) < 0 ||
	    (len = strlen(cred)) > MAX_CRED || !(o->frame = malloc(4 + len))) {
		gp_err("replication: cannot make a credential: %s", err.text[0] ? err.text : "?");
		free(cred);
		uv_close((uv_handle_t *)stream, (uv_close_cb)raft_free);
		o->cb(o->req, NULL, RAFT_NOCONNECTION);
		free(o);
		return;
	}
	o->frame[0] = (uint8_t)(len >> 24);
	o->frame[1] = (uint8_t)(len >> 16);
	o->frame[2] = (uint8_t)(len >> 8);
	o->frame[3] = (uint8_t)len;
	memcpy(o->frame + 4, cred, len);
	free(cred);
	uv_buf_t b = uv_buf_init((char *)o->frame, (unsigned)(4 + len));
	o->write.data = o;
	raft_uv_connect_cb cb = o->cb;
	struct raft_uv_connect *rreq = o->req;
	if (uv_write(&o->write, stream, &b, 1, on_written) != 0) {
		free(o->frame);
		free(o);
		uv_close((uv_handle_t *)stream, (uv_close_cb)raft_free);
		cb(rreq, NULL, RAFT_NOCONNECTION);
		return;
	}
	/* a stream's writes go out in order: Raft's follow the credential */
	cb(rreq, stream, 0);
}

static int t_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	struct rauth *a = t->impl;
	int rc = a->inner->init(a->inner, id, address);
	if (rc)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", a->inner->errmsg);
	return rc;
}

static int t_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	struct rauth *a = t->impl;
	a->accept_cb = cb;
	int rc = a->inner->listen(a->inner, on_inner_accept);
	if (rc)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", a->inner->errmsg);
	return rc;
}

static int t_connect(struct raft_uv_transport *t, struct raft_uv_connect *req, raft_id id,
		     const char *address, raft_uv_connect_cb cb)
{
	struct rauth *a = t->impl;
	struct outgoing *o = calloc(1, sizeof(*o));
	if (!o)
		return RAFT_NOMEM;
	o->a = a;
	o->req = req;
	o->cb = cb;
	o->inner_req.data = o;
	int rc = a->inner->connect(a->inner, &o->inner_req, id, address, on_inner_connect);
	if (rc) {
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", a->inner->errmsg);
		free(o);
	}
	return rc;
}

static void on_inner_closed(struct raft_uv_transport *inner)
{
	struct rauth *a = inner->data;
	if (a->close_cb)
		a->close_cb(a->outer);
}

static void t_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	struct rauth *a = t->impl;
	a->close_cb = cb;
	while (a->pending) {
		struct incoming *in = a->pending;
		uv_read_stop(in->stream);
		uv_timer_stop(&in->timer);
		a->pending = in->next;
		in->next = NULL;
		in->closing = 2;
		uv_close((uv_handle_t *)in->stream, incoming_closed);
		uv_close((uv_handle_t *)&in->timer, incoming_closed);
	}
	a->inner->close(a->inner, on_inner_closed);
}

int repl_auth_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner,
		   struct uv_loop_s *loop, uint64_t self, uid_t sched_uid, gp_error_t *err)
{
	struct rauth *a = calloc(1, sizeof(*a));
	if (!a)
		return gp_errprintf(err, "out of memory");
	if (!(a->auth = gp_auth_create(NULL, err))) {
		free(a);
		return -1;
	}
	a->inner = inner;
	a->loop = loop;
	a->self = self;
	a->sched_uid = sched_uid;
	a->outer = outer;
	inner->data = a;
	memset(outer, 0, sizeof(*outer));
	outer->impl = a;
	outer->init = t_init;
	outer->listen = t_listen;
	outer->connect = t_connect;
	outer->close = t_close;
	return 0;
}

void repl_auth_release(struct raft_uv_transport *outer)
{
	struct rauth *a = outer->impl;
	if (!a)
		return;
	gp_auth_destroy(&a->auth);
	free(a);
	outer->impl = NULL;
}
