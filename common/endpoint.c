/* endpoint.c: receive -> open -> check the signer -> dispatch, once for every control socket. */
#include "common/endpoint.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/log.h"

/* A routed endpoint's reply keys: the last key each sender's routing id sent (wire.h), in a
 * direct-mapped table; a sender whose slot another took is answered with a credential. */
#define KEY_SLOTS   4096
#define KEY_RID_MAX 32
struct key_slot {
	uint8_t rid_len; /* 0: empty */
	uint8_t rid[KEY_RID_MAX];
	uint8_t key[GP_WIRE_KEY_LEN];
};

struct gp_endpoint {
	struct gp_ep_config cfg;
	void *darg; /* the handlers' and the dispatch hooks' argument */
	gp_wire_t *wire;
	uid_t peer_uid;
	bool have_peer_uid;
	uint8_t rid[256];
	char addr[64];
	gp_buf_t sealed;
	zmq_msg_t bulk; /* the last envelope's attachment (bulk_in) */
	bool have_bulk;
	struct key_slot *keys; /* routed, authenticated endpoints */
};

static struct key_slot *key_slot(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len)
{
	if (!ep->keys || !rid || !rid_len || rid_len > KEY_RID_MAX)
		return NULL;
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < rid_len; i++)
		h = (h ^ rid[i]) * 16777619u;
	return &ep->keys[h % KEY_SLOTS];
}

/* after an envelope from rid opened: keep its key, or forget the one its slot held for rid */
static void key_note(gp_endpoint_t *ep, const struct gp_ep_envelope *e)
{
	struct key_slot *k = key_slot(ep, e->rid, e->rid_len);
	if (!k)
		return;
	if (e->from.has_key) {
		k->rid_len = (uint8_t)e->rid_len;
		memcpy(k->rid, e->rid, e->rid_len);
		memcpy(k->key, e->from.key, GP_WIRE_KEY_LEN);
	} else if (k->rid_len == e->rid_len && !memcmp(k->rid, e->rid, e->rid_len)) {
		sodium_memzero(k, sizeof(*k));
	}
}

/* seal b for rid: under its reply key when it gave one, else with a credential */
static int seal(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len, const gp_batch_t *b,
		gp_error_t *err)
{
	const struct key_slot *k = key_slot(ep, rid, rid_len);
	if (k && k->rid_len == rid_len && !memcmp(k->rid, rid, rid_len))
		return gp_wire_seal_mac(ep->wire, b, k->key, &ep->sealed, err);
	return gp_wire_seal(ep->wire, b, &ep->sealed, err);
}

gp_endpoint_t *gp_endpoint_create(const struct gp_ep_config *cfg)
{
	if (!cfg || (cfg->routed && !cfg->sock) || (cfg->nhandlers && !cfg->handlers)) {
		errno = EINVAL;
		return NULL;
	}
	gp_endpoint_t *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->cfg = *cfg;
	ep->darg = cfg->arg;
	if (!ep->cfg.peer_name)
		ep->cfg.peer_name = "the peer";
	if (!(ep->wire = gp_wire_create(cfg->auth, cfg->max_message)) ||
	    (cfg->routed && cfg->auth && !(ep->keys = calloc(KEY_SLOTS, sizeof(*ep->keys))))) {
		gp_wire_destroy(&ep->wire);
		free(ep);
		errno = ENOMEM;
		return NULL;
	}
	gp_wire_set_hint(ep->wire, cfg->hint);
	ep->cfg.hint = NULL; /* the wire keeps its copy */
	return ep;
}

void gp_endpoint_destroy(gp_endpoint_t **p)
{
	if (!p || !*p)
		return;
	gp_wire_destroy(&(*p)->wire);
	gp_buf_release(&(*p)->sealed);
	if ((*p)->keys)
		sodium_memzero((*p)->keys, KEY_SLOTS * sizeof(*(*p)->keys));
	free((*p)->keys);
	if ((*p)->have_bulk)
		zmq_msg_close(&(*p)->bulk);
	free(*p);
	*p = NULL;
}

void gp_endpoint_set_dispatch(gp_endpoint_t *ep, const struct gp_ep_handler *handlers, size_t n,
			      const struct gp_ep_hooks *hooks, void *darg)
{
	ep->cfg.handlers = handlers;
	ep->cfg.nhandlers = n;
	ep->cfg.hooks.accept = hooks->accept;
	ep->cfg.hooks.rejected = hooks->rejected;
	ep->cfg.hooks.done = hooks->done;
	ep->darg = darg;
}

