/* agent.c: messages from gworkerd: registration, heartbeats, task events, output. */
#include "scheduler/core/agent.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/clock.h"
#include "scheduler/core/card_memory.h"
#include "scheduler/core/events.h"
#include "scheduler/core/lifecycle.h"
#include "common/log.h"
#include "common/names.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/quorum.h"
#include "scheduler/core/running.h"
#include "common/util.h"

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

static void kill_attempt(struct gsched *s, int node, uint64_t job, uint32_t attempt)
{
	Gpool__Kill k = GPOOL__KILL__INIT;
	k.job_id = job;
	k.attempt = attempt;
	k.signal = SIGKILL;
	k.reason = GPOOL__JOB_STATE__CANCELLED;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_KILL;
	m.kill = &k;
	orders_send(s->orders, node, &m);
}

#define LOST_AFTER_HEARTBEATS 2
#define LOST_GRACE_SEC	      5.0

/* What the agent holds against what the scheduler believes runs there:
 *  - a held task of the current attempt is re-adopted (an exited one is recorded as exited:
 *    the reply, sent after the commit, tells the agent it may forget it); one whose job is
 *    being stopped gets its Kill again, at the agent's registration and then while it lives
 *    past the kill grace and two heartbeats: a Kill sent while the agent was away (killed, cut
 *    off, or registered with the leader before) never reached it, and the task would run on
 *    under a job the user was told is cancelled (found by the soak, docs/reliability.md);
 *  - a held task of any other attempt is killed (fencing by attempt number);
 *  - a task the scheduler placed there that the agent no longer lists, twice in a row and
 *    well after its launch, is lost. */
static void reconcile(struct gsched *s, int node, Gpool__HeldTask **held, size_t n,
		      bool registering)
{
	int64_t resend_ms = s->kill_grace_ms + 2 * s->heartbeat_ms;
	for (size_t i = 0; i < n; i++) {
		Gpool__HeldTask *h = held[i];
		struct job *j = jobs_get(s->jobs, h->job_id);
		bool current = j && h->attempt == j->attempt &&
			       (j->state == GPOOL__JOB_STATE__RUNNING ||
				j->state == GPOOL__JOB_STATE__COMPLETING) &&
			       j->tasks && h->rank < j->ntasks && j->tasks[h->rank].node == node;
		if (!current) {
			if (!h->exited) {
				gp_warn("node %s holds job %llu attempt %u rank %u, which is not "
					"current: killing it",
					nodes_name(s->nodes, node), (unsigned long long)h->job_id,
					h->attempt, h->rank);
				kill_attempt(s, node, h->job_id, h->attempt);
			}
			continue;
		}
		struct task *t = &j->tasks[h->rank];
		t->missing = 0;
		if (!h->exited && j->state == GPOOL__JOB_STATE__COMPLETING &&
		    (registering || sched_mono_ms(s) - j->kill_sent_ms > resend_ms))
			job_kill_again(s, j, node);
		/* a replica's port (a gang's rank 0's), also after gschedd restarted */
		if (h->port && !h->exited && h->rank == 0)
			j->port = h->port;
		struct sched_event seen = {
		    .kind = SEV_TASK_HELD, .job = j, .node = node, .held = h};
		sched_publish(s, &seen);
		if (h->exited && t->state != 2) {
			Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
			ev.job_id = h->job_id;
			ev.attempt = h->attempt;
			ev.rank = h->rank;
			ev.kind = GPOOL__TASK_EVENT_KIND__TASK_EXITED;
			ev.status = h->status;
			ev.oom = h->oom;
			ev.fenced = h->fenced;
			ev.vacated = h->vacated;
			ev.rusage = h->rusage;
			job_task_event(s, node, &ev);
		} else if (!h->exited && t->state == 0) {
			t->state = 1;
		}
	}
	/* tasks placed here that the agent did not list */
	double now = sched_now(s);
	size_t pos = 0;
	struct job *j, **lost = NULL;
	uint32_t *lost_rank = NULL;
	size_t nlost = 0;
	while ((j = running_iter(s, &pos))) {
		for (uint32_t r = 0; r < j->ntasks; r++) {
			struct task *t = &j->tasks[r];
			if (t->node != node || t->state == 2)
				continue;
			bool listed = false;
			for (size_t i = 0; i < n && !listed; i++)
				listed = held[i]->job_id == j->id &&
					 held[i]->attempt == j->attempt && held[i]->rank == r;
			if (listed)
				continue;
			if (++t->missing < LOST_AFTER_HEARTBEATS ||
			    now - j->start_time < LOST_GRACE_SEC)
				continue;
			struct job **nl = realloc(lost, (nlost + 1) * sizeof(*nl));
			uint32_t *nr = realloc(lost_rank, (nlost + 1) * sizeof(*nr));
			if (nl)
				lost = nl;
			if (nr)
				lost_rank = nr;
			if (!nl || !nr)
				break;
			lost[nlost] = j;
			lost_rank[nlost++] = r;
		}
	}
	for (size_t i = 0; i < nlost; i++) {
		char why[160];
		snprintf(why, sizeof(why), "node %s no longer holds the task",
			 nodes_name(s->nodes, node));
		if (lost[i]->state == GPOOL__JOB_STATE__RUNNING ||
		    lost[i]->state == GPOOL__JOB_STATE__COMPLETING)
			job_task_lost(s, lost[i], lost_rank[i], why);
	}
	free(lost);
	free(lost_rank);
}

