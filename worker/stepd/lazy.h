/* lazy.h: gstepd's server of ranged reads for lazily staged files (lazy.c, common/lazy.h). */
#ifndef GPOOL_WORKER_STEPD_LAZY_H
#define GPOOL_WORKER_STEPD_LAZY_H

#include "common/error.h"
#include "worker/stepd/step.h"

typedef struct step_lazy step_lazy_t;

/* Serve s's lazily staged files (made in s->workdir already) to its tasks. NULL with err
 * empty when the job has none, NULL with err on a failure. */
step_lazy_t *step_lazy_create(struct step *s, gp_error_t *err);
/* Set GPOOL_STAGE_SOCK to the socket's name ("@...") in *env (a NULL-terminated malloc'd
 * vector, as gp_env_build makes; it may be reallocated). z NULL: nothing. 0 / -1 with err. */
int step_lazy_env(const step_lazy_t *z, char ***env, gp_error_t *err);
/* Takes NULL; sets *p to NULL. */
void step_lazy_destroy(step_lazy_t **p);

#endif
