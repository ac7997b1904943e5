/* peer.c: the agent's chunk cache, served to other agents (see agent.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/agent.h"
#include "common/chunk.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

/* requests served per pass: heartbeats and the supervisors' events must not wait behind a
 * run of 4 MiB chunks (a late heartbeat reply expires the node's lease) */
#define PEER_RECV_PER_PASS 2

struct peer {
	void *sock;
	gp_auth_t *auth;
	gp_wire_t *wire;
	char ep[300];
	char cache[4200];
	uint64_t served, bytes;
	gp_buf_t out;
};

struct peer *peer_create(struct agent *a)
{
	long port = (long)gp_config_int(a->cfg, "peer_port");
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	snprintf(p->cache, sizeof(p->cache), "%s/cache", a->state_dir);
	if (port <= 0 || port > 65535 || !a->addr[0])
		return p;
	gp_error_t err;
	char bind_ep[300];
	snprintf(bind_ep, sizeof(bind_ep), "tcp://%s:%ld", a->addr, port);
	int linger = 0;
	if (!(p->auth = gp_auth_create(NULL, &err)) ||
	    !(p->wire = gp_wire_create(p->auth, (size_t)gp_config_int(a->cfg, "max_message"))) ||
	    !(p->sock = zmq_socket(a->zctx, ZMQ_ROUTER))) {
		gp_warn("peer serving off: cannot set up its socket");
		goto off;
	}
	zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(p->sock, bind_ep) < 0) {
		gp_warn("peer serving off: cannot bind '%s': %s", bind_ep, zmq_strerror(errno));
		goto off;
	}
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
	if (p->sock)
		zmq_close(p->sock);
	gp_wire_destroy(&p->wire);
	gp_auth_destroy(&p->auth);
	gp_buf_release(&p->out);
	free(p);
	*pp = NULL;
}

void *peer_socket(struct peer *p)
{
	return p ? p->sock : NULL;
}

const char *peer_endpoint(const struct peer *p)
{
	return p ? p->ep : "";
}

static void reply(struct peer *p, zmq_msg_t *rid, Gpool__Msg *m)
{
	gp_batch_t b = {0};
	gp_error_t err;
	if (gp_batch_add(&b, m) == 0 && gp_wire_seal(p->wire, &b, &p->out, &err) == 0) {
		if (zmq_send(p->sock, zmq_msg_data(rid), zmq_msg_size(rid),
			     ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
			zmq_send(p->sock, p->out.data, p->out.len, ZMQ_DONTWAIT);
	}
	gp_batch_release(&b);
}

static void reply_error(struct peer *p, zmq_msg_t *rid, uint64_t id, Gpool__ErrorCode code,
			const char *text)
{
	Gpool__Msg m;
	Gpool__Error e;
	gp_msg_error(&m, &e, id, code, text);
	reply(p, rid, &m);
}

static void serve(struct peer *p, zmq_msg_t *rid, const Gpool__Msg *m)
{
	if (m->m_case != GPOOL__MSG__M_CHUNK_GET) {
		reply_error(p, rid, m->id, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
			    "a peer serves chunks only");
		return;
	}
	const Gpool__ChunkGet *q = m->chunk_get;
	uint8_t *d;
	size_t n;
	/* not hashed here: the asker checks every chunk it gets, and asks the scheduler when a
	 * peer's copy is damaged */
	char path[4400];
	if (q->hash.len != GP_HASH_LEN ||
	    gp_chunk_path(p->cache, q->hash.data, path, sizeof(path)) < 0 ||
	    gp_read_file(path, GP_CHUNK_SIZE, &d, &n) < 0) {
		/* not here (yet): the asker tries again, or the scheduler */
		reply_error(p, rid, m->id, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "not in this cache");
		return;
	}
	Gpool__ChunkGetReply r = GPOOL__CHUNK_GET_REPLY__INIT;
	r.data = (ProtobufCBinaryData){n, d};
	Gpool__Msg out = GPOOL__MSG__INIT;
	out.id = m->id;
	out.m_case = GPOOL__MSG__M_CHUNK_GET_REPLY;
	out.chunk_get_reply = &r;
	reply(p, rid, &out);
	p->served++;
	p->bytes += n;
	free(d);
}

void peer_recv(struct agent *a)
{
	struct peer *p = a->peer;
	for (int k = 0; p && p->sock && k < PEER_RECV_PER_PASS; k++) {
		zmq_msg_t rid, body;
		zmq_msg_init(&rid);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&rid, p->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&rid);
			zmq_msg_close(&body);
			return;
		}
		if (!zmq_msg_more(&rid) || zmq_msg_recv(&body, p->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&rid);
			zmq_msg_close(&body);
			continue;
		}
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
				reply_error(p, &rid, b->msgs[i]->id,
					    GPOOL__ERROR_CODE__ERROR_PERMISSION,
					    "only the agents' account may read a peer's cache");
		} else {
			for (size_t i = 0; i < b->n_msgs; i++)
				serve(p, &rid, b->msgs[i]);
		}
		if (b)
			gpool__batch__free_unpacked(b, NULL);
		zmq_msg_close(&rid);
		zmq_msg_close(&body);
	}
}
