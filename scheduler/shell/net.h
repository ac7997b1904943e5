/* net.h: gschedd's one ROUTER socket and its message endpoint (common/endpoint.h). Receiving
 * applies the cheap checks first (size, then a token bucket per source address, so a flooder
 * spends only its own budget: the endpoint's admit hook), then opens the envelope
 * (credential); a refused one is logged, noted and answered here (the refused hook). Where
 * the messages go is handlers.c's table. Sending collects messages per peer into one batch,
 * sealed with one credential when the batch is flushed.
 */
#ifndef GPOOL_NET_H
#define GPOOL_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/endpoint.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "common/wire.h"

struct net;

struct net_msg {
	uint8_t rid[256];
	size_t rid_len;
	char addr[64];
	struct gp_sender from;
	Gpool__Batch *batch;
};

struct net *net_create(const char *endpoint, gp_auth_t *auth, size_t max_message, int rate_per_addr,
		       gp_error_t *err);
void net_destroy(struct net **n);

/* The per-address budget, messages per second (0 or less: unbounded). */
/* A routing id whose envelope opened (a credential that decodes): its envelopes no longer
 * spend its address's byte budget (the envelope budget still applies). */
void net_authed(struct net *n, const uint8_t *rid, size_t len);

/* Housekeeping from the loop's tick: expired join bundles go (once a minute); memory that large
 * untrusted envelopes left in malloc's arenas goes back to the system (at most once a second). */
void net_tick(struct net *n, int64_t now);

/* Each untrusted source address's budgets: messages and bytes per second (<= 0: none). */
void net_set_rate(struct net *n, int rate_per_addr, double bytes_per_addr);

/* Peers whose routing id starts with prefix are local (the HTTP thread): their batches go
 * unsealed to sock as [rid][body] instead of to the ROUTER socket. */
void net_set_local(struct net *n, void *sock, const void *prefix, size_t prefix_len);
struct join;
/* Answer join requests (envelopes with no credential that carry only a JoinFetch) from j;
 * net_tick removes its expired bundles once a minute. */
void net_set_join(struct net *n, struct join *j);

/* The ZeroMQ context (for inproc sockets). */
void *net_context(struct net *n);

/* The socket for zmq_poll. */
void *net_socket(struct net *n);

/* The endpoint over the socket: handlers.c sets its table and dispatches from it. */
gp_endpoint_t *net_endpoint(struct net *n);

/* Receive one envelope without blocking and without dispatching it (tests). 1: *m filled
 * (free its batch), 0: nothing pending, -1: a message was refused. */
int net_recv(struct net *n, struct net_msg *m);

/* A registered agent's routing id: its messages skip the per-address budget, so a flooder on
 * the same PC cannot starve that PC's agent (heartbeats would stop, the node would go DOWN). */
void net_trust(struct net *n, const uint8_t *rid, size_t rid_len);

/* Queue a message for a peer (packed now). A durable message waits for the open transaction
 * to commit; others (query answers, heartbeat replies) go out at the next flush. */
int net_queue(struct net *n, const uint8_t *rid, size_t rid_len, const Gpool__Msg *msg,
	      bool durable);
/* The same with a message packed as a batch member (gp_batch_member). 0 / -1. */
int net_queue_member(struct net *n, const uint8_t *rid, size_t rid_len, const uint8_t *member,
		     size_t len, bool durable);
/* Send a reply now, out of the outboxes, with data (malloc'd, taken over: freed once sent or
 * when sending fails) as an attachment frame after the envelope (a chunk, checked by its hash
 * on arrival). 0 / -1. */
int net_send_bulk(struct net *n, const uint8_t *rid, size_t rid_len, const Gpool__Msg *msg,
		  void *data, size_t len);
/* Seal and send every peer's batch; durable ones only when with_durable. */
int net_flush(struct net *n, bool with_durable);

/* Agents refused lately: a NodeRegister that failed the envelope's checks (credential of
 * another MUNGE key, another protocol version, ...). The claimed name is unverified. */
struct net_refused {
	char name[64];
	char addr[64];
	char reason[300];
	uint64_t count;
	double last;
};
/* The list (valid until the next net_recv), most recent first is not promised. */
const struct net_refused *net_refused_list(const struct net *n, size_t *count);

struct net_stats {
	uint64_t received, refused, rate_dropped, sent;
	double munge_sec;
};
void net_stats(const struct net *n, struct net_stats *st);

#endif
