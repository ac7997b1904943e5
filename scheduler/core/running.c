/* running.c - the set of running and completing jobs, so periodic work does not walk the
 * whole job table (running.h) */
#include "scheduler/core/running.h"

#include <stdlib.h>

#include "common/u64map.h"

void running_add(struct gsched *s, struct job *j)
{
	gp_u64map_put(s->running, j->id, j);
}

void running_remove(struct gsched *s, struct job *j)
{
	gp_u64map_del(s->running, j->id);
}

struct job *running_iter(struct gsched *s, size_t *pos)
{
	return gp_u64map_next(s->running, pos, NULL);
}

size_t running_count(struct gsched *s)
{
	return gp_u64map_count(s->running);
}
