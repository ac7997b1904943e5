/* gcheck-local: gcheck's measurements and grade of this machine's cards, without a cluster:
 * the same measuring core as gcheck (cards/check.c) and the same options, table and JSON,
 * built alone with only a C compiler, cmake and the CUDA toolkit (CMakeLists.txt here). It
 * neither reports to gschedd nor submits jobs: that is gcheck's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cards/check.h"
#include "common/opt.h"

struct local {
	struct gp_check_opts check; /* first: the shared options set it (check.h) */
	const char *node;
	bool help;
};

#define L(c) ((struct local *)(c))

static int set_node(void *c, const char *a, gp_error_t *err)
{
	if (!*a)
		return errno = EINVAL, gp_errprintf(err, "invalid node ''");
	return L(c)->node = a, 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	return L(c)->help = true, 0;
}

static const struct gp_opt own_opts[] = {
    {"node", 'N', required_argument, "NAME", "the node named in the JSON (default: the host name)",
     set_node, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

int main(int argc, char **argv)
{
	struct local l = {.node = NULL};
	gp_check_defaults(&l.check);
	int nopts = gp_check_noptv + GP_NOPTS(own_opts), nops = 0, rc = 2;
	struct gp_opt *opts = malloc((size_t)nopts * sizeof(*opts));
	char **ops = NULL;
	gp_error_t err;
	if (!opts) {
		fprintf(stderr, "gcheck-local: out of memory\n");
		return 3;
	}
	memcpy(opts, gp_check_optv, (size_t)gp_check_noptv * sizeof(*opts));
	memcpy(opts + gp_check_noptv, own_opts, sizeof(own_opts));
	if (gp_opt_parse_mixed(opts, nopts, argc, argv, &l, &ops, &nops, &err) < 0)
		goto usage;
	if (l.help) {
		printf("usage: gcheck-local [options]\nScreen this machine's cards as gcheck does: "
		       "bandwidth, memory test, FMA throughput, a grade.\n\noptions:\n");
		gp_opt_usage(opts, nopts, stdout);
		rc = 0;
		goto out;
	}
	if (nops) {
		gp_errprintf(&err, "unexpected argument '%s'", ops[0]);
		goto usage;
	}
	if (gp_check_finish(&l.check, &err) < 0)
		goto usage;
	char host[256] = "";
	if (!l.node) {
		gethostname(host, sizeof(host) - 1);
		l.node = host;
	}
	struct gp_check_target tv[GP_CHECK_MAX_CARDS];
	static struct gp_check_result rs[GP_CHECK_MAX_CARDS];
	int n = gp_check_targets(&l.check, tv, &err);
	if (n < 0) {
		fprintf(stderr, "gcheck-local: %s\n", err.text);
		rc = 3;
		goto out;
	}
	int k = 0, failed = 0, broken = 0;
	for (int i = 0; i < n; i++) {
		if (gp_check_card(&l.check, &tv[i], &rs[k], &err) < 0) {
			fprintf(stderr, "gcheck-local: card %d: %s\n", tv[i].card, err.text);
			broken++;
			continue;
		}
		failed += rs[k++].grade == GP_GRADE_FAIL;
	}
	if ((l.check.json ? gp_check_print_json(&l.check, l.node, rs, k, stdout)
			  : gp_check_print_table(rs, k, stdout)) < 0)
		broken++;
	rc = broken ? 3 : failed ? 1 : 0;
	goto out;
usage:
	fprintf(stderr, "gcheck-local: %s\n", err.text);
	rc = 2;
out:
	free(ops);
	free(opts);
	return rc;
}
