/* spin.h - when a transport polls instead of sleeping (see spin.c). */
#ifndef GCOMM_SPIN_H
#define GCOMM_SPIN_H

#include <stdint.h>

typedef struct {
	int us;		    /* polling budget of one wait, µs (0: always sleep) */
	int skip, backoff;  /* waits left that sleep at once; the next such run */
	int yield;	    /* the machine has more runnable tasks than our CPUs */
	int ncpu;	    /* CPUs this process may run on */
	int64_t crowd_next; /* when to look at the run queue again */
	int64_t end;	    /* the current poll's deadline */
} gc_spin_t;

void gc_spin_init(gc_spin_t *s, int us);
/* A wait begins; SOON: something is about to complete. 1: poll (gc_spin_step between
 * polls that found nothing), 0: sleep now. */
int gc_spin_begin(gc_spin_t *s, int soon);
/* A poll found nothing: 1 poll again (after yielding the CPU when the machine is crowded),
 * 0 the budget is spent (sleep). */
int gc_spin_step(gc_spin_t *s);
/* A poll found something. */
void gc_spin_hit(gc_spin_t *s);

#endif
