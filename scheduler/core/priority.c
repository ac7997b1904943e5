/* priority.c: fair share applied to the queue and the per-user limits (see priority.h). */
#include "scheduler/core/priority.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/core/clock.h"
#include "scheduler/core/events.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/running.h"

struct holding {
	const char *user; /* points into a job of the pass */
	uint32_t jobs, cpus, cards;
	double factor;
	bool factor_known;
};

struct prio_pass {
	struct gsched *s;
	struct holding *h;
	size_t n, cap;
};

void priority_job_holds(struct gsched *s, const struct job *j, uint32_t *cpus, uint32_t *cards)
{
	*cpus = 0;
	*cards = 0;
	if (!j->tasks)
		return;
	int seen_node = -1;
	for (uint32_t t = 0; t < j->ntasks; t++) {
		const struct task *k = &j->tasks[t];
		*cards += (uint32_t)__builtin_popcountll(k->cards);
		if (!j->exclusive) {
			*cpus += j->cpus_per_task;
			continue;
		}
		/* a whole node each: count each node once (tasks of a node are adjacent) */
		if (k->node != seen_node) {
			const struct node *n = nodes_get(s->nodes, k->node);
			*cpus += n ? n->cpus : j->cpus_per_task;
			seen_node = k->node;
		}
	}
}

/* An attempt ended: charge its user what it held for as long as it ran, less frozen time. */
static int on_attempt_ended(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	const struct job *j = ev->job;
	if (!s->fairshare || !j || j->step_of || !j->user || j->start_time <= 0)
		return 0; /* a step's use is its allocation's */
	double now = sched_now(s);
	double secs = now - j->start_time - (double)j->frozen_attempt_ms / 1000.0;
	if (secs <= 0)
		return 0;
	uint32_t cpus, cards;
	priority_job_holds(s, j, &cpus, &cards);
	if (fairshare_charge(s->fairshare, j->user, secs * cpus, secs * cards, now) < 0)
		gp_err("fair share: out of memory charging '%s'", j->user);
	return 0;
}

int priority_subscribe(struct gsched *s)
{
	return sched_events_subscribe(s->events, 1u << SEV_JOB_ATTEMPT_ENDED, on_attempt_ended,
				      NULL);
}

static struct holding *holding_of(struct prio_pass *pp, const char *user)
{
	for (size_t i = 0; i < pp->n; i++)
		if (!strcmp(pp->h[i].user, user))
			return &pp->h[i];
	if (pp->n == pp->cap) {
		size_t cap = pp->cap ? pp->cap * 2 : 16;
		struct holding *nh = realloc(pp->h, cap * sizeof(*nh));
		if (!nh)
			return NULL;
		pp->h = nh;
		pp->cap = cap;
	}
	struct holding *h = &pp->h[pp->n++];
	memset(h, 0, sizeof(*h));
	h->user = user;
	return h;
}

struct prio_pass *priority_pass_create(struct gsched *s, double now)
{
	struct prio_pass *pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	pp->s = s;
	if (s->fairshare)
		fairshare_pass_begin(s->fairshare, now);
	size_t pos = 0;
	struct job *r;
	while ((r = running_iter(s, &pos))) {
		if (r->step_of || !r->user)
			continue;
		uint32_t cpus, cards;
		priority_job_holds(s, r, &cpus, &cards);
		struct holding *h = holding_of(pp, r->user);
		if (!h) {
			priority_pass_destroy(&pp);
			return NULL;
		}
		h->jobs++;
		h->cpus += cpus;
		h->cards += cards;
		double secs = now - r->start_time - (double)r->frozen_attempt_ms / 1000.0;
		if (s->fairshare && secs > 0)
			fairshare_pass_running(s->fairshare, r->user, secs * cpus, secs * cards);
	}
	return pp;
}

void priority_pass_destroy(struct prio_pass **p)
{
	if (!p || !*p)
		return;
	free((*p)->h);
	free(*p);
	*p = NULL;
}

struct cand {
	struct job *j;
	double factor;
	size_t qi;
};

static int by_order(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->j->priority != y->j->priority)
		return x->j->priority > y->j->priority ? -1 : 1;
	if (x->factor != y->factor)
		return x->factor > y->factor ? -1 : 1;
	return x->qi < y->qi ? -1 : x->qi > y->qi;
}

struct job **priority_order(struct gsched *s, struct prio_pass *pp, size_t *n)
{
	size_t qlen = jobs_queue_len(s->jobs);
	*n = 0;
	struct cand *c = calloc(qlen ? qlen : 1, sizeof(*c));
	struct job **out = calloc(qlen ? qlen : 1, sizeof(*out));
	if (!c || !out) {
		free(c);
		free(out);
		return NULL;
	}
	bool alike = true; /* every factor the same: the queue's own order stands */
	for (size_t i = 0; i < qlen; i++) {
		struct job *j = jobs_queue_at(s->jobs, i);
		c[i].j = j;
		c[i].qi = i;
		c[i].factor = 1.0;
		if (!s->fairshare || !pp || !j->user)
			continue;
		/* one factor per user and pass */
		struct holding *h = holding_of(pp, j->user);
		if (h && !h->factor_known) {
			h->factor = fairshare_factor(s->fairshare, j->user);
			h->factor_known = true;
		}
		c[i].factor = h ? h->factor : fairshare_factor(s->fairshare, j->user);
	}
	for (size_t i = 1; i < qlen && alike; i++)
		alike = c[i].factor == c[0].factor;
	/* the queue is kept in --priority, then submission order (jobs.h): one user, or users
	 * alike, need no sort (a queue of 100,000 jobs is placed often) */
	if (!alike)
		qsort(c, qlen, sizeof(*c), by_order);
	for (size_t i = 0; i < qlen; i++)
		out[i] = c[i].j;
	free(c);
	*n = qlen;
	return out;
}

