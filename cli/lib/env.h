/* env.h: the environment a job gets, from gsub's --export (as Slurm's):
 *   ALL (the default)  the whole environment of gsub
 *   NONE               nothing
 *   VAR                VAR as gsub sees it (skipped when unset)
 *   VAR=value          VAR set to value
 * Items are separated by commas: "ALL,OMP_NUM_THREADS=4" adds to the whole environment;
 * "PATH,HOME" exports only those two.
 */
#ifndef GP_CLI_ENV_H
#define GP_CLI_ENV_H

#include <stddef.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* Build the EnvVar list for `spec` (NULL: ALL) from envp. *vars is malloc'd, each member
 * too (free with gp_export_free). 0 / -1 (EINVAL: "invalid --export item 'x'"). */
int gp_export_build(const char *spec, char *const *envp, Gpool__EnvVar ***vars, size_t *n,
		    gp_error_t *err);
void gp_export_free(Gpool__EnvVar **vars, size_t n);

/* Check the syntax of an --export value without building anything. */
int gp_export_check(const char *spec, gp_error_t *err);

#endif
