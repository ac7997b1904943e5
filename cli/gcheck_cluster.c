/* gcheck_cluster.c: gcheck --cluster (see gcheck_cluster.h). */
#include "cli/gcheck_cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonw.h"
#include "common/names.h"
#include "common/parse.h"
#include "cards/screen.h"
#include "cli/lib/submit.h"
#include "common/table.h"

extern char **environ;

#define POLL_MS	 500
#define MAX_ARGS 64

/* One card of the cluster and what became of it. */
struct target {
	char node[64];
	int card;
	char name[96];	   /* the card's model */
	char skipped[160]; /* why no job was submitted ("" when one was) */
	uint64_t job;
	char err[640]; /* why there is no result */
	Gpool__JobState job_state;
	int32_t exit_code;
	bool final;
	bool have; /* res holds the job's result for this card */
	struct gp_screen_card res;
	/* gschedd's view of the card afterwards */
	char grade[8];
	Gpool__CardState state;
	char state_reason[256];
	bool reported; /* the grade gschedd holds came from this job */
};

struct run {
	const struct gcheck_cluster *c;
	const struct gp_check_opts *o;
	gp_session_t *s;
	struct target *v;
	size_t n, cap;
};

int gcheck_cluster_add_profile(struct gcheck_cluster *c, const char *arg, gp_error_t *err)
{
	const char *colon = strrchr(arg, ':'), *eq = strchr(arg, '=');
	long card;
	char num[16];
	struct gp_card_measure m;
	if (c->nprofiles == GCHECK_CLUSTER_MAX_PROFILES || !colon || !eq || eq < colon ||
	    colon == arg || (size_t)(colon - arg) >= sizeof(c->profiles[0].node) ||
	    (size_t)(eq - colon - 1) >= sizeof(num)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid card profile '%s' (NODE:CARD=NAME)", arg);
	}
	memcpy(num, colon + 1, (size_t)(eq - colon - 1));
	num[eq - colon - 1] = '\0';
	if (gp_parse_long(num, 0, 63, &card) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid card profile '%s' (NODE:CARD=NAME)", arg);
	}
	if (gp_grade_profile(eq + 1, &m, err) < 0)
		return -1;
	snprintf(c->profiles[c->nprofiles].node, sizeof(c->profiles[0].node), "%.*s",
		 (int)(colon - arg), arg);
	c->profiles[c->nprofiles].card = (int)card;
	c->profiles[c->nprofiles].profile = eq + 1;
	c->nprofiles++;
	return 0;
}

static const char *profile_of(const struct run *r, const struct target *t)
{
	for (int i = r->c->nprofiles - 1; i >= 0; i--)
		if (r->c->profiles[i].card == t->card && !strcmp(r->c->profiles[i].node, t->node))
			return r->c->profiles[i].profile;
	return r->o->profile;
}

static struct target *add_target(struct run *r)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 64;
		struct target *nv = realloc(r->v, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		r->v = nv;
		r->cap = nc;
	}
	struct target *t = &r->v[r->n++];
	memset(t, 0, sizeof(*t));
	return t;
}

