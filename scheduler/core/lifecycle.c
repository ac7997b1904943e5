/* lifecycle.c - every change of a job's state, so each job reaches exactly one final state
 * and at most one attempt runs at a time (lifecycle.h) */
#include "scheduler/core/clock.h"
#include "scheduler/core/lifecycle.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "common/log.h"
#include "common/names.h"
#include "common/util.h"
#include "scheduler/core/events.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/running.h"

static void job_finish(struct gsched *s, struct job *j);
static void task_exited(struct gsched *s, struct job *j, uint32_t rank, int32_t status, bool oom);

static void set_reason(struct job *j, const char *why)
{
	free(j->end_reason);
	j->end_reason = why ? strdup(why) : NULL;
}

static int32_t exit_code_of(int32_t status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Is port the master port of another live job whose rank 0 runs on node? */
static bool port_taken(struct gsched *s, const struct job *j, int node, uint32_t port)
{
	size_t pos = 0;
	for (struct job *o; (o = running_iter(s, &pos));)
		if (o != j && o->master_port == port && o->tasks && o->tasks[0].node == node)
			return true;
	return false;
}

/* The master port: one that rank 0's agent found free (it reserves it at the launch and lets
 * go of it just before the tasks start), never the port of another live job there. It is struck
 * from the node's list until the agent reports it free again. Only an agent that reports none
 * (older, or all its ports in use) gets a port from a formula, below the agents' default range. */
static uint32_t master_port(struct gsched *s, const struct job *j)
{
	int node = j->tasks[0].node;
	struct node *n0 = nodes_get(s->nodes, node);
	for (size_t i = 0; n0 && i < n0->n_free_ports; i++) {
		uint32_t p = n0->free_ports[i];
		if (port_taken(s, j, node, p))
			continue;
		n0->free_ports[i] = n0->free_ports[--n0->n_free_ports];
		return p;
	}
	gp_debug("job %llu: node %s reports no free master port: using a formula's",
		 (unsigned long long)j->id, n0 ? n0->name : "?");
	return 20000 + (uint32_t)((j->id * 7 + j->attempt) % 9500);
}

void job_save(struct gsched *s, struct job *j)
{
	s->dep_epoch++;
	if (orders_save_job(s->orders, j->id) < 0)
		gp_err("job %llu: cannot order its row saved: out of memory",
		       (unsigned long long)j->id);
}

int job_start(struct gsched *s, struct job *j, const struct alloc *a)
{
	struct task *tasks = calloc(j->ntasks, sizeof(*tasks));
	int nn = nodes_count(s->nodes);
	int *local = calloc(nn ? nn : 1, sizeof(int));
	if (!tasks || !local || orders_launch(s->orders, j->id, j->attempt + 1) < 0) {
		free(tasks);
		free(local);
		return -1;
	}
	for (uint32_t i = 0; i < j->ntasks; i++) {
		tasks[i].node = a->node[i];
		tasks[i].cpu_first = (uint16_t)a->cpu_first[i];
		tasks[i].cards = a->cards ? a->cards[i] : 0;
		tasks[i].local_rank = (uint16_t)local[a->node[i]]++;
	}
	free(j->tasks);
	j->tasks = tasks;
	j->attempt++;
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->reason = PEND_NONE;
	j->start_time = sched_now(s);
	j->end_time = 0;
	j->reserved_start = 0;
	j->tasks_exited = 0;
	j->kill_reason = GPOOL__JOB_STATE__JOB_STATE_UNKNOWN;
	j->kill_sent_ms = 0;
	j->exit_code = 0;
	j->cpu_sec = 0;
	j->frozen = j->vacated = j->ckpt_signalled = false;
	j->frozen_attempt_ms = 0;
	j->max_rss_kb = 0;
	/* energy adds up over every attempt: each one drew power */
	set_reason(j, NULL);
	uint32_t limit = j->time_limit ? j->time_limit : s->default_time_limit;
	if (j->svc_of)
		limit = 0; /* a service replica runs until stopped */
	j->deadline_ms = limit ? sched_mono_ms(s) + (int64_t)limit * 1000 : 0;
	j->port = 0;
	j->master_port = master_port(s, j);
	jobs_queue_remove(s->jobs, j);
	running_add(s, j);
	/* its nodes' memory and job counts (the CPUs and cards: plan.c) */
	for (int n = 0; n < nn; n++) {
		if (!local[n])
			continue;
		struct node *nd = nodes_get(s->nodes, n);
		nd->mem_used_mb += j->mem_mb;
		nd->njobs++;
	}
	free(local);
	sched_publish_job(s, SEV_JOB_STARTED, j);
	/* the Launch orders (ordered above, so that nothing is left to fail) are built by the
	 * shell from the stored spec (launch.c) */
	job_save(s, j);
	gp_debug("job %llu attempt %u started", (unsigned long long)j->id, j->attempt);
	return 0;
}

void job_launch_failed(struct gsched *s, struct job *j, const char *why)
{
	if (j->state != GPOOL__JOB_STATE__RUNNING)
		return;
	gp_err("job %llu: cannot launch attempt %u: %s", (unsigned long long)j->id, j->attempt,
	       why);
	set_reason(j, why);
	j->kill_reason = GPOOL__JOB_STATE__FAILED;
	for (uint32_t i = 0; i < j->ntasks; i++)
		task_exited(s, j, i, 1 << 8 /* exit code 1 */, false);
	job_finish(s, j);
}

/* Energy of the cards in mask over dt seconds, for those without a reading: their power
 * limit (an upper bound). Cards with a reading (a counter, or the agent's integral of power
 * samples) are accounted from its deltas. */
static double limit_energy(const struct node *nd, uint64_t mask, double dt, uint32_t *sources)
{
	double e = 0;
	for (size_t b = 0; b < nd->n_cards && b < 64; b++) {
		if ((mask >> b & 1) && !nd->energy_src[b]) {
			e += nd->cards[b]->power_limit_w * dt;
			*sources |= 1u << GPOOL__ENERGY_SOURCE__ENERGY_LIMIT;
		}
	}
	return e;
}

/* What a reading is: an agent from before sampling sent counters only, without a source. */
static int reading_source(const Gpool__CardPower *p)
{
	if (p->source == GPOOL__ENERGY_SOURCE__ENERGY_COUNTER ||
	    p->source == GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED)
		return p->source;
	if (p->source == GPOOL__ENERGY_SOURCE__ENERGY_SOURCE_UNKNOWN && p->energy_mj)
		return GPOOL__ENERGY_SOURCE__ENERGY_COUNTER;
	return 0;
}

void energy_account(struct gsched *s, int node, Gpool__CardPower **p, size_t np)
{
	struct node *nd = nodes_get(s->nodes, node);
	if (!nd || !nd->n_cards)
		return;
	int64_t now = sched_mono_ms(s);
	double dt = nd->energy_ms ? (double)(now - nd->energy_ms) / 1000.0 : 0;
	if (dt > 3.0 * (double)s->heartbeat_ms / 1000.0)
		dt = 3.0 * (double)s->heartbeat_ms / 1000.0; /* a gap: do not invent energy */
	nd->energy_ms = now;
	double delta[64] = {0};
	for (size_t k = 0; k < np; k++) {
		uint32_t c = p[k]->card;
		int src = reading_source(p[k]);
		if (c >= 64 || c >= nd->n_cards)
			continue;
		nd->watts[c] = p[k]->watts;
		nd->cards[c]->power_w = p[k]->watts;
		if (p[k]->has_util) { /* present state for gnodes, the API and /metrics */
			nd->cards[c]->temperature_c = p[k]->temperature_c;
			nd->cards[c]->utilization_pct = p[k]->utilization_pct;
		}
		if (!src)
			continue;
		/* a counter that went back (the agent restarted its integral, the driver was
		 * reloaded) or changed kind is a new baseline */
		if (nd->energy_src[c] == src && p[k]->energy_mj >= nd->energy_mj[c])
			delta[c] = (double)(p[k]->energy_mj - nd->energy_mj[c]) / 1000.0;
		nd->energy_mj[c] = p[k]->energy_mj;
		nd->energy_src[c] = (uint8_t)src;
	}
	size_t pos = 0;
	struct job *j;
	while ((j = running_iter(s, &pos))) {
		for (uint32_t i = 0; i < j->ntasks; i++) {
			struct task *t = &j->tasks[i];
			if (t->node != node || t->state == 2 || !t->cards)
				continue;
			if (dt > 0)
				j->energy_j += limit_energy(nd, t->cards, dt, &j->energy_sources);
			for (int b = 0; b < 64; b++) {
				if (!(t->cards >> b & 1) || !nd->energy_src[b])
					continue;
				j->energy_j += delta[b];
				j->energy_sources |= 1u << nd->energy_src[b];
			}
		}
	}
}

/* Free what task i held on its node. */
static void task_release(struct gsched *s, struct job *j, uint32_t i)
{
	struct task *t = &j->tasks[i];
	struct node *nd = nodes_get(s->nodes, t->node);
	if (!nd)
		return;
	if (t->cards && nd->energy_ms) /* the part since the node's last accounting */
		j->energy_j +=
		    limit_energy(nd, t->cards, (double)(sched_mono_ms(s) - nd->energy_ms) / 1000.0,
				 &j->energy_sources);
	if (j->step_of)
		return; /* its allocation holds the cpus, cards and memory (steps.h) */
	node_cpus_free(nd, t->cpu_first, j->cpus_per_task);
	if (!j->gpu || !j->gpu->share || !t->cards ||
	    share_release(&nd->share, __builtin_ctzll(t->cards), j->gpu->mem_min))
		nd->card_busy &= ~t->cards; /* a shared card: once its last slice is gone */
	for (uint32_t k = 0; k < j->ntasks; k++)
		if (k != i && j->tasks[k].node == t->node && j->tasks[k].state != 2)
			return;
	nd->mem_used_mb = nd->mem_used_mb >= j->mem_mb ? nd->mem_used_mb - j->mem_mb : 0;
	if (nd->njobs)
		nd->njobs--;
	s->plan_dirty = true;
}

/* Attempts ended by a vacate (the PC's owner came back) do not count. */
static bool requeue_ok(const struct gsched *s, const struct job *j)
{
	return s->requeue && !j->no_requeue && j->attempt - j->vacates < s->max_attempts;
}

/* Back to the queue for another attempt: every rank of this one is known to be gone. */
void job_requeue(struct gsched *s, struct job *j)
{
	running_remove(s, j);
	gp_info("job %llu requeued after attempt %u (%s)", (unsigned long long)j->id, j->attempt,
		j->end_reason ? j->end_reason : "node failure");
	free(j->tasks);
	j->tasks = NULL;
	j->state = GPOOL__JOB_STATE__PENDING;
	j->reason = PEND_REQUEUED;
	j->kill_reason = GPOOL__JOB_STATE__JOB_STATE_UNKNOWN;
	j->deadline_ms = 0;
	j->kill_sent_ms = 0;
	j->tasks_exited = 0;
	jobs_queue_insert(s->jobs, j);
	s->plan_dirty = true;
	job_save(s, j);
	sched_publish_job(s, SEV_JOB_CHANGED, j);
}

static void job_finish(struct gsched *s, struct job *j)
{
	/* final or requeued: this attempt's rendezvous is over */
	sched_publish_job(s, SEV_JOB_STOPPING, j);
	struct sched_event ev = {.kind = SEV_JOB_ATTEMPT_ENDED, .job = j, .node = -1};
	for (uint32_t i = 0; i < j->ntasks; i++)
		if (exit_code_of(j->tasks[i].status) > ev.exit_code)
			ev.exit_code = exit_code_of(j->tasks[i].status);
	if (sched_publish(s, &ev) == 1)
		return; /* taken over (a service restarts its replica) */
	if (j->kill_reason == GPOOL__JOB_STATE__NODE_FAIL && requeue_ok(s, j)) {
		job_requeue(s, j);
		return;
	}
	if (j->vacated && s->requeue && !j->no_requeue) {
		j->vacates++; /* not counted against max_attempts */
		sched_publish_job(s, SEV_JOB_VACATED, j);
		job_requeue(s, j);
		return;
	}
	Gpool__JobState st;
	bool oom = false, failed = false;
	int32_t code = 0;
	for (uint32_t i = 0; i < j->ntasks; i++) {
		struct task *t = &j->tasks[i];
		oom |= t->oom;
		int32_t c = exit_code_of(t->status);
		if (c > code)
			code = c;
		if (c)
			failed = true;
	}
	if (j->kill_reason == GPOOL__JOB_STATE__CANCELLED ||
	    j->kill_reason == GPOOL__JOB_STATE__TIMEOUT ||
	    j->kill_reason == GPOOL__JOB_STATE__NODE_FAIL)
		st = j->kill_reason;
	else if (j->vacated) /* vacated, and it may not run again */
		st = GPOOL__JOB_STATE__NODE_FAIL;
	else if (oom)
		st = GPOOL__JOB_STATE__OUT_OF_MEMORY;
	else if (failed || j->kill_reason == GPOOL__JOB_STATE__FAILED)
		st = GPOOL__JOB_STATE__FAILED;
	else
		st = GPOOL__JOB_STATE__COMPLETED;
	j->state = st;
	j->exit_code = code;
	j->end_time = sched_now(s);
	j->deadline_ms = 0;
	running_remove(s, j);
	s->completed++;
	s->plan_dirty = true;
	job_save(s, j);
	sched_publish_job(s, SEV_JOB_ENDED, j);
	sched_publish_job(s, SEV_JOB_CHANGED, j);
	if (j->alloc || j->steps_started)
		sched_publish_job(s, SEV_ALLOC_ENDED, j);
	gp_debug("job %llu ended %s (exit code %d)", (unsigned long long)j->id,
		 gp_job_state_name(st), code);
}

static void send_kill(struct gsched *s, int node, uint64_t job, uint32_t attempt, int sig,
		      Gpool__JobState reason)
{
	Gpool__Kill k = GPOOL__KILL__INIT;
	k.job_id = job;
	k.attempt = attempt;
	k.signal = sig;
	k.grace_ms = (uint32_t)s->kill_grace_ms;
	k.reason = reason;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_KILL;
	m.kill = &k;
	orders_send(s->orders, node, &m);
}

void job_kill(struct gsched *s, struct job *j, Gpool__JobState reason, int sig, const char *why)
{
	if (j->state != GPOOL__JOB_STATE__RUNNING && j->state != GPOOL__JOB_STATE__COMPLETING)
		return;
	if (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN) {
		j->kill_reason = reason;
		if (why)
			set_reason(j, why);
	}
	j->state = GPOOL__JOB_STATE__COMPLETING;
	j->kill_sent_ms = sched_mono_ms(s);
	/* ranks waiting in the rendezvous fail now, not at the end */
	sched_publish_job(s, SEV_JOB_STOPPING, j);
	int nn = nodes_count(s->nodes);
	uint8_t *sent = calloc(nn ? nn : 1, 1);
	for (uint32_t i = 0; i < j->ntasks; i++) {
		struct task *t = &j->tasks[i];
		if (t->state == 2 || !sent || sent[t->node])
			continue;
		sent[t->node] = 1;
		send_kill(s, t->node, j->id, j->attempt, sig, reason);
	}
	free(sent);
	if (j->tasks_exited == j->ntasks)
		job_finish(s, j);
	else
		job_save(s, j);
	sched_publish_job(s, SEV_JOB_CHANGED, j);
}

void job_kill_again(struct gsched *s, struct job *j, int node)
{
	if (j->state != GPOOL__JOB_STATE__COMPLETING)
		return;
	j->kill_sent_ms = sched_mono_ms(s);
	send_kill(s, node, j->id, j->attempt, SIGTERM, j->kill_reason);
}

void job_end_pending(struct gsched *s, struct job *j, Gpool__JobState state, const char *why)
{
	jobs_queue_remove(s->jobs, j);
	j->state = state;
	j->end_time = sched_now(s);
	set_reason(j, why);
	s->completed++;
	s->plan_dirty = true;
	job_save(s, j);
	sched_publish_job(s, SEV_JOB_ENDED, j);
	sched_publish_job(s, SEV_JOB_CHANGED, j);
}

static void task_exited(struct gsched *s, struct job *j, uint32_t rank, int32_t status, bool oom)
{
	struct task *t = &j->tasks[rank];
	if (t->state == 2)
		return;
	t->state = 2;
	t->status = status;
	t->oom = oom;
	j->tasks_exited++;
	task_release(s, j, rank);
	job_save(s, j); /* the exit is on disk before the agent is told it may forget it */
}

void job_task_lost(struct gsched *s, struct job *j, uint32_t rank, const char *why)
{
	if (j->tasks[rank].state == 2)
		return;
	gp_warn("job %llu rank %u: %s", (unsigned long long)j->id, rank, why);
	if (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN ||
	    j->kill_reason == GPOOL__JOB_STATE__FAILED) {
		j->kill_reason = GPOOL__JOB_STATE__NODE_FAIL;
		set_reason(j, why);
	}
	task_exited(s, j, rank, SIGKILL, false);
	if (j->tasks_exited == j->ntasks)
		job_finish(s, j);
	else
		job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGKILL, NULL);
}

