/* gacct: finished jobs, as sacct shows them: by user, state and time window, with start and
 * end, nodes, exit codes, attempts, CPU time and peak memory. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/lib/args.h"
#include "cli/lib/jobview.h"
#include "cli/lib/json.h"
#include "common/names.h"
#include "common/opt.h"
#include "common/parse.h"
#include "cli/lib/session.h"
#include "common/table.h"
#include "common/util.h"
#include "cli/lib/when.h"

struct gacct {
	struct gp_cli_common common;
	uint64_t *ids;
	size_t nids;
	const char *user;
	bool allusers, json, help;
	Gpool__JobState *states;
	size_t nstates;
	double since, until;
	bool since_set;
};

#define A(c) ((struct gacct *)(c))

static int set_jobs(void *c, const char *a, gp_error_t *err)
{
	return gp_args_jobids(a, &A(c)->ids, &A(c)->nids, err);
}

static int set_user(void *c, const char *a, gp_error_t *err)
{
	if (!*a)
		return errno = EINVAL, gp_errprintf(err, "invalid user ''");
	A(c)->user = a;
	return 0;
}

static int set_allusers(void *c, const char *a, gp_error_t *err)
{
	A(c)->allusers = true;
	return 0;
}

static int set_state(void *c, const char *a, gp_error_t *err)
{
	char *copy = strdup(a), *save = NULL;
	if (!copy)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int st = gp_job_state_parse(t);
		Gpool__JobState *nv =
		    st < 0 ? NULL : realloc(A(c)->states, (A(c)->nstates + 1) * sizeof(*nv));
		if (!nv) {
			gp_errprintf(err, "invalid job state '%s'", t);
			free(copy);
			return errno = EINVAL, -1;
		}
		A(c)->states = nv;
		nv[A(c)->nstates++] = (Gpool__JobState)st;
	}
	free(copy);
	return A(c)->nstates ? 0
			     : (errno = EINVAL, gp_errprintf(err, "invalid state list '%s'", a));
}

static int set_start(void *c, const char *a, gp_error_t *err)
{
	A(c)->since_set = true;
	return gp_when_parse(a, gp_now(), &A(c)->since, err);
}

static int set_end(void *c, const char *a, gp_error_t *err)
{
	return gp_when_parse(a, gp_now(), &A(c)->until, err);
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	A(c)->json = true;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	A(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"jobs", 'j', required_argument, "JOB[,JOB...]", "these jobs only", set_jobs, 0},
    {"user", 'u', required_argument, "USER", "jobs of this user (default: yours)", set_user, 0},
    {"allusers", 'a', no_argument, NULL, "jobs of every user", set_allusers, 0},
    {"state", 's', required_argument, "STATE[,STATE...]",
     "jobs that ended in these states: CD, F, CA, TO, OOM, NF (or their names)", set_state, 0},
    {"starttime", 'S', required_argument, "TIME",
     "jobs that ended at or after TIME (default: now-1days): 2026-12-02, 2026-12-02T13:05, "
     "13:05, now, now-2hours",
     set_start, 0},
    {"endtime", 'E', required_argument, "TIME", "jobs submitted at or before TIME", set_end, 0},
    {"json", 0, no_argument, NULL, "the jobs as JSON", set_json, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gacct [options] [JOB...]\nFinished jobs, as sacct shows them.\n\n"
		   "options:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

static void fmt_time(double t, char *buf, size_t len)
{
	if (t <= 0) {
		snprintf(buf, len, "Unknown");
		return;
	}
	time_t tt = (time_t)t;
	struct tm tm;
	localtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int print_table(const Gpool__JobQueryReply *r)
{
	/* Frozen and Vacates: the PC's owner (docs/owner.md): time frozen while an owner used a
	 * PC (not counted against the limit), attempts a returning owner ended */
	static const char *const hdr[] = {"JobID",    "JobName", "User",   "State",    "ExitCode",
					  "Attempts", "Start",	 "End",	   "Elapsed",  "Frozen",
					  "Vacates",  "CPUTime", "MaxRSS", "NodeList", NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return -1;
	for (size_t i = 0; i < r->n_jobs; i++) {
		const Gpool__JobInfo *j = r->jobs[i];
		char id[48], code[32], att[16], start[32], end[32], el[32], cpu[32], rss[32];
		char frozen[32], vac[16];
		gp_jobview_id(j, id, sizeof(id)); /* an array's task: 12_7 */
		snprintf(code, sizeof(code), "%d", j->exit_code);
		snprintf(att, sizeof(att), "%u", j->attempt);
		fmt_time(j->start_time, start, sizeof(start));
		fmt_time(j->end_time, end, sizeof(end));
		double e = j->start_time > 0 && j->end_time > j->start_time
			       ? j->end_time - j->start_time
			       : 0;
		gp_format_duration((uint32_t)e, el, sizeof(el));
		gp_format_duration((uint32_t)(j->frozen_sec + 0.5), frozen, sizeof(frozen));
		snprintf(vac, sizeof(vac), "%u", j->vacates);
		snprintf(cpu, sizeof(cpu), "%.2fs", j->cpu_sec);
		gp_format_size(j->max_rss_kb * 1024, rss, sizeof(rss));
		const char *cells[] = {id,	j->spec && j->spec->name ? j->spec->name : "",
				       j->user, gp_job_state_name(j->state),
				       code,	att,
				       start,	end,
				       el,	frozen,
				       vac,	cpu,
				       rss,	j->nodelist && *j->nodelist ? j->nodelist : "None",
				       NULL};
		if (gp_table_add(t, cells) < 0) {
			gp_table_destroy(&t);
			return -1;
		}
	}
	gp_table_align_right(t, 0);
	int rc = gp_table_print(t, stdout);
	gp_table_destroy(&t);
	return rc;
}