static Gpool__NodeQueryReply *query_nodes(struct run *r, char **names, size_t n, gp_error_t *err)
{
	Gpool__NodeQuery q = GPOOL__NODE_QUERY__INIT;
	q.names = names;
	q.n_names = n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_QUERY;
	m.node_query = &q;
	Gpool__Msg *rep =
	    gp_session_call(r->s, &m, GPOOL__MSG__M_NODE_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	return rep ? rep->node_query_reply : NULL;
}

/* Every card of the nodes asked, in gschedd's order; the ones no job can test, skipped. */
static int find_cards(struct run *r, gp_error_t *err)
{
	char **names = NULL;
	int nnames = 0;
	if (r->c->nodes && gp_hostlist_expand(r->c->nodes, &names, &nnames) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid host list '%s'", r->c->nodes);
	}
	Gpool__NodeQueryReply *rep = query_nodes(r, names, (size_t)nnames, err);
	int rc = -1;
	if (!rep)
		goto out;
	for (int i = 0; i < nnames; i++) {
		bool found = false;
		for (size_t k = 0; k < rep->n_nodes; k++)
			found |= !strcmp(rep->nodes[k]->name, names[i]);
		if (!found) {
			errno = ENOENT;
			gp_errprintf(err, "no node '%s'", names[i]);
			goto out;
		}
	}
	for (size_t k = 0; k < rep->n_nodes; k++) {
		const Gpool__NodeInfo *nd = rep->nodes[k];
		for (size_t i = 0; i < nd->n_cards; i++) {
			const Gpool__Card *c = nd->cards[i];
			if (r->o->card >= 0 && c->index != (uint32_t)r->o->card)
				continue;
			struct target *t = add_target(r);
			if (!t) {
				gp_errprintf(err, "out of memory");
				goto out;
			}
			snprintf(t->node, sizeof(t->node), "%s", nd->name);
			t->card = (int)c->index;
			snprintf(t->name, sizeof(t->name), "%s", c->name ? c->name : "");
			snprintf(t->grade, sizeof(t->grade), "%s", c->grade ? c->grade : "");
			t->state = c->state;
			snprintf(t->state_reason, sizeof(t->state_reason), "%s",
				 c->state_reason ? c->state_reason : "");
			/* what a screening job could never run on */
			if (nd->state != GPOOL__NODE_STATE__NODE_UP)
				snprintf(t->skipped, sizeof(t->skipped), "node %s",
					 gp_node_state_name(nd->state));
			else if (c->state == GPOOL__CARD_STATE__CARD_DRAINED)
				snprintf(t->skipped, sizeof(t->skipped), "card drained%s%s",
					 c->state_reason && *c->state_reason ? ": " : "",
					 c->state_reason ? c->state_reason : "");
			else if (c->vendor != GPOOL__VENDOR__VENDOR_NVIDIA &&
				 c->vendor != GPOOL__VENDOR__VENDOR_AMD)
				snprintf(t->skipped, sizeof(t->skipped), "not a graphics card");
		}
	}
	rc = 0;
out:
	gp_strv_free(names, nnames);
	return rc;
}

/* The path of this gcheck, which the jobs run (the nodes have the same install). */
static const char *self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return "gcheck";
	buf[n] = '\0';
	return buf;
}

/* Submit t's job. 0 / -1 with t->err set (and errno EACCES when refused for permission). */
static int submit_one(struct run *r, struct target *t, const char *gcheck)
{
	const struct gp_check_opts *o = r->o;
	char card[16], name[128], limit[32], dur[40], frac[40], size[32], warn[64], failp[64],
	    spec[64];
	snprintf(card, sizeof(card), "%d", t->card);
	snprintf(name, sizeof(name), "gcheck:%s:%d", t->node, t->card);
	uint32_t tl = r->c->time_limit ? r->c->time_limit : (uint32_t)(2 * o->duration) + 300;
	snprintf(limit, sizeof(limit), "%us", tl);
	snprintf(dur, sizeof(dur), "%.17g", o->duration);
	snprintf(frac, sizeof(frac), "%.17g", o->mem_fraction);
	snprintf(size, sizeof(size), "%" PRIu64 "b", o->cpu_bytes);
	snprintf(warn, sizeof(warn), "fluct_warn_pct=%.17g", o->th.fluct_warn_pct);
	snprintf(failp, sizeof(failp), "fluct_fail_pct=%.17g", o->th.fluct_fail_pct);
	snprintf(spec, sizeof(spec), "spec_gbps=%.17g", o->th.spec_gbps);
	/* gsub's own parser builds the spec: the job is what `gsub` with these options makes */
	char *argv[MAX_ARGS];
	int n = 0;
	char *head[] = {"gsub",
			"--nodelist",
			t->node,
			"--gpu-index",
			card,
			"--screen",
			"--job-name",
			name,
			"--time",
			limit,
			"--no-requeue",
			"--output",
			"gcheck.out",
			"--error",
			"gcheck.err",
			"--",
			(char *)gcheck,
			"--json",
			"--node",
			t->node,
			"--backend",
			(char *)o->backend,
			"--duration",
			dur,
			"--mem-fraction",
			frac,
			"--size",
			size,
			"--grade",
			warn,
			"--grade",
			failp,
			"--grade",
			spec};
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		argv[n++] = head[i];
	const char *profile = profile_of(r, t);
	if (profile) {
		argv[n++] = "--profile";
		argv[n++] = (char *)profile;
	} else if (o->inject_fault) {
		argv[n++] = "--inject-fault";
	}
	argv[n] = NULL;
	gp_error_t err;
	gp_submit_t *sub = gp_submit_create();
	if (!sub) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		return -1;
	}
	int rc = -1;
	if (gp_submit_parse(sub, n, argv, environ, &err) < 0) {
		snprintf(t->err, sizeof(t->err), "%s", err.text);
		goto out;
	}
	Gpool__SubmitRequest req = GPOOL__SUBMIT_REQUEST__INIT;
	req.spec = gp_submit_spec(sub);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = &req;
	Gpool__ErrorCode code = GPOOL__ERROR_CODE__ERROR_NONE;
	Gpool__Msg *rep =
	    gp_session_call(r->s, &m, GPOOL__MSG__M_SUBMIT_REPLY, GP_CLI_TIMEOUT_MS, &code, &err);
	if (!rep) {
		snprintf(t->err, sizeof(t->err), "not submitted: %s", err.text);
		errno = code == GPOOL__ERROR_CODE__ERROR_PERMISSION ? EACCES : EIO;
		goto out;
	}
	t->job = rep->submit_reply->job_id;
	rc = 0;