/* An agent forgets its lease (and stops its requeueable tasks) before the scheduler gives up
 * on the node: requeue never overlaps a live attempt. */
static uint32_t lease_ms(const struct gsched *s)
{
	int64_t l = s->node_timeout_ms - 2 * s->heartbeat_ms;
	if (l < s->heartbeat_ms)
		l = s->heartbeat_ms;
	return (uint32_t)l;
}

/* How long from now gschedd requeues no silent node's jobs: it must hear a majority for
 * node_timeout without a break first (agents_tick). An agent whose lease ran out learns it from
 * a peer and waits to hear gschedd itself rather than fence while a requeue cannot come yet:
 * after a gschedd restart the agents are heard again one by one (docs/reliability.md). */
static int64_t requeue_in_ms(const struct gsched *s, int64_t now)
{
	if (!s->quorum_since_ms)
		return s->node_timeout_ms;
	int64_t left = s->quorum_since_ms + s->node_timeout_ms - now;
	return left > 0 ? left : 0;
}

/* The reply to a registration: the heartbeat, the lease and the pool's members. */
static void register_reply(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__NodeRegisterReply rep = GPOOL__NODE_REGISTER_REPLY__INIT;
	Gpool__PoolMembers members;
	rep.heartbeat_ms = (uint32_t)s->heartbeat_ms;
	rep.lease_ms = lease_ms(s);
	rep.requeue_in_ms = requeue_in_ms(s, sched_mono_ms(r->s));
	if (quorum_members(s->nodes, &members) == 0)
		rep.members = &members;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER_REPLY;
	m.node_register_reply = &rep;
	req_reply(r, &m, true);
	if (rep.members)
		quorum_members_free(&members);
}

/* The same registration again (an agent's retries queued while gschedd was away arrive
 * together): answered, not taken a second time. */
static bool register_again(struct req *r, int idx)
{
	struct node *n = nodes_get(r->s->nodes, idx);
	if (!n || !r->msg->id || !n->registered || n->state == GPOOL__NODE_STATE__NODE_DOWN ||
	    n->reg_msg_id != r->msg->id || n->rid_len != r->rid_len ||
	    memcmp(n->rid, r->rid, r->rid_len) != 0)
		return false;
	gp_debug("node %s: registration %llu again: answered", n->name,
		 (unsigned long long)r->msg->id);
	n->last_heard_ms = sched_mono_ms(r->s);
	n->last_heard = sched_now(r->s);
	register_reply(r);
	return true;
}

