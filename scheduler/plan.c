#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle.h"
#include "log.h"
#include "nodes.h"
#include "running.h"
#include "util.h"

/* how many pending jobs one pass looks at beyond the first blocked one (Slurm: bf_max_job_test) */
#define BACKFILL_DEPTH 2000

struct res {
	int64_t *cpus; /* free CPUs per node */
	int64_t *mem;  /* free memory per node, MB */
};

struct pass {
	struct gsched *s;
	int nn;
	struct res now;	  /* free now */
	struct res extra; /* usable past the reservation without delaying it */
	bool have_resv;
	double resv_time; /* INFINITY: the blocked job waits on jobs without time limits */
	int *order;	  /* scratch: candidate node order */
	uint32_t *count;  /* scratch: tasks per node */
};

static bool listed(char **v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

/* Which nodes may ever take j; sets *why when none can. */
static bool eligible(struct pass *p, const struct job *j, int node)
{
	struct node *n = nodes_get(p->s->nodes, node);
	if (!node_usable(n))
		return false;
	if (j->n_exclude && listed(j->exclude, j->n_exclude, n->name))
		return false;
	if (j->n_nodelist && !listed(j->nodelist, j->n_nodelist, n->name))
		return false;
	return true;
}

static int64_t cap_on(const struct job *j, const struct res *r, int node)
{
	if (j->mem_mb && r->mem[node] < (int64_t)j->mem_mb)
		return 0;
	return r->cpus[node] / j->cpus_per_task;
}

static const struct res *sort_res;
static const struct job *sort_job;
static int by_cap(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int64_t cx = cap_on(sort_job, sort_res, x), cy = cap_on(sort_job, sort_res, y);
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return x - y;
}

/* Fit j into r: fills p->count per node. The tasks go block-wise: rank 0 on the roomiest node. */
static bool fit(struct pass *p, const struct job *j, const struct res *r)
{
	int nc = 0;
	for (int i = 0; i < p->nn; i++) {
		p->count[i] = 0;
		if (eligible(p, j, i) && cap_on(j, r, i) > 0)
			p->order[nc++] = i;
	}
	sort_res = r;
	sort_job = j;
	qsort(p->order, nc, sizeof(int), by_cap);
	if (j->nodes_min) {
		uint32_t nmax = j->nodes_max >= j->nodes_min ? j->nodes_max : j->nodes_min;
		for (uint32_t n = j->nodes_min; n <= nmax && n <= (uint32_t)nc; n++) {
			if (n > j->ntasks)
				break;
			uint32_t base = j->ntasks / n, more = j->ntasks % n;
			bool ok = true;
			for (uint32_t k = 0; k < n && ok; k++)
				if (cap_on(j, r, p->order[k]) < (int64_t)(base + (k < more)))
					ok = false;
			if (!ok)
				continue;
			for (uint32_t k = 0; k < n; k++)
				p->count[p->order[k]] = base + (k < more);
			return true;
		}
		return false;
	}
	uint32_t left = j->ntasks;
	for (int k = 0; k < nc && left; k++) {
		int64_t c = cap_on(j, r, p->order[k]);
		uint32_t take = c < (int64_t)left ? (uint32_t)c : left;
		p->count[p->order[k]] = take;
		left -= take;
	}
	return left == 0;
}

static void res_take(const struct pass *p, const struct job *j, struct res *r)
{
	for (int i = 0; i < p->nn; i++) {
		if (!p->count[i])
			continue;
		r->cpus[i] -= (int64_t)p->count[i] * j->cpus_per_task;
		r->mem[i] -= (int64_t)j->mem_mb;
	}
}

/* Turn p->count into real CPU indices and start the job. */
static bool commit(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	struct alloc a;
	a.node = calloc(j->ntasks, sizeof(int));
	a.cpu_first = calloc(j->ntasks, sizeof(uint32_t));
	if (!a.node || !a.cpu_first)
		goto fail;
	uint32_t rank = 0;
	sort_res = &p->now;
	sort_job = j;
	int nc = 0;
	for (int i = 0; i < p->nn; i++)
		if (p->count[i])
			p->order[nc++] = i;
	qsort(p->order, nc, sizeof(int), by_cap);
	for (int k = 0; k < nc; k++) {
		int i = p->order[k];
		struct node *n = nodes_get(s->nodes, i);
		for (uint32_t t = 0; t < p->count[i]; t++) {
			int first = node_cpus_alloc(n, j->cpus_per_task);
			if (first < 0) {
				/* fragmented: undo what this job took */
				for (uint32_t r = 0; r < rank; r++)
					node_cpus_free(nodes_get(s->nodes, a.node[r]), a.cpu_first[r],
						       j->cpus_per_task);
				goto fail;
			}
			a.node[rank] = i;
			a.cpu_first[rank] = (uint32_t)first;
			rank++;
		}
	}
	if (job_start(s, j, &a) < 0) {
		for (uint32_t r = 0; r < rank; r++)
			node_cpus_free(nodes_get(s->nodes, a.node[r]), a.cpu_first[r], j->cpus_per_task);
		goto fail;
	}
	free(a.node);
	free(a.cpu_first);
	return true;
fail:
	free(a.node);
	free(a.cpu_first);
	return false;
}

struct release {
	double at;
	const struct job *j;
};

static int by_time(const void *a, const void *b)
{
	double x = ((const struct release *)a)->at, y = ((const struct release *)b)->at;
	return x < y ? -1 : x > y;
}

/* The earliest time j fits if running jobs end at their time limits; sets extra. */
static void reserve(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	size_t nr = running_count(s), k = 0, pos = 0;
	struct release *rel = calloc(nr ? nr : 1, sizeof(*rel));
	struct res shadow = { calloc(p->nn, sizeof(int64_t)), calloc(p->nn, sizeof(int64_t)) };
	p->have_resv = true;
	p->resv_time = INFINITY;
	if (!rel || !shadow.cpus || !shadow.mem)
		goto out;
	const struct job *r;
	while ((r = running_iter(s, &pos)) && k < nr) {
		uint32_t limit = r->time_limit ? r->time_limit : s->default_time_limit;
		rel[k].at = limit ? r->start_time + limit : INFINITY;
		rel[k].j = r;
		k++;
	}
	qsort(rel, k, sizeof(*rel), by_time);
	memcpy(shadow.cpus, p->now.cpus, p->nn * sizeof(int64_t));
	memcpy(shadow.mem, p->now.mem, p->nn * sizeof(int64_t));
	for (size_t i = 0; i < k && isfinite(rel[i].at); i++) {
		const struct job *x = rel[i].j;
		int *seen = p->order; /* reuse as a per-node flag */
		memset(seen, 0, p->nn * sizeof(int));
		for (uint32_t t = 0; t < x->ntasks; t++) {
			if (x->tasks[t].state == 2)
				continue;
			int n = x->tasks[t].node;
			shadow.cpus[n] += x->cpus_per_task;
			if (!seen[n]++)
				shadow.mem[n] += (int64_t)x->mem_mb;
		}
		if (i + 1 < k && rel[i + 1].at == rel[i].at)
			continue;
		if (fit(p, j, &shadow)) {
			p->resv_time = rel[i].at;
			res_take(p, j, &shadow);
			for (int n = 0; n < p->nn; n++) {
				p->extra.cpus[n] = shadow.cpus[n] < p->now.cpus[n] ? shadow.cpus[n]
										    : p->now.cpus[n];
				p->extra.mem[n] = shadow.mem[n] < p->now.mem[n] ? shadow.mem[n]
										: p->now.mem[n];
			}
			break;
		}
	}
out:
	if (!isfinite(p->resv_time)) {
		/* nothing with a time limit frees enough: the job waits on unlimited jobs, so
		 * whatever fits now cannot delay it */
		memcpy(p->extra.cpus, p->now.cpus, p->nn * sizeof(int64_t));
		memcpy(p->extra.mem, p->now.mem, p->nn * sizeof(int64_t));
	}
	j->reserved_start = isfinite(p->resv_time) ? p->resv_time : 0;
	free(rel);
	free(shadow.cpus);
	free(shadow.mem);
}

/* Why j cannot start even on an idle cluster, or PEND_NONE. */
static enum pend_reason never_fits(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	bool any_up = false;
	for (int i = 0; i < p->nn; i++)
		if (node_usable(nodes_get(s->nodes, i)))
			any_up = true;
	if (!any_up)
		return PEND_NO_NODES;
	for (int i = 0; i < j->n_nodelist; i++) {
		int n = nodes_find(s->nodes, j->nodelist[i]);
		if (n < 0 || !node_usable(nodes_get(s->nodes, n)))
			return PEND_NODE_NOT_AVAIL;
	}
	struct res empty = { calloc(p->nn, sizeof(int64_t)), calloc(p->nn, sizeof(int64_t)) };
	enum pend_reason r = PEND_NONE;
	if (empty.cpus && empty.mem) {
		for (int i = 0; i < p->nn; i++) {
			struct node *n = nodes_get(s->nodes, i);
			empty.cpus[i] = n->cpus;
			empty.mem[i] = (int64_t)n->mem_mb;
		}
		if (!fit(p, j, &empty))
			r = PEND_TOO_LARGE;
	}
	free(empty.cpus);
	free(empty.mem);
	return r;
}

void plan_run(struct gsched *s)
{
	struct pass p = { .s = s, .nn = nodes_count(s->nodes) };
	s->plan_dirty = false;
	size_t qlen = jobs_queue_len(s->jobs);
	if (!qlen)
		return;
	if (p.nn == 0) {
		for (size_t i = 0; i < qlen && i < BACKFILL_DEPTH; i++) {
			struct job *j = jobs_queue_at(s->jobs, i);
			j->reason = j->hold ? PEND_HELD : PEND_NO_NODES;
		}
		return;
	}
	p.now.cpus = calloc(p.nn, sizeof(int64_t));
	p.now.mem = calloc(p.nn, sizeof(int64_t));
	p.extra.cpus = calloc(p.nn, sizeof(int64_t));
	p.extra.mem = calloc(p.nn, sizeof(int64_t));
	p.order = calloc(p.nn, sizeof(int));
	p.count = calloc(p.nn, sizeof(uint32_t));
	if (!p.now.cpus || !p.now.mem || !p.extra.cpus || !p.extra.mem || !p.order || !p.count)
		goto out;
	int64_t free_total = 0;
	for (int i = 0; i < p.nn; i++) {
		struct node *n = nodes_get(s->nodes, i);
		if (!node_usable(n))
			continue;
		p.now.cpus[i] = (int64_t)n->cpus - n->cpus_used;
		p.now.mem[i] = (int64_t)n->mem_mb - (int64_t)n->mem_used_mb;
		free_total += p.now.cpus[i];
	}
	size_t looked = 0;
	double now = gp_now();
	for (size_t qi = 0; qi < qlen; qi++) {
		struct job *j = jobs_queue_at(s->jobs, qi);
		if (p.have_resv && ++looked > BACKFILL_DEPTH)
			break;
		if (j->hold) {
			j->reason = PEND_HELD;
			continue;
		}
		if (!j->durable)
			continue; /* started only once its submission is on disk */
		if (free_total <= 0 && p.have_resv) {
			j->reason = PEND_PRIORITY;
			continue;
		}
		if (fit(&p, j, &p.now)) {
			bool ok = true;
			if (p.have_resv) {
				uint32_t limit = j->time_limit ? j->time_limit : s->default_time_limit;
				bool ends_before = limit && now + limit <= p.resv_time;
				if (!ends_before) {
					/* must leave the reservation's resources alone */
					ok = fit(&p, j, &p.extra);
					if (ok)
						res_take(&p, j, &p.extra);
				}
			}
			if (ok) {
				res_take(&p, j, &p.now);
				for (int i = 0; i < p.nn; i++)
					free_total -= (int64_t)p.count[i] * j->cpus_per_task;
				j->reason = PEND_NONE;
				if (commit(&p, j)) {
					/* job_start took it out of the queue */
					qi--;
					qlen--;
				} else {
					j->reason = PEND_RESOURCES;
				}
				continue;
			}
			j->reason = PEND_PRIORITY;
			continue;
		}
		enum pend_reason never = never_fits(&p, j);
		if (never != PEND_NONE) {
			j->reason = never;
			continue;
		}
		if (!p.have_resv) {
			reserve(&p, j);
			j->reason = PEND_RESOURCES;
		} else {
			j->reason = PEND_PRIORITY;
		}
	}
out:
	free(p.now.cpus);
	free(p.now.mem);
	free(p.extra.cpus);
	free(p.extra.mem);
	free(p.order);
	free(p.count);
}
