/* gpool: administrative subcommands on jobs (hold, release, priority), the cluster's power
 * budget and cost, and the version. Subcommands are a table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/lib/args.h"
#include "common/ckpt.h"
#include "cli/lib/cost.h"
#include "cli/lib/fleet.h"
#include "cli/lib/jobctl.h"
#include "cli/lib/join_usage.h"
#include "cli/lib/json.h"
#include "cli/lib/subcommand.h"
#include "common/names.h"
#include "common/table.h"
#include "common/util.h"
#include "common/xfer.h"
#include "cli/lib/when.h"
#include "common/opt.h"
#include "common/parse.h"
#include "cli/lib/session.h"
#include "cli/lib/share.h"

struct gpool {
	struct gp_cli_common common;
	const char *dir; /* fetch --dir */
	uint64_t job;	 /* ckpt --job */
	bool help, json;
	double since, until;
	bool since_set;
	char **stage; /* update --stage */
	size_t nstage;
	Gpool__ShareSet limits; /* limits set --max-jobs, --max-cpus, --max-cards */
};

#define G(c) ((struct gpool *)(c))

static int add_stage(void *c, const char *a, gp_error_t *err)
{
	char **n = realloc(G(c)->stage, (G(c)->nstage + 1) * sizeof(*n));
	if (!n)
		return gp_errprintf(err, "out of memory");
	G(c)->stage = n;
	n[G(c)->nstage++] = (char *)a;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	G(c)->json = true;
	return 0;
}

static int set_since(void *c, const char *a, gp_error_t *err)
{
	G(c)->since_set = true;
	return gp_when_parse(a, gp_now(), &G(c)->since, err);
}

static int set_until(void *c, const char *a, gp_error_t *err)
{
	return gp_when_parse(a, gp_now(), &G(c)->until, err);
}

static int set_dir(void *c, const char *a, gp_error_t *err)
{
	G(c)->dir = a;
	return 0;
}

static int set_job(void *c, const char *a, gp_error_t *err)
{
	char *end;
	unsigned long long v = strtoull(a, &end, 10);
	if (!*a || *end || !v) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid job id '%s'", a);
	}
	G(c)->job = v;
	return 0;
}

/* --max-jobs, --max-cpus, --max-cards N: a limit for gpool limits set (0: none). */
static int set_limit(const char *a, const char *what, protobuf_c_boolean *has, uint32_t *v,
		     gp_error_t *err)
{
	long n;
	if (gp_parse_long(a, 0, UINT32_MAX, &n) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid %s '%s' (0 for none)", what, a);
	}
	*has = 1;
	*v = (uint32_t)n;
	return 0;
}

static int set_max_jobs(void *c, const char *a, gp_error_t *err)
{
	Gpool__ShareSet *l = &G(c)->limits;
	return set_limit(a, "--max-jobs", &l->set_max_jobs, &l->max_jobs, err);
}

static int set_max_cpus(void *c, const char *a, gp_error_t *err)
{
	Gpool__ShareSet *l = &G(c)->limits;
	return set_limit(a, "--max-cpus", &l->set_max_cpus, &l->max_cpus, err);
}

static int set_max_cards(void *c, const char *a, gp_error_t *err)
{
	Gpool__ShareSet *l = &G(c)->limits;
	return set_limit(a, "--max-cards", &l->set_max_cards, &l->max_cards, err);
}

static bool limits_given(const struct gpool *g)
{
	return g->limits.set_max_jobs || g->limits.set_max_cpus || g->limits.set_max_cards;
}

