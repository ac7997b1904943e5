/* peer.c: the agent's chunk cache, served to other agents from a thread of its own (see
 * agent.h and docs/staging.md).
 *
 * The thread owns the ROUTER socket: a run of 4 MiB chunks never delays the agent's
 * heartbeats. A request for a chunk that is not in the cache yet is held (up to its wait_ms)
 * and answered as soon as the node's own staging has stored it, so a chain of nodes forwards
 * each chunk while the rest are still arriving. Chunks go as an attachment frame after a small
 * sealed reply and are not hashed here: every asker hashes what it gets.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/agent/agent.h"
#include "common/chunk.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#define PEER_BURST    64    /* requests taken per pass */
#define HELD_MAX      4096  /* requests held at once; more are answered "not here" */
#define HOLD_MAX_MS   30000 /* the longest a request is held, whatever it asks */
#define HOLD_CHECK_MS 5	    /* held requests are looked up again this often */

struct held {
	uint8_t rid[256];
	size_t rid_len;
	uint64_t id;
	uint8_t h[GP_HASH_LEN];
	bool attach;
	int64_t deadline;
};

/* the largest request a peer takes: a ChunkGet and its credential */
#define PEER_MAX_REQUEST (64 << 10)

struct peer {
	const _Atomic int64_t *sched_heard_ms; /* the agent's (agent.h) */
	const _Atomic int64_t *sched_requeue_at_ms;
	void *sock;
	gp_auth_t *auth;
	gp_wire_t *wire;
	char ep[300];
	char cache[4200];
	pthread_t thread;
	bool running;
	int stop_fd;
	struct held *held;
	size_t nheld;
	uint64_t served, bytes;
	gp_buf_t out;
};

static void *serve_thread(void *arg);

