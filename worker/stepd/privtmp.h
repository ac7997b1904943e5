/* privtmp.h: a job's own /tmp, /var/tmp and /dev/shm (docs/security.md "A job's own /tmp").
 *
 * The job's directories on this node live under <scratch_dir>/tmp-jobID.ATTEMPT (root's, 0700,
 * so no other account reaches them by path), on the scratch directory's file system or on a
 * tmpfs of the job's mounted there (private_tmp = tmpfs: its pages are charged to the memory
 * cgroup of the task that writes them, the job's). Each task, in a mount namespace of its own
 * (MS_SLAVE: nothing it mounts reaches the node), has them bound over the node's: every rank of
 * the job on the node binds the same ones, so they share them as on one PC (MPI's
 * shared-memory files in /dev/shm). What the job needs that lies under a node directory made
 * private (its working directory, the node's scratch directory, which holds GPOOL_SCRATCH and
 * the MPS pipes, and the node's private_tmp_keep: a shared file system mounted there) is bound
 * back at its own path inside, on mount points of root's (0755, in a sticky directory of
 * root's) that the job's tasks can neither replace nor move. A job step uses its job's
 * directories; everything goes with the job (step_privtmp_release). Container tasks have their
 * own /tmp from crun and are left alone, and so are the jobs of an agent that is not root (it
 * can make no mount namespace).
 */
#ifndef GPOOL_WORKER_STEPD_PRIVTMP_H
#define GPOOL_WORKER_STEPD_PRIVTMP_H

#include <stdint.h>

#include "common/error.h"

struct step;

/* The node's settings (gpool.conf private_tmp, private_tmp_size). */
struct step_privtmp_opts {
	const char *mode; /* "scratch", "tmpfs" or "off" */
	uint64_t size;	  /* tmpfs: bytes (0: the job's memory limit, else the kernel's default) */
	const char *keep; /* private_tmp_keep: paths under the node's ones every job still sees */
};

/* Make (or, for a job step, find) the job's directories and what must be bound back into them,
 * before the step's tasks start; nothing when the node says off, the job asked for the node's
 * (JobSpec.no_private_tmp) or runs in a container. scratch_root: the node's scratch_dir, whose
 * checks gp_stage_workdir made. 0 / -1 with err. */
int step_privtmp_prepare(struct step *s, const char *scratch_root,
			 const struct step_privtmp_opts *o, gp_error_t *err);

/* In a task's child (between vfork and exec, still root): a mount namespace of its own with the
 * job's directories over the node's. Async-signal-safe; NULL-safe (nothing to do). 0 / -1 with
 * errno. */
int step_privtmp_enter(const struct step *s);

/* The job ended: its tmpfs unmounted and its directories removed (not a step's: its job's).
 * NULL-safe, idempotent. */
void step_privtmp_release(struct step *s);

#endif
