/* evq.c - timers and write interest of a connection's events (see evq.h). */
#include "http/evq.h"

void gh_evq_arm(struct event *timer, int ms)
{
	if (ms <= 0) {
		event_del(timer);
		return;
	}
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_add(timer, &tv);
}

void gh_evq_want(struct event *ev, bool *wanted, bool on)
{
	if (on == *wanted)
		return;
	*wanted = on;
	if (on)
		event_add(ev, NULL);
	else
		event_del(ev);
}

void gh_evq_free(struct event **ev)
{
	if (*ev)
		event_free(*ev);
	*ev = NULL;
}
