/* events.c: the core's event subscribers (events.h). */
#include "scheduler/core/events.h"

#include <stdlib.h>

#include "scheduler/core/gschedd.h"

struct sub {
	uint32_t mask;
	sched_observer_f cb;
	void *arg;
};

struct sched_events {
	struct sub *v;
	size_t n;
};

struct sched_events *sched_events_create(void)
{
	return calloc(1, sizeof(struct sched_events));
}

void sched_events_destroy(struct sched_events **e)
{
	if (!e || !*e)
		return;
	free((*e)->v);
	free(*e);
	*e = NULL;
}

int sched_events_subscribe(struct sched_events *e, uint32_t mask, sched_observer_f cb, void *arg)
{
	struct sub *nv = realloc(e->v, (e->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	e->v = nv;
	e->v[e->n++] = (struct sub){mask, cb, arg};
	return 0;
}

int sched_publish(struct gsched *s, const struct sched_event *ev)
{
	struct sched_events *e = s->events;
	for (size_t i = 0; e && i < e->n; i++) {
		if (!(e->v[i].mask & 1u << ev->kind))
			continue;
		if (e->v[i].cb(s, ev, e->v[i].arg) == 1 && ev->kind == SEV_JOB_ATTEMPT_ENDED)
			return 1;
	}
	return 0;
}

int sched_publish_job(struct gsched *s, enum sched_event_kind kind, struct job *j)
{
	struct sched_event ev = {.kind = kind, .job = j, .node = -1};
	return sched_publish(s, &ev);
}

void sched_publish_node(struct gsched *s, enum sched_event_kind kind, int node)
{
	struct sched_event ev = {.kind = kind, .node = node};
	sched_publish(s, &ev);
}
