/* msg.h: building protocol messages with no I/O (protobuf-c only): a message packed as a batch
 * member, an error reply. In gpool_msg, beside the state names (names.h), so that gschedd's
 * core links them without the wire's MUNGE and libsodium (wire.h includes this header). */
#ifndef GPOOL_MSG_H
#define GPOOL_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

/* One message packed as a batch member, to be added later (worker/node/outbox.c keeps them):
 * malloc'd, NULL on ENOMEM. */
uint8_t *gp_batch_member(const Gpool__Msg *m, size_t *len);

/* Helpers to build common messages. */
void gp_msg_error(Gpool__Msg *m, Gpool__Error *e, uint64_t id, Gpool__ErrorCode code,
		  const char *text);

#endif
