/* node_owner.c: a PC's owner's histogram by hour of the week, as placement reads it
 * (node_owner.h). */
#include "scheduler/core/node_owner.h"

#include <math.h>
#include <time.h>

#include "scheduler/core/gschedd.h"
#include "scheduler/core/nodes.h"

#define MAX_WEEKS 1000

struct node_owner *owner_of(struct gsched *s, int node)
{
	struct node *n = nodes_get(s->nodes, node);
	return n ? &n->owner : NULL;
}

int owner_hour_of_week(double t)
{
	time_t tt = (time_t)t;
	struct tm lt;
	localtime_r(&tt, &lt);
	return ((lt.tm_wday + 6) % 7) * 24 + lt.tm_hour;
}

void owner_hist_add(struct node_owner *o, int how, double fraction)
{
	if (how < 0 || how >= OWNER_HOURS)
		return;
	if (fraction < 0)
		fraction = 0;
	if (fraction > 1)
		fraction = 1;
	/* the first weeks count as an average, then each new week weighs OWNER_DECAY_NEW */
	double w = o->weeks[how] < 1 ? 1.0 : 1.0 / (o->weeks[how] + 1);
	if (w < OWNER_DECAY_NEW)
		w = OWNER_DECAY_NEW;
	o->hist[how] = o->hist[how] * (1 - w) + fraction * w;
	o->hist_any = true;
	if (o->weeks[how] < MAX_WEEKS)
		o->weeks[how]++;
}

double owner_free_chance(const struct node_owner *o, double start, uint32_t secs)
{
	if (!o->hist_any)
		return 1.0; /* no history: every PC alike, and no clock read per comparison */
	if (!secs)
		secs = 3600;
	if (secs > 7 * 24 * 3600)
		secs = 7 * 24 * 3600; /* a week covers every hour once */
	double chance = 1.0, t = start, end = start + secs;
	int how = owner_hour_of_week(t); /* then one hour after another */
	while (t < end) {
		double hour_end = floor(t / 3600) * 3600 + 3600;
		double part = ((hour_end < end ? hour_end : end) - t) / 3600.0;
		if (o->weeks[how])
			chance *= pow(1.0 - o->hist[how], part);
		t = hour_end;
		how = (how + 1) % OWNER_HOURS;
	}
	return chance;
}
