/* gnodes: the cluster's nodes (as sinfo -N), their cards (-G), and drain/resume of a node or
 * one of its cards (as scontrol update nodename=... state=drain). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lib/json.h"
#include "cli/lib/nodeview.h"
#include "common/opt.h"
#include "common/parse.h"
#include "cli/lib/session.h"
#include "cli/lib/nodefmt.h"

struct gnodes {
	struct gp_cli_common common;
	const char *reason;
	const char *format; /* -o */
	bool cards, json, help;
	char **ops;
	int nops;
};

#define G(c) ((struct gnodes *)(c))

static int set_cards(void *c, const char *a, gp_error_t *err)
{
	G(c)->cards = true;
	return 0;
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	G(c)->json = true;
	return 0;
}

static int set_format(void *c, const char *a, gp_error_t *err)
{
	gp_fieldfmt_t *f = gp_nodefmt_create(a, err); /* checked now: a usage error */
	if (!f)
		return -1;
	gp_fieldfmt_destroy(&f);
	G(c)->format = a;
	return 0;
}

static int set_reason(void *c, const char *a, gp_error_t *err)
{
	if (!*a) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid reason ''");
	}
	G(c)->reason = a;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"cards", 'G', no_argument, NULL, "the card table instead of the node table", set_cards, 0},
    {"json", 0, no_argument, NULL, "the nodes (with their cards) as JSON", set_json, 0},
    {"format", 'o', required_argument, "FIELDS",
     "sinfo-style field list, e.g. '%N %t %C %m %G %E' (one row per node)", set_format, 0},
    {"reason", 'R', required_argument, "TEXT", "why (for drain)", set_reason, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

/* ---- subcommands ---- */

/* "pc1" -> (pc1, -1); "pc1:2" -> (pc1, 2) */
static int node_card(const char *s, char *node, size_t len, int *card, gp_error_t *err)
{
	const char *colon = strrchr(s, ':');
	long v = -1;
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	if (n == 0 || n >= len || (colon && gp_parse_long(colon + 1, 0, 1023, &v) < 0)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid node or card '%s' (NODE or NODE:CARD)", s);
	}
	memcpy(node, s, n);
	node[n] = '\0';
	*card = (int)v;
	return 0;
}

static int node_control(struct gnodes *g, Gpool__NodeAction action, gp_error_t *err)
{
	char node[256];
	int card = -1, rc = 1;
	if (g->nops != 2) {
		gp_errprintf(err, g->nops < 2 ? "no node given" : "one node at a time");
		return 2;
	}
	if (node_card(g->ops[1], node, sizeof(node), &card, err) < 0)
		return 2;
	if (action == GPOOL__NODE_ACTION__NODE_DRAIN && !g->reason) {
		gp_errprintf(err, "drain needs a reason (--reason TEXT)");
		return 2;
	}
	if (action != GPOOL__NODE_ACTION__NODE_DRAIN && g->reason) {
		gp_errprintf(err, "option '--reason' is for drain");
		return 2;
	}
	gp_session_t *s = gp_session_create(&g->common, err);
	if (!s)
		return 1;
	Gpool__NodeControl nc = GPOOL__NODE_CONTROL__INIT;
	nc.action = action;
	nc.name = node;
	nc.card = card;
	nc.reason = (char *)(g->reason ? g->reason : "");
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_CONTROL;
	m.node_control = &nc;
	if (gp_session_call(s, &m, GPOOL__MSG__M_NODE_CONTROL_REPLY, GP_CLI_TIMEOUT_MS, NULL, err))
		rc = 0;
	gp_session_destroy(&s);
	return rc;
}

static int drain(struct gnodes *g, gp_error_t *err)
{
	return node_control(g, GPOOL__NODE_ACTION__NODE_DRAIN, err);
}

static int resume(struct gnodes *g, gp_error_t *err)
{
	return node_control(g, GPOOL__NODE_ACTION__NODE_RESUME, err);
}

static int print_json(const Gpool__NodeQueryReply *r)
{
	json_t *o = json_object(), *a = json_array();
	if (!o || !a || json_object_set_new(o, "nodes", a) < 0) {
		json_decref(o);
		return -1;
	}
	for (size_t i = 0; i < r->n_nodes; i++)
		if (json_array_append_new(a, gp_json_node(r->nodes[i])) < 0) {
			json_decref(o);
			return -1;
		}
	json_t *ra = json_array();
	json_object_set_new(o, "refused", ra);
	for (size_t i = 0; i < r->n_refused; i++) {
		const Gpool__OpsRefusedNode *x = r->refused[i];
		json_array_append_new(ra, json_pack("{s:s, s:s, s:s, s:s, s:I, s:f}", "name",
						    x->name, "state", "refused", "addr", x->addr,
						    "reason", x->reason, "count",
						    (json_int_t)x->count, "last", x->last));
	}
	return gp_json_print(o, stdout);
}

/* The listing: operands, if any, are host lists to show. */
static int list(struct gnodes *g, gp_error_t *err)
{
	Gpool__NodeQuery q = GPOOL__NODE_QUERY__INIT;
	int rc = 1;
	for (int i = 0; i < g->nops; i++) {
		char **names;
		int n;
		if (gp_hostlist_expand(g->ops[i], &names, &n) < 0) {
			gp_errprintf(err, "invalid host list '%s'", g->ops[i]);
			gp_strv_free(q.names, (int)q.n_names);
			return 2;
		}
		char **nv = realloc(q.names, (q.n_names + n) * sizeof(*nv));
		if (!nv) {
			gp_strv_free(names, n);
			gp_strv_free(q.names, (int)q.n_names);
			gp_errprintf(err, "out of memory");
			return 1;
		}
		q.names = nv;
		memcpy(q.names + q.n_names, names, n * sizeof(*names));
		q.n_names += n;
		free(names);
	}
	if (g->reason) {
		gp_strv_free(q.names, (int)q.n_names);
		gp_errprintf(err, "option '--reason' is for drain");
		return 2;
	}
	gp_session_t *s = gp_session_create(&g->common, err);
	if (!s)
		goto out;
	Gpool__NodeQueryReply *nr = gp_session_node_query(s, &q, err);
	if (!nr)
		goto out;
	if (g->json) {
		if (print_json(nr) < 0)
			gp_errprintf(err, "cannot write the output");
		else
			rc = 0;
		goto out;
	}
	if (g->format) {
		gp_fieldfmt_t *f = gp_nodefmt_create(g->format, err);
		rc = f && gp_fieldfmt_header(f, stdout) == 0 ? 0 : 1;
		for (size_t i = 0; f && i < nr->n_nodes && rc == 0; i++)
			rc = gp_nodefmt_node(f, nr->nodes[i], stdout) < 0 ? 1 : 0;
		if (f && rc)
			gp_errprintf(err, "cannot write the output");
		gp_fieldfmt_destroy(&f);
		goto out;
	}
	gp_table_t *t = g->cards ? gp_nodeview_card_table(nr->nodes, nr->n_nodes)
				 : gp_nodeview_table(nr->nodes, nr->n_nodes);
	if (t && gp_table_print(t, stdout) == 0)
		rc = 0;
	else
		gp_errprintf(err, "cannot write the output");
	/* agents the scheduler refused: named as they claim, with what to fix */
	for (size_t i = 0; !g->cards && i < nr->n_refused; i++) {
		const Gpool__OpsRefusedNode *x = nr->refused[i];
		printf("%s refused (from %s, %llu times): %s\n", x->name, x->addr,
		       (unsigned long long)x->count, x->reason);
	}
	gp_table_destroy(&t);
out:
	gp_session_destroy(&s);
	gp_strv_free(q.names, (int)q.n_names);
	return rc;
}

struct subcommand {
	const char *name;
	int (*run)(struct gnodes *g, gp_error_t *err); /* returns the exit status */
	const char *usage;
};

static const struct subcommand subcommands[] = {
    {"drain", drain, "gnodes drain NODE[:CARD] --reason TEXT   no new work on it"},
    {"resume", resume, "gnodes resume NODE[:CARD]                back in service"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gnodes [options] [NODES]\n");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(f, "       %s\n", subcommands[i].usage);
	fprintf(f, "Show the cluster's nodes and cards; drain or resume a node or a card.\n\n"
		   "options:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

int main(int argc, char **argv)
{
	struct gnodes g = {0};
	gp_error_t err = {{0}};
	int rc;
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &g, &g.ops, &g.nops, &err) < 0) {
		rc = 2;
		goto report;
	}
	if (g.help) {
		usage(stdout);
		free(g.ops);
		return 0;
	}
	const struct subcommand *sc = NULL;
	for (size_t i = 0; g.nops && i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(g.ops[0], subcommands[i].name))
			sc = &subcommands[i];
	rc = sc ? sc->run(&g, &err) : list(&g, &err);
report:
	if (rc) {
		fprintf(stderr, "gnodes: %s\n", err.text);
		if (rc == 2)
			fprintf(stderr, "usage: see gnodes --help\n");
	}
	free(g.ops);
	return rc;
}
