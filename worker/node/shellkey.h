/* shellkey.h: which jobs may share a gstepd task shell on a node, and which shell.
 *
 * A job attempt goes to a task shell (docs/gworkerd.md, "Task shells") when its supervisor is
 * no more than a starter of processes: one task on this node, no --stage or --collect, no
 * MPI, not a service replica, not a screening job (each of those moves files for as long as it
 * takes or holds more than the job's tasks). A batch script and small files (--file) are fine:
 * a short child writes them as the user, as in a gstepd of its own. Everything
 * a job needs of its own (account, working directory, cgroup and its limits, environment,
 * events, rusage) the shell sets up per job from the job's launch file; what the jobs of one
 * shell share is the supervisor process alone, so its key is the account they run as (uid,
 * gid and name: two users never share one) and, for an array's task, the array: an array's
 * tasks share a shell of their array; single-task jobs that are not array tasks share one shell
 * per account.
 */
#ifndef GPOOL_WORKER_SHELLKEY_H
#define GPOOL_WORKER_SHELLKEY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/gpool.pb-c.h"

struct gp_shell_key {
	uint64_t array; /* the array whose tasks it takes; 0: jobs that are no array task */
	uid_t uid;	/* the account the shell's jobs run as */
	gid_t gid;
	char user[64];
};

/* Whether launch l may run in a task shell (the rules above). */
bool gp_shell_eligible(const Gpool__Launch *l);

/* The key of the shell l goes to, its tasks running as (uid, gid, user). */
void gp_shell_key_of(const Gpool__Launch *l, uid_t uid, gid_t gid, const char *user,
		     struct gp_shell_key *k);

/* Whether a shell of key a may take a job of key b. */
bool gp_shell_key_eq(const struct gp_shell_key *a, const struct gp_shell_key *b);

#endif