static const struct gp_opt opts[] = {
    {"dir", 0, required_argument, "DIR", "fetch: put the files in DIR (default .)", set_dir, 0},
    {"job", 0, required_argument, "JOB", "ckpt: this job (default $GPOOL_JOB_ID)", set_job, 0},
    {"since", 0, required_argument, "TIME",
     "cost: jobs that ran at or after TIME (default now-30days)", set_since, 0},
    {"until", 0, required_argument, "TIME", "cost: jobs submitted at or before TIME", set_until, 0},
    {"json", 0, no_argument, NULL, "power, cost, share, limits: as JSON", set_json, 0},
    {"max-jobs", 0, required_argument, "N", "limits set: running jobs at once (0: none)",
     set_max_jobs, 0},
    {"max-cpus", 0, required_argument, "N", "limits set: CPUs held at once (0: none)", set_max_cpus,
     0},
    {"max-cards", 0, required_argument, "N", "limits set: cards held at once (0: none)",
     set_max_cards, 0},
    {"stage", 0, required_argument, "PATH",
     "update: the service's new staged file or directory (repeatable)", add_stage, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

/* A subcommand (cli/lib/subcommand.h, ctx this program's struct gpool) gets its operands
 * (after its name) and returns the exit status; a usage error returns 2 with err filled, a
 * failure 1 with err filled (or reported already). */

static int job_action(struct gpool *g, Gpool__JobAction action, uint64_t *ids, size_t n,
		      int32_t value, gp_error_t *err)
{
	int failed, rc = 1;
	gp_session_t *s = gp_session_create(&g->common, err);
	if (s && gp_jobctl(s, action, ids, n, value, "gpool", stderr, &failed, err) == 0) {
		rc = failed ? 1 : 0;
		err->text[0] = '\0'; /* failures are reported per job */
	}
	gp_session_destroy(&s);
	return rc;
}

static int jobs_of(char **args, int nargs, uint64_t **ids, size_t *n, gp_error_t *err)
{
	if (!nargs)
		return gp_errprintf(err, "no job id given");
	for (int i = 0; i < nargs; i++)
		if (gp_args_jobids(args[i], ids, n, err) < 0)
			return -1;
	return 0;
}

static int hold_or_release(struct gpool *g, Gpool__JobAction action, char **args, int nargs,
			   gp_error_t *err)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	int rc = 2;
	if (jobs_of(args, nargs, &ids, &n, err) == 0)
		rc = job_action(g, action, ids, n, 0, err);
	free(ids);
	return rc;
}

static int cmd_hold(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	return hold_or_release(g, GPOOL__JOB_ACTION__JOB_HOLD, args, nargs, err);
}

static int cmd_release(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	return hold_or_release(g, GPOOL__JOB_ACTION__JOB_RELEASE, args, nargs, err);
}

static int cmd_priority(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	uint64_t *ids = NULL;
	size_t n = 0;
	long prio;
	int rc = 2;
	if (nargs != 2)
		gp_errprintf(err, "priority needs a job id and a priority");
	else if (gp_parse_long(args[1], INT32_MIN, INT32_MAX, &prio) < 0)
		gp_errprintf(err, "invalid priority '%s'", args[1]);
	else if (jobs_of(args, 1, &ids, &n, err) == 0)
		rc = job_action(g, GPOOL__JOB_ACTION__JOB_SET_PRIORITY, ids, n, (int32_t)prio, err);
	free(ids);
	return rc;
}

static int cmd_scale(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	uint64_t *ids = NULL;
	size_t n = 0;
	long count;
	int rc = 2;
	if (nargs != 2)
		gp_errprintf(err, "scale needs a service job id and a replica count");
	else if (gp_parse_long(args[1], 0, 1000, &count) < 0)
		gp_errprintf(err, "invalid replica count '%s'", args[1]);
	else if (jobs_of(args, 1, &ids, &n, err) == 0 && n != 1)
		gp_errprintf(err, "scale takes one service job id");
	else if (n == 1)
		rc = job_action(g, GPOOL__JOB_ACTION__JOB_SCALE, ids, n, (int32_t)count, err);
	free(ids);
	return rc;
}

/* The --stage paths as a manifest, their chunks uploaded (as gsub --stage does). 0 / -1. */
static int upload_stage(struct gpool *g, gp_session_t *s, struct gp_manifest *m, gp_error_t *err)
{
	for (size_t i = 0; i < g->nstage; i++) {
		char b[4096];
		snprintf(b, sizeof(b), "%s", g->stage[i]);
		size_t l = strlen(b);
		while (l > 1 && b[l - 1] == '/')
			b[--l] = '\0';
		const char *slash = strrchr(b, '/');
		if (gp_manifest_add(m, g->stage[i], slash ? slash + 1 : b, err) < 0)
			return -1;
	}
	struct gp_xfer_stats st = {0};
	gp_client_t *c = gp_session_client(s, err);
	if (!c || gp_xfer_upload_manifest(c, m, &st, err) < 0)
		return -1;
	return 0;
}

static int cmd_update(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	uint64_t *ids = NULL;
	size_t n = 0;
	int rc = 2;
	int first = nargs > 1 && strcmp(args[1], "--") == 0 ? 2 : 1;
	if (nargs < 1 || (nargs <= first && !g->nstage)) {
		gp_errprintf(err, "update needs a service job id and a new command (-- CMD...) or "
				  "files (--stage PATH)");
	} else if (jobs_of(args, 1, &ids, &n, err) == 0 && n != 1) {
		gp_errprintf(err, "update takes one service job id");
	} else if (n == 1) {
		rc = 1;
		struct gp_manifest m = {0};
		gp_session_t *s = gp_session_create(&g->common, err);
		Gpool__JobControl jc = GPOOL__JOB_CONTROL__INIT;
		jc.action = GPOOL__JOB_ACTION__JOB_UPDATE;
		jc.ids = ids;
		jc.n_ids = 1;
		jc.argv = nargs > first ? args + first : NULL;
		jc.n_argv = nargs > first ? (size_t)(nargs - first) : 0;
		Gpool__Msg m2 = GPOOL__MSG__INIT;
		m2.m_case = GPOOL__MSG__M_JOB_CONTROL;
		m2.job_control = &jc;
		if (s && g->nstage && upload_stage(g, s, &m, err) == 0) {
			jc.stage = m.e;
			jc.n_stage = m.n;
		}
		Gpool__Msg *r = s && (!g->nstage || jc.n_stage)
				    ? gp_session_call(s, &m2, GPOOL__MSG__M_JOB_CONTROL_REPLY,
						      GP_CLI_TIMEOUT_MS, NULL, err)
				    : NULL;
		if (r) {
			rc = 0;
			Gpool__JobControlReply *jr = r->job_control_reply;
			for (size_t i = 0; i < jr->n_results; i++)
				if (jr->results[i]->code != GPOOL__ERROR_CODE__ERROR_NONE) {
					fprintf(stderr, "gpool: job %llu: %s\n",
						(unsigned long long)jr->results[i]->id,
						jr->results[i]->text);
					rc = 1;
				}
		}
		gp_session_destroy(&s);
		gp_manifest_release(&m);
	}
	free(ids);
	return rc;
}

static int cmd_version(void *ctx, char **args, int nargs, gp_error_t *err)
{
	(void)ctx;
	if (nargs) {
		gp_errprintf(err, "version takes no arguments");
		return 2;
	}
	printf("gpool %s (protocol %d)\n", GPOOL_VERSION,
	       GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION);
	return 0;
}

static int cmd_power(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	if (nargs)
		return gp_errprintf(err, "power takes no arguments"), 2;
	gp_session_t *s = gp_session_create(&g->common, err);
	struct fleet f;
	struct gp_prices p;
	int rc = 1;
	if (!s || gp_prices_load(gp_session_config(s), &p, err) < 0)
		goto out0;
	if (gp_fleet_load(s, &f, err) < 0)
		goto out1;
	static const char *const hdr[] = {"NODE",	"CARDS", "CARD_W", "SLOTS_W",
					  "REQUIRED_W", "PSU_W", "STATUS", NULL};
	gp_table_t *t = gp_table_create(hdr);
	json_t *arr = json_array();
	double total = 0, cards_total = 0;
	int over = 0;
	for (size_t i = 0; t && i < f.n; i++) {
		double cw = 0;
		for (size_t c = 0; c < f.ncards[i]; c++)
			cw += f.watts[i][c];
		double req = gp_pc_power(&p, f.watts[i], f.ncards[i]);
		const char *status = f.psu[i] <= 0 ? "psu unknown" : req > f.psu[i] ? "OVER" : "ok";
		over += f.psu[i] > 0 && req > f.psu[i];
		total += req;
		cards_total += cw;
		char nc[16], a[32], b[32], r[32], ps[32];
		snprintf(nc, sizeof(nc), "%zu", f.ncards[i]);
		snprintf(a, sizeof(a), "%.0f", cw);
		snprintf(b, sizeof(b), "%.2f", p.slot_w * (double)f.ncards[i]);
		snprintf(r, sizeof(r), "%.1f", req);
		snprintf(ps, sizeof(ps), f.psu[i] > 0 ? "%.0f" : "-", f.psu[i]);
		const char *cells[] = {f.name[i], nc, a, b, r, ps, status, NULL};
		gp_table_add(t, cells);
		json_array_append_new(
		    arr, json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:s}", "node", f.name[i], "cards",
				   (json_int_t)f.ncards[i], "card_watts", cw, "slot_watts",
				   p.slot_w * (double)f.ncards[i], "required_watts", req,
				   "psu_watts", f.psu[i], "status", status));
	}
	long cap = (long)gp_config_int(gp_session_config(s), "power_cap_watts");
	if (g->json) {
		json_t *o =
		    json_pack("{s:o,s:f,s:f,s:I}", "nodes", arr, "required_watts", total,
			      "card_watts", cards_total, "power_cap_watts", (json_int_t)cap);
		rc = gp_json_print(o, stdout) < 0 ? 1 : 0;
	} else {
		json_decref(arr);
		rc = t && gp_table_print(t, stdout) == 0 ? 0 : 1;
		printf("cluster: cards %.0f W, required %.1f W (cards + %.2f W a slot, + %.0f %% "
		       "margin)",
		       cards_total, total, p.slot_w, p.margin * 100);
		if (cap)
			printf(", power cap %ld W", cap);
		printf("\n");
	}
	if (over)
		fprintf(stderr, "gpool: warning: %d node(s) need more power than their PSU gives\n",
			over);
	gp_table_destroy(&t);
	gp_fleet_free(&f);