void job_readopt_node(struct gsched *s, int node)
{
	struct node *nd = nodes_get(s->nodes, node);
	size_t pos = 0;
	struct job *j;
	while ((j = running_iter(s, &pos))) {
		bool here = false;
		if (j->step_of)
			continue; /* its allocation holds what it uses */
		for (uint32_t i = 0; i < j->ntasks; i++) {
			if (j->tasks[i].node != node || j->tasks[i].state == 2)
				continue;
			node_cpus_mark(nd, j->tasks[i].cpu_first, j->cpus_per_task);
			nd->card_busy |= j->tasks[i].cards;
			if (j->gpu && j->gpu->share && j->tasks[i].cards)
				share_take(&nd->share, __builtin_ctzll(j->tasks[i].cards),
					   j->gpu->mem_min, j->uid, NULL);
			here = true;
		}
		if (here) {
			nd->mem_used_mb += j->mem_mb;
			nd->njobs++;
		}
	}
}

int job_restore(struct gsched *s, struct job *j)
{
	if (!j->placement_text)
		return -1;
	struct task *tasks = calloc(j->ntasks, sizeof(*tasks));
	if (!tasks)
		return -1;
	char *save = NULL, *item;
	uint32_t i = 0;
	for (item = strtok_r(j->placement_text, ",", &save); item && i < j->ntasks;
	     item = strtok_r(NULL, ",", &save), i++) {
		char name[256];
		unsigned lr, cpu, st;
		int status, oom;
		unsigned long long cards = 0;
		if (sscanf(item, "%255[^:]:%u:%u:%u:%d:%d:%llx", name, &lr, &cpu, &st, &status,
			   &oom, &cards) < 6)
			break;
		tasks[i].cards = cards;
		int n = nodes_placeholder(s->nodes, name);
		if (n < 0)
			break;
		tasks[i].node = n;
		tasks[i].local_rank = (uint16_t)lr;
		tasks[i].cpu_first = (uint16_t)cpu;
		tasks[i].state = (uint8_t)st;
		tasks[i].status = status;
		tasks[i].oom = oom;
		if (st == 2)
			j->tasks_exited++;
	}
	free(j->placement_text);
	j->placement_text = NULL;
	if (i != j->ntasks) {
		free(tasks);
		return -1;
	}
	j->tasks = tasks;
	uint32_t limit = j->time_limit ? j->time_limit : s->default_time_limit;
	if (limit && !j->svc_of) {
		double left = j->start_time + limit - sched_now(s);
		j->deadline_ms = sched_mono_ms(s) + (int64_t)(left > 0 ? left * 1000 : 0);
	}
	/* not stored: its agent does not report the port free while the job's step lives */
	j->master_port = 0;
	running_add(s, j);
	return 0;
}