out:
	gp_submit_destroy(&sub);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Until every job is final. 0 / -1 (the scheduler does not answer). */
static int wait_jobs(struct run *r, gp_error_t *err)
{
	uint64_t *ids = calloc(r->n ? r->n : 1, sizeof(*ids));
	if (!ids)
		return gp_errprintf(err, "out of memory");
	int rc = -1, silent = 0;
	while (1) {
		size_t k = 0;
		for (size_t i = 0; i < r->n; i++)
			if (r->v[i].job && !r->v[i].final)
				ids[k++] = r->v[i].job;
		if (!k)
			break;
		Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
		q.ids = ids;
		q.n_ids = k;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_JOB_QUERY;
		m.job_query = &q;
		Gpool__Msg *rep = gp_session_call(r->s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY,
						  GP_CLI_TIMEOUT_MS, NULL, err);
		if (!rep) {
			/* ride out a scheduler restart, as gsub --wait does */
			if (errno == ETIMEDOUT && ++silent < 6)
				continue;
			goto out;
		}
		silent = 0;
		const Gpool__JobQueryReply *jr = rep->job_query_reply;
		for (size_t j = 0; j < jr->n_jobs; j++) {
			for (size_t i = 0; i < r->n; i++) {
				struct target *t = &r->v[i];
				if (t->job != jr->jobs[j]->id)
					continue;
				t->job_state = jr->jobs[j]->state;
				t->exit_code = jr->jobs[j]->exit_code;
				t->final = gp_job_state_final(t->job_state);
			}
		}
		sleep_ms(POLL_MS);
	}
	rc = 0;
out:
	free(ids);
	return rc;
}

/* Up to cap bytes of one stream of the job's output into buf. The length / -1 with err. */
static long fetch(struct run *r, uint64_t job, uint32_t stream, char *buf, size_t cap,
		  gp_error_t *err)
{
	Gpool__LogQuery q = GPOOL__LOG_QUERY__INIT;
	q.job_id = job;
	q.stream = stream;
	q.max_bytes = (uint32_t)cap;
	size_t len = 0;
	while (len < cap) {
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_LOG_QUERY;
		m.log_query = &q;
		Gpool__Msg *rep = gp_session_call(r->s, &m, GPOOL__MSG__M_LOG_QUERY_REPLY,
						  GP_CLI_TIMEOUT_MS, NULL, err);
		if (!rep)
			return -1;
		const Gpool__LogQueryReply *lr = rep->log_query_reply;
		const ProtobufCBinaryData *d = stream == 2 ? &lr->err : &lr->out;
		size_t k = d->len < cap - len ? d->len : cap - len;
		memcpy(buf + len, d->data, k);
		len += k;
		if (lr->done || !d->len)
			break;
		q.offset = lr->next_offset;
		q.offset_err = lr->next_offset_err;
	}
	return (long)len;
}

