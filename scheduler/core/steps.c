/* steps.c: job steps on their allocation's resources (steps.h). */
#include "scheduler/core/steps.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduler/core/events.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/core/running.h"

int steps_check(struct gsched *s, const Gpool__JobSpec *spec, uid_t uid, char *why, size_t len)
{
	struct job *a = jobs_get(s->jobs, spec->step_of);
	if (!a) {
		snprintf(why, len, "allocation %llu does not exist",
			 (unsigned long long)spec->step_of);
		errno = ENOENT;
		return -1;
	}
	/* the owner before anything else: a stranger learns nothing of someone's job */
	if (a->uid != uid) {
		snprintf(why, len, "job %llu is not yours: a step runs only in your own allocation",
			 (unsigned long long)a->id);
		errno = EPERM;
		return -1;
	}
	if (a->step_of || a->svc_of || a->service) {
		snprintf(why, len, "job %llu is a %s: steps run in an allocation or a batch job",
			 (unsigned long long)a->id, a->step_of ? "step" : "service");
		errno = EINVAL;
		return -1;
	}
	if (a->state != GPOOL__JOB_STATE__RUNNING) {
		snprintf(why, len, "allocation %llu is not running", (unsigned long long)a->id);
		errno = EINVAL;
		return -1;
	}
	if (spec->alloc || spec->service || (spec->array && *spec->array)) {
		snprintf(why, len, "a step is one command: not an allocation, service or array");
		errno = EINVAL;
		return -1;
	}
	uint32_t n = spec->ntasks ? spec->ntasks : 1;
	if (spec->exclusive && n > a->ntasks) {
		snprintf(why, len,
			 "an exclusive step of %u tasks can never run in job %llu, which has %u", n,
			 (unsigned long long)a->id, a->ntasks);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int steps_admit(struct gsched *s, struct admission *a)
{
	if (!a->sp->step_of || steps_check(s, a->sp, a->uid, a->why, sizeof(a->why)) == 0)
		return 0;
	a->code = errno == EPERM    ? GPOOL__ERROR_CODE__ERROR_PERMISSION
		  : errno == ENOENT ? GPOOL__ERROR_CODE__ERROR_NOT_FOUND
				    : GPOOL__ERROR_CODE__ERROR_STATE;
	return -1;
}

/* The tasks of allocation a that running exclusive steps hold: busy[k] for its task k (a
 * step's rank runs on its allocation task's node and cpus). */
static void held_tasks(struct gsched *s, const struct job *a, bool *busy)
{
	size_t pos = 0;
	struct job *j;
	while ((j = running_iter(s, &pos))) {
		if (j->step_of != a->id || !j->exclusive || !j->tasks)
			continue;
		for (uint32_t r = 0; r < j->ntasks; r++)
			for (uint32_t k = 0; k < a->ntasks; k++)
				if (!busy[k] && a->tasks[k].node == j->tasks[r].node &&
				    a->tasks[k].cpu_first == j->tasks[r].cpu_first) {
					busy[k] = true;
					break;
				}
	}
}

/* Which of a's tasks step j runs on: rank r on task r % n, or, for an exclusive step (grun
 * --exclusive), on tasks no other running exclusive step holds. 1 when too few are free now
 * (the step waits, said in its reason), else 0 / -1 (ENOMEM). */
static int pick_tasks(struct gsched *s, struct job *j, const struct job *a, uint32_t *slot)
{
	if (!j->exclusive) {
		for (uint32_t r = 0; r < j->ntasks; r++)
			slot[r] = r % a->ntasks;
		return 0;
	}
	bool *busy = calloc(a->ntasks, sizeof(*busy));
	if (!busy)
		return errno = ENOMEM, -1;
	held_tasks(s, a, busy);
	uint32_t got = 0;
	for (uint32_t k = 0; k < a->ntasks && got < j->ntasks; k++)
		if (!busy[k])
			slot[got++] = k;
	uint32_t nfree = got;
	for (uint32_t k = got ? slot[got - 1] + 1 : 0; k < a->ntasks; k++)
		nfree += !busy[k];
	free(busy);
	if (got == j->ntasks)
		return 0;
	char detail[128];
	snprintf(detail, sizeof(detail), "waiting for %u of job %llu's %u tasks (%u free)",
		 j->ntasks, (unsigned long long)a->id, a->ntasks, nfree);
	if (j->reason != PEND_RESOURCES || !j->reason_detail || strcmp(j->reason_detail, detail)) {
		j->reason = PEND_RESOURCES;
		free(j->reason_detail);
		j->reason_detail = strdup(detail);
	}
	return 1;
}

/* Place step j on its allocation a's tasks and start it. 0, 1 (an exclusive step waits for
 * tasks), -1. */
static int step_start(struct gsched *s, struct job *j, struct job *a)
{
	struct alloc pl;
	pl.node = calloc(j->ntasks, sizeof(int));
	pl.cpu_first = calloc(j->ntasks, sizeof(uint32_t));
	pl.cards = calloc(j->ntasks, sizeof(uint64_t));
	uint32_t *slot = calloc(j->ntasks ? j->ntasks : 1, sizeof(*slot));
	int rc = -1;
	if (pl.node && pl.cpu_first && pl.cards && slot && a->tasks && a->ntasks &&
	    (rc = pick_tasks(s, j, a, slot)) == 0) {
		rc = -1;
		for (uint32_t r = 0; r < j->ntasks; r++) {
			const struct task *t = &a->tasks[slot[r]];
			pl.node[r] = t->node;
			pl.cpu_first[r] = t->cpu_first;
			pl.cards[r] = t->cards;
		}
		/* the allocation's share of each node, not the step's own wishes */
		j->cpus_per_task = a->cpus_per_task;
		j->mem_mb = a->mem_mb;
		rc = job_start(s, j, &pl);
		if (rc == 0)
			a->steps_started++;
	}
	free(pl.node);
	free(pl.cpu_first);
	free(pl.cards);
	free(slot);
	return rc;
}

void steps_run(struct gsched *s)
{
	/* collected first: starting a step takes it out of the queue being walked */
	size_t qlen = jobs_queue_len(s->jobs), n = 0;
	struct job **v = NULL;
	for (size_t i = 0; i < qlen; i++) {
		struct job *j = jobs_queue_at(s->jobs, i);
		if (!j->step_of || !j->durable)
			continue;
		struct job **nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		v[n++] = j;
	}
	for (size_t i = 0; i < n; i++) {
		struct job *j = v[i];
		struct job *a = jobs_get(s->jobs, j->step_of);
		if (!a || a->state != GPOOL__JOB_STATE__RUNNING) {
			job_end_pending(s, j, GPOOL__JOB_STATE__CANCELLED,
					"its allocation is not running");
			continue;
		}
		int rc = step_start(s, j, a);
		if (rc < 0)
			job_end_pending(s, j, GPOOL__JOB_STATE__FAILED,
					"cannot start on its allocation");
		else if (rc == 0)
			gp_info("step %llu of allocation %llu started", (unsigned long long)j->id,
				(unsigned long long)a->id);
	}
	free(v);
}

void steps_alloc_ended(struct gsched *s, struct job *alloc)
{
	size_t pos = 0;
	struct job *j;
	while ((j = jobs_iter(s->jobs, &pos))) {
		if (j->step_of != alloc->id)
			continue;
		if (j->state == GPOOL__JOB_STATE__PENDING)
			job_end_pending(s, j, GPOOL__JOB_STATE__CANCELLED, "its allocation ended");
		else if (j->state == GPOOL__JOB_STATE__RUNNING)
			job_kill(s, j, GPOOL__JOB_STATE__CANCELLED, SIGTERM,
				 "its allocation ended");
	}
}

static int on_alloc_ended(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	steps_alloc_ended(s, ev->job);
	return 0;
}

int steps_subscribe(struct gsched *s)
{
	return sched_events_subscribe(s->events, 1u << SEV_ALLOC_ENDED, on_alloc_ended, NULL);
}