bool priority_within_limits(struct prio_pass *pp, const struct job *j, uint32_t cpus,
			    uint32_t cards, char *why, size_t len)
{
	struct gsched *s = pp ? pp->s : NULL;
	if (!s || !s->fairshare || !j->user || j->step_of)
		return true;
	struct fs_limits l = fairshare_limits(s->fairshare, j->user);
	if (!l.jobs && !l.cpus && !l.cards)
		return true;
	struct holding *h = holding_of(pp, j->user);
	if (!h)
		return true;
	if (l.jobs && h->jobs + 1 > l.jobs) {
		snprintf(why, len, "UserLimit (running jobs: %u of at most %u)", h->jobs, l.jobs);
		return false;
	}
	if (l.cpus && h->cpus + cpus > l.cpus) {
		snprintf(why, len, "UserLimit (CPUs: %u held, %u more asked, at most %u)", h->cpus,
			 cpus, l.cpus);
		return false;
	}
	if (l.cards && h->cards + cards > l.cards) {
		snprintf(why, len, "UserLimit (cards: %u held, %u more asked, at most %u)",
			 h->cards, cards, l.cards);
		return false;
	}
	return true;
}

void priority_pass_started(struct prio_pass *pp, const struct job *j, uint32_t cpus, uint32_t cards)
{
	if (!pp || !j->user || j->step_of)
		return;
	struct holding *h = holding_of(pp, j->user);
	if (!h)
		return;
	h->jobs++;
	h->cpus += cpus;
	h->cards += cards;
}

static double user_factor(struct gsched *s, struct prio_pass *pp, const char *user)
{
	struct holding *h = pp ? holding_of(pp, user) : NULL;
	if (h && h->factor_known)
		return h->factor;
	double f = fairshare_factor(s->fairshare, user);
	if (h) {
		h->factor = f;
		h->factor_known = true;
	}
	return f;
}

bool priority_may_preempt(struct gsched *s, struct prio_pass *pp, const struct job *b,
			  const struct job *r)
{
	if (!s->preempt || !s->fairshare || !b->user || !r->user)
		return false;
	double now = sched_now(s), grace = (double)s->preempt_grace_ms / 1000.0;
	if (now - b->submit_time < grace)
		return false;
	if (r->state != GPOOL__JOB_STATE__RUNNING || r->vacated || r->frozen ||
	    r->preempt_attempt == r->attempt)
		return false;
	if (!s->requeue || r->no_requeue || r->service || r->svc_of || r->alloc || r->step_of ||
	    r->steps_started || r->screen)
		return false;
	if (r->priority > b->priority || now - r->start_time < grace)
		return false;
	return user_factor(s, pp, r->user) < user_factor(s, pp, b->user);
}

bool priority_preempting(struct gsched *s)
{
	size_t pos = 0;
	struct job *r;
	while ((r = running_iter(s, &pos)))
		if (r->preempt_attempt && r->preempt_attempt == r->attempt)
			return true;
	return false;
}

void priority_preempt(struct gsched *s, struct job *r, const struct job *b)
{
	char why[128];
	snprintf(why, sizeof(why), "preempted for job %llu (fair share)",
		 (unsigned long long)b->id);
	gp_info("job %llu (%s): %s", (unsigned long long)r->id, r->user, why);
	r->preempt_attempt = r->attempt;
	r->vacated = true; /* back to the queue, not counted against max_attempts */
	if (r->ckpt_signal) {
		job_signal(s, r, r->ckpt_signal);
		r->preempt_kill_ms = sched_mono_ms(s) + (int64_t)r->ckpt_sec * 1000;
		return;
	}
	r->preempt_kill_ms = 0;
	job_kill(s, r, GPOOL__JOB_STATE__REQUEUED, SIGTERM, why);
}

void priority_tick(struct gsched *s)
{
	int64_t now = sched_mono_ms(s);
	size_t pos = 0;
	struct job *r;
	struct job *due[64];
	size_t n = 0;
	while ((r = running_iter(s, &pos)) && n < 64)
		if (r->preempt_kill_ms && now >= r->preempt_kill_ms &&
		    r->state == GPOOL__JOB_STATE__RUNNING && r->preempt_attempt == r->attempt)
			due[n++] = r;
	for (size_t i = 0; i < n; i++) {
		due[i]->preempt_kill_ms = 0;
		job_kill(s, due[i], GPOOL__JOB_STATE__REQUEUED, SIGTERM,
			 "preempted (fair share): its checkpoint time is over");
	}
}
