/* ckpt.h: a job's checkpoint store, for trainers (docs/staging.md).
 *
 * A task saves a file under a name (gp_ckpt_put) and a later attempt of the same job reads it
 * back (gp_ckpt_get), on whatever node it lands: the bytes go into the scheduler's chunk store
 * and the name into the job's file sets, kept with the scheduler's state, so the checkpoint
 * outlives the node that wrote it. Only chunks the store lacks are sent. Names are 1..128 of
 * [A-Za-z0-9._-]. The job is $GPOOL_JOB_ID (set in every task's environment); the scheduler
 * and the MUNGE credential are found as any command finds them ($GPOOL_CONF, gpool.conf,
 * $GPOOL_SCHEDULER). Link libgpool_common.
 */
#ifndef GPOOL_CKPT_H
#define GPOOL_CKPT_H

#include <stdint.h>

#include "common/sched_client.h"
#include "common/error.h"

/* Save the file at path as checkpoint name of this task's job. 0 / -1 with err. */
int gp_ckpt_put(const char *name, const char *path, gp_error_t *err);
/* Fetch checkpoint name of this task's job into path (written beside it, then renamed).
 * 0 / -1 with err; errno ENOENT when there is no such checkpoint. */
int gp_ckpt_get(const char *name, const char *path, gp_error_t *err);

/* The same with a connection and a job of the caller's choosing. */
int gp_ckpt_put_job(gp_client_t *c, uint64_t job_id, const char *name, const char *path,
		    gp_error_t *err);
int gp_ckpt_get_job(gp_client_t *c, uint64_t job_id, const char *name, const char *path,
		    gp_error_t *err);

#endif