out1:
	gp_prices_release(&p);
out0:
	gp_session_destroy(&s);
	return rc;
}

static int cmd_cost(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	uint64_t *ids = NULL;
	size_t nids = 0;
	for (int i = 0; i < nargs; i++)
		if (gp_args_jobids(args[i], &ids, &nids, err) < 0)
			return free(ids), 2;
	gp_session_t *s = gp_session_create(&g->common, err);
	struct fleet f;
	struct gp_prices p;
	int rc = 1;
	bool fleet_ok = false;
	if (!s || gp_prices_load(gp_session_config(s), &p, err) < 0)
		goto out0;
	if (gp_fleet_load(s, &f, err) < 0)
		goto out1;
	fleet_ok = true;
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	q.ids = ids;
	q.n_ids = nids;
	q.all = true;
	q.since = nids ? 0 : g->since_set ? g->since : gp_now() - 30 * 86400.0;
	q.until = g->until;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = &q;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	if (!r)
		goto out1;
	Gpool__JobQueryReply *jr = r->job_query_reply;
	static const char *const hdr[] = {"JOBID", "USER",	  "CARDS",	 "GPU_H",
					  "KWH",   "ELECTRICITY", "COOLING",	 "DEPRECIATION",
					  "TOTAL", "CLOUD",	  "ENERGY_FROM", NULL};
	gp_table_t *t = gp_table_create(hdr);
	json_t *arr = json_array();
	struct gp_cost sum = {0};
	double now = gp_now();
	for (size_t i = 0; t && i < jr->n_jobs; i++) {
		Gpool__JobInfo *j = jr->jobs[i];
		struct gp_cost c;
		int ncards = gp_job_cost(&f, &p, j, now, &c);
		if (!ncards)
			continue;
		sum.gpu_hours += c.gpu_hours;
		sum.kwh += c.kwh;
		sum.depreciation += c.depreciation;
		char id[32], nc[16], gh[32], kwh[32], el[32], co[32], de[32], to[32], cl[32];
		snprintf(id, sizeof(id), "%llu", (unsigned long long)j->id);
		snprintf(nc, sizeof(nc), "%d", ncards);
		snprintf(gh, sizeof(gh), "%.3f", c.gpu_hours);
		snprintf(kwh, sizeof(kwh), "%.4f", c.kwh);
		snprintf(el, sizeof(el), "%.4f", c.electricity);
		snprintf(co, sizeof(co), "%.4f", c.cooling);
		snprintf(de, sizeof(de), "%.4f", c.depreciation);
		snprintf(to, sizeof(to), "%.4f", c.total);
		snprintf(cl, sizeof(cl), "%.4f", c.cloud);
		char from[96];
		gp_job_energy_from(j, from, sizeof(from));
		const char *cells[] = {id, j->user, nc, gh, kwh, el, co, de, to, cl, from, NULL};
		gp_table_add(t, cells);
		json_array_append_new(
		    arr, json_pack("{s:I,s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "job",
				   (json_int_t)j->id, "user", j->user, "cards", ncards, "gpu_hours",
				   c.gpu_hours, "kwh", c.kwh, "electricity", c.electricity,
				   "cooling", c.cooling, "depreciation", c.depreciation, "total",
				   c.total, "cloud", c.cloud, "energy_from", from));
	}
	gp_cost_finish(&p, &sum);
	if (g->json) {
		json_t *o = json_pack("{s:o,s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f}}", "jobs", arr, "total",
				      "gpu_hours", sum.gpu_hours, "kwh", sum.kwh, "electricity",
				      sum.electricity, "cooling", sum.cooling, "depreciation",
				      sum.depreciation, "total", sum.total, "cloud", sum.cloud);
		rc = gp_json_print(o, stdout) < 0 ? 1 : 0;
	} else {
		json_decref(arr);
		rc = t && gp_table_print(t, stdout) == 0 ? 0 : 1;
		printf(
		    "total: %.3f GPU-hours, %.4f kWh, cost %.4f (electricity %.4f, cooling %.4f, "
		    "depreciation %.4f); the same GPU-hours in the cloud: %.4f\n",
		    sum.gpu_hours, sum.kwh, sum.total, sum.electricity, sum.cooling,
		    sum.depreciation, sum.cloud);
	}
	gp_table_destroy(&t);
out1:
	if (fleet_ok)
		gp_fleet_free(&f);
	gp_prices_release(&p);
out0:
	gp_session_destroy(&s);
	free(ids);
	return rc;
}

