/* svcport.h: the port a service replica listens on. `gsub --port` is a wish: the agent gives
 * the wished port when nothing on the PC holds it and no other replica was given it, the next
 * free one above it otherwise (up to 100 above), else one the kernel picks. The replica finds
 * it in GPOOL_PORT.
 *
 * Picking a free port is no promise: between the agent's test and the replica's bind, any
 * process on the PC may bind it (a squatter), and gateways would send it the replica's
 * requests. So the agent checks who listens there while the replica runs (gp_svcport_owner):
 * only when every socket listening on the port belongs to a process of the replica (its
 * cgroup, else its session) does gschedd count the replica ready (docs/services.md "Ports"). */
#ifndef GPOOL_SVCPORT_H
#define GPOOL_SVCPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/gpool.pb-c.h"

/* A free TCP port (bind-tested on every address), not one of taken[0..ntaken). wish 0: any.
 * 0 with errno set when none could be found. */
uint32_t gp_svcport_pick(uint32_t wish, const uint32_t *taken, size_t ntaken);

/* Who listens on a replica's port, as last checked. */
struct gp_port_seen {
	Gpool__PortState state;
	pid_t pid;    /* PORT_FOREIGN: a process holding a foreign listening socket (0: unnamed) */
	uid_t uid;    /* PORT_FOREIGN: that socket's owner */
	uint64_t ino; /* PORT_FOREIGN: that socket's inode (its holder is looked up once) */
};

/* The sockets in LISTEN state on TCP port in text, the contents of /proc/net/tcp or tcp6:
 * their inodes into ino[0..max) and owners into uid (may be NULL). Returns how many there
 * are (may exceed max). */
size_t gp_svcport_listeners(const char *text, uint32_t port, uint64_t *ino, uid_t *uid, size_t max);

/* Check TCP port (IPv4 and IPv6, any address, this network namespace) against the processes
 * pids[0..npids) of a replica: PORT_CLOSED when nothing listens there, PORT_OWN when every
 * listening socket is one of theirs, else PORT_FOREIGN with a foreign socket's owner and, when
 * /proc lets us see it, a process that holds it (looked up again only when the foreign socket
 * is not seen's last one). seen is updated. */
void gp_svcport_owner(uint32_t port, const pid_t *pids, size_t npids, struct gp_port_seen *seen);

/* The processes of session sid (a task is its session's leader), up to max into out. Returns
 * how many were found. */
size_t gp_svcport_session(pid_t sid, pid_t *out, size_t max);

#endif
