/* launch.c: building an attempt's Launch messages (launch.h). The core (lifecycle.c) has
 * already placed the tasks, chosen the master port and counted the nodes' resources; this
 * reads the spec from the store and writes what each node's agent needs to start its tasks:
 * the ranks and their CPUs and cards, the node list, the rendezvous address, --mpi=pmix's rank
 * map, the peers staged files fan out over, an array task's place in its array. */
#include "scheduler/shell/launch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/log.h"
#include "common/util.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"

/* What every node's Launch shares. */
struct launch_common {
	Gpool__JobSpec *spec;
	int *local;	      /* tasks per node */
	gp_buf_t nodelist;    /* the nodes in rank order, each once, comma-separated */
	uint32_t *rank_nodes; /* --mpi=pmix: every rank's node as its place in the node list */
	char **peers;	      /* staged files: the job's nodes' peer endpoints, or none */
	int *peer_index;      /* a node's place among peers */
	size_t npeers;
	gp_array_t *arr; /* an array task: its array (count, min and max), else NULL */
};

static void common_release(struct launch_common *c)
{
	gp_buf_release(&c->nodelist);
	free(c->rank_nodes);
	free(c->local);
	free(c->peers);
	free(c->peer_index);
	free(c->arr);
	if (c->spec)
		gpool__job_spec__free_unpacked(c->spec, NULL);
}

static int common_fill(struct gsched *s, const struct job *j, struct launch_common *c)
{
	int nn = nodes_count(s->nodes);
	memset(c, 0, sizeof(*c));
	if (!(c->spec = store_job_spec(s->store, j->id))) {
		errno = ENOENT;
		return -1;
	}
	if (j->array_job_id && job_array_of(c->spec, &c->arr) < 0)
		c->arr = NULL; /* checked at submission: it parses */
	if (!(c->local = calloc(nn ? nn : 1, sizeof(int))) ||
	    !(c->peer_index = calloc(nn ? nn : 1, sizeof(int))))
		goto nomem;
	for (uint32_t i = 0; i < j->ntasks; i++) {
		int n = j->tasks[i].node;
		if (c->local[n]++)
			continue;
		const char *name = nodes_name(s->nodes, n);
		if (c->nodelist.len)
			gp_buf_append(&c->nodelist, ",", 1);
		gp_buf_append(&c->nodelist, name, strlen(name));
	}
	gp_buf_append(&c->nodelist, "", 1);
	/* --mpi=pmix: every rank's node, as its place in the node list (each gstepd's PMIx
	 * server gives its ranks the whole job's map) */
	if (c->spec->mpi == GPOOL__MPI_LAUNCH__MPI_PMIX) {
		uint32_t *place = calloc(nn ? nn : 1, sizeof(*place));
		c->rank_nodes = calloc(j->ntasks ? j->ntasks : 1, sizeof(*c->rank_nodes));
		uint32_t seen = 0;
		for (int n = 0; place && n < nn; n++)
			place[n] = UINT32_MAX;
		for (uint32_t i = 0; c->rank_nodes && place && i < j->ntasks; i++) {
			int n = j->tasks[i].node;
			if (place[n] == UINT32_MAX)
				place[n] = seen++;
			c->rank_nodes[i] = place[n];
		}
		if (!place) {
			free(c->rank_nodes);
			c->rank_nodes = NULL; /* gstepd then fails the tasks: no map */
		}
		free(place);
	}
	/* staged files fan out over the job's nodes when each serves its cache to peers */
	if (c->spec->n_stage && (c->peers = calloc(nn ? nn : 1, sizeof(*c->peers)))) {
		for (int n = 0; n < nn; n++) {
			if (!c->local[n])
				continue;
			struct node *nd = nodes_get(s->nodes, n);
			if (!nd->peer_ep || !*nd->peer_ep) {
				c->npeers = 0;
				break;
			}
			c->peer_index[n] = (int)c->npeers;
			c->peers[c->npeers++] = nd->peer_ep;
		}
	}
	return 0;
nomem:
	common_release(c);
	errno = ENOMEM;
	return -1;
}

