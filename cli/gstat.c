/* gstat: the queue (as squeue), or one job in detail (as scontrol show job). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lib/args.h"
#include "cli/lib/cost.h"
#include "cli/lib/fleet.h"
#include "cli/lib/jobfmt.h"
#include "cli/lib/jobname.h"
#include "cli/lib/json.h"
#include "cli/lib/jobview.h"
#include "common/names.h"
#include "common/opt.h"
#include "cli/lib/session.h"
#include "common/util.h"

struct gstat {
	struct gp_cli_common common;
	uint64_t *ids;
	size_t nids;
	const char **names; /* jobs given by name, resolved once the session is open */
	size_t nnames;
	const char *user;
	Gpool__JobState *states;
	size_t nstates;
	bool all, json, lng, help;
	const char *format; /* -o */
};

#define G(c) ((struct gstat *)(c))

static int set_jobs(void *c, const char *a, gp_error_t *err)
{
	return gp_args_jobs(a, &G(c)->ids, &G(c)->nids, &G(c)->names, &G(c)->nnames, err);
}

static int set_user(void *c, const char *a, gp_error_t *err)
{
	if (!*a) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid user ''");
	}
	G(c)->user = a;
	return 0;
}

static int set_states(void *c, const char *a, gp_error_t *err)
{
	char *copy = strdup(a), *save = NULL;
	if (!copy)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int st = gp_job_state_parse(t);
		Gpool__JobState *nv = realloc(G(c)->states, (G(c)->nstates + 1) * sizeof(*nv));
		if (st < 0 || !nv) {
			if (nv)
				G(c)->states = nv;
			errno = st < 0 ? EINVAL : ENOMEM;
			gp_errprintf(err, st < 0 ? "invalid job state '%s'" : "out of memory", t);
			free(copy);
			return -1;
		}
		G(c)->states = nv;
		nv[G(c)->nstates++] = (Gpool__JobState)st;
	}
	free(copy);
	if (!G(c)->nstates) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid job state list '%s'", a);
	}
	return 0;
}

static int set_all(void *c, const char *a, gp_error_t *err)
{
	G(c)->all = true;
	return 0;
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	G(c)->json = true;
	return 0;
}

static int set_long(void *c, const char *a, gp_error_t *err)
{
	G(c)->lng = true;
	return 0;
}

