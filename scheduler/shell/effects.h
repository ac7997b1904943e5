/* effects.h: the shell's side of the orders (orders.h): after each event (a message handled, a
 * placement pass, a tick) the loop carries out what the core ordered, in order: messages into
 * the peers' outboxes (net.c), Launch messages built from the store (launch.c), rows into the
 * open transaction (commit.c). Durable messages still wait for the commit (loop.c).
 */
#ifndef GPOOL_SCHED_EFFECTS_H
#define GPOOL_SCHED_EFFECTS_H

#include "scheduler/core/gschedd.h"

/* Carry out and forget every order in s->orders. An order that cannot be carried out is
 * logged; a launch whose spec is missing ends its job (job_launch_failed). */
void effects_carry_out(struct gsched *s);

/* How far a dependency's target got, from the store (gschedd's dep_target). 0 / -1. */
struct gp_dep_target;
int effects_dep_target(struct gsched *s, uint64_t id, bool has_task, uint32_t task,
		       struct gp_dep_target *t);

#endif