void job_task_event(struct gsched *s, int node, const Gpool__TaskEvent *ev)
{
	struct job *j = jobs_get(s->jobs, ev->job_id);
	if (!j) {
		gp_warn("task event from %s for unknown job %llu: ignored",
			nodes_name(s->nodes, node), (unsigned long long)ev->job_id);
		return;
	}
	bool live =
	    j->state == GPOOL__JOB_STATE__RUNNING || j->state == GPOOL__JOB_STATE__COMPLETING;
	if (ev->attempt != j->attempt || !live) {
		/* a superseded attempt still runs somewhere: fence it */
		if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_STARTED) {
			gp_warn(
			    "job %llu: attempt %u reported by %s is not current (attempt %u, %s): "
			    "killing it",
			    (unsigned long long)j->id, ev->attempt, nodes_name(s->nodes, node),
			    j->attempt, gp_job_state_name(j->state));
			send_kill(s, node, j->id, ev->attempt, SIGKILL,
				  GPOOL__JOB_STATE__CANCELLED);
		}
		return;
	}
	if (ev->rank >= j->ntasks || j->tasks[ev->rank].node != node) {
		gp_warn("job %llu: rank %u is not placed on %s: ignored", (unsigned long long)j->id,
			ev->rank, nodes_name(s->nodes, node));
		return;
	}
	switch (ev->kind) {
	case GPOOL__TASK_EVENT_KIND__TASK_STARTED:
		if (j->tasks[ev->rank].state == 0)
			j->tasks[ev->rank].state = 1;
		if (ev->port && ev->rank == 0) /* a gang replica's rank 0 serves */
			j->port = ev->port;
		return;
	case GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START:
		if (ev->reason && *ev->reason && !j->end_reason)
			set_reason(j, ev->reason);
		task_exited(s, j, ev->rank, 1 << 8 /* exit code 1 */, false);
		break;
	case GPOOL__TASK_EVENT_KIND__TASK_EXITED:
		if (ev->fenced && (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN ||
				   j->kill_reason == GPOOL__JOB_STATE__FAILED)) {
			/* its agent heard nothing from us for its lease and stopped it, as it
			 * would on a lost link: a node failure, not the job's */
			char why[160];
			snprintf(why, sizeof(why), "node %s stopped it: its lease ran out",
				 nodes_name(s->nodes, node));
			j->kill_reason = GPOOL__JOB_STATE__NODE_FAIL;
			set_reason(j, why);
		}
		if (ev->vacated && !j->vacated &&
		    (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN ||
		     j->kill_reason == GPOOL__JOB_STATE__FAILED)) {
			/* the PC's owner came back: stopped by its agent, to run elsewhere */
			char why[160];
			snprintf(why, sizeof(why), "vacated: the owner of %s came back",
				 nodes_name(s->nodes, node));
			j->vacated = true;
			j->kill_reason = GPOOL__JOB_STATE__REQUEUED;
			set_reason(j, why);
		}
		if (ev->reason && *ev->reason && !ev->vacated && !ev->fenced && !j->end_reason &&
		    (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN ||
		     j->kill_reason == GPOOL__JOB_STATE__FAILED)) {
			/* its agent stopped it, and says why (a slice over its VRAM budget:
			 * docs/gpu-share.md): the job fails with that reason */
			j->kill_reason = GPOOL__JOB_STATE__FAILED;
			set_reason(j, ev->reason);
		}
		task_exited(s, j, ev->rank, ev->status, ev->oom);
		if (ev->rusage) {
			j->cpu_sec += ev->rusage->user_sec + ev->rusage->sys_sec;
			if (ev->rusage->max_rss_kb > j->max_rss_kb)
				j->max_rss_kb = ev->rusage->max_rss_kb;
		}
		break;
	default:
		return;
	}
	if (j->tasks_exited == j->ntasks) {
		job_finish(s, j);
		return;
	}
	if (j->state == GPOOL__JOB_STATE__COMPLETING)
		return;
	if (j->vacated && j->kill_reason == GPOOL__JOB_STATE__REQUEUED) {
		job_kill(s, j, GPOOL__JOB_STATE__REQUEUED, SIGTERM, NULL); /* the other ranks */
		return;
	}
	if (ev->fenced && j->kill_reason == GPOOL__JOB_STATE__NODE_FAIL &&
	    j->state != GPOOL__JOB_STATE__COMPLETING) {
		job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGKILL, NULL); /* the other ranks */
		return;
	}
	/* gang semantics: one rank failing ends the job; the others are stopped. A service
	 * replica's ranks serve together: one that ends at all ends the attempt (the service
	 * restarts the whole replica) */
	int32_t code = exit_code_of(j->tasks[ev->rank].status);
	if ((code || ev->kind == GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START || j->svc_of) &&
	    j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN) {
		char why[128];
		snprintf(why, sizeof(why), "rank %u %s (exit code %d)", ev->rank,
			 code || !j->svc_of ? "failed" : "ended", code);
		job_kill(s, j,
			 j->tasks[ev->rank].oom ? GPOOL__JOB_STATE__OUT_OF_MEMORY
						: GPOOL__JOB_STATE__FAILED,
			 SIGTERM, j->end_reason ? NULL : why);
	}
}