void gp_endpoint_set_peer_uid(gp_endpoint_t *ep, uid_t uid)
{
	ep->peer_uid = uid;
	ep->have_peer_uid = true;
}

gp_wire_t *gp_endpoint_wire(gp_endpoint_t *ep)
{
	return ep->wire;
}

/* A routed socket's routing id frame; 0, or -1 when nothing is waiting. */
static int recv_rid(gp_endpoint_t *ep, int flags, struct gp_ep_envelope *e)
{
	zmq_msg_t id;
	zmq_msg_init(&id);
	if (zmq_msg_recv(&id, ep->cfg.sock, flags) < 0) {
		zmq_msg_close(&id);
		return -1;
	}
	e->rid_len = zmq_msg_size(&id) <= sizeof(ep->rid) ? zmq_msg_size(&id) : sizeof(ep->rid);
	memcpy(ep->rid, zmq_msg_data(&id), e->rid_len);
	e->rid = ep->rid;
	zmq_msg_close(&id);
	return 0;
}

/* Drop the rest of a malformed multipart message. */
static void drain(gp_endpoint_t *ep, zmq_msg_t *body)
{
	while (zmq_msg_more(body)) {
		zmq_msg_close(body);
		zmq_msg_init(body);
		if (zmq_msg_recv(body, ep->cfg.sock, ZMQ_DONTWAIT) < 0)
			break;
	}
}

static void refused(gp_endpoint_t *ep, const struct gp_ep_envelope *e, const void *data, size_t len,
		    Gpool__ErrorCode code, const char *why)
{
	if (ep->cfg.hooks.refused)
		ep->cfg.hooks.refused(ep->cfg.arg, e, data, len, code, why);
	else
		gp_warn("dropped a message from %s: %s", ep->cfg.peer_name, why);
}

/* An envelope's bytes opened and its signer checked; the refused hook called when `report`. */
static Gpool__Batch *open_body(gp_endpoint_t *ep, const void *data, size_t len, bool report,
			       struct gp_ep_envelope *e, gp_error_t *err)
{
	Gpool__ErrorCode code;
	Gpool__Batch *b = gp_wire_open(ep->wire, data, len, &e->from, &code, err);
	if (!b) {
		if (report)
			refused(ep, e, data, len, code, err->text);
		errno = EPROTO;
		return NULL;
	}
	if (ep->cfg.peer_only && ep->have_peer_uid && e->from.uid != ep->peer_uid) {
		gp_errprintf(err, "message signed by uid %u, not %s's uid %u",
			     (unsigned)e->from.uid, ep->cfg.peer_name, (unsigned)ep->peer_uid);
		if (report)
			refused(ep, e, data, len, GPOOL__ERROR_CODE__ERROR_PERMISSION, err->text);
		gpool__batch__free_unpacked(b, NULL);
		errno = EPERM;
		return NULL;
	}
	key_note(ep, e);
	e->batch = b;
	return b;
}

/* One envelope off the socket, opened and its signer checked. NULL with errno (EAGAIN: none
 * waiting; EACCES: not admitted; EPROTO, EPERM: refused, the refused hook was called when
 * `report`). */
