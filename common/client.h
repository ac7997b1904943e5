/* client.h: a command's connection to gschedd: one DEALER socket, authenticated envelopes,
 * request/reply matched by message id, and a receive for streamed events. Replies are
 * accepted only when their credential's uid is the configured sched_uid.
 */
#ifndef GPOOL_CLIENT_H
#define GPOOL_CLIENT_H

#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

typedef struct gp_client gp_client_t;

/* Connect using cfg's `scheduler` endpoint (or $GPOOL_SCHEDULER). */
gp_client_t *gp_client_create(const gp_config_t *cfg, gp_error_t *err);
/* Connect to ep, accepting replies signed by peer_uid only (an agent's chunk cache: the
 * agents' uid). */
gp_client_t *gp_client_create_ep(const gp_config_t *cfg, const char *ep, uid_t peer_uid,
				 gp_error_t *err);
void gp_client_destroy(gp_client_t **c);

/* Send one request (its id is assigned here) and wait for the reply with the same id.
 * Returns the reply message; it lives until the next call or destroy. An Error reply is
 * returned as a message (the caller reports it); a timeout returns NULL with ETIMEDOUT. */
Gpool__Msg *gp_client_call(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err);

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
