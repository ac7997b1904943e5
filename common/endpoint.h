/* endpoint.h: one message endpoint for every control-path socket (gschedd's agents and
 * clients, gworkerd's scheduler link, the step channel between gworkerd and its gstepds, the
 * client library).
 *
 * An endpoint holds a ZeroMQ socket the caller made (bound or connected, options set) and the
 * envelope wire over it (common/wire.h: seal with one MUNGE credential, open in order of
 * cost). Receiving takes an envelope off the socket, opens it, applies the sender-uid policy
 * and hands each message to the handler its type names in a table:
 *
 *   static const struct gp_ep_handler handlers[] = {
 *           { GPOOL__MSG__M_LAUNCH, GP_EP_PEER, on_launch, "launch" },
 *           { GPOOL__MSG__M_KILL, GP_EP_PEER, on_kill, "kill" },
 *   };
 *
 * The policy: GP_EP_PEER messages are taken only when the envelope was signed by the peer's
 * uid (gp_endpoint_set_peer_uid: the scheduler's account, the agents' account), GP_EP_ANYONE
 * from any uid munged vouches for. With peer_only set in the config, an envelope signed by
 * anyone else is refused as a whole. A message of a type the table lacks, or from a sender the
 * policy refuses, goes to the hooks' rejected() (gschedd answers it with an Error), never to a
 * handler, and neither does a message of the type whose body is missing.
 */
#ifndef GPOOL_ENDPOINT_H
#define GPOOL_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/wire.h"
#include "proto/gpool.pb-c.h"

typedef struct gp_endpoint gp_endpoint_t;

/* Who may send a message type. */
enum gp_ep_policy {
	GP_EP_ANYONE = 0, /* any uid munged vouches for (or anyone on a local, unsealed wire) */
	GP_EP_PEER = 1,	  /* only the peer's uid (gp_endpoint_set_peer_uid) */
};

/* One received envelope: where it came from and who signed it. */
struct gp_ep_envelope {
	const uint8_t *rid; /* a routed (ROUTER) socket: the sender's routing id, else NULL */
	size_t rid_len;
	const char *addr; /* the sender's address ("Peer-Address"), "local" when unknown */
	size_t len;	  /* the envelope's bytes (its attachment, if any, not counted) */
	struct gp_sender from;
	const Gpool__Batch *batch; /* NULL in refused() */
	/* the attachment: a frame after the envelope, outside the credential (bulk_in only; NULL
	 * when none). Valid until the endpoint's next receive. The receiver checks it by content
	 * (a chunk against its hash), never trusts it for who sent it. */
	const void *bulk;
	size_t bulk_len;
};

/* A handler: arg is the endpoint's (the daemon's context), peer what accept() returned for the
 * envelope (NULL without an accept hook). */
typedef void (*gp_ep_handler_f)(void *arg, void *peer, const Gpool__Msg *m);

struct gp_ep_handler {
	Gpool__Msg__MCase type;
	enum gp_ep_policy who;
	gp_ep_handler_f fn;
	const char *name; /* in log lines and refusals */
};

struct gp_ep_hooks {
	/* Before anything is received from a sender (routed sockets: after its routing id and
	 * address are known, before the credential is checked): -1 drops the envelope unopened,
	 * the cheap way (gschedd's per-address budget). */
	int (*admit)(void *arg, const struct gp_ep_envelope *e);
	/* An envelope of at most GP_EP_UNSEALED_MAX bytes, after admit and before it is opened
	 * (gschedd's join requests, which carry no credential: scheduler/join.h): 1 when the
	 * hook took it (answered or dropped), 0 to open it as usual. */
	int (*unsealed)(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len);
	/* After the envelope is opened and its sender passed the peer_only check: *peer is what
	 * the handlers get; -1 drops the envelope. */
	int (*accept)(void *arg, const struct gp_ep_envelope *e, void **peer);
	/* An envelope that could not be opened or whose signer the policy refuses: code is the
	 * Gpool__ErrorCode to report, data/len its bytes. Without the hook: a warning. */
	void (*refused)(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len,
			Gpool__ErrorCode code, const char *why);
	/* A message no handler takes or its sender may not send. Without the hook: a warning. */
	void (*rejected)(void *arg, void *peer, const struct gp_ep_envelope *e, const Gpool__Msg *m,
			 Gpool__ErrorCode code, const char *why);
	/* After every message of an envelope went to its handler (or was rejected). */
	void (*done)(void *arg, void *peer, const struct gp_ep_envelope *e);
};

/* The largest envelope the unsealed hook is shown. */
#define GP_EP_UNSEALED_MAX 256

