/* jobname.h: a job named on the command line by its name instead of its id (gstat, gcancel,
 * glogs): `gstat -l nb`. A name means the caller's own job of that name (an array counts once,
 * by its id; a service's replicas do not count): the one pending or running, else, when none
 * is, the one finished. Two or more is ambiguous and an error that lists their ids; so is none.
 * An operand that starts with a digit is always an id (or an array's selector), never a name.
 * Errors: -1 with errno (EINVAL: ambiguous, ENOENT: none, else the session's) and err. */
#ifndef GP_CLI_JOBNAME_H
#define GP_CLI_JOBNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/lib/session.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* Whether a job operand is a name (it does not start with a digit). */
bool gp_jobname_is_name(const char *operand);

/* Which of jobs (a query's reply) `name` means for `user`; finished: whether the reply holds
 * finished jobs too (then the pending and running ones win). 0 and *id, or -1 (ENOENT when no
 * job of the reply has the name: try the finished ones next). */
int gp_jobname_pick(Gpool__JobInfo *const *jobs, size_t n, const char *name, const char *user,
		    bool finished, uint64_t *id, gp_error_t *err);

/* Ask the scheduler for the caller's jobs and pick one (the active ones first, then every
 * one); *id on success. */
int gp_jobname_resolve(gp_session_t *s, const char *name, uint64_t *id, gp_error_t *err);

/* Resolve every name of names[0..n) and append the ids to *ids (realloc'd; *nids counts). */
int gp_jobname_resolve_all(gp_session_t *s, const char *const *names, size_t n, uint64_t **ids,
			   size_t *nids, gp_error_t *err);

#endif