void agent_register(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__NodeRegister *reg = r->msg->node_register;
	if (!valid_name(reg->name)) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "invalid node name '%.64s'",
				reg->name);
		return;
	}
	if (reg->cpus == 0 || reg->cpus > 4096) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"node '%s' offers %u CPUs: must be 1..4096", reg->name, reg->cpus);
		return;
	}
	int prev = nodes_find(s->nodes, reg->name);
	if (prev >= 0 && register_again(r, prev))
		return;
	bool was_down =
	    prev >= 0 && nodes_get(s->nodes, prev)->state == GPOOL__NODE_STATE__NODE_DOWN;
	int idx = nodes_register(s->nodes, reg, r->rid, r->rid_len);
	if (idx < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "cannot register node");
		return;
	}
	struct node *n = nodes_get(s->nodes, idx);
	free(n->reason);
	n->reason = n->drain_reason ? strdup(n->drain_reason) : NULL; /* drained: why */
	/* an agent that could not tell its address: the one it is seen at (MASTER_ADDR of its
	 * jobs must reach it from every node) */
	char *seen;
	if (!*n->addr && *r->addr && strcmp(r->addr, "local") && (seen = strdup(r->addr))) {
		free(n->addr);
		n->addr = seen;
	}
	if (!n->registered || was_down)
		orders_node_member(s->orders, idx, !n->registered, true);
	n->reg_msg_id = r->msg->id;
	orders_save_node(s->orders, idx);
	orders_trust_node(s->orders, idx);
	gp_info("node %s registered from %s (%u cpus, %llu MB, %zu cards)%s", n->name, r->addr,
		n->cpus, (unsigned long long)n->mem_mb, reg->n_cards, was_down ? ", back up" : "");
	if (!n->registered) {
		job_readopt_node(s, idx);
		n->registered = true;
		if (n->drain) /* drained before a restart of gschedd: its replicas still move */
			sched_publish_node(s, SEV_NODE_DRAINED, idx);
	}
	sched_publish(
	    s, &(struct sched_event){.kind = SEV_NODE_OWNER, .node = idx, .owner = reg->owner});
	reconcile(s, idx, reg->held, reg->n_held, true);
	sched_publish_node(s, SEV_NODE_REGISTERED, idx);
	s->members_version = quorum_members_version(s->nodes);
	register_reply(r);
	s->plan_dirty = true;
}

/* A message from an agent that must be registered and UP (or drained). */
static struct node *live_node(struct req *r)
{
	if (r->node < 0) {
		gp_warn("%s from an unregistered node at %s: refused",
			r->msg->m_case == GPOOL__MSG__M_HEARTBEAT ? "heartbeat" : "agent message",
			r->addr);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
				"node is not registered: register first");
		return NULL;
	}
	struct node *n = nodes_get(r->s->nodes, r->node);
	if (n->state == GPOOL__NODE_STATE__NODE_DOWN) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
				"node %s is down: register again", n->name);
		return NULL;
	}
	n->last_heard_ms = sched_mono_ms(r->s);
	n->last_heard = sched_now(r->s);
	if (n->state == GPOOL__NODE_STATE__NODE_UNREACHABLE) {
		n->state = n->drain ? GPOOL__NODE_STATE__NODE_DRAINED : GPOOL__NODE_STATE__NODE_UP;
		free(n->reason);
		n->reason = n->drain_reason ? strdup(n->drain_reason) : NULL;
		gp_info("node %s answers again: its jobs ran on", n->name);
		r->s->plan_dirty = true;
	}
	return n;
}

void agent_heartbeat(struct req *r)
{
	if (!live_node(r))
		return;
	Gpool__Heartbeat *hb = r->msg->heartbeat;
	sched_publish(r->s, &(struct sched_event){
				.kind = SEV_NODE_OWNER, .node = r->node, .owner = hb->owner});
	reconcile(r->s, r->node, hb->held, hb->n_held, false);
	node_set_free_ports(nodes_get(r->s->nodes, r->node), hb->free_ports, hb->n_free_ports);
	energy_account(r->s, r->node, hb->power, hb->n_power);
	card_mem_report(r->s, r->node, hb->card_memory, hb->n_card_memory);
	Gpool__HeartbeatReply rep = GPOOL__HEARTBEAT_REPLY__INIT;
	Gpool__PoolMembers members;
	rep.requeue_in_ms = requeue_in_ms(r->s, sched_mono_ms(r->s));
	/* the members only when the agent's are not the current ones */
	if (hb->members_version != r->s->members_version &&
	    quorum_members(r->s->nodes, &members) == 0)
		rep.members = &members;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
	m.heartbeat_reply = &rep;
	req_reply(r, &m, true); /* after the commit: the agent may then forget exited tasks */
	if (rep.members)
		quorum_members_free(&members);
}

