/* subcommand.c: a command's table of subcommands (subcommand.h). */
#include "cli/lib/subcommand.h"

#include <errno.h>
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
