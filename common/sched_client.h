/* sched_client.h: a command's connection to gschedd: one DEALER socket, authenticated envelopes,
 * request/reply matched by message id, and a receive for streamed events. Replies are
 * accepted only when their credential's uid is the configured sched_uid.
 */
#ifndef GPOOL_SCHED_CLIENT_H
#define GPOOL_SCHED_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

typedef struct gp_client gp_client_t;

/* Connect using cfg's `scheduler` endpoint or list of them (or $GPOOL_SCHEDULER; common/
 * schedlist.h), the first one first. NULL with err filled (also: a malformed list). */
gp_client_t *gp_client_create(const gp_config_t *cfg, gp_error_t *err);
/* Connect to ep, accepting replies signed by peer_uid only (an agent's chunk cache: the
 * agents' uid). */
gp_client_t *gp_client_create_ep(const gp_config_t *cfg, const char *ep, uid_t peer_uid,
				 gp_error_t *err);
void gp_client_destroy(gp_client_t **c);

/* Send one request (its id is assigned here, and a request id when it changes something:
 * gp_client_stamp) and wait for the reply with the same id, at most timeout_ms in all. With
 * several schedulers, a standby's ERROR_NOT_LEADER sends the request (same request id) to the
 * leader it names, else the next one, and so does no answer (gp_client_ask).
 * Returns the reply message; it lives until the next call or destroy. An Error reply is
 * returned as a message (the caller reports it); a timeout returns NULL with ETIMEDOUT. */
Gpool__Msg *gp_client_call(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err);

/* One try at the current scheduler: send req and wait for its reply, at most timeout_ms; with
 * several schedulers, a request not delivered within a second (nobody listens there) gives up
 * early. The reply (NOT_LEADER included), or NULL with errno (ETIMEDOUT: no answer). */
Gpool__Msg *gp_client_ask(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err);

/* How many bytes a request id has (Msg.request_id). */
#define GP_REQUEST_ID_LEN 16
/* Give m a random request id in id[] (which must outlive m's sends) when m changes something
 * (submit, job control, node control, card report, file set put, share set) and has none:
 * every retry of m then carries the same one, and the scheduler applies it once. 0 / -1 with
 * errno set. */
int gp_client_stamp(Gpool__Msg *m, uint8_t id[GP_REQUEST_ID_LEN]);

/* The scheduler asked now, and how many there are in the list. */
const char *gp_client_endpoint(const gp_client_t *c);
size_t gp_client_schedulers(const gp_client_t *c);
/* Has everything sent reached the current scheduler's socket (connected, nothing waiting)? */
bool gp_client_delivered(const gp_client_t *c);
/* Go to another scheduler: the leader a NOT_LEADER answer named (leader, when valid and not
 * the current one; else the next), or the next (leader NULL). What waited unsent is dropped:
 * the caller sends its request again. 1 when the move went round to the first of the list (or
 * made as many moves as the list has entries since the last such round: the caller pauses), 0
 * otherwise, -1 with err filled. */
int gp_client_switch(gp_client_t *c, const char *leader, gp_error_t *err);

/* Send one message without waiting (its id is assigned and returned through *id). */
int gp_client_send(gp_client_t *c, Gpool__Msg *m, uint64_t *id, gp_error_t *err);
/* Receive the next message for id (replies and events), waiting at most timeout_ms. */
Gpool__Msg *gp_client_recv(gp_client_t *c, uint64_t id, int timeout_ms, gp_error_t *err);

/* The attachment of the envelope the last returned message came in (a chunk sent outside
 * the credential, to be checked by its hash), NULL when it had none. Valid until the next
 * receive. */
const void *gp_client_bulk(const gp_client_t *c, size_t *len);

/* The user name this process binds into requests. */
const char *gp_client_user(const gp_client_t *c);

#endif