void agent_task_event(struct req *r)
{
	if (!live_node(r))
		return;
	job_task_event(r->s, r->node, r->msg->task_event);
}

void agent_output(struct req *r)
{
	if (!live_node(r))
		return;
	Gpool__Output *o = r->msg->output;
	struct job *j = jobs_get(r->s->jobs, o->job_id);
	if (!j || o->attempt != j->attempt) {
		gp_debug("output for unknown job %llu attempt %u: dropped",
			 (unsigned long long)o->job_id, o->attempt);
		return;
	}
	if (o->rank >= j->ntasks || !j->tasks || j->tasks[o->rank].node != r->node) {
		gp_warn("output for job %llu rank %u from a node that does not run it: dropped",
			(unsigned long long)o->job_id, o->rank);
		return;
	}
	sched_publish(r->s, &(struct sched_event){
				.kind = SEV_JOB_OUTPUT, .job = j, .node = r->node, .output = o});
}

/* A silent node while gschedd cannot requeue: it may be gschedd that is cut off, so the
 * node's jobs are left running; nothing new goes there. */
static void node_unreachable(struct gsched *s, struct node *n, int64_t now, const struct quorum *q)
{
	if (n->state == GPOOL__NODE_STATE__NODE_UNREACHABLE || !n->registered)
		return; /* a placeholder waits for its agent as it is */
	n->state = GPOOL__NODE_STATE__NODE_UNREACHABLE;
	free(n->reason);
	n->reason = strdup("not responding; no majority heard: its jobs are left running");
	gp_warn("node %s is UNREACHABLE: silent for %lld ms while the scheduler hears %d of the "
		"pool's %d nodes (no majority for %lld ms): its jobs are left running",
		n->name, (long long)(now - n->last_heard_ms), q->heard, q->members,
		(long long)s->node_timeout_ms);
	s->plan_dirty = true;
}

void agents_tick(struct gsched *s)
{
	int64_t now = sched_mono_ms(s);
	struct quorum q;
	/* heard within two heartbeats: an agent counts a peer that heard us that much later than
	 * itself as proof that we are alive (worker/agent/sched_link.c) */
	quorum_count(s->nodes, now, 2 * s->heartbeat_ms, &q);
	if (!quorum_held(&q))
		s->quorum_since_ms = 0;
	else if (!s->quorum_since_ms)
		s->quorum_since_ms = now;
	/* a majority heard for node_timeout without a break: an agent cut off from gschedd has
	 * asked its peers at least once meanwhile, heard that gschedd is alive, and stopped its
	 * requeueable jobs (docs/reliability.md, "Scheduler outages") */
	bool may_requeue = s->quorum_since_ms && now - s->quorum_since_ms >= s->node_timeout_ms;
	bool down = false;
	for (int i = 0; i < nodes_count(s->nodes); i++) {
		struct node *n = nodes_get(s->nodes, i);
		if (n->state == GPOOL__NODE_STATE__NODE_DOWN)
			continue;
		if (now - n->last_heard_ms <= s->node_timeout_ms)
			continue;
		if (!may_requeue) {
			node_unreachable(s, n, now, &q);
			continue;
		}
		n->state = GPOOL__NODE_STATE__NODE_DOWN;
		down = true;
		orders_node_member(s->orders, i, false, false);
		free(n->reason);
		n->reason = strdup("not responding");
		gp_warn("node %s is DOWN: silent for %lld ms", n->name,
			(long long)(now - n->last_heard_ms));
		job_node_failed(s, i);
		sched_publish_node(s, SEV_NODE_DOWN, i);
		/* nothing of its old allocation is trusted now */
		memset(n->cpu_busy, 0, n->cpus);
		n->cpus_used = 0;
		n->mem_used_mb = 0;
		n->njobs = 0;
		s->plan_dirty = true;
	}
	if (down || !s->members_version) /* the members changed (or were never counted) */
		s->members_version = quorum_members_version(s->nodes);
}
