/* energy.c: the trapezoid integral of power samples (energy.h). */
#include "cards/energy.h"

#include <string.h>

void gp_energy_init(gp_energy_integ_t *e, int64_t max_gap_ms)
{
	memset(e, 0, sizeof(*e));
	e->max_gap_ms = max_gap_ms > 0 ? max_gap_ms : 0;
}

void gp_energy_sample(gp_energy_integ_t *e, int64_t t_ms, uint32_t mw)
{
	if (e->started && t_ms < e->last_ms)
		return;
	if (e->started) {
		int64_t dt = t_ms - e->last_ms;
		if (e->max_gap_ms && dt > e->max_gap_ms)
			dt = e->max_gap_ms;
		/* (a + b) / 2 mW over dt ms: (a + b) * dt half-µJ */
		e->half_uj += ((uint64_t)e->last_mw + mw) * (uint64_t)dt;
	}
	e->started = true;
	e->last_ms = t_ms;
	e->last_mw = mw;
}

uint64_t gp_energy_mj(const gp_energy_integ_t *e)
{
	return e->half_uj / 2000; /* 2 half-µJ per µJ, 1000 µJ per mJ */
}
