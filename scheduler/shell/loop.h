/* loop.h: the event loop. */
#ifndef GPOOL_SCHED_LOOP_H
#define GPOOL_SCHED_LOOP_H

#include "scheduler/core/gschedd.h"

/* Run until s->stop is set. 0 / -1. */
int gsched_run(struct gsched *s);

#endif
