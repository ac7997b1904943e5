/* agent.c: messages from gworkerd: registration, heartbeats, task events, output. */
#include "agent.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "log.h"
#include "names.h"
#include "nodes.h"
#include "output.h"
#include "running.h"
#include "util.h"

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

/* Fencing on (re-)registration: whatever the agent still holds that is not the current
 * attempt of a running job placed there is killed. */
static void reconcile(struct gsched *s, int node, Gpool__HeldTask **held, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		Gpool__HeldTask *h = held[i];
		struct job *j = jobs_get(s->jobs, h->job_id);
		bool keep = j && h->attempt == j->attempt &&
			    (j->state == GPOOL__JOB_STATE__RUNNING ||
			     j->state == GPOOL__JOB_STATE__COMPLETING) &&
			    h->rank < j->ntasks && j->tasks[h->rank].node == node;
		if (keep)
			continue;
		if (h->exited)
			continue;
		gp_warn("node %s holds job %llu attempt %u rank %u that is not current: killing it",
			nodes_name(s->nodes, node), (unsigned long long)h->job_id, h->attempt, h->rank);
		Gpool__Kill k = GPOOL__KILL__INIT;
		k.job_id = h->job_id;
		k.attempt = h->attempt;
		k.signal = SIGKILL;
		k.reason = GPOOL__JOB_STATE__CANCELLED;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_KILL;
		m.kill = &k;
		gsched_send_node(s, node, &m);
	}
}

void agent_register(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__NodeRegister *reg = r->msg->node_register;
	if (!valid_name(reg->name)) {
		gsched_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "invalid node name '%.64s'",
				   reg->name);
		return;
	}
	if (reg->cpus == 0 || reg->cpus > 4096) {
		gsched_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				   "node '%s' offers %u CPUs: must be 1..4096", reg->name, reg->cpus);
		return;
	}
	int prev = nodes_find(s->nodes, reg->name);
	bool was_down = prev >= 0 && nodes_get(s->nodes, prev)->state == GPOOL__NODE_STATE__NODE_DOWN;
	int idx = nodes_register(s->nodes, reg, r->rid, r->rid_len);
	if (idx < 0) {
		gsched_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "cannot register node");
		return;
	}
	struct node *n = nodes_get(s->nodes, idx);
	free(n->reason);
	n->reason = NULL;
	gp_info("node %s registered from %s (%u cpus, %llu MB, %zu cards)%s", n->name, r->addr,
		n->cpus, (unsigned long long)n->mem_mb, reg->n_cards, was_down ? ", back up" : "");
	reconcile(s, idx, reg->held, reg->n_held);
	Gpool__NodeRegisterReply rep = GPOOL__NODE_REGISTER_REPLY__INIT;
	rep.heartbeat_ms = (uint32_t)s->heartbeat_ms;
	rep.lease_ms = (uint32_t)s->node_timeout_ms;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER_REPLY;
	m.node_register_reply = &rep;
	gsched_reply(r, &m, false);
	s->plan_dirty = true;
}

/* A message from an agent that must be registered and UP (or drained). */
static struct node *live_node(struct req *r)
{
	if (r->node < 0) {
		gsched_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
				   "node is not registered: register first");
		return NULL;
	}
	struct node *n = nodes_get(r->s->nodes, r->node);
	if (n->state == GPOOL__NODE_STATE__NODE_DOWN) {
		gsched_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
				   "node %s is down: register again", n->name);
		return NULL;
	}
	n->last_heard_ms = gp_mono_ms();
	n->last_heard = gp_now();
	return n;
}

void agent_heartbeat(struct req *r)
{
	if (!live_node(r))
		return;
	Gpool__HeartbeatReply rep = GPOOL__HEARTBEAT_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_HEARTBEAT_REPLY;
	m.heartbeat_reply = &rep;
	gsched_reply(r, &m, false);
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
	output_write(r->s, j, o);
}

void agents_tick(struct gsched *s)
{
	int64_t now = gp_mono_ms();
	for (int i = 0; i < nodes_count(s->nodes); i++) {
		struct node *n = nodes_get(s->nodes, i);
		if (n->state == GPOOL__NODE_STATE__NODE_DOWN)
			continue;
		if (now - n->last_heard_ms <= s->node_timeout_ms)
			continue;
		n->state = GPOOL__NODE_STATE__NODE_DOWN;
		free(n->reason);
		n->reason = strdup("not responding");
		gp_warn("node %s is DOWN: silent for %lld ms", n->name,
			(long long)(now - n->last_heard_ms));
		job_node_failed(s, i);
		/* nothing of its old allocation is trusted now */
		memset(n->cpu_busy, 0, n->cpus);
		n->cpus_used = 0;
		n->mem_used_mb = 0;
		n->njobs = 0;
		s->plan_dirty = true;
	}
}
