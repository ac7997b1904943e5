/* join.h: gschedd's side of `gpool join` (docs/security.md, "Adding a PC"). root's
 * `gpool join-token` leaves a sealed bundle in STATE_DIR/join/ID.bundle; a joining PC, which
 * has no MUNGE key yet, asks for it with an envelope that carries only JoinFetch{token id} and
 * no credential. gschedd hands the bundle over once (the file is removed as it is read), never
 * after its expiry, and answers at most JOIN_RATE_ADDR requests a minute per source address
 * and JOIN_RATE_ALL in all. It never holds the token's secret: what it serves is ciphertext.
 */
#ifndef GPOOL_SCHED_JOIN_H
#define GPOOL_SCHED_JOIN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define JOIN_RATE_ADDR 10 /* requests per minute per source address (also the burst) */
#define JOIN_RATE_ALL  60 /* requests per minute from all addresses together */

struct join;

/* The directory is STATE_DIR/join (made by gpool join-token). NULL on ENOMEM. */
struct join *join_create(const char *state_dir);
void join_destroy(struct join **j);

/* An envelope that came without a credential (at most GP_EP_UNSEALED_MAX bytes): 0 when it is
 * not a join request (it is opened as usual); 1 when it is: *reply is then the answer's
 * envelope (malloc'd; NULL when the request is dropped over its rate). now_ms is monotonic,
 * now the wall clock (bundles expire in Unix seconds). */
int join_take(struct join *j, const char *addr, const void *data, size_t len, int64_t now_ms,
	      time_t now, uint8_t **reply, size_t *replylen);

/* Remove the bundles whose expiry has passed; the number removed. */
int join_sweep(struct join *j, time_t now);

#endif
