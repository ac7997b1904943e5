/* args.h: what the commands' command lines share: options and operands with --help, job ids
 * ("42", "42,43") and signals ("TERM", "SIGKILL", "9"). Errors: -1 with errno EINVAL and a
 * message in err. */
#ifndef GP_CLI_ARGS_H
#define GP_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/opt.h"

/* A command's options and operands in any order (gp_opt_parse_mixed); when the table's --help
 * set *help, the help goes to stdout: "usage: PROG [options] OPERANDS", what the command does
 * and the table's lines. 0: go on, 1: the help was printed, -1: a usage error. */
int gp_args_parse(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx,
		  const bool *help, const char *prog, const char *operands, const char *what,
		  char ***ops, int *nops, gp_error_t *err);

/* Append the ids of one operand to *ids (realloc'd; *n counts them). */
int gp_args_jobids(const char *s, uint64_t **ids, size_t *n, gp_error_t *err);
/* As gp_args_jobids, but an operand that is a job name (jobname.h: it does not start with a
 * digit) is appended to *names (realloc'd, pointing into s; *nnames counts them) for
 * gp_jobname_resolve_all once a session is open. */
int gp_args_jobs(const char *s, uint64_t **ids, size_t *n, const char ***names, size_t *nnames,
		 gp_error_t *err);
int gp_args_signal(const char *s, int *sig, gp_error_t *err);

#endif
