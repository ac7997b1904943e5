/* plug.h: gschedd's features plugged into its core. The core (scheduler/core/) names no
 * feature: each feature adds its admission check (admit.h) and subscribes to the core's events
 * (events.h) here, once at start-up, in an order that matters. */
#ifndef GPOOL_SCHED_PLUG_H
#define GPOOL_SCHED_PLUG_H

#include "scheduler/core/gschedd.h"

/* Plug s's features in: the checks of the admission chain (admit.h), then the features that
 * watch jobs and nodes, those present: fair share first, the rendezvous (a stopping attempt's
 * ranks fail before anything restarts it), then services, the metrics' counters and the
 * output's long polls; and the system's clocks (clock.h) where none was given. After
 * sched_core_init. 0 / -1. */
int sched_core_subscribe(struct gsched *s);

/* Release the features' state kept in s (services' replica sets, fair share), before
 * sched_core_release. */
void sched_features_release(struct gsched *s);

#endif