static Gpool__Batch *take(gp_endpoint_t *ep, int flags, bool report, struct gp_ep_envelope *e,
			  gp_error_t *err)
{
	memset(e, 0, sizeof(*e));
	e->addr = "local";
	if (ep->cfg.routed && recv_rid(ep, flags, e) < 0) {
		errno = EAGAIN;
		return NULL;
	}
	zmq_msg_t body;
	zmq_msg_init(&body);
	if (zmq_msg_recv(&body, ep->cfg.sock, ep->cfg.routed ? ZMQ_DONTWAIT : flags) < 0) {
		zmq_msg_close(&body);
		/* a routing id without a body is malformed; otherwise nothing was waiting */
		errno = ep->cfg.routed ? EPROTO : EAGAIN;
		gp_errprintf(err, "nothing to receive");
		return NULL;
	}
	const char *pa = zmq_msg_gets(&body, "Peer-Address");
	if (pa) {
		snprintf(ep->addr, sizeof(ep->addr), "%s", pa);
		e->addr = ep->addr;
	}
	if (ep->have_bulk) {
		zmq_msg_close(&ep->bulk);
		ep->have_bulk = false;
	}
	/* an attachment (bulk_in): exactly one frame after the envelope */
	if (ep->cfg.bulk_in && zmq_msg_more(&body)) {
		zmq_msg_init(&ep->bulk);
		ep->have_bulk = true;
		if (zmq_msg_recv(&ep->bulk, ep->cfg.sock, ZMQ_DONTWAIT) >= 0 &&
		    !zmq_msg_more(&ep->bulk)) {
			e->bulk = zmq_msg_data(&ep->bulk);
			e->bulk_len = zmq_msg_size(&ep->bulk);
		} else {
			drain(ep, &ep->bulk);
			zmq_msg_close(&ep->bulk);
			ep->have_bulk = false;
			zmq_msg_close(&body);
			gp_errprintf(err, "message with more than one attachment refused");
			if (report)
				refused(ep, e, NULL, 0, GPOOL__ERROR_CODE__ERROR_MALFORMED,
					err->text);
			errno = EPROTO;
			return NULL;
		}
	}
	/* a well-formed peer sends exactly one frame (after its routing id), and the attachment */
	if (!e->bulk && zmq_msg_more(&body)) {
		drain(ep, &body);
		zmq_msg_close(&body);
		gp_errprintf(err, "multi-frame message refused");
		if (report)
			refused(ep, e, NULL, 0, GPOOL__ERROR_CODE__ERROR_MALFORMED, err->text);
		errno = EPROTO;
		return NULL;
	}
	e->len = zmq_msg_size(&body);
	if (ep->cfg.hooks.admit && ep->cfg.hooks.admit(ep->cfg.arg, e) < 0) {
		zmq_msg_close(&body);
		gp_errprintf(err, "not admitted");
		errno = EACCES;
		return NULL;
	}
	if (ep->cfg.hooks.unsealed && !e->bulk && e->len <= GP_EP_UNSEALED_MAX &&
	    ep->cfg.hooks.unsealed(ep->cfg.arg, e, zmq_msg_data(&body), e->len) > 0) {
		zmq_msg_close(&body);
		gp_errprintf(err, "taken without a credential");
		errno = EACCES;
		return NULL;
	}
	Gpool__Batch *b = open_body(ep, zmq_msg_data(&body), zmq_msg_size(&body), report, e, err);
	int saved = errno;
	zmq_msg_close(&body);
	errno = saved;
	return b;
}

Gpool__Batch *gp_endpoint_open(gp_endpoint_t *ep, const void *data, size_t len, const void *bulk,
			       size_t bulk_len, struct gp_ep_envelope *e, gp_error_t *err)
{
	memset(e, 0, sizeof(*e));
	e->addr = "local";
	e->bulk = bulk;
	e->bulk_len = bulk ? bulk_len : 0;
	return open_body(ep, data, len, false, e, err);
}

int gp_endpoint_seal(gp_endpoint_t *ep, const gp_batch_t *b, const void **data, size_t *len,
		     gp_error_t *err)
{
	if (seal(ep, NULL, 0, b, err) < 0)
		return -1;
	*data = ep->sealed.data;
	*len = ep->sealed.len;
	return 0;
}

Gpool__Batch *gp_endpoint_recv(gp_endpoint_t *ep, bool block, struct gp_ep_envelope *e,
			       gp_error_t *err)
{
	return take(ep, block ? 0 : ZMQ_DONTWAIT, false, e, err);
}

/* The message's body is there: a oneof member that is a message is never NULL for a handler. */
static bool has_body(const Gpool__Msg *m)
{
	const ProtobufCFieldDescriptor *fd =
	    protobuf_c_message_descriptor_get_field(&gpool__msg__descriptor, (unsigned)m->m_case);
	if (!fd)
		return false;
	if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
		return true;
	return *(void *const *)((const char *)m + fd->offset) != NULL;
}

static const struct gp_ep_handler *lookup(const gp_endpoint_t *ep, Gpool__Msg__MCase type)
{
	for (size_t k = 0; k < ep->cfg.nhandlers; k++)
		if (ep->cfg.handlers[k].type == type)
			return &ep->cfg.handlers[k];
	return NULL;
}

static void reject(gp_endpoint_t *ep, void *peer, const struct gp_ep_envelope *e,
		   const Gpool__Msg *m, Gpool__ErrorCode code, const char *why)
{
	if (ep->cfg.hooks.rejected)
		ep->cfg.hooks.rejected(ep->darg, peer, e, m, code, why);
	else
		gp_warn("dropped a message from %s: %s", ep->cfg.peer_name, why);
}

