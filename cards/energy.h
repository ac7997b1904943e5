/* energy.h: a card's energy counter made from power samples, for cards without one.
 *
 * The trapezoid rule: between two samples the card is taken to have drawn the mean of the
 * two readings. mW x ms is µJ and the mean halves it, so the sum is kept in half microjoules:
 * exact for the integer readings the drivers give, and checkable by hand. A gap between
 * samples longer than max_gap_ms (the agent was stopped, the machine slept) counts as
 * max_gap_ms: energy is not invented for time in which nobody looked.
 */
#ifndef GPOOL_CARDS_ENERGY_H
#define GPOOL_CARDS_ENERGY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gp_energy_integ {
	int64_t max_gap_ms; /* 0: no cap */
	bool started;	    /* a first sample was taken */
	int64_t last_ms;
	uint32_t last_mw;
	uint64_t half_uj; /* the integral so far, in units of 0.5 µJ */
} gp_energy_integ_t;

/* Start an integral at 0 mJ. */
void gp_energy_init(gp_energy_integ_t *e, int64_t max_gap_ms);

/* Add the reading mw taken at t_ms (a monotonic clock). The first sample only starts the
 * integral; a sample at the time of the last replaces its reading; an earlier one is
 * ignored. */
void gp_energy_sample(gp_energy_integ_t *e, int64_t t_ms, uint32_t mw);

/* The integral so far in mJ, rounded down. */
uint64_t gp_energy_mj(const gp_energy_integ_t *e);

#endif