int main(int argc, char **argv)
{
	struct gacct a = {0};
	gp_error_t err;
	char **ops = NULL;
	int nops = 0, rc = 1;
	gp_session_t *s = NULL;
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &a, &ops, &nops, &err) < 0)
		goto usage;
	if (a.help) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	for (int i = 0; i < nops; i++)
		if (gp_args_jobids(ops[i], &a.ids, &a.nids, &err) < 0)
			goto usage;
	if (!a.since_set && !a.nids)
		a.since = gp_now() - 86400;
	if (a.until && a.since > a.until) {
		gp_errprintf(&err, "the start time is after the end time");
		goto usage;
	}
	if (!(s = gp_session_create(&a.common, &err))) {
		fprintf(stderr, "gacct: %s\n", err.text);
		goto out;
	}
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	q.ids = a.ids;
	q.n_ids = a.nids;
	q.user = (char *)(a.allusers ? "" : a.user ? a.user : gp_session_user(s));
	q.all = true;
	q.include_purged = true; /* purged jobs keep their accounting row */
	q.since = a.since;
	q.until = a.until;
	/* only finished jobs, unless states were named */
	static Gpool__JobState finals[] = {
	    GPOOL__JOB_STATE__COMPLETED,     GPOOL__JOB_STATE__FAILED,
	    GPOOL__JOB_STATE__CANCELLED,     GPOOL__JOB_STATE__TIMEOUT,
	    GPOOL__JOB_STATE__OUT_OF_MEMORY, GPOOL__JOB_STATE__NODE_FAIL};
	q.states = a.nstates ? a.states : finals;
	q.n_states = a.nstates ? a.nstates : sizeof(finals) / sizeof(finals[0]);
	Gpool__JobQueryReply *jr = gp_session_job_query(s, &q, &err);
	if (!jr) {
		fprintf(stderr, "gacct: %s\n", err.text);
		goto out;
	}
	if (a.json) {
		json_t *o = json_object(), *arr = json_array();
		json_object_set_new(o, "jobs", arr);
		for (size_t i = 0; i < jr->n_jobs; i++)
			json_array_append_new(arr, gp_json_job(jr->jobs[i]));
		rc = gp_json_print(o, stdout) < 0 ? 1 : 0;
		goto out;
	}
	rc = print_table(jr) < 0 ? 1 : 0;
	goto out;
usage:
	fprintf(stderr, "gacct: %s\n", err.text);
	rc = 2;
out:
	gp_session_destroy(&s);
	free(a.ids);
	free(a.states);
	free(ops);
	return rc;
}