/* Why a job left no result: its state, and the last line of its stderr if it said why. */
static void no_result(struct run *r, struct target *t, const char *what)
{
	char tail[4096] = "", *line = tail;
	gp_error_t err;
	long n = fetch(r, t->job, 2, tail, sizeof(tail) - 1, &err);
	if (n > 0) {
		tail[n] = '\0';
		while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
			tail[--n] = '\0';
		char *nl = strrchr(tail, '\n');
		line = nl ? nl + 1 : tail;
	}
	snprintf(t->err, sizeof(t->err), "no result (job %s, exit %d): %.400s",
		 gp_job_state_name(t->job_state), t->exit_code, *line ? line : what);
}

/* The job's stdout (gcheck's JSON), parsed; the card's entry into t->res. */
static void read_result(struct run *r, struct target *t)
{
	size_t cap = GP_SCREEN_MAX + 1;
	char *buf = malloc(cap);
	struct gp_screen_result *res = malloc(sizeof(*res));
	gp_error_t err;
	if (!buf || !res) {
		snprintf(t->err, sizeof(t->err), "out of memory");
		goto out;
	}
	long len = fetch(r, t->job, 1, buf, cap, &err);
	if (len < 0) {
		snprintf(t->err, sizeof(t->err), "its output: %.400s", err.text);
		goto out;
	}
	if (gp_screen_parse(buf, (size_t)len, res, &err) < 0) {
		no_result(r, t, err.text);
		goto out;
	}
	const struct gp_screen_card *c = gp_screen_find(res, (uint32_t)t->card);
	if (!c) {
		no_result(r, t, "no result for its card");
		goto out;
	}
	t->res = *c;
	t->have = true;
out:
	free(res);
	free(buf);
}

/* What gschedd holds for each card now: grade, state, and whether this job's grade it is. */
static int read_cards(struct run *r, gp_error_t *err)
{
	Gpool__NodeQueryReply *rep = query_nodes(r, NULL, 0, err);
	if (!rep)
		return -1;
	for (size_t i = 0; i < r->n; i++) {
		struct target *t = &r->v[i];
		for (size_t k = 0; k < rep->n_nodes; k++) {
			const Gpool__NodeInfo *nd = rep->nodes[k];
			if (strcmp(nd->name, t->node) != 0)
				continue;
			for (size_t c = 0; c < nd->n_cards; c++) {
				const Gpool__Card *cd = nd->cards[c];
				if (cd->index != (uint32_t)t->card)
					continue;
				snprintf(t->grade, sizeof(t->grade), "%s",
					 cd->grade ? cd->grade : "");
				t->state = cd->state;
				snprintf(t->state_reason, sizeof(t->state_reason), "%s",
					 cd->state_reason ? cd->state_reason : "");
				t->reported = t->job && cd->screen_job == t->job;
			}
		}
	}
	return 0;
}

/* ---- output ---- */

/* TFLOP/s of a GFLOP/s figure: a GPU's tens, a CPU's thousandths, both readable */
static void tflops(char *buf, size_t len, double gflops)
{
	double t = gflops / 1e3;
	if (gflops < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, t >= 10 ? "%.1f" : t >= 0.01 || t == 0 ? "%.2f" : "%.2g", t);
}

