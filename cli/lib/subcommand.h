/* subcommand.h: a command made of subcommands (gpool, gpool-join) as one table: find the
 * subcommand a command line names, print the table's usage lines. */
#ifndef GP_CLI_SUBCOMMAND_H
#define GP_CLI_SUBCOMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "common/opt.h"

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

/* What a command made of subcommands is: its options, its subcommands, its help. */
struct gp_subcommand_cmd {
	const char *prog;      /* its messages' prefix: "gpool" */
	const char *help_hint; /* after a usage error: "usage: see HELP_HINT" */
	const struct gp_opt *opts;
	int nopts;
	const struct gp_subcommand *subs;
	size_t nsubs;
	void (*usage)(FILE *f); /* the --help text */
	/* Before the subcommand is looked up (NULL: none): 0 to go on, else the exit status with
	 * err filled. */
	int (*check)(void *ctx, char **ops, int nops, gp_error_t *err);
};

/* The main of such a command, written once: options and operands in any order into ctx,
 * --help (*help, set by the table) printed, the subcommand that the first operand names run with
 * the rest. A failure is printed as "PROG: message", and a usage error (2) points at the help.
 * Returns the exit status. */
int gp_subcommand_main(const struct gp_subcommand_cmd *c, void *ctx, const bool *help, int argc,
		       char **argv);

#endif