/* fetch JOB: what the job's --collect patterns brought back, into --dir. */
static int cmd_fetch(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	uint64_t *ids = NULL;
	size_t n = 0;
	if (nargs != 1 || jobs_of(args, nargs, &ids, &n, err) < 0 || n != 1) {
		free(ids);
		if (!err->text[0])
			gp_errprintf(err, "fetch takes one job id");
		return 2;
	}
	uint64_t id = ids[0];
	free(ids);
	gp_session_t *s = gp_session_create(&g->common, err);
	gp_client_t *c = s ? gp_session_client(s, err) : NULL;
	Gpool__FileSetGetReply *r = c ? gp_xfer_set_get(c, id, "collect", "", err) : NULL;
	Gpool__FileSetGetReply *sets = NULL;
	int rc = 1;
	if (r) {
		size_t len = gpool__file_set_get_reply__get_packed_size(r);
		uint8_t *buf = malloc(len ? len : 1);
		if (buf) {
			gpool__file_set_get_reply__pack(r, buf);
			sets = gpool__file_set_get_reply__unpack(NULL, len, buf);
			free(buf);
		}
		if (!sets)
			gp_errprintf(err, "out of memory");
	}
	if (sets) {
		struct gp_xfer_stats st = {0};
		const char *dir = g->dir ? g->dir : ".";
		rc = 0;
		for (size_t i = 0; i < sets->n_sets && rc == 0; i++)
			if (gp_xfer_download(c, id, "collect", sets->sets[i]->name,
					     sets->sets[i]->entries, sets->sets[i]->n_entries, dir,
					     &st, err) < 0)
				rc = 1;
		if (rc == 0) {
			char what[128];
			gp_xfer_describe(&st, what, sizeof(what));
			printf("job %llu: %s into '%s'\n", (unsigned long long)id, what, dir);
		}
		gpool__file_set_get_reply__free_unpacked(sets, NULL);
	}
	gp_session_destroy(&s);
	return rc;
}

