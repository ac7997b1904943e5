/* gcheck: screen a card before it joins: copy bandwidth sampled over a duration (mean and
 * fluctuation), the four memory test patterns over most of its memory, f32/f16 FMA
 * throughput, temperature and power under load; grade it (grade.h) and, with --report, send
 * the grade to gschedd, which drains a failed card. On a node without a GPU backend the cpu
 * backend stands in for the card. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cards/check.h"
#include "cli/gcheck_cluster.h"
#include "common/opt.h"
#include "common/parse.h"
#include "cli/lib/session.h"

struct gcheck {
	struct gp_check_opts check; /* first: the shared options set it (check.h) */
	struct gp_cli_common common;
	bool report, help;
	const char *node;
	struct gcheck_cluster cluster;
};

#define G(c) ((struct gcheck *)(c))

static int set_report(void *c, const char *a, gp_error_t *err)
{
	return G(c)->report = true, 0;
}

static int set_node(void *c, const char *a, gp_error_t *err)
{
	if (!*a)
		return errno = EINVAL, gp_errprintf(err, "invalid node ''");
	return G(c)->node = a, 0;
}

static int set_cluster(void *c, const char *a, gp_error_t *err)
{
	return G(c)->cluster.on = true, 0;
}

static int set_nodes(void *c, const char *a, gp_error_t *err)
{
	if (!*a)
		return errno = EINVAL, gp_errprintf(err, "invalid host list ''");
	return G(c)->cluster.nodes = a, 0;
}

static int set_no_wait(void *c, const char *a, gp_error_t *err)
{
	return G(c)->cluster.no_wait = true, 0;
}

static int set_time(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_duration(&G(c)->cluster.time_limit, a, 1, UINT32_MAX, "time limit", err);
}

static int set_card_profile(void *c, const char *a, gp_error_t *err)
{
	return gcheck_cluster_add_profile(&G(c)->cluster, a, err);
}

static int set_gcheck(void *c, const char *a, gp_error_t *err)
{
	if (a[0] != '/')
		return errno = EINVAL, gp_errprintf(err, "invalid gcheck path '%s' (absolute)", a);
	return G(c)->cluster.gcheck = a, 0;
}

/* the shared setters want their struct first: check.h's options have that place here */
static int set_config(void *c, const char *a, gp_error_t *err)
{
	return gp_cli_set_config(&G(c)->common, a, err);
}

static int set_scheduler(void *c, const char *a, gp_error_t *err)
{
	return gp_cli_set_scheduler(&G(c)->common, a, err);
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	return G(c)->help = true, 0;
}

