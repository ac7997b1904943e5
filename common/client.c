#include "common/client.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/endpoint.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/zmtp.h"

/* how long one connection attempt may take, and the pause between attempts (libzmq's
 * ZMQ_RECONNECT_IVL) while a request waits for the scheduler */
#define CONNECT_MS   2000
#define RECONNECT_MS 100

struct gp_client {
	gp_zmtp_t *z;	  /* the connection (common/zmtp.c) */
	gp_buf_t pending; /* a sealed request not yet delivered: gschedd was not there */
	gp_auth_t *auth;
	gp_endpoint_t *ep; /* over z: only the scheduler's envelopes are taken */
	uint64_t next_id;
	Gpool__Batch *last; /* holds the returned message */
	int pos;	    /* next unread message in last */
	const void *bulk;   /* last's attachment (in the endpoint), NULL: none */
	size_t bulk_len;
	char user[64];
	size_t max_request; /* the scheduler takes no larger envelope */
};

gp_client_t *gp_client_create(const gp_config_t *cfg, gp_error_t *err)
{
	const char *ep = getenv("GPOOL_SCHEDULER");
	if (!ep || !*ep)
		ep = gp_config_str(cfg, "scheduler");
	return gp_client_create_ep(cfg, ep, (uid_t)gp_config_int(cfg, "sched_uid"), err);
}

gp_client_t *gp_client_create_ep(const gp_config_t *cfg, const char *ep, uid_t peer_uid,
				 gp_error_t *err)
{
	gp_client_t *c = calloc(1, sizeof(*c));
	if (!c) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	c->next_id = 1;
	struct passwd *pw = getpwuid(getuid());
	snprintf(c->user, sizeof(c->user), "%s", pw ? pw->pw_name : "");
	if (!pw)
		snprintf(c->user, sizeof(c->user), "uid%u", (unsigned)getuid());
	if (!(c->auth = gp_auth_create(NULL, err)))
		goto fail;
	size_t max = (size_t)gp_config_int(cfg, "max_message");
	c->max_request = (size_t)gp_config_int(cfg, "max_request");
	if (!(c->z = gp_zmtp_create(ep, max, err)))
		goto fail;
	struct gp_ep_config ec = {
	    .auth = c->auth, .max_message = max, .peer_only = true, .peer_name = "the scheduler"};
	if (!(c->ep = gp_endpoint_create(&ec)))
		goto fail;
	gp_endpoint_set_peer_uid(c->ep, peer_uid);
	/* the peer answers under a key only it can learn (common/wire.h): no MUNGE decode here */
	if (gp_wire_set_reply_key(gp_endpoint_wire(c->ep), peer_uid) < 0) {
		gp_errprintf(err, "cannot make a reply key: %s", strerror(errno));
		goto fail;
	}
	return c;
fail:
	if (!err || !err->text[0])
		gp_errprintf(err, "cannot set up a client: %s", strerror(errno));
	gp_client_destroy(&c);
	return NULL;
}

void gp_client_destroy(gp_client_t **p)
{
	if (!p || !*p)
		return;
	gp_client_t *c = *p;
	if (c->last)
		gpool__batch__free_unpacked(c->last, NULL);
	gp_zmtp_destroy(&c->z);
	gp_buf_release(&c->pending);
	gp_endpoint_destroy(&c->ep);
	gp_auth_destroy(&c->auth);
	free(c);
	*p = NULL;
}

const char *gp_client_user(const gp_client_t *c)
{
	return c->user;
}

int gp_client_send(gp_client_t *c, Gpool__Msg *m, uint64_t *id, gp_error_t *err)
{
	gp_batch_t b = {0};
	m->id = c->next_id++;
	if (gp_batch_add(&b, m) < 0) {
		gp_batch_release(&b);
		return gp_errprintf(err, "out of memory");
	}
	gp_error_t e2 = {{0}};
	const void *data;
	size_t len;
	int rc = gp_endpoint_seal(c->ep, &b, &data, &len, &e2);
	gp_batch_release(&b);
	if (rc < 0)
		return gp_errprintf(err, "send to scheduler: %s", e2.text);
	if (c->max_request && len > c->max_request) {
		errno = EMSGSIZE;
		return gp_errprintf(err,
				    "the request is %.1f MiB, over the scheduler's max_request of "
				    "%.1f MiB",
				    len / 1048576.0, c->max_request / 1048576.0);
	}
	if (id)
		*id = m->id;
	/* as a DEALER would: what cannot go now waits, in order, for the scheduler
	 * (gp_client_recv); records of [size_t length][envelope] */
	if (!c->pending.len && gp_zmtp_send(c->z, &data, &len, 1, CONNECT_MS, &e2) == 0)
		return 0;
	if (gp_buf_append(&c->pending, &len, sizeof(len)) < 0 ||
	    gp_buf_append(&c->pending, data, len) < 0)
		return gp_errprintf(err, "out of memory");
	return 0;
}

