/* sched.h: the event loop. */
#ifndef GPOOL_SCHED_H
#define GPOOL_SCHED_H

#include "gschedd.h"

/* Run until s->stop is set. 0 / -1. */
int gsched_run(struct gsched *s);

#endif
