/* proxy.h: the exec-proxy, the stand-in for sshd that gpool runs as a task of an
 * --mpi=mpirun job on each node but rank 0's.
 *
 * It listens on a TCP port; a client that proves it is the job's owner (a MUNGE credential of
 * the proxy's own uid answering the connection's challenge: launch/proxyauth.h) may have it
 * run a command with /bin/sh -c, as ssh would (EXEC), in the proxy's own environment,
 * directory, cgroup and account, that is the job's; its output and exit status come back over
 * the connection, and a closed connection kills the command's process group. What a command
 * leaves in the background when it exits keeps running, as under ssh (a daemon may still be
 * in the group between its parent's exit and its setsid). A HOLD connection (rank 0's leader
 * holds one) keeps the proxy alive: when the last one closes, or no hold came within the hold
 * timeout, the proxy kills every command it started and what is left in their process groups,
 * and returns. A connection that has not authenticated within 5 s is closed, may send one
 * frame of 4 KiB at most, and counts against 8 per source address (64 in all): past that the
 * oldest such connection is closed, so a flood of idle connections cannot keep the job out.
 */
#ifndef GPOOL_LAUNCH_PROXY_H
#define GPOOL_LAUNCH_PROXY_H

#include <stdint.h>

#include "common/error.h"

typedef struct gp_proxy gp_proxy_t;

/* Listen on addr (IPv4 text, "0.0.0.0" for every interface) at an ephemeral port, serving
 * job's owner (this process's uid). NULL with err filled (also when munged cannot be reached). */
gp_proxy_t *gp_proxy_create(const char *addr, uint64_t job, gp_error_t *err);
void gp_proxy_destroy(gp_proxy_t **p);

/* The port it listens on. */
uint16_t gp_proxy_port(const gp_proxy_t *p);

/* Serve until the holds end (see above), or SIGTERM, SIGINT or SIGHUP arrive (the caller
 * blocks nothing: the proxy blocks them itself). Returns 0 when a hold came and ended, -1
 * with ETIMEDOUT when none came within hold_timeout_ms, -1 with EINTR when signalled. */
int gp_proxy_run(gp_proxy_t *p, int hold_timeout_ms);

/* Since it started: AUTH frames refused, and unauthenticated connections closed to make room. */
void gp_proxy_counts(const gp_proxy_t *p, uint64_t *auth_failures, uint64_t *evicted);

#endif