static void dispatch_one(gp_endpoint_t *ep, void *peer, const struct gp_ep_envelope *e,
			 const Gpool__Msg *m)
{
	char why[160];
	const struct gp_ep_handler *h = m->m_case ? lookup(ep, m->m_case) : NULL;
	if (!h || !has_body(m)) {
		snprintf(why, sizeof(why), "unexpected message (type %d)", (int)m->m_case);
		reject(ep, peer, e, m, GPOOL__ERROR_CODE__ERROR_UNEXPECTED, why);
		return;
	}
	if (h->who == GP_EP_PEER && (!ep->have_peer_uid || e->from.uid != ep->peer_uid)) {
		snprintf(why, sizeof(why), "%s signed by uid %u, not %s's uid %u", h->name,
			 (unsigned)e->from.uid, ep->cfg.peer_name, (unsigned)ep->peer_uid);
		reject(ep, peer, e, m, GPOOL__ERROR_CODE__ERROR_PERMISSION, why);
		return;
	}
	h->fn(ep->darg, peer, m);
}

void gp_endpoint_deliver(gp_endpoint_t *ep, const struct gp_ep_envelope *e)
{
	void *peer = NULL;
	if (ep->cfg.hooks.accept && ep->cfg.hooks.accept(ep->darg, e, &peer) < 0)
		return;
	for (size_t i = 0; i < e->batch->n_msgs; i++)
		dispatch_one(ep, peer, e, e->batch->msgs[i]);
	if (ep->cfg.hooks.done)
		ep->cfg.hooks.done(ep->darg, peer, e);
}

int gp_endpoint_dispatch(gp_endpoint_t *ep, int max)
{
	int n = 0;
	while (n < max) {
		struct gp_ep_envelope e;
		gp_error_t err = {{0}};
		Gpool__Batch *b = take(ep, ZMQ_DONTWAIT, true, &e, &err);
		if (!b) {
			if (errno == EAGAIN)
				break;
			n++; /* refused or not admitted: taken off the socket all the same */
			continue;
		}
		n++;
		gp_endpoint_deliver(ep, &e);
		gpool__batch__free_unpacked(b, NULL);
	}
	return n;
}

int gp_endpoint_send(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len, const gp_batch_t *b,
		     gp_error_t *err)
{
	if (seal(ep, rid, rid_len, b, err) < 0)
		return -1;
	int wait = ep->cfg.blocking_send ? 0 : ZMQ_DONTWAIT;
	if ((ep->cfg.routed && zmq_send(ep->cfg.sock, rid, rid_len, ZMQ_SNDMORE | wait) < 0) ||
	    zmq_send(ep->cfg.sock, ep->sealed.data, ep->sealed.len, wait) < 0) {
		int saved = errno;
		gp_errprintf(err, "send: %s", zmq_strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

int gp_endpoint_send_bulk(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len,
			  const gp_batch_t *b, void *data, size_t len,
			  void (*free_fn)(void *data, void *hint), gp_error_t *err)
{
	zmq_msg_t att;
	if (zmq_msg_init_data(&att, data, len, free_fn, NULL) < 0) {
		free_fn(data, NULL);
		return gp_errprintf(err, "out of memory");
	}
	int wait = ep->cfg.blocking_send ? 0 : ZMQ_DONTWAIT;
	if (seal(ep, rid, rid_len, b, err) < 0) {
		zmq_msg_close(&att);
		return -1;
	}
	/* a ROUTER queues a multipart message whole once its first frame is taken */
	if ((ep->cfg.routed && zmq_send(ep->cfg.sock, rid, rid_len, ZMQ_SNDMORE | wait) < 0) ||
	    zmq_send(ep->cfg.sock, ep->sealed.data, ep->sealed.len, ZMQ_SNDMORE | wait) < 0 ||
	    zmq_msg_send(&att, ep->cfg.sock, wait) < 0) {
		int saved = errno;
		zmq_msg_close(&att);
		gp_errprintf(err, "send: %s", zmq_strerror(saved));
		errno = saved;
		return -1;
	}
	return 0;
}

int gp_endpoint_send_msg(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len, const Gpool__Msg *m,
			 gp_error_t *err)
{
	gp_batch_t b = {0};
	int rc = gp_batch_add(&b, m);
	if (rc < 0)
		gp_errprintf(err, "out of memory");
	else
		rc = gp_endpoint_send(ep, rid, rid_len, &b, err);
	int saved = errno;
	gp_batch_release(&b);
	errno = saved;
	return rc;
}