struct gp_ep_config {
	void *sock;	    /* the caller's; the endpoint neither binds nor closes it. NULL (not
			       routed): the caller moves the bytes (gp_endpoint_open, _seal) */
	bool routed;	    /* a ROUTER socket: [routing id][envelope] frames */
	gp_auth_t *auth;    /* NULL: a local, unsealed wire (agent <-> supervisor) */
	size_t max_message; /* envelopes larger are refused before they are opened */
	const struct gp_ep_handler *handlers;
	size_t nhandlers;
	bool peer_only;	       /* every envelope must be signed by the peer's uid */
	bool blocking_send;    /* a full send queue waits (a command) instead of failing */
	bool bulk_in;	       /* an envelope may be followed by one attachment frame */
	const char *peer_name; /* "the scheduler", "a supervisor": in log lines */
	const char *hint;      /* what this side calls itself in its envelopes (gp_wire_set_hint) */
	struct gp_ep_hooks hooks;
	void *arg;
};

/* NULL with errno set (EINVAL, ENOMEM). */
gp_endpoint_t *gp_endpoint_create(const struct gp_ep_config *cfg);
void gp_endpoint_destroy(gp_endpoint_t **ep);

/* Where messages go, when the code that owns the socket is not the code that handles them
 * (gschedd: net.c owns the socket, handlers.c the table): replaces the config's handlers and
 * its accept, rejected and done hooks; those and the handlers then get darg, while admit and
 * refused keep the config's arg. */
void gp_endpoint_set_dispatch(gp_endpoint_t *ep, const struct gp_ep_handler *handlers, size_t n,
			      const struct gp_ep_hooks *hooks, void *darg);

/* Dispatch an envelope that came another way (gschedd's HTTP thread, tests, fuzzers) exactly
 * as one received: accept, the policy, the handlers, done. */
void gp_endpoint_deliver(gp_endpoint_t *ep, const struct gp_ep_envelope *e);

/* The uid GP_EP_PEER messages (and, with peer_only, every envelope) must be signed by. */
void gp_endpoint_set_peer_uid(gp_endpoint_t *ep, uid_t uid);

/* Take up to max envelopes off the socket without blocking and hand their messages to the
 * handlers. Returns the number of envelopes taken (refused ones included), 0 when none was
 * waiting. */
int gp_endpoint_dispatch(gp_endpoint_t *ep, int max);

/* For request/reply callers (the client library): receive one envelope (block: wait for it),
 * open it and apply peer_only. Returns the batch (free with gpool__batch__free_unpacked) with
 * *e filled (its rid points into the endpoint until the next receive), or NULL with errno:
 * EAGAIN nothing waiting, EPROTO the envelope was refused, EPERM signed by another uid, and
 * err filled. */
Gpool__Batch *gp_endpoint_recv(gp_endpoint_t *ep, bool block, struct gp_ep_envelope *e,
			       gp_error_t *err);

/* For a caller that moves the bytes itself (the client library over common/zmtp.c): open an
 * envelope's bytes (and its attachment, NULL when none) as gp_endpoint_recv would, or seal a
 * batch into bytes valid until the endpoint's next seal or send. NULL with errno as
 * gp_endpoint_recv / 0, -1. */
Gpool__Batch *gp_endpoint_open(gp_endpoint_t *ep, const void *data, size_t len, const void *bulk,
			       size_t bulk_len, struct gp_ep_envelope *e, gp_error_t *err);
int gp_endpoint_seal(gp_endpoint_t *ep, const gp_batch_t *b, const void **data, size_t *len,
		     gp_error_t *err);

/* Seal b and send it (to rid on a routed socket; rid NULL otherwise), without blocking unless
 * blocking_send. 0 / -1 with errno (EAGAIN: the peer's queue is full, EHOSTUNREACH: it is
 * gone). */
int gp_endpoint_send(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len, const gp_batch_t *b,
		     gp_error_t *err);
/* Seal b and send it followed by data (len bytes) as an attachment frame that the credential
 * does not cover (the receiver checks it by content). data is handed to ZeroMQ without a copy
 * and released with free_fn(data, NULL) once sent, also when sending fails. 0 / -1 as
 * gp_endpoint_send. */
int gp_endpoint_send_bulk(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len,
			  const gp_batch_t *b, void *data, size_t len,
			  void (*free_fn)(void *data, void *hint), gp_error_t *err);
/* The same for one message. */
int gp_endpoint_send_msg(gp_endpoint_t *ep, const uint8_t *rid, size_t rid_len, const Gpool__Msg *m,
			 gp_error_t *err);

/* The wire underneath (statistics). */
gp_wire_t *gp_endpoint_wire(gp_endpoint_t *ep);

#endif