void job_node_failed(struct gsched *s, int node)
{
	size_t pos = 0;
	struct job *j;
	struct job **hit = NULL;
	size_t nhit = 0;
	while ((j = running_iter(s, &pos))) {
		bool on = false;
		for (uint32_t i = 0; i < j->ntasks; i++)
			if (j->tasks[i].node == node && j->tasks[i].state != 2)
				on = true;
		if (!on)
			continue;
		struct job **nh = realloc(hit, (nhit + 1) * sizeof(*nh));
		if (!nh)
			break;
		hit = nh;
		hit[nhit++] = j;
	}
	for (size_t h = 0; h < nhit; h++) {
		j = hit[h];
		char why[256];
		snprintf(why, sizeof(why), "node %s stopped answering", nodes_name(s->nodes, node));
		if (j->kill_reason == GPOOL__JOB_STATE__JOB_STATE_UNKNOWN ||
		    j->kill_reason == GPOOL__JOB_STATE__FAILED) {
			j->kill_reason = GPOOL__JOB_STATE__NODE_FAIL;
			set_reason(j, why);
		}
		for (uint32_t i = 0; i < j->ntasks; i++)
			if (j->tasks[i].node == node && j->tasks[i].state != 2)
				task_exited(s, j, i, SIGKILL, false);
		if (j->tasks_exited == j->ntasks)
			job_finish(s, j);
		else
			job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGKILL, NULL);
	}
	free(hit);
}

