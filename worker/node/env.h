/* env.h: the environment a task starts with: the submitter's exported environment (or a
 * minimal PATH/HOME/USER/SHELL) plus GPOOL_* and the torchrun names (RANK, WORLD_SIZE, ...). */
#ifndef GPOOL_WORKER_ENV_H
#define GPOOL_WORKER_ENV_H

#include "worker/node/account.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

struct gp_task_env_ctx {
	const Gpool__Launch *launch;
	const Gpool__TaskPlacement *task;
	const struct gp_account *account;
	const char *node;     /* this node's name */
	const char *scratch;  /* the task's working directory */
	const char *iface;    /* the network interface joining the nodes (NULL: none known) */
	const char *subnet;   /* its subnet as ADDR/BITS (NULL: none known) */
	const char *mps_root; /* shared cards' MPS directories (mps.h): SCRATCH_DIR/mps (NULL:
				 none) */
};

/* Build a NULL-terminated "NAME=value" vector (malloc'd, free with gp_env_free). Variables
 * gpool sets replace same-named ones of the submitter. NULL with err filled on failure. */
char **gp_env_build(const struct gp_task_env_ctx *c, gp_error_t *err);
void gp_env_free(char **env);
/* The value of name in env, or NULL. */
const char *gp_env_get(char *const *env, const char *name);

#endif
