/* ports.h: the master ports an agent keeps for its jobs' rendezvous. MASTER_PORT must be a
 * port that is really free on rank 0's node, not a number that merely looks unlikely to be
 * taken: the agent holds a small pool of ports from a range (a socket bound to each, never
 * listening, without SO_REUSEADDR, so that nothing else on the PC can bind them), reports the
 * ones it holds to the scheduler, which hands each to at most one live job whose rank 0 runs
 * here; when that job is launched the agent lets go of the port just before its tasks start,
 * and holds it again once the job is gone from this node. */
#ifndef GPOOL_WORKER_PORTS_H
#define GPOOL_WORKER_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct gp_ports gp_ports_t;

/* Is port still given to a job this node holds? (Then it is not taken back.) */
typedef bool (*gp_ports_busy_f)(uint32_t port, void *arg);

/* A pool of up to want ports taken from lo..hi (nothing is bound until gp_ports_refill).
 * NULL with errno (EINVAL: an empty range or want 0). */
gp_ports_t *gp_ports_create(uint32_t lo, uint32_t hi, size_t want);
void gp_ports_destroy(gp_ports_t **p);
/* Parse "LO-HI" (1024..65535). 0 / -1 with err. */
int gp_ports_parse_range(const char *s, uint32_t *lo, uint32_t *hi, gp_error_t *err);
/* Hold again every port of the pool that is neither held nor busy, and grow the pool from the
 * range up to its size (ports something else has bound are skipped). Rescans the range for
 * new ports at most every few seconds. */
void gp_ports_refill(gp_ports_t *p, gp_ports_busy_f busy, void *arg, int64_t now_ms);
/* The ports held now, up to max of them, into out. Returns how many. */
size_t gp_ports_held(const gp_ports_t *p, uint32_t *out, size_t max);
/* Let go of port for a job that will bind it. True when it was one of ours. */
bool gp_ports_release(gp_ports_t *p, uint32_t port);

#endif