static int print_table(const struct run *r)
{
	static const char *const hdr[] = {
	    "NODE",	    "CARD",	    "NAME",  "GRADE", "BW(GB/s)", "FLUCT", "ERRORS",
	    "F32(TFLOP/s)", "F16(TFLOP/s)", "STATE", "JOB",   "REASON",	  NULL};
	gp_table_t *tb = gp_table_create(hdr);
	if (!tb)
		return -1;
	for (int c = 4; c <= 8; c++)
		gp_table_align_right(tb, c);
	gp_table_align_right(tb, 1);
	for (size_t i = 0; i < r->n; i++) {
		const struct target *t = &r->v[i];
		const struct gp_screen_card *s = t->have ? &t->res : NULL;
		char card[16], bw[32] = "-", fl[32] = "-", er[32] = "-", f32[32] = "-",
			       f16[32] = "-", job[32] = "-", why[700];
		snprintf(card, sizeof(card), "%d", t->card);
		if (s) {
			gp_check_cell(bw, sizeof(bw), s->bw_mean_gbps, "%.1f");
			gp_check_cell(fl, sizeof(fl), s->bw_fluct_pct, "±%.1f%%");
			snprintf(er, sizeof(er), "%" PRIu64, s->mem_errors);
			tflops(f32, sizeof(f32), s->f32_gflops);
			tflops(f16, sizeof(f16), s->f16_gflops);
		}
		if (t->job)
			snprintf(job, sizeof(job), "%" PRIu64, t->job);
		if (*t->skipped)
			snprintf(why, sizeof(why), "skipped: %s", t->skipped);
		else if (!s)
			snprintf(why, sizeof(why), "%s", t->err);
		else if (!t->reported)
			snprintf(why, sizeof(why), "not reported to gschedd%s%s",
				 *s->reason ? ": " : "", s->reason);
		else
			snprintf(why, sizeof(why), "%s", *s->reason ? s->reason : "-");
		const char *cells[] = {t->node,
				       card,
				       *t->name ? t->name : "-",
				       s ? s->grade : "-",
				       bw,
				       fl,
				       er,
				       f32,
				       f16,
				       gp_card_state_name(t->state),
				       job,
				       why,
				       NULL};
		if (gp_table_add(tb, cells) < 0) {
			gp_table_destroy(&tb);
			return -1;
		}
	}
	int rc = gp_table_print(tb, stdout);
	gp_table_destroy(&tb);
	return rc;
}

static void json_target(gp_jw_t *w, const struct target *t)
{
	const struct gp_screen_card *s = t->have ? &t->res : NULL;
	gp_jw_object(w);
	gp_jw_key(w, "node");
	gp_jw_string(w, t->node);
	gp_jw_key(w, "card");
	gp_jw_int(w, t->card);
	gp_jw_key(w, "name");
	gp_jw_string(w, t->name);
	gp_jw_key(w, "job_id");
	if (t->job)
		gp_jw_uint(w, t->job);
	else
		gp_jw_null(w);
	gp_jw_key(w, "job_state");
	gp_jw_string(w, t->job ? gp_job_state_name(t->job_state) : NULL);
	gp_jw_key(w, "grade");
	gp_jw_string(w, s ? s->grade : NULL);
	gp_jw_key(w, "reason");
	gp_jw_string(w, s ? s->reason : NULL);
	if (s) {
		gp_jw_key(w, "backend");
		gp_jw_string(w, s->backend);
		gp_jw_key(w, "device");
		gp_jw_string(w, s->device);
		gp_jw_key(w, "bandwidth");
		gp_jw_object(w);
		gp_jw_key(w, "mean_gbps");
		gp_jw_real(w, s->bw_mean_gbps);
		gp_jw_key_real_or_null(w, "fluct_pct", s->bw_fluct_pct);
		gp_jw_end_object(w);
		gp_jw_key(w, "memtest");
		gp_jw_object(w);
		gp_jw_key(w, "bytes");
		gp_jw_uint(w, s->mem_tested_bytes);
		gp_jw_key(w, "errors");
		gp_jw_uint(w, s->mem_errors);
		gp_jw_end_object(w);
		gp_check_json_figures(w, s->f32_gflops, s->f16_gflops, s->temperature_c,
				      s->power_w);
	}
	gp_jw_key(w, "reported");
	gp_jw_bool(w, t->reported);
	gp_jw_key(w, "state");
	gp_jw_string(w, gp_card_state_name(t->state));
	gp_jw_key(w, "state_reason");
	gp_jw_string(w, t->state_reason);
	gp_jw_key(w, "skipped");
	gp_jw_string(w, *t->skipped ? t->skipped : NULL);
	gp_jw_key(w, "error");
	gp_jw_string(w, !*t->skipped && !s && *t->err ? t->err : NULL);
	gp_jw_end_object(w);
}