/* ckpt put NAME FILE | ckpt get NAME FILE: a checkpoint of this task's job (ckpt.h). */
static int cmd_ckpt(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	if (nargs != 3 || (strcmp(args[0], "put") && strcmp(args[0], "get"))) {
		gp_errprintf(err, "usage: gpool ckpt put|get NAME FILE");
		return 2;
	}
	bool put = !strcmp(args[0], "put");
	if (!g->job && !g->common.config && !g->common.scheduler)
		return (put ? gp_ckpt_put(args[1], args[2], err)
			    : gp_ckpt_get(args[1], args[2], err)) < 0
			   ? 1
			   : 0;
	uint64_t job = g->job;
	if (!job) {
		const char *j = getenv("GPOOL_JOB_ID");
		job = j ? strtoull(j, NULL, 10) : 0;
	}
	if (!job) {
		gp_errprintf(err, "no job: give --job or run it inside a job (GPOOL_JOB_ID)");
		return 2;
	}
	gp_session_t *s = gp_session_create(&g->common, err);
	gp_client_t *c = s ? gp_session_client(s, err) : NULL;
	int rc = 1;
	if (c)
		rc = (put ? gp_ckpt_put_job(c, job, args[1], args[2], err)
			  : gp_ckpt_get_job(c, job, args[1], args[2], err)) < 0
			 ? 1
			 : 0;
	gp_session_destroy(&s);
	return rc;
}

