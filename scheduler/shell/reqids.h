/* reqids.h: a mutating request applied once (docs/protocol.md, Request ids). A client puts a
 * random 16-byte Msg.request_id on every mutating request and sends the same id again when it
 * retries (no answer, a restart, another scheduler of the list). Before the handler runs,
 * reqids_answer looks the (sender uid, id) up in the store and, when it was applied, answers
 * with the first reply; after it runs, reqids_record keeps its reply in the same transaction as
 * what it changed. An id sent by another uid is another request: it never finds this one's. */
#ifndef GPOOL_SCHED_REQIDS_H
#define GPOOL_SCHED_REQIDS_H

#include <stdbool.h>
#include <stddef.h>

/* How many bytes a request id has. */
#define REQID_LEN 16
/* How long, and how many, applied ids are kept (the oldest go first). */
#define REQID_KEEP_SEC (24 * 3600)
#define REQID_KEEP_MAX 200000

struct req;

/* Did r carry a request id seen before from its uid? Then it is answered (with the kept reply,
 * after the open transaction commits) and true is returned: the handler must not run. A
 * malformed id is answered with ERROR_INVALID (true). No id: false. */
bool reqids_answer(struct req *r);
/* After r's handler: keep the reply it ordered among the orders from index mark on, unless it
 * was one worth retrying for real (unavailable, rate, not the leader). */
void reqids_record(struct req *r, size_t mark);

#endif
