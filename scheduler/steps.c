/* steps.c: job steps on their allocation's resources (steps.h). */
#include "scheduler/steps.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "scheduler/jobs.h"
#include "scheduler/lifecycle.h"

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
	return 0;
}

/* Place step j on its allocation a's tasks and start it. 0 / -1. */
static int step_start(struct gsched *s, struct job *j, struct job *a)
{
	struct alloc pl;
	pl.node = calloc(j->ntasks, sizeof(int));
	pl.cpu_first = calloc(j->ntasks, sizeof(uint32_t));
	pl.cards = calloc(j->ntasks, sizeof(uint64_t));
	int rc = -1;
	if (pl.node && pl.cpu_first && pl.cards && a->tasks && a->ntasks) {
		for (uint32_t r = 0; r < j->ntasks; r++) {
			const struct task *t = &a->tasks[r % a->ntasks];
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
		if (step_start(s, j, a) < 0)
			job_end_pending(s, j, GPOOL__JOB_STATE__FAILED,
					"cannot start on its allocation");
		else
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
