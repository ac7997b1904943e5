/* sched_client.c - a command's connection to gschedd: a DEALER socket, sealed envelopes and
 * replies matched to requests by message id (sched_client.h) */
#include "common/sched_client.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/endpoint.h"
#include "common/schedlist.h"
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
	size_t max_message;
	struct gp_schedlist list; /* the schedulers (common/schedlist.h); the current one is z's */
	size_t hops;		  /* moves since the last whole round */
	bool refused;		  /* the last connection attempt: nobody listens there */
};

/* With several schedulers, a request that could not even be delivered in this long (nobody
 * listens, the host is gone) goes to the next one. */
#define UNDELIVERED_MS 1000
/* the slices a wait is cut in, to look at that */
#define SLICE_MS 250

gp_client_t *gp_client_create(const gp_config_t *cfg, gp_error_t *err)
{
	const char *ep = getenv("GPOOL_SCHEDULER");
	if (!ep || !*ep)
		ep = gp_config_str(cfg, "scheduler");
	struct gp_schedlist l;
	if (gp_schedlist_parse(&l, ep, err) < 0)
		return NULL;
	gp_client_t *c =
	    gp_client_create_ep(cfg, l.ep[0], (uid_t)gp_config_int(cfg, "sched_uid"), err);
	if (c)
		c->list = l;
	return c;
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
	c->max_message = max;
	if (!(c->z = gp_zmtp_create(ep, max, err)))
		goto fail;
	snprintf(c->list.ep[0], sizeof(c->list.ep[0]), "%s", ep);
	c->list.n = 1;
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
	/* with several schedulers a dead one is given up after UNDELIVERED_MS (gp_client_ask):
	 * one connection attempt does not wait longer */
	int connect_ms = c->list.n > 1 ? UNDELIVERED_MS : CONNECT_MS;
	if (!c->pending.len) {
		if (gp_zmtp_send(c->z, &data, &len, 1, connect_ms, &e2) == 0) {
			c->refused = false;
			return 0;
		}
		c->refused = errno == ECONNREFUSED || errno == ENOENT;
	}
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

const char *gp_client_endpoint(const gp_client_t *c)
{
	return gp_schedlist_current(&c->list);
}

size_t gp_client_schedulers(const gp_client_t *c)
{
	return c->list.n;
}

bool gp_client_delivered(const gp_client_t *c)
{
	return !c->pending.len && gp_zmtp_connected(c->z);
}

int gp_client_switch(gp_client_t *c, const char *leader, gp_error_t *err)
{
	struct gp_schedlist l = c->list;
	bool round;
	/* the last move of a count of moves as long as the list goes to the next whatever the
	 * hint: standbys that name each other do not keep a client from the others */
	/* (a list of one follows once: the leader a standby names joins the list) */
	if (leader && c->hops + 1 < (l.n > 1 ? l.n : 2))
		round = gp_schedlist_follow(&l, leader) < 0 && l.cur == 0;
	else
		round = gp_schedlist_next(&l);
	gp_zmtp_t *z = gp_zmtp_create(gp_schedlist_current(&l), c->max_message, err);
	if (!z)
		return -1;
	gp_zmtp_destroy(&c->z);
	c->z = z;
	c->pending.len = 0; /* what waited for the last one is the caller's to send again */
	c->refused = false;
	c->list = l;
	/* as many moves as there are schedulers count as a round too: two standbys naming each
	 * other must not be asked in a tight loop */
	if (round || ++c->hops >= l.n) {
		c->hops = 0;
		return 1;
	}
	return 0;
}

/* The messages that change something: each carries a request id (docs/protocol.md). */
static bool mutating(Gpool__Msg__MCase t)
{
	switch (t) {
	case GPOOL__MSG__M_SUBMIT:
	case GPOOL__MSG__M_JOB_CONTROL:
	case GPOOL__MSG__M_NODE_CONTROL:
	case GPOOL__MSG__M_CARD_REPORT:
	case GPOOL__MSG__M_FILE_SET_PUT:
	case GPOOL__MSG__M_SHARE_SET:
		return true;
	default:
		return false;
	}
}

int gp_client_stamp(Gpool__Msg *m, uint8_t id[GP_REQUEST_ID_LEN])
{
	if (!mutating(m->m_case) || m->request_id.len)
		return 0;
	if (getrandom(id, GP_REQUEST_ID_LEN, 0) != GP_REQUEST_ID_LEN)
		return -1;
	m->request_id = (ProtobufCBinaryData){GP_REQUEST_ID_LEN, id};
	return 0;
}

Gpool__Msg *gp_client_ask(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err)
{
	uint64_t id;
	int64_t start = gp_mono_ms(), deadline = start + timeout_ms;
	if (gp_client_send(c, req, &id, err) < 0)
		return NULL;
	if (c->list.n < 2)
		return gp_client_recv(c, id, timeout_ms, err);
	if (c->refused) { /* nobody listens there: the next one at once */
		errno = ETIMEDOUT;
		return NULL;
	}
	for (;;) {
		/* undelivered, the request waits UNDELIVERED_MS at most; delivered, its timeout */
		int64_t now = gp_mono_ms(), end = deadline;
		if (!gp_client_delivered(c) && start + UNDELIVERED_MS < deadline)
			end = start + UNDELIVERED_MS;
		if (now >= end) {
			errno = ETIMEDOUT;
			return NULL;
		}
		int64_t left = end - now;
		Gpool__Msg *rep =
		    gp_client_recv(c, id, left < SLICE_MS ? (int)left : SLICE_MS, err);
		if (rep || errno != ETIMEDOUT)
			return rep;
	}
}

/* A standby's answer: ask the leader it names, or the next one. */
static bool not_leader(const Gpool__Msg *m)
{
	return m && m->m_case == GPOOL__MSG__M_ERROR && m->error &&
	       m->error->code == GPOOL__ERROR_CODE__ERROR_NOT_LEADER;
}

Gpool__Msg *gp_client_call(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err)
{
	uint8_t rid[GP_REQUEST_ID_LEN];
	if (gp_client_stamp(req, rid) < 0) {
		gp_errprintf(err, "cannot make a request id: %s", strerror(errno));
		return NULL;
	}
	int64_t deadline = gp_mono_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - gp_mono_ms();
		Gpool__Msg *rep = gp_client_ask(c, req, left > 0 ? (int)left : 0, err);
		bool again = not_leader(rep) || (!rep && errno == ETIMEDOUT && c->list.n > 1);
		if (!again || gp_mono_ms() >= deadline)
			return rep;
		int round = gp_client_switch(c, not_leader(rep) ? rep->error->leader : NULL, err);
		if (round < 0)
			return NULL;
		if (round) /* every one asked: an election may be under way */
			pause_ms(100);
	}
}
