/* orders.h: what gschedd's core decided and the shell is to do. The state core (jobs, nodes,
 * placement, lifecycle, the handlers' decisions) does no I/O: it appends orders here (send this
 * message to a node's agent, start this attempt, save this job's row, reply to that peer), and
 * the loop carries them out after each event (effects.c), in the order given. A test drives the
 * core with no socket, no SQLite and no output store and reads the orders back.
 *
 * Messages are packed when ordered (as members of a batch, common/wire.h), so the caller's
 * message may live on its stack.
 */
#ifndef GPOOL_SCHED_ORDERS_H
#define GPOOL_SCHED_ORDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

enum order_kind {
	ORDER_SEND,	   /* node: msg to its agent, held for the commit */
	ORDER_LAUNCH,	   /* job, attempt: build and send its Launch orders (launch.c) */
	ORDER_REPLY,	   /* rid: msg to that peer; durable: held for the commit */
	ORDER_SAVE_JOB,	   /* job: write its changed fields into the open transaction */
	ORDER_INSERT_JOB,  /* job: a job the core made (a replica), with its spec (msg) */
	ORDER_SAVE_NODE,   /* node: write its drain and cards' state */
	ORDER_NODE_MEMBER, /* node: known to the store; member: whether it is one of the pool */
	ORDER_TRUST_NODE,  /* node: its agent's routing id skips the per-address budget */
};

struct order {
	enum order_kind kind;
	bool durable; /* ORDER_REPLY */
	bool member;  /* ORDER_NODE_MEMBER */
	bool known;   /* ORDER_NODE_MEMBER: also record the node as known */
	int node;
	uint64_t job;
	uint32_t attempt;
	uint8_t *rid; /* ORDER_REPLY: the peer's routing id (rid_len bytes) */
	size_t rid_len;
	uint8_t *msg; /* ORDER_SEND, ORDER_REPLY: one packed batch member; ORDER_INSERT_JOB: the
		       * packed spec */
	size_t msg_len;
};

struct orders;

struct orders *orders_create(void);
void orders_destroy(struct orders **o);

/* Each appends one order: 0 / -1 (ENOMEM; nothing appended). */
int orders_send(struct orders *o, int node, const Gpool__Msg *m);
int orders_launch(struct orders *o, uint64_t job, uint32_t attempt);
int orders_reply(struct orders *o, const uint8_t *rid, size_t rid_len, const Gpool__Msg *m,
		 bool durable);
int orders_save_job(struct orders *o, uint64_t job);
int orders_insert_job(struct orders *o, uint64_t job, const uint8_t *spec, size_t len);
int orders_save_node(struct orders *o, int node);
int orders_node_member(struct orders *o, int node, bool known, bool member);
int orders_trust_node(struct orders *o, int node);

size_t orders_count(const struct orders *o);
const struct order *orders_at(const struct orders *o, size_t i);
/* Unpack a send or reply order's message (free with gpool__msg__free_unpacked); NULL: none. */
Gpool__Msg *order_msg(const struct order *od);
/* Forget every order (once carried out). */
void orders_clear(struct orders *o);
/* Take the orders out (the queue is then empty, and takes new ones): n = orders_count()
 * before; release them with orders_release (which frees what they hold, not v). */
struct order *orders_take(struct orders *o);
void orders_release(struct order *v, size_t n);

/* A request's reply (gschedd.h's struct req): its sender gets m. durable: only after the open
 * transaction commits. */
struct req;
int req_reply(struct req *r, Gpool__Msg *m, bool durable);
int req_reply_error(struct req *r, Gpool__ErrorCode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
