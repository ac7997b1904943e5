/* identity.h: whose a job is, and where it may run.
 *
 * A job runs as the uid of its owner's MUNGE credential; no name a client sends counts. Its
 * user name is what the scheduler's PC calls that uid, or, where the scheduler's PC has no such
 * account, what the nodes' agents report (NodeRegister.accounts) when they agree. The pool
 * needs one uid space, as Slurm's does: a node whose agent reports the uid under another name,
 * or not at all, is not given the job (and refuses a launch itself if asked). System accounts
 * and the deny list (common/uidpolicy.h) are refused at submission. docs/security.md.
 */
#ifndef GPOOL_SCHED_IDENTITY_H
#define GPOOL_SCHED_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/uidpolicy.h"
#include "scheduler/core/nodes.h"

/* The owner name of a job submitted by uid: 0 with name filled, or -1 with why (a user reads
 * it) and errno EPERM (system account, deny list) or ENOENT (no account anywhere, or nodes
 * that disagree). p NULL: no policy (the scheduler's own jobs). lookup: the scheduler PC's names
 * (the shell passes the system's passwd, gp_uid_name; tests pass their own). */
typedef int (*identity_lookup_f)(uid_t uid, char *name, size_t len);
int identity_owner(const struct gp_uid_policy *p, struct nodes *ns, identity_lookup_f lookup,
		   uid_t uid, char *name, size_t len, char *why, size_t wlen);

/* May node n run a job of (uid, name)? Its agent listed uid under that name, or listed no
 * accounts (an older agent: its launch checks), or its list was truncated without the uid. */
bool identity_node_fits(const struct node *n, uid_t uid, const char *name);

#endif
