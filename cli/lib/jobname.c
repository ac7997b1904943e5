/* jobname.c - a job operand given as a name, resolved among the caller's own jobs through the
 * ordinary job query, so that the scheduler needs no request of its own for it (jobname.h) */
#include "cli/lib/jobname.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ids listed in an ambiguity message; more are counted, not listed */
#define LISTED 8

bool gp_jobname_is_name(const char *operand)
{
	return operand[0] && (operand[0] < '0' || operand[0] > '9');
}

static bool is_active(Gpool__JobState st)
{
	return st == GPOOL__JOB_STATE__PENDING || st == GPOOL__JOB_STATE__RUNNING ||
	       st == GPOOL__JOB_STATE__REQUEUED || st == GPOOL__JOB_STATE__COMPLETING;
}

/* The id a job of the name stands for: an array's task stands for its array */
static uint64_t key_of(const Gpool__JobInfo *j)
{
	return j->array_job_id ? j->array_job_id : j->id;
}

static bool seen(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

static int ambiguous(const char *name, const uint64_t *ids, size_t n, bool active, gp_error_t *err)
{
	char list[LISTED * 22 + 32] = "";
	size_t len = 0;
	for (size_t i = 0; i < n && i < LISTED; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%" PRIu64, i ? ", " : "",
					ids[i]);
	if (n > LISTED)
		snprintf(list + len, sizeof(list) - len, " and %zu more", n - LISTED);
	errno = EINVAL;
	return gp_errprintf(err, "job name '%s' is ambiguous: jobs %s are %s (give a job id)", name,
			    list, active ? "pending or running" : "finished");
}

int gp_jobname_pick(Gpool__JobInfo *const *jobs, size_t n, const char *name, const char *user,
		    bool finished, uint64_t *id, gp_error_t *err)
{
	uint64_t *act = calloc(n + 1, sizeof(*act)), *done = calloc(n + 1, sizeof(*done));
	size_t nact = 0, ndone = 0;
	int rc = -1;
	if (!act || !done) {
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const Gpool__JobInfo *j = jobs[i];
		if (!j->spec || !j->spec->name || strcmp(j->spec->name, name) ||
		    strcmp(j->user ? j->user : "", user) || j->service_of)
			continue;
		uint64_t k = key_of(j);
		if (is_active(j->state) && !seen(act, nact, k))
			act[nact++] = k;
		else if (!is_active(j->state) && !seen(done, ndone, k))
			done[ndone++] = k;
	}
	/* an array some of whose tasks ended is still active */
	size_t keep = 0;
	for (size_t i = 0; i < ndone; i++)
		if (!seen(act, nact, done[i]))
			done[keep++] = done[i];
	ndone = finished ? keep : 0;
	if (nact == 1 || (nact == 0 && ndone == 1)) {
		*id = nact ? act[0] : done[0];
		rc = 0;
	} else if (nact > 1) {
		ambiguous(name, act, nact, true, err);
	} else if (ndone > 1) {
		ambiguous(name, done, ndone, false, err);
	} else {
		errno = ENOENT;
		gp_errprintf(err, "no job named '%s' of user '%s'", name, user);
	}
out:
	free(act);
	free(done);
	return rc;
}

int gp_jobname_resolve(gp_session_t *s, const char *name, uint64_t *id, gp_error_t *err)
{
	const char *user = gp_session_user(s);
	if (!*user) {
		errno = EPERM;
		return gp_errprintf(err, "cannot tell who is asking for job '%s'", name);
	}
	/* the pending and running jobs first: the common case, and a small reply */
	for (int all = 0; all <= 1; all++) {
		Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
		q.user = (char *)user;
		q.all = all;
		Gpool__JobQueryReply *r = gp_session_job_query(s, &q, err);
		if (!r)
			return -1;
		if (gp_jobname_pick(r->jobs, r->n_jobs, name, user, all, id, err) == 0)
			return 0;
		if (errno != ENOENT)
			return -1;
	}
	return -1;
}

int gp_jobname_resolve_all(gp_session_t *s, const char *const *names, size_t n, uint64_t **ids,
			   size_t *nids, gp_error_t *err)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t id;
		if (gp_jobname_resolve(s, names[i], &id, err) < 0)
			return -1;
		uint64_t *nv = realloc(*ids, (*nids + 1) * sizeof(*nv));
		if (!nv) {
			errno = ENOMEM;
			return gp_errprintf(err, "out of memory");
		}
		*ids = nv;
		nv[(*nids)++] = id;
	}
	return 0;
}
