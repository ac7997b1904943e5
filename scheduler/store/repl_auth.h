/* repl_auth.h: the standby group's Raft connections authenticated with MUNGE (repl_auth.c),
 * part of the shell. libraft's TCP transport trusts whoever connects to the Raft port; this
 * transport wraps it: the connecting scheduler sends a MUNGE credential right after libraft's
 * handshake, binding "gpool-raft <its id>", and the accepting one hands the connection to
 * Raft only when munged vouches that sched_uid (or root) made it for the id the handshake
 * claims. docs/standby.md, "Security".
 *
 * Everything here runs in the Raft thread.
 */
#ifndef GPOOL_SCHED_REPL_AUTH_H
#define GPOOL_SCHED_REPL_AUTH_H

#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct raft_uv_transport;
struct uv_loop_s;

/* Make outer an authenticating transport over inner (raft_uv_tcp_init'ed), for member self.
 * 0 / -1 with err filled (munged does not answer). */
int repl_auth_init(struct raft_uv_transport *outer, struct raft_uv_transport *inner,
		   struct uv_loop_s *loop, uint64_t self, uid_t sched_uid, gp_error_t *err);
/* Free what repl_auth_init made (after libraft closed the transport). */
void repl_auth_release(struct raft_uv_transport *outer);

#endif