/* the waiting requests, if any, sent once the scheduler takes connections */
static void flush_pending(gp_client_t *c, int64_t deadline)
{
	size_t off = 0;
	while (off < c->pending.len) {
		int64_t left = deadline - gp_mono_ms();
		if (left <= 0)
			break;
		gp_error_t e = {{0}};
		size_t len;
		memcpy(&len, c->pending.data + off, sizeof(len));
		const void *data = c->pending.data + off + sizeof(len);
		if (gp_zmtp_send(c->z, &data, &len, 1, left < CONNECT_MS ? (int)left : CONNECT_MS,
				 &e) < 0)
			break;
		off += sizeof(len) + len;
	}
	if (off && off < c->pending.len)
		memmove(c->pending.data, c->pending.data + off, c->pending.len - off);
	c->pending.len -= off;
}

static void pause_ms(int64_t ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

Gpool__Msg *gp_client_recv(gp_client_t *c, uint64_t id, int timeout_ms, gp_error_t *err)
{
	int64_t deadline = gp_mono_ms() + timeout_ms;
	while (1) {
		/* deliver buffered messages of the last batch first */
		while (c->last && c->pos < (int)c->last->n_msgs) {
			Gpool__Msg *m = c->last->msgs[c->pos++];
			if (m->id == id || (id == 0))
				return m;
		}
		int64_t left = deadline - gp_mono_ms();
		if (timeout_ms >= 0 && left <= 0) {
			errno = ETIMEDOUT;
			gp_errprintf(err, "no answer from the scheduler (is gschedd running?)");
			return NULL;
		}
		if (c->pending.len) {
			/* a connection attempt takes time of its own: the deadline is looked at
			 * again before the receive */
			flush_pending(c, timeout_ms < 0 ? INT64_MAX / 2 : deadline);
			left = deadline - gp_mono_ms();
			if (timeout_ms >= 0 && left <= 0)
				continue;
		}
		if (!gp_zmtp_connected(c->z)) {
			/* the scheduler is away: wait for it, as the request does (a request that
			 * went out before the connection broke is lost, as with libzmq) */
			pause_ms(timeout_ms < 0 || left > RECONNECT_MS ? RECONNECT_MS : left);
			continue;
		}
		const void *frames[2];
		size_t lens[2], n;
		gp_error_t e2 = {{0}};
		if (gp_zmtp_recv(c->z, frames, lens, 2, &n, timeout_ms < 0 ? -1 : (int)left, &e2) <
		    0) {
			if (errno == ETIMEDOUT || errno == ECONNRESET)
				continue;
			int saved = errno;
			gp_errprintf(err, "reply from the scheduler refused: %s", e2.text);
			errno = saved;
			return NULL;
		}
		struct gp_ep_envelope env;
		Gpool__Batch *b =
		    gp_endpoint_open(c->ep, frames[0], lens[0], n > 1 ? frames[1] : NULL,
				     n > 1 ? lens[1] : 0, &env, &e2);
		if (!b) {
			int saved = errno;
			gp_errprintf(err, "reply from the scheduler refused: %s", e2.text);
			errno = saved;
			return NULL;
		}
		if (c->last)
			gpool__batch__free_unpacked(c->last, NULL);
		c->last = b;
		c->pos = 0;
		c->bulk = env.bulk;
		c->bulk_len = env.bulk_len;
	}
}

const void *gp_client_bulk(const gp_client_t *c, size_t *len)
{
	*len = c->bulk ? c->bulk_len : 0;
	return c->bulk;
}

Gpool__Msg *gp_client_call(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err)
{
	uint64_t id;
	if (gp_client_send(c, req, &id, err) < 0)
		return NULL;
	return gp_client_recv(c, id, timeout_ms, err);
}
