/* depend.h: job dependencies as sbatch --dependency writes them:
 *   after:J[:J...]       J has started (or ended)
 *   afterok:J            J ended COMPLETED (an array: every task did)
 *   afternotok:J         J ended otherwise (an array: every task ended, at least one not ok)
 *   afterany:J           J ended, however
 *   singleton            no earlier job of the same user and name is still pending or running
 * joined by ',' (all must hold) or by '?' (any one suffices), not both. J is a job id, an
 * array's id (all its tasks) or one task "J_T". Evaluating them against job states is also
 * here, so that the scheduler and the tests share one definition.
 */
#ifndef GPOOL_DEPEND_H
#define GPOOL_DEPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_DEP_MAX 64

enum gp_dep_type {
	GP_DEP_AFTER,
	GP_DEP_AFTEROK,
	GP_DEP_AFTERNOTOK,
	GP_DEP_AFTERANY,
	GP_DEP_SINGLETON
};

struct gp_dep {
	enum gp_dep_type type;
	uint64_t job;  /* 0 for singleton */
	bool has_task; /* "J_T" */
	uint32_t task;
};

typedef struct gp_depend {
	struct gp_dep d[GP_DEP_MAX];
	size_t n;
	bool any; /* '?': one satisfied dependency is enough */
} gp_depend_t;

/* 0 / -1 with errno = EINVAL (unknown type, bad id, mixed separators, empty) or E2BIG (more than
 * GP_DEP_MAX job references). */
int gp_depend_parse(const char *s, gp_depend_t *d);

/* What is known about a dependency's target (a job, or all the tasks of an array). */
struct gp_dep_target {
	bool exists;
	uint32_t total;	  /* jobs (tasks) */
	uint32_t started; /* running, completing or ended after having started */
	uint32_t ended;	  /* in a final state */
	uint32_t ok;	  /* ended COMPLETED */
};

enum gp_dep_result { GP_DEP_WAIT, GP_DEP_OK, GP_DEP_NEVER };

/* One dependency against its target (singleton: total = earlier live jobs of the same name). */
enum gp_dep_result gp_dep_eval(const struct gp_dep *d, const struct gp_dep_target *t);
/* Combine the results of n dependencies: all must hold, or (any) one. */
enum gp_dep_result gp_depend_combine(bool any, const enum gp_dep_result *r, size_t n);

#endif