static int set_format(void *c, const char *a, gp_error_t *err)
{
	gp_jobfmt_t *f = gp_jobfmt_create(a, err); /* checked now: a usage error */
	if (!f)
		return -1;
	gp_jobfmt_destroy(&f);
	G(c)->format = a;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"jobs", 'j', required_argument, "JOB[,JOB...]",
     "these jobs only (a JOB that does not start with a digit is a name of one of your jobs)",
     set_jobs, 0},
    {"user", 'u', required_argument, "USER", "jobs of this user only", set_user, 0},
    {"states", 't', required_argument, "STATE[,STATE...]",
     "jobs in these states only: PD, R, CD, F, CA, TO, OOM, NF, RQ, CG (or their names)",
     set_states, 0},
    {"all", 'a', no_argument, NULL, "finished jobs too", set_all, 0},
    {"long", 'l', no_argument, NULL, "one job in detail (with one job id)", set_long, 0},
    {"json", 0, no_argument, NULL, "the jobs as JSON", set_json, 0},
    {"format", 'o', required_argument, "FIELDS",
     "squeue-style field list, e.g. '%.8i %j %u %t %M %D %R' (one row per job and task)",
     set_format, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gstat [options] [JOB...]\nShow the queue, or one job in detail.\n\n"
		   "options:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

static int print_json(const Gpool__JobQueryReply *r)
{
	json_t *o = json_object(), *a = json_array();
	if (!o || !a || json_object_set_new(o, "jobs", a) < 0) {
		json_decref(o);
		return -1;
	}
	for (size_t i = 0; i < r->n_jobs; i++)
		if (json_array_append_new(a, gp_json_job(r->jobs[i])) < 0) {
			json_decref(o);
			return -1;
		}
	return gp_json_print(o, stdout);
}

int main(int argc, char **argv)
{
	struct gstat g = {0};
	gp_error_t err;
	char **ops = NULL;
	int nops = 0, rc = 1;
	gp_session_t *s = NULL;
	struct fleet fl;
	struct gp_prices prices;
	bool priced = false;
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &g, &ops, &nops, &err) < 0)
		goto usage;
	if (g.help) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	for (int i = 0; i < nops; i++)
		if (set_jobs(&g, ops[i], &err) < 0)
			goto usage;
	/* `gstat 42` is the detailed view, as is `gstat -l -j 42` or `gstat -l nb` */
	size_t asked = g.nids + g.nnames;
	bool detail = asked == 1 && !g.json && (g.lng || nops > 0);
	if (g.lng && asked != 1) {
		gp_errprintf(&err, "option '--long' needs exactly one job id or name");
		goto usage;
	}
	if (!(s = gp_session_create(&g.common, &err)) ||
	    gp_jobname_resolve_all(s, g.names, g.nnames, &g.ids, &g.nids, &err) < 0) {
		fprintf(stderr, "gstat: %s\n", err.text);
		goto out;
	}
	/* the detailed view prices a job's cards: the node inventory is read first, because a
	 * reply lives only until the next call */
	priced = detail && gp_prices_load(gp_session_config(s), &prices, &err) == 0;
	if (priced && gp_fleet_load(s, &fl, &err) < 0) {
		gp_prices_release(&prices);
		priced = false;
	}
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	q.ids = g.ids;
	q.n_ids = g.nids;
	q.user = (char *)(g.user ? g.user : "");
	q.states = g.states;
	q.n_states = g.nstates;
	q.all = g.all || g.nids > 0; /* a job asked for by id is shown even when finished */
	Gpool__JobQueryReply *jr = gp_session_job_query(s, &q, &err);
	if (!jr) {
		fprintf(stderr, "gstat: %s\n", err.text);
		goto out;
	}
	if (g.json) {
		rc = print_json(jr) < 0 ? 1 : 0;
		goto out;
	}
	if (detail) {
		if (jr->n_jobs == 0) {
			fprintf(stderr, "gstat: no job %" PRIu64 "\n", g.ids[0]);
			goto out;
		}
		rc = gp_jobview_long(jr->jobs[0], gp_now(), stdout) < 0 ? 1 : 0;
		struct gp_cost c;
		if (priced && gp_job_cost(&fl, &prices, jr->jobs[0], gp_now(), &c) > 0)
			printf("   Cost=%.4f Electricity=%.4f Cooling=%.4f Depreciation=%.4f "
			       "GPUHours=%.3f Energy=%.4fkWh CloudCost=%.4f\n",
			       c.total, c.electricity, c.cooling, c.depreciation, c.gpu_hours,
			       c.kwh, c.cloud);
		goto out;
	}
	if (g.format) {
		gp_jobfmt_t *f = gp_jobfmt_create(g.format, &err);
		rc = f && gp_jobfmt_header(f, stdout) == 0 ? 0 : 1;
		for (size_t i = 0; f && i < jr->n_jobs && rc == 0; i++)
			rc = gp_jobfmt_job(f, jr->jobs[i], gp_now(), stdout) < 0 ? 1 : 0;
		gp_jobfmt_destroy(&f);
	} else {
		gp_table_t *t = gp_jobview_table(jr->jobs, jr->n_jobs, gp_now());
		rc = t && gp_table_print(t, stdout) == 0 ? 0 : 1;
		gp_table_destroy(&t);
	}
	/* ids asked for and not found are an error, as squeue -j */
	for (size_t i = 0; i < g.nids; i++) {
		size_t k;
		for (k = 0; k < jr->n_jobs && jr->jobs[k]->id != g.ids[i]; k++)
			;
		if (k == jr->n_jobs) {
			fprintf(stderr, "gstat: no job %" PRIu64 "\n", g.ids[i]);
			rc = 1;
		}
	}
	goto out;
usage:
	fprintf(stderr, "gstat: %s\n", err.text);
	rc = 2;
out:
	if (priced) {
		gp_fleet_free(&fl);
		gp_prices_release(&prices);
	}
	gp_session_destroy(&s);
	free(g.ids);
	free(g.names);
	free(g.states);
	free(ops);
	return rc;
}
