/* subcommand.c: a command's table of subcommands, and the main such a command runs
 * (subcommand.h). */
#include "cli/lib/subcommand.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const struct gp_subcommand *gp_subcommand_find(const struct gp_subcommand *t, size_t n,
					       const char *name, gp_error_t *err)
{
	errno = EINVAL;
	if (!name) {
		gp_errprintf(err, "no subcommand given");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	gp_errprintf(err, "unknown subcommand '%s'", name);
	return NULL;
}

void gp_subcommand_usage(const struct gp_subcommand *t, size_t n, const char *note, FILE *f)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %s%s\n", t[i].usage, !t[i].run && note ? note : "");
}

int gp_subcommand_main(const struct gp_subcommand_cmd *c, void *ctx, const bool *help, int argc,
		       char **argv)
{
	gp_error_t err = {{0}};
	char **ops = NULL;
	int nops = 0, rc = 2;
	if (gp_opt_parse_mixed(c->opts, c->nopts, argc, argv, ctx, &ops, &nops, &err) < 0)
		goto report;
	if (*help) {
		c->usage(stdout);
		free(ops);
		return 0;
	}
	if (c->check && (rc = c->check(ctx, ops, nops, &err)) != 0)
		goto report;
	rc = 2;
	const struct gp_subcommand *sub =
	    gp_subcommand_find(c->subs, c->nsubs, nops ? ops[0] : NULL, &err);
	if (!sub)
		goto report;
	rc = sub->run(ctx, ops + 1, nops - 1, &err);
report:
	if (rc && err.text[0])
		fprintf(stderr, "%s: %s\n", c->prog, err.text);
	if (rc == 2)
		fprintf(stderr, "usage: see %s\n", c->help_hint);
	free(ops);
	return rc;
}