void jobs_tick(struct gsched *s)
{
	int64_t now = sched_mono_ms(s);
	size_t pos = 0;
	struct job *j;
	struct job **due = NULL;
	size_t ndue = 0;
	while ((j = running_iter(s, &pos))) {
		if (j->state == GPOOL__JOB_STATE__RUNNING && j->deadline_ms && j->ckpt_signal &&
		    !j->ckpt_signalled && !j->frozen &&
		    now >= j->deadline_ms - (int64_t)j->ckpt_sec * 1000) {
			/* gsub --signal=SIG@SECONDS: SIG that long before the limit */
			j->ckpt_signalled = true;
			job_signal(s, j, j->ckpt_signal);
		}
		/* a frozen job's limit waits: its frozen time moves the deadline when reported */
		if (j->state == GPOOL__JOB_STATE__RUNNING && j->deadline_ms && !j->frozen &&
		    now >= j->deadline_ms) {
			struct job **nd = realloc(due, (ndue + 1) * sizeof(*nd));
			if (!nd)
				break;
			due = nd;
			due[ndue++] = j;
		}
	}
	for (size_t i = 0; i < ndue; i++)
		job_kill(s, due[i], GPOOL__JOB_STATE__TIMEOUT, SIGTERM, "time limit reached");
	free(due);
}

void job_signal(struct gsched *s, struct job *j, int sig)
{
	int nn = nodes_count(s->nodes);
	for (int n = 0; n < nn; n++) {
		bool on = false;
		for (uint32_t i = 0; i < j->ntasks && !on; i++)
			on = j->tasks[i].node == n && j->tasks[i].state != 2;
		if (!on)
			continue;
		Gpool__Kill k = GPOOL__KILL__INIT;
		k.job_id = j->id;
		k.attempt = j->attempt;
		k.signal = sig;
		k.grace_ms = 0; /* a signal only: no SIGKILL after it */
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_KILL;
		m.kill = &k;
		orders_send(s->orders, n, &m);
	}
	gp_info("job %llu: signal %d sent %u s before its time limit (--signal)",
		(unsigned long long)j->id, sig, j->ckpt_sec);
}