struct peer *peer_create(struct agent *a)
{
	long port = (long)gp_config_int(a->cfg, "peer_port");
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->stop_fd = -1;
	p->sched_heard_ms = &a->sched_heard_ms;
	p->sched_requeue_at_ms = &a->sched_requeue_at_ms;
	snprintf(p->cache, sizeof(p->cache), "%s/cache", a->state_dir);
	if (port <= 0 || port > 65535 || !a->addr[0])
		return p;
	gp_error_t err;
	char bind_ep[300];
	snprintf(bind_ep, sizeof(bind_ep), "tcp://%s:%ld", a->addr, port);
	/* it takes only ChunkGet requests: a frame larger than PEER_MAX_REQUEST is dropped by
	 * ZeroMQ as it arrives (the connection closed), never buffered */
	int linger = 0, hwm = 64;
	int64_t maxmsg = PEER_MAX_REQUEST;
	if (!(p->auth = gp_auth_create(NULL, &err)) ||
	    !(p->wire = gp_wire_create(p->auth, PEER_MAX_REQUEST)) ||
	    !(p->held = calloc(HELD_MAX, sizeof(*p->held))) ||
	    (p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    !(p->sock = zmq_socket(a->zctx, ZMQ_ROUTER))) {
		gp_warn("peer serving off: cannot set up its socket");
		goto off;
	}
	zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	if (zmq_bind(p->sock, bind_ep) < 0) {
		gp_warn("peer serving off: cannot bind '%s': %s", bind_ep, zmq_strerror(errno));
		goto off;
	}
	if (pthread_create(&p->thread, NULL, serve_thread, p) != 0) {
		gp_warn("peer serving off: cannot start its thread");
		goto off;
	}
	p->running = true;
	snprintf(p->ep, sizeof(p->ep), "%s", bind_ep);
	gp_info("serving the chunk cache to peers on %s", p->ep);
	return p;
off:
	if (p->sock)
		zmq_close(p->sock);
	p->sock = NULL;
	gp_wire_destroy(&p->wire);
	gp_auth_destroy(&p->auth);
	return p;
}

void peer_destroy(struct peer **pp)
{
	if (!pp || !*pp)
		return;
	struct peer *p = *pp;
	if (p->running) {
		uint64_t one = 1;
		if (write(p->stop_fd, &one, sizeof(one)) < 0)
			gp_warn("peer: cannot stop the serving thread: %s", strerror(errno));
		else
			pthread_join(p->thread, NULL);
	}
	if (p->sock)
		zmq_close(p->sock);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	gp_wire_destroy(&p->wire);
	gp_auth_destroy(&p->auth);
	gp_buf_release(&p->out);
	free(p->held);
	free(p);
	*pp = NULL;
}

const char *peer_endpoint(const struct peer *p)
{
	return p ? p->ep : "";
}

static void bulk_free(void *data, void *hint)
{
	(void)hint;
	free(data);
}

/* Seal m and send it to rid, with data (taken over) as the attachment when not NULL. */
static void reply(struct peer *p, const uint8_t *rid, size_t rid_len, Gpool__Msg *m, void *data,
		  size_t len)
{
	gp_batch_t b = {0};
	gp_error_t err;
	zmq_msg_t att;
	bool have_att = data && zmq_msg_init_data(&att, data, len, bulk_free, NULL) == 0;
	if (data && !have_att)
		free(data);
	if (gp_batch_add(&b, m) == 0 && gp_wire_seal(p->wire, &b, &p->out, &err) == 0 &&
	    (!data || have_att)) {
		int more = have_att ? ZMQ_SNDMORE : 0;
		if (zmq_send(p->sock, rid, rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
		    zmq_send(p->sock, p->out.data, p->out.len, more | ZMQ_DONTWAIT) >= 0 &&
		    have_att && zmq_msg_send(&att, p->sock, ZMQ_DONTWAIT) >= 0)
			have_att = false; /* ZeroMQ has it now */
	}
	if (have_att)
		zmq_msg_close(&att);
	gp_batch_release(&b);
}

static void reply_error(struct peer *p, const uint8_t *rid, size_t rid_len, uint64_t id,
			Gpool__ErrorCode code, const char *text)
{
	Gpool__Msg m;
	Gpool__Error e;
	gp_msg_error(&m, &e, id, code, text);
	reply(p, rid, rid_len, &m, NULL, 0);
}

/* Answer with chunk h when the cache has it: true when answered. */
static bool send_chunk(struct peer *p, const uint8_t *rid, size_t rid_len, uint64_t id,
		       const uint8_t *h, bool attach, bool recheck)
{
	uint8_t *d;
	size_t n;
	/* not hashed here unless the asker got a damaged copy before: it checks every chunk */
	if ((recheck ? gp_chunk_read(p->cache, h, &d, &n)
		     : gp_chunk_read_unchecked(p->cache, h, &d, &n)) < 0)
		return false;
	Gpool__ChunkGetReply r = GPOOL__CHUNK_GET_REPLY__INIT;
	Gpool__Msg out = GPOOL__MSG__INIT;
	out.id = id;
	out.m_case = GPOOL__MSG__M_CHUNK_GET_REPLY;
	out.chunk_get_reply = &r;
	p->served++;
	p->bytes += n;
	if (attach) {
		r.attached = true;
		reply(p, rid, rid_len, &out, d, n);
		return true;
	}
	r.data = (ProtobufCBinaryData){n, d};
	reply(p, rid, rid_len, &out, NULL, 0);
	free(d);
	return true;
}

/* An agent whose lease ran out asks whether we hear the scheduler (worker/agent/fence.h). */
static void serve_status(struct peer *p, const uint8_t *rid, size_t rid_len, uint64_t id)
{
	Gpool__PeerStatusReply r = GPOOL__PEER_STATUS_REPLY__INIT;
	int64_t heard = atomic_load(p->sched_heard_ms), now = gp_mono_ms();
	int64_t requeue_at = atomic_load(p->sched_requeue_at_ms);
	r.sched_heard_ms_ago = heard ? now - heard : -1;
	r.sched_requeue_in_ms = heard && requeue_at > now ? requeue_at - now : 0;
	Gpool__Msg out = GPOOL__MSG__INIT;
	out.id = id;
	out.m_case = GPOOL__MSG__M_PEER_STATUS_REPLY;
	out.peer_status_reply = &r;
	reply(p, rid, rid_len, &out, NULL, 0);
}

static void serve(struct peer *p, const uint8_t *rid, size_t rid_len, const Gpool__Msg *m)
{
	if (m->m_case == GPOOL__MSG__M_PEER_STATUS) {
		serve_status(p, rid, rid_len, m->id);
		return;
	}
	if (m->m_case != GPOOL__MSG__M_CHUNK_GET || !m->chunk_get) {
		reply_error(p, rid, rid_len, m->id, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
			    "a peer serves chunks and its word on the scheduler only");
		return;
	}
	const Gpool__ChunkGet *q = m->chunk_get;
	if (q->hash.len != GP_HASH_LEN) {
		reply_error(p, rid, rid_len, m->id, GPOOL__ERROR_CODE__ERROR_INVALID,
			    "a hash is 32 bytes");
		return;
	}
	if (send_chunk(p, rid, rid_len, m->id, q->hash.data, q->attach, q->recheck))
		return;
	if (q->wait_ms && !q->recheck && p->nheld < HELD_MAX && rid_len <= sizeof(p->held[0].rid)) {
		/* this node's staging is still fetching it: answered when it lands */
		struct held *hd = &p->held[p->nheld++];
		memcpy(hd->rid, rid, rid_len);
		hd->rid_len = rid_len;
		hd->id = m->id;
		memcpy(hd->h, q->hash.data, GP_HASH_LEN);
		hd->attach = q->attach;
		hd->deadline = gp_mono_ms() + (q->wait_ms < HOLD_MAX_MS ? q->wait_ms : HOLD_MAX_MS);
		return;
	}
	/* not here (yet): the asker tries again, or the scheduler */
	reply_error(p, rid, rid_len, m->id, GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
		    "not in this cache");
}

/* Answer the held requests whose chunk arrived, and those whose wait is over. */
static void check_held(struct peer *p)
{
	int64_t now = gp_mono_ms();
	for (size_t i = 0; i < p->nheld;) {
		struct held *hd = &p->held[i];
		bool done = gp_chunk_has(p->cache, hd->h) &&
			    send_chunk(p, hd->rid, hd->rid_len, hd->id, hd->h, hd->attach, false);
		if (!done && now >= hd->deadline) {
			reply_error(p, hd->rid, hd->rid_len, hd->id,
				    GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
				    "not in this cache in time");
			done = true;
		}
		if (done)
			p->held[i] = p->held[--p->nheld];
		else
			i++;
	}
}

/* Take up to PEER_BURST requests off the socket. */
static void take(struct peer *p)
{
	for (int k = 0; k < PEER_BURST; k++) {
		zmq_msg_t rid, body;
		zmq_msg_init(&rid);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&rid, p->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&rid);
			zmq_msg_close(&body);
			return;
		}
		if (!zmq_msg_more(&rid) || zmq_msg_recv(&body, p->sock, ZMQ_DONTWAIT) < 0 ||
		    zmq_msg_more(&body)) {
			/* a request is one frame: drop whatever else came */
			while (zmq_msg_more(&body)) {
				zmq_msg_close(&body);
				zmq_msg_init(&body);
				if (zmq_msg_recv(&body, p->sock, ZMQ_DONTWAIT) < 0)
					break;
			}
			zmq_msg_close(&rid);
			zmq_msg_close(&body);
			continue;
		}
		const uint8_t *r = zmq_msg_data(&rid);
		size_t rlen = zmq_msg_size(&rid);
		struct gp_sender from;
		Gpool__ErrorCode code;
		gp_error_t err;
		Gpool__Batch *b = gp_wire_open(p->wire, zmq_msg_data(&body), zmq_msg_size(&body),
					       &from, &code, &err);
		if (!b) {
			gp_warn("peer request refused: %s", err.text);
		} else if (from.uid != 0 && from.uid != geteuid()) {
			/* only agents (our account) and root read the cache */
			gp_warn("peer request signed by uid %u: refused", (unsigned)from.uid);
			for (size_t i = 0; i < b->n_msgs; i++)
				reply_error(p, r, rlen, b->msgs[i]->id,
					    GPOOL__ERROR_CODE__ERROR_PERMISSION,
					    "only the agents' account may read a peer's cache");
		} else {
			for (size_t i = 0; i < b->n_msgs; i++)
				serve(p, r, rlen, b->msgs[i]);
		}
		if (b)
			gpool__batch__free_unpacked(b, NULL);
		zmq_msg_close(&rid);
		zmq_msg_close(&body);
	}
}

static void *serve_thread(void *arg)
{
	struct peer *p = arg;
	while (1) {
		zmq_pollitem_t items[2] = {
		    {.socket = p->sock, .events = ZMQ_POLLIN},
		    {.fd = p->stop_fd, .events = ZMQ_POLLIN},
		};
		if (zmq_poll(items, 2, p->nheld ? HOLD_CHECK_MS : -1) < 0 && errno != EINTR) {
			gp_err("peer: poll: %s", zmq_strerror(errno));
			break;
		}
		if (items[1].revents)
			break;
		if (items[0].revents)
			take(p);
		if (p->nheld)
			check_held(p);
	}
	return NULL;
}