/* share | limits: the users' fair share, or their limits and what they hold (share.h) */
static int show_share(void *ctx, int nargs, enum gp_share_view view, gp_error_t *err)
{
	struct gpool *g = ctx;
	if (nargs) {
		gp_errprintf(err, "%s takes no arguments but set or clear",
			     view == GP_SHARE_LIMITS ? "limits" : "share");
		return 2;
	}
	gp_session_t *s = gp_session_create(&g->common, err);
	int rc = s && gp_share_show(s, view, g->json, err) == 0 ? 0 : 1;
	gp_session_destroy(&s);
	return rc;
}

/* share set|clear, limits set|clear: an administrator's change (share.h). */
static int share_change(struct gpool *g, Gpool__ShareSet *c, gp_error_t *err)
{
	gp_session_t *s = gp_session_create(&g->common, err);
	int rc = s && gp_share_set(s, c, g->json, err) == 0 ? 0 : 1;
	gp_session_destroy(&s);
	return rc;
}

static int cmd_share(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	Gpool__ShareSet c = GPOOL__SHARE_SET__INIT;
	if (nargs == 3 && !strcmp(args[0], "set")) {
		char *end;
		errno = 0;
		double v = strtod(args[2], &end);
		if (errno || end == args[2] || *end || !(v >= 0 && v <= 1e9)) {
			gp_errprintf(err, "invalid share '%s' (0 to 1e9)", args[2]);
			return 2;
		}
		c.user = args[1];
		c.set_share = 1;
		c.share = v;
		return share_change(g, &c, err);
	}
	if (nargs == 2 && !strcmp(args[0], "clear")) {
		c.user = args[1];
		c.clear_share = 1;
		return share_change(g, &c, err);
	}
	if (nargs) {
		gp_errprintf(err, "usage: gpool share [set USER SHARE | clear USER]");
		return 2;
	}
	return show_share(ctx, nargs, GP_SHARE_USAGE, err);
}

static int cmd_limits(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpool *g = ctx;
	Gpool__ShareSet c = GPOOL__SHARE_SET__INIT; /* g->limits has only the limits set */
	c.set_max_jobs = g->limits.set_max_jobs;
	c.max_jobs = g->limits.max_jobs;
	c.set_max_cpus = g->limits.set_max_cpus;
	c.max_cpus = g->limits.max_cpus;
	c.set_max_cards = g->limits.set_max_cards;
	c.max_cards = g->limits.max_cards;
	if (nargs == 2 && !strcmp(args[0], "set")) {
		if (!limits_given(g)) {
			gp_errprintf(err, "limits set needs --max-jobs, --max-cpus or --max-cards");
			return 2;
		}
		c.user = args[1];
		return share_change(g, &c, err);
	}
	if (limits_given(g)) {
		gp_errprintf(err, "--max-jobs, --max-cpus and --max-cards are for limits set");
		return 2;
	}
	if (nargs == 2 && !strcmp(args[0], "clear")) {
		c.user = args[1];
		c.clear_limits = 1;
		return share_change(g, &c, err);
	}
	if (nargs) {
		gp_errprintf(err, "usage: gpool limits [set USER --max-jobs N --max-cpus N "
				  "--max-cards N | clear USER]");
		return 2;
	}
	return show_share(ctx, nargs, GP_SHARE_LIMITS, err);
}

