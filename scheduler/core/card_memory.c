/* card_memory.c: the card memory each slice of a shared card holds (see card_memory.h). */
#include "scheduler/core/card_memory.h"

#include <stdlib.h>
#include <string.h>

#include "scheduler/core/jobs.h"
#include "scheduler/core/nodes.h"

/* A bound on the entries kept: an agent reports at most 128 a heartbeat. */
#define MAX_ENTRIES 65536

struct card_mem {
	struct card_mem_entry *v;
	size_t n, cap;
};

struct card_mem *card_mem_create(void)
{
	return calloc(1, sizeof(struct card_mem));
}

void card_mem_destroy(struct card_mem **p)
{
	if (!p || !*p)
		return;
	free((*p)->v);
	free(*p);
	*p = NULL;
}

/* Does attempt `attempt` of job `id` run with a task on node that holds card? */
static bool runs_on(struct gsched *s, uint64_t id, uint32_t attempt, int node, uint32_t card)
{
	const struct job *j = jobs_get(s->jobs, id);
	if (!j || j->state != GPOOL__JOB_STATE__RUNNING || j->attempt != attempt)
		return false;
	for (uint32_t t = 0; t < j->ntasks; t++)
		if (j->tasks && j->tasks[t].node == node && card < 64 &&
		    (j->tasks[t].cards >> card & 1))
			return true;
	return false;
}

/* Drop the entries of attempts that no longer run, and node's when node >= 0. */
static void prune(struct gsched *s, struct card_mem *m, int node)
{
	size_t k = 0;
	for (size_t i = 0; i < m->n; i++) {
		struct card_mem_entry *e = &m->v[i];
		if (e->node == node || !runs_on(s, e->job, e->attempt, e->node, e->card))
			continue;
		m->v[k++] = *e;
	}
	m->n = k;
}

void card_mem_report(struct gsched *s, int node, Gpool__CardMemory *const *v, size_t n)
{
	struct card_mem *m = s->card_mem;
	if (!m)
		return;
	prune(s, m, node);
	for (size_t i = 0; i < n; i++) {
		if (!v[i] || !runs_on(s, v[i]->job_id, v[i]->attempt, node, v[i]->card) ||
		    m->n >= MAX_ENTRIES)
			continue;
		if (m->n == m->cap) {
			size_t nc = m->cap ? 2 * m->cap : 16;
			struct card_mem_entry *nv = realloc(m->v, nc * sizeof(*nv));
			if (!nv)
				return;
			m->v = nv;
			m->cap = nc;
		}
		m->v[m->n++] = (struct card_mem_entry){.job = v[i]->job_id,
						       .attempt = v[i]->attempt,
						       .card = v[i]->card,
						       .node = node,
						       .bytes = v[i]->bytes,
						       .peak = v[i]->peak,
						       .budget = v[i]->budget};
	}
}

const struct card_mem_entry *card_mem_entries(struct gsched *s, size_t *n)
{
	*n = 0;
	if (!s->card_mem)
		return NULL;
	prune(s, s->card_mem, -1);
	*n = s->card_mem->n;
	return s->card_mem->n ? s->card_mem->v : NULL;
}

void card_mem_info_fill(struct gsched *s, const struct job *j, Gpool__JobInfo *ji)
{
	ji->card_memory = NULL;
	ji->n_card_memory = 0;
	size_t n, k = 0;
	const struct card_mem_entry *e = card_mem_entries(s, &n);
	for (size_t i = 0; i < n; i++)
		k += e[i].job == j->id;
	if (!k)
		return;
	Gpool__CardMemory **pv = calloc(k, sizeof(*pv));
	Gpool__CardMemory *v = calloc(k, sizeof(*v));
	if (!pv || !v) {
		free(pv);
		free(v);
		return;
	}
	size_t o = 0;
	for (size_t i = 0; i < n && o < k; i++) {
		if (e[i].job != j->id)
			continue;
		gpool__card_memory__init(&v[o]);
		v[o].job_id = e[i].job;
		v[o].attempt = e[i].attempt;
		v[o].card = e[i].card;
		v[o].bytes = e[i].bytes;
		v[o].peak = e[i].peak;
		v[o].budget = e[i].budget;
		const char *name = nodes_name(s->nodes, e[i].node);
		v[o].node = (char *)(name ? name : "");
		pv[o] = &v[o];
		o++;
	}
	ji->card_memory = pv;
	ji->n_card_memory = o;
}
