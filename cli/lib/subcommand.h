/* subcommand.h: a command made of subcommands (gpool, gpool-join) as one table: find the
 * subcommand a command line names, print the table's usage lines. */
#ifndef GP_CLI_SUBCOMMAND_H
#define GP_CLI_SUBCOMMAND_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

/* A subcommand: ctx is the command's own state; args are its operands after its name.
 * Returns the exit status (2: a usage error, detail in err). */
typedef int (*gp_subcommand_f)(void *ctx, char **args, int nargs, gp_error_t *err);

struct gp_subcommand {
	const char *name;
	gp_subcommand_f run; /* NULL: another program's (listed in the usage only) */
	const char *usage;   /* "NAME ARGS   what it does" */
};

/* The entry of t (n entries) named name. NULL with errno EINVAL and err "no subcommand given"
 * (name NULL) or "unknown subcommand 'x'". */
const struct gp_subcommand *gp_subcommand_find(const struct gp_subcommand *t, size_t n,
					       const char *name, gp_error_t *err);

/* One indented line per entry to f, each followed by note when the entry's run is NULL. */
void gp_subcommand_usage(const struct gp_subcommand *t, size_t n, const char *note, FILE *f);

#endif