static const struct gp_subcommand subcommands[] = {
    {"hold", cmd_hold, "hold JOB...            keep pending jobs from starting"},
    {"release", cmd_release, "release JOB...         let held jobs start"},
    {"priority", cmd_priority, "priority JOB N         set a pending job's priority"},
    {"scale", cmd_scale, "scale JOB N            keep N replicas of a service running"},
    {"update", cmd_update,
     "update JOB [--stage PATH]... [-- CMD...]  a service's new command or files: replicas "
     "replaced one by one"},
    {"power", cmd_power,
     "power                  each PC's power need against its PSU, the cluster's"},
    {"cost", cmd_cost, "cost [JOB...]          cost of jobs on cards (--since, --until, --json)"},
    {"fetch", cmd_fetch,
     "fetch JOB              the files the job's --collect brought back (--dir)"},
    {"ckpt", cmd_ckpt, "ckpt put|get NAME FILE a checkpoint of the job (inside a task, or --job)"},
    {"share", cmd_share,
     "share [set USER N | clear USER]  each user's usage, share and fair-share factor "
     "(--json); an administrator sets or clears a user's share"},
    {"limits", cmd_limits,
     "limits [set USER --max-jobs N --max-cpus N --max-cards N | clear USER]  the per-user "
     "limits and what each user holds (--json); an administrator sets or clears them"},
    {"version", cmd_version, "version                this program's version"},
};

/* gpool-join's, listed in the usage only (hand_to_join) */
static const struct gp_subcommand join_subcommands[] = {
    {"join-token", NULL, GPJ_USAGE_TOKEN},
    {"join", NULL, GPJ_USAGE_JOIN},
    {"leave", NULL, GPJ_USAGE_LEAVE},
};
#define NJOIN (sizeof(join_subcommands) / sizeof(join_subcommands[0]))

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: gpool [options] SUBCOMMAND [ARGS]\n\nsubcommands:\n");
	gp_subcommand_usage(subcommands, NSUB, NULL, f);
	gp_subcommand_usage(join_subcommands, NJOIN, " (gpool-join --help)", f);
	fprintf(f, "\noptions:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

/* join-token, join and leave are gpool-join's (beside this program): it links libcrypto, which
 * this command, started once per job, does not load. */
static void hand_to_join(int argc, char **argv)
{
	gp_error_t ignored;
	if (argc < 2 || !gp_subcommand_find(join_subcommands, NJOIN, argv[1], &ignored))
		return;
	char self[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "gpool: cannot find this program's directory for gpool-join\n");
		exit(1);
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/gpool-join", self);
	argv[0] = path;
	execv(path, argv);
	fprintf(stderr, "gpool: cannot run '%s': %s\n", path, strerror(errno));
	exit(1);
}

/* What the shared main checks before it looks the subcommand up: a gpool-join subcommand given
 * after options (hand_to_join only sees it first), and the limits' options on another subcommand
 * (an unknown or missing subcommand is left to the lookup's own message). */
static int check(void *ctx, char **ops, int nops, gp_error_t *err)
{
	gp_error_t ignored;
	if (nops && gp_subcommand_find(join_subcommands, NJOIN, ops[0], &ignored)) {
		gp_errprintf(err, "put '%s' first: gpool %s [options] (gpool-join --help)", ops[0],
			     ops[0]);
		return 2;
	}
	const struct gp_subcommand *sub =
	    nops ? gp_subcommand_find(subcommands, NSUB, ops[0], &ignored) : NULL;
	if (sub && limits_given(G(ctx)) && strcmp(sub->name, "limits") != 0) {
		gp_errprintf(err, "--max-jobs, --max-cpus and --max-cards are for limits set");
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	hand_to_join(argc, argv);
	static const struct gp_subcommand_cmd cmd = {
	    "gpool", "gpool --help", opts, GP_NOPTS(opts), subcommands, NSUB, usage, check,
	};
	struct gpool g = {0};
	int rc = gp_subcommand_main(&cmd, &g, &g.help, argc, argv);
	free(g.stage);
	return rc;
}
