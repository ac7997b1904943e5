/* args.h: operands the commands share: job ids ("42", "42,43") and signals ("TERM",
 * "SIGKILL", "9"). 0 / -1 with errno EINVAL and a message in err. */
#ifndef GP_CLI_ARGS_H
#define GP_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Append the ids of one operand to *ids (realloc'd; *n counts them). */
int gp_args_jobids(const char *s, uint64_t **ids, size_t *n, gp_error_t *err);
int gp_args_signal(const char *s, int *sig, gp_error_t *err);

#endif