/* gcheck's own options; the measuring ones (check.h) come first in --help */
static const struct gp_opt own_opts[] = {
    {"report", 'r', no_argument, NULL,
     "send each card's grade to gschedd (root or the agents' account)", set_report, 0},
    {"node", 'N', required_argument, "NAME", "the node reported (default: the host name)", set_node,
     0},
    {"cluster", 0, no_argument, NULL,
     "screen every card of the cluster, one job per card; the agents report the grades "
     "(root or the agents' account)",
     set_cluster, 0},
    {"nodes", 'w', required_argument, "LIST", "with --cluster: only these nodes, e.g. pc[1-3]",
     set_nodes, 0},
    {"no-wait", 0, no_argument, NULL, "with --cluster: submit the jobs, print their ids",
     set_no_wait, 0},
    {"time", 't', required_argument, "TIME",
     "with --cluster: each job's time limit (default: twice the duration + 5 min)", set_time, 0},
    {"gcheck", 0, required_argument, "PATH",
     "with --cluster: the gcheck the jobs run (default: this one)", set_gcheck, 0},
    {"card-profile", 0, required_argument, "NODE:CARD=NAME",
     "with --cluster: a measurement profile for one card (tests)", set_card_profile, 0},
    {"config", 0, required_argument, "PATH", "read this gpool.conf", set_config, 0},
    {"scheduler", 0, required_argument, "ENDPOINT",
     "talk to this gschedd (default $GPOOL_SCHEDULER)", set_scheduler, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

/* The whole option table: the shared measuring options, then gcheck's own. */
static struct gp_opt *all_opts(int *n)
{
	*n = gp_check_noptv + GP_NOPTS(own_opts);
	struct gp_opt *v = malloc((size_t)*n * sizeof(*v));
	if (!v)
		return NULL;
	memcpy(v, gp_check_optv, (size_t)gp_check_noptv * sizeof(*v));
	memcpy(v + gp_check_noptv, own_opts, sizeof(own_opts));
	return v;
}

static void usage(const struct gp_opt *opts, int nopts, FILE *f)
{
	fprintf(f,
		"usage: gcheck [options]\n       gcheck --cluster [--nodes LIST] [options]\n"
		"Screen this node's cards (or, with --cluster, every card of the cluster, one job "
		"per card):\nbandwidth, memory test, FMA throughput, a grade.\n\noptions:\n");
	gp_opt_usage(opts, nopts, f);
}

/* ---- reporting ---- */

static int report(gp_session_t *s, const char *node, struct gp_check_result *r, gp_error_t *err)
{
	Gpool__CardReport c = GPOOL__CARD_REPORT__INIT;
	c.node = (char *)node;
	c.card = (uint32_t)r->t.card;
	c.grade = (char *)gp_grade_name(r->grade);
	c.throughput = r->m.bw_mean_gbps;
	c.reason = r->reason;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CARD_REPORT;
	m.card_report = &c;
	return gp_session_call(s, &m, GPOOL__MSG__M_CARD_REPORT_REPLY, GP_CLI_TIMEOUT_MS, NULL, err)
		   ? 0
		   : -1;
}

/* Options of one mode are refused in the other. 0 / -1 (EINVAL, err filled). */
static int check_modes(const struct gcheck *g, gp_error_t *err)
{
	const struct gcheck_cluster *c = &g->cluster;
	errno = EINVAL;
	if (c->on && g->report)
		return gp_errprintf(err, "--cluster: the agents report the grades (no --report)");
	if (c->on && g->node)
		return gp_errprintf(err, "--cluster screens every node (--nodes LIST, not --node)");
	if (!c->on && (c->nodes || c->no_wait || c->time_limit || c->gcheck || c->nprofiles))
		return gp_errprintf(err, "--nodes, --no-wait, --time, --gcheck and --card-profile "
					 "go with --cluster");
	errno = 0;
	return 0;
}

/* gcheck on this node: measure, grade, report when asked; the exit status. */
static int check_node(struct gcheck *g)
{
	gp_error_t err;
	gp_session_t *s = NULL;
	struct gp_check_target tv[GP_CHECK_MAX_CARDS];
	static struct gp_check_result rs[GP_CHECK_MAX_CARDS];
	char host[256] = "";
	int rc = 3;
	if (!g->node) {
		gethostname(host, sizeof(host) - 1);
		g->node = host;
	}
	if (g->report && !(s = gp_session_create(&g->common, &err))) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		return 3;
	}
	int n = gp_check_targets(&g->check, tv, &err);
	if (n < 0) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		goto out;
	}
	int failed = 0, broken = 0, k = 0;
	for (int i = 0; i < n; i++) {
		struct gp_check_result *r = &rs[k];
		if (gp_check_card(&g->check, &tv[i], r, &err) < 0) {
			/* a card that could not be measured is left out of the output */
			fprintf(stderr, "gcheck: card %d: %s\n", tv[i].card, err.text);
			broken++;
			continue;
		}
		k++;
		failed += r->grade == GP_GRADE_FAIL;
		if (!g->report)
			continue;
		if (report(s, g->node, r, &err) < 0) {
			fprintf(stderr, "gcheck: report of %s card %d: %s\n", g->node, r->t.card,
				err.text);
			snprintf(r->report_err, sizeof(r->report_err), "%s", err.text);
			r->reported = "no";
			broken++;
		} else {
			r->reported = "yes";
		}
	}
	/* a screening job (gcheck --cluster): the agent reads the result from here and reports
	 * it to gschedd itself */
	const char *result = getenv("GPOOL_SCREEN_RESULT");
	if (result && *result && gp_check_write_json(&g->check, g->node, rs, k, result, &err) < 0) {
		fprintf(stderr, "gcheck: %s\n", err.text);
		broken++;
	}
	if ((g->check.json ? gp_check_print_json(&g->check, g->node, rs, k, stdout)
			   : gp_check_print_table(rs, k, stdout)) < 0)
		broken++;
	rc = broken ? 3 : failed ? 1 : 0;
out:
	gp_session_destroy(&s);
	return rc;
}

int main(int argc, char **argv)
{
	struct gcheck g = {.node = NULL};
	gp_check_defaults(&g.check);
	gp_error_t err;
	char **ops = NULL;
	int nops = 0, nopts = 0, rc = 3;
	struct gp_opt *opts = all_opts(&nopts);
	if (!opts) {
		fprintf(stderr, "gcheck: out of memory\n");
		return 3;
	}
	if (gp_opt_parse_mixed(opts, nopts, argc, argv, &g, &ops, &nops, &err) < 0)
		goto usage;
	if (g.help) {
		usage(opts, nopts, stdout);
		rc = 0;
		goto out;
	}
	if (nops) {
		gp_errprintf(&err, "unexpected argument '%s'", ops[0]);
		goto usage;
	}
	if (gp_check_finish(&g.check, &err) < 0 || check_modes(&g, &err) < 0)
		goto usage;
	rc = g.cluster.on ? gcheck_cluster_run(&g.cluster, &g.check, &g.common) : check_node(&g);
	goto out;
usage:
	fprintf(stderr, "gcheck: %s\n", err.text);
	rc = 2;
out:
	free(ops);
	free(opts);
	return rc;
}
