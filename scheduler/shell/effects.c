/* effects.c: carrying out the core's orders (effects.h). This is where gschedd's decisions
 * meet its socket and its SQLite store; nothing here decides anything, beyond what to log when
 * a peer or a row is gone. */
#include "scheduler/shell/effects.h"
#include "scheduler/core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduler/shell/commit.h"
#include "scheduler/shell/launch.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"

static void send_member(struct gsched *s, const uint8_t *rid, size_t rid_len,
			const struct order *od)
{
	if (net_queue_member(s->net, rid, rid_len, od->msg, od->msg_len, od->durable) < 0)
		gp_err("cannot queue a message: %s", strerror(errno));
}

static void launch(struct gsched *s, const struct order *od)
{
	struct job *j = jobs_get(s->jobs, od->job);
	if (!j || j->attempt != od->attempt || !j->tasks)
		return; /* superseded in the same event: nothing of it was sent */
	if (launch_send(s, j) == 0)
		return;
	job_launch_failed(s, j,
			  errno == ENOENT ? "its spec is missing from the store"
					  : "out of memory building its launch");
}

static void insert(struct gsched *s, const struct order *od)
{
	struct job *j = jobs_get(s->jobs, od->job);
	if (!j)
		return;
	if (commit_insert(s, j, od->msg, od->msg_len) == 0)
		return;
	gp_err("job %llu: cannot store it: %s", (unsigned long long)j->id, strerror(errno));
	j->durable = true; /* so that forget is allowed: it never reached the store */
	sched_forget(s, j);
}

static void node_member(struct gsched *s, const struct order *od)
{
	struct node *n = nodes_get(s->nodes, od->node);
	if (!n)
		return;
	if (od->known && store_node_known(s->store, n->name) < 0)
		gp_err("node %s: cannot remember it in the store: %s", n->name, strerror(errno));
	if (store_node_member(s->store, n->name, od->member) < 0)
		gp_err("node %s: cannot store it as %s: %s", n->name,
		       od->member ? "a member" : "no member", strerror(errno));
}

static void carry_out(struct gsched *s, const struct order *od)
{
	struct node *n;
	struct job *j;
	switch (od->kind) {
	case ORDER_SEND:
		if ((n = nodes_get(s->nodes, od->node)))
			send_member(s, n->rid, n->rid_len, od);
		break;
	case ORDER_REPLY:
		send_member(s, od->rid, od->rid_len, od);
		break;
	case ORDER_LAUNCH:
		launch(s, od);
		break;
	case ORDER_SAVE_JOB:
		if ((j = jobs_get(s->jobs, od->job)))
			commit_save_job(s, j);
		break;
	case ORDER_INSERT_JOB:
		insert(s, od);
		break;
	case ORDER_SAVE_NODE:
		commit_save_node(s, od->node);
		break;
	case ORDER_NODE_MEMBER:
		node_member(s, od);
		break;
	case ORDER_TRUST_NODE:
		if ((n = nodes_get(s->nodes, od->node)))
			net_trust(s->net, n->rid, n->rid_len);
		break;
	}
}

int effects_dep_target(struct gsched *s, uint64_t id, bool has_task, uint32_t task,
		       struct gp_dep_target *t)
{
	return store_dep_target(s->store, id, has_task, task, t);
}

void effects_carry_out(struct gsched *s)
{
	/* carrying out may order more (a launch that fails ends its job): until none is left */
	while (orders_count(s->orders)) {
		size_t n = orders_count(s->orders);
		struct order *v = orders_take(s->orders);
		for (size_t i = 0; i < n; i++)
			carry_out(s, &v[i]);
		orders_release(v, n);
		free(v);
	}
}
