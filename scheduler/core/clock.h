/* clock.h: the time as the core sees it: given to it, never read by it. The shell gives the
 * system's clocks (scheduler/shell/plug.c: gp_now, gp_mono_ms); a test gives its own. The core
 * reads the time only through sched_now() and sched_mono_ms(); with no clock given both are 0.
 */
#ifndef GPOOL_SCHED_CLOCK_H
#define GPOOL_SCHED_CLOCK_H

#include <stdint.h>

struct sched_clock {
	double (*now)(void);	  /* unix time, seconds */
	int64_t (*mono_ms)(void); /* a monotonic clock, milliseconds */
};

/* The time of clock c (NULL, or no function given: 0). */
static inline double sched_clock_now(const struct sched_clock *c)
{
	return c && c->now ? c->now() : 0;
}

static inline int64_t sched_clock_mono_ms(const struct sched_clock *c)
{
	return c && c->mono_ms ? c->mono_ms() : 0;
}

/* s's time (struct gsched's clock). */
#define sched_now(s)	 sched_clock_now(&(s)->clock)
#define sched_mono_ms(s) sched_clock_mono_ms(&(s)->clock)

#endif