static int print_json(const struct run *r)
{
	gp_jw_t *w = gp_jw_create(stdout);
	if (!w)
		return -1;
	gp_jw_object(w);
	gp_jw_key(w, "cluster");
	gp_jw_bool(w, true);
	gp_check_json_run(w, r->o);
	gp_jw_key(w, "cards");
	gp_jw_array(w);
	for (size_t i = 0; i < r->n; i++)
		json_target(w, &r->v[i]);
	gp_jw_end_array(w);
	gp_jw_end_object(w);
	return gp_jw_finish(&w);
}

static int print_jobs(const struct run *r)
{
	if (r->o->json) {
		gp_jw_t *w = gp_jw_create(stdout);
		if (!w)
			return -1;
		gp_jw_object(w);
		gp_jw_key(w, "jobs");
		gp_jw_array(w);
		for (size_t i = 0; i < r->n; i++) {
			if (!r->v[i].job)
				continue;
			gp_jw_object(w);
			gp_jw_key(w, "node");
			gp_jw_string(w, r->v[i].node);
			gp_jw_key(w, "card");
			gp_jw_int(w, r->v[i].card);
			gp_jw_key(w, "job_id");
			gp_jw_uint(w, r->v[i].job);
			gp_jw_end_object(w);
		}
		gp_jw_end_array(w);
		gp_jw_end_object(w);
		return gp_jw_finish(&w);
	}
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].job)
			printf("%s card %d: job %" PRIu64 "\n", r->v[i].node, r->v[i].card,
			       r->v[i].job);
	return fflush(stdout) == EOF ? -1 : 0;
}

int gcheck_cluster_run(const struct gcheck_cluster *c, const struct gp_check_opts *o,
		       const struct gp_cli_common *common)
{
	struct run r = {.c = c, .o = o};
	gp_error_t err;
	char self[PATH_MAX];
	int rc = 3;
	if (!(r.s = gp_session_create(common, &err))) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		return 3;
	}
	if (find_cards(&r, &err) < 0) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		goto out;
	}
	const char *gcheck = c->gcheck ? c->gcheck : self_path(self, sizeof(self));
	size_t submitted = 0, unsent = 0, skipped = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct target *t = &r.v[i];
		if (*t->skipped) {
			skipped++;
			continue;
		}
		if (submit_one(&r, t, gcheck) < 0) {
			fprintf(stderr, "gcheck: %s card %d: %s\n", t->node, t->card, t->err);
			unsent++;
			if (errno == EACCES) /* so is every other one */
				goto out;
			continue;
		}
		submitted++;
	}
	if (!submitted) {
		fprintf(stderr, "gcheck: no screening job submitted (%zu cards, %zu skipped)\n",
			r.n, skipped);
		goto out;
	}
	if (c->no_wait) {
		rc = print_jobs(&r) < 0 || unsent ? 3 : 0;
		goto out;
	}
	fprintf(stderr, "gcheck: %zu screening job%s submitted, waiting\n", submitted,
		submitted == 1 ? "" : "s");
	if (wait_jobs(&r, &err) < 0) {
		fprintf(stderr, "gcheck: waiting for the screening jobs: %s\n", err.text);
		goto out;
	}
	for (size_t i = 0; i < r.n; i++)
		if (r.v[i].job)
			read_result(&r, &r.v[i]);
	if (read_cards(&r, &err) < 0) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		goto out;
	}
	int failed = 0, broken = (int)unsent;
	for (size_t i = 0; i < r.n; i++) {
		const struct target *t = &r.v[i];
		if (*t->skipped)
			continue;
		if (!t->have || !t->reported)
			broken++;
		else if (!strcmp(t->res.grade, "fail"))
			failed++;
	}
	if ((o->json ? print_json(&r) : print_table(&r)) < 0)
		broken++;
	rc = broken ? 3 : failed ? 1 : 0;
out:
	free(r.v);
	gp_session_destroy(&r.s);
	return rc;
}
