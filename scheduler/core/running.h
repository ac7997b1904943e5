/* running.h: the set of running (and completing) jobs, so periodic work does not walk the
 * whole job table. */
#ifndef GPOOL_RUNNING_H
#define GPOOL_RUNNING_H

#include "scheduler/core/gschedd.h"

void running_add(struct gsched *s, struct job *j);
void running_remove(struct gsched *s, struct job *j);
/* Iterate: *pos = 0 first; NULL at the end. Do not add or remove while iterating. */
struct job *running_iter(struct gsched *s, size_t *pos);
size_t running_count(struct gsched *s);

#endif