/* Node n's Launch: its tasks. 0 / -1 (ENOMEM: the missing tasks never start, and the node
 * timeout ends the job). */
static int send_node(struct gsched *s, const struct job *j, const struct launch_common *c, int n)
{
	struct node *nd = nodes_get(s->nodes, n);
	struct node *n0 = nodes_get(s->nodes, j->tasks[0].node);
	int local = c->local[n];
	Gpool__TaskPlacement *tp = calloc(local, sizeof(*tp));
	Gpool__TaskPlacement **tpp = calloc(local, sizeof(*tpp));
	uint32_t *cpus = calloc((size_t)local * j->cpus_per_task + 1, sizeof(uint32_t));
	uint32_t *cardv = calloc((size_t)local * 64 + 1, sizeof(uint32_t));
	int rc = -1;
	if (!tp || !tpp || !cpus || !cardv)
		goto out;
	int k = 0;
	for (uint32_t i = 0; i < j->ntasks; i++) {
		const struct task *t = &j->tasks[i];
		if (t->node != n)
			continue;
		gpool__task_placement__init(&tp[k]);
		tp[k].rank = i;
		tp[k].node = nd->name;
		tp[k].local_rank = t->local_rank;
		tp[k].cpus = cpus + (size_t)k * j->cpus_per_task;
		tp[k].n_cpus = j->cpus_per_task;
		for (uint32_t cpu = 0; cpu < j->cpus_per_task; cpu++)
			tp[k].cpus[cpu] = t->cpu_first + cpu;
		tp[k].cards = cardv + (size_t)k * 64;
		for (int b = 0; b < 64; b++)
			if (t->cards >> b & 1)
				tp[k].cards[tp[k].n_cards++] = (uint32_t)b;
		tpp[k] = &tp[k];
		k++;
	}
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = j->id;
	l.attempt = j->attempt;
	l.spec = c->spec;
	l.uid = j->uid;
	l.gid = j->gid;
	l.user = j->user;
	l.tasks = tpp;
	l.n_tasks = k;
	l.size = j->ntasks;
	l.nodelist = (char *)c->nodelist.data;
	l.master_addr = n0 ? n0->addr : "";
	l.master_port = j->master_port;
	l.local_size = k;
	l.mem_limit_mb = j->mem_mb;
	if (j->step_of) {
		const struct job *a = jobs_get(s->jobs, j->step_of);
		l.step_of_attempt = a ? a->attempt : 0;
	}
	l.cards = nd->cards; /* so that a task sees its cards, and no other */
	l.n_cards = nd->n_cards;
	if (j->array_job_id && c->arr) {
		l.array_job_id = j->array_job_id;
		l.array_task_id = j->array_task_id;
		l.array_task_count = c->arr->count;
		l.array_task_min = c->arr->min;
		l.array_task_max = c->arr->max;
	}
	if (c->rank_nodes) {
		l.rank_nodes = c->rank_nodes;
		l.n_rank_nodes = j->ntasks;
	}
	if (c->npeers > 1) {
		l.stage_peers = c->peers;
		l.n_stage_peers = c->npeers;
		l.stage_index = (uint32_t)c->peer_index[n];
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_LAUNCH;
	m.launch = &l;
	rc = net_queue(s->net, nd->rid, nd->rid_len, &m, true);
out:
	free(tp);
	free(tpp);
	free(cpus);
	free(cardv);
	return rc;
}

int launch_send(struct gsched *s, struct job *j)
{
	struct launch_common c;
	if (!j->tasks || !j->ntasks) {
		errno = EINVAL;
		return -1;
	}
	if (common_fill(s, j, &c) < 0)
		return -1;
	for (int n = 0; n < nodes_count(s->nodes); n++)
		if (c.local[n] && send_node(s, j, &c, n) < 0)
			gp_err("job %llu: cannot queue its launch to %s", (unsigned long long)j->id,
			       nodes_name(s->nodes, n));
	common_release(&c);
	return 0;
}
