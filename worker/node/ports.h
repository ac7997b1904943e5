/* ports.h: the master ports an agent offers its jobs' rendezvous. MASTER_PORT must be a port
 * that is really free on rank 0's node, not a number that merely looks unlikely to be taken,
 * and an idle agent must take nothing from its PC: it holds no port at all. It looks for free
 * ports of its range now and then (a bind it closes at once), reports those it found to the
 * scheduler, which hands each to at most one live job whose rank 0 runs here; when that job is
 * launched the agent binds the port again (the reservation: refused when something took it
 * since) and lets go of it just before the tasks start. The default range (28500-28999) is
 * neither torchrun's default 29500 nor in the kernel's ephemeral range. */
#ifndef GPOOL_WORKER_PORTS_H
#define GPOOL_WORKER_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct gp_ports gp_ports_t;

/* Is port given to a job this node holds? (Then it is not offered again.) */
typedef bool (*gp_ports_busy_f)(uint32_t port, void *arg);

/* Up to want ports offered from lo..hi (nothing is probed until gp_ports_refill).
 * NULL with errno (EINVAL: an empty range or want 0). */
gp_ports_t *gp_ports_create(uint32_t lo, uint32_t hi, size_t want);
void gp_ports_destroy(gp_ports_t **p);
/* Parse "LO-HI" (1024..65535). 0 / -1 with err. */
int gp_ports_parse_range(const char *s, uint32_t *lo, uint32_t *hi, gp_error_t *err);
/* Does lo..hi overlap the kernel's ephemeral range (ip_local_port_range)? */
bool gp_ports_overlap_ephemeral(uint32_t lo, uint32_t hi);
/* Look again for free ports of the range, neither busy nor bound by anything (at most once a
 * second): up to the pool's size of them are offered. Binds nothing that stays bound. */
void gp_ports_refill(gp_ports_t *p, gp_ports_busy_f busy, void *arg, int64_t now_ms);
/* The ports offered now, up to max of them, into out. Returns how many. */
size_t gp_ports_held(const gp_ports_t *p, uint32_t *out, size_t max);
/* Reserve port for a job being launched here: bind it (0), or -1 with errno EADDRINUSE when
 * something else on the PC has it. The port is no longer offered. */
int gp_ports_reserve(gp_ports_t *p, uint32_t port);
/* Let go of a reserved port just before the job's tasks bind it. True when it was reserved. */
bool gp_ports_release(gp_ports_t *p, uint32_t port);
/* Sockets the pool has bound now (0 while no launch is under way: tests, docs). */
size_t gp_ports_bound(const gp_ports_t *p);

#endif
