/* plan.c - placement: jobs in priority order, each all or nothing, with an EASY backfill
 * reservation for the first job that cannot start (plan.h) */
#include "scheduler/core/clock.h"
#include "scheduler/core/plan.h"
#include "scheduler/core/identity.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/cards.h"
#include "common/depend.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/core/steps.h"
#include "common/log.h"
#include "common/parse.h"
#include "common/names.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/nodes.h"
#include "scheduler/core/priority.h"
#include "scheduler/core/running.h"
#include "common/u64map.h"
#include "scheduler/core/card_share.h"
#include "common/util.h"

/* how many pending jobs one pass looks at beyond the first blocked one (Slurm: bf_max_job_test) */
#define BACKFILL_DEPTH 2000

struct res {
	int64_t *cpus;		  /* free CPUs per node */
	int64_t *mem;		  /* free memory per node, MB */
	uint64_t *cards;	  /* free cards per node, a bit each */
	struct share_view *share; /* shared cards' slices per node (card_card_share.h) */
};

struct pass {
	struct gsched *s;
	int nn;
	struct res now;	  /* free now */
	struct res extra; /* usable past the reservation without delaying it */
	bool have_resv;
	double resv_time;  /* INFINITY: the blocked job waits on jobs without time limits */
	int *order;	   /* scratch: candidate node order */
	uint32_t *count;   /* scratch: tasks per node */
	uint64_t *cardsel; /* scratch: cards picked per node */
	uint32_t *slices;  /* scratch: a sharing job's slices per card, MAX_CARDS_PER_NODE a node */
	const char *model; /* one-model placement: the model tried now */
	bool any_state;	   /* consider nodes whatever their state (could it ever fit?) */
	bool any_account;  /* consider nodes that lack the owner's account (why does it not?) */
	uint32_t watts_running, power_cap;
	double now_unix;      /* the pass's time, for the owners' histograms */
	double clock;	      /* the queue's time: --begin times, whether a job ends before the
			       * reservation (read after the nodes) */
	struct prio_pass *pp; /* the queue's order and the users' limits (priority.h) */
	int64_t free_total;   /* CPUs free on the usable nodes, as jobs are started */
	size_t looked;	      /* jobs looked at behind the reservation (BACKFILL_DEPTH) */
	struct job *blocked;  /* the first job that did not fit: it holds the reservation */
	gp_u64map_t
	    *array_running; /* array id -> its tasks running (limited arrays), made on need */
};

static int res_alloc(struct res *r, int nn)
{
	r->cpus = calloc(nn ? nn : 1, sizeof(int64_t));
	r->mem = calloc(nn ? nn : 1, sizeof(int64_t));
	r->cards = calloc(nn ? nn : 1, sizeof(uint64_t));
	r->share = calloc(nn ? nn : 1, sizeof(struct share_view));
	return r->cpus && r->mem && r->cards && r->share ? 0 : -1;
}

static void res_free(struct res *r)
{
	free(r->cpus);
	free(r->mem);
	free(r->cards);
	free(r->share);
}

static void res_copy(struct res *d, const struct res *s, int nn)
{
	memcpy(d->cpus, s->cpus, nn * sizeof(int64_t));
	memcpy(d->mem, s->mem, nn * sizeof(int64_t));
	memcpy(d->cards, s->cards, nn * sizeof(uint64_t));
	memcpy(d->share, s->share, nn * sizeof(struct share_view));
}

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
	if (!p->any_state && !node_usable(n))
		return false;
	if (j->n_exclude && listed(j->exclude, j->n_exclude, n->name))
		return false;
	if (j->n_nodelist && !listed(j->nodelist, j->n_nodelist, n->name))
		return false;
	if (!p->any_account && !identity_node_fits(n, j->uid, j->user))
		return false;
	/* --exclusive: a node no job holds now, nor one placed earlier in this pass */
	if (j->exclusive && !p->any_state &&
	    (n->njobs || n->cpus_used || n->card_busy || p->now.cpus[node] < (int64_t)n->cpus))
		return false;
	return true;
}

static int64_t cap_on(const struct pass *p, const struct job *j, const struct res *r, int node)
{
	if (j->mem_mb && r->mem[node] < (int64_t)j->mem_mb)
		return 0;
	int64_t cap = r->cpus[node] / j->cpus_per_task;
	if (j->gpu && j->gpu->share) {
		struct node *n = nodes_get(p->s->nodes, node);
		cap =
		    share_slots(&r->share[node], n, j->gpu, r->cards[node], p->model, j->uid, cap);
	} else if (j->gpu && !j->gpu->optional) { /* optional cards limit no task */
		struct node *n = nodes_get(p->s->nodes, node);
		int64_t c =
		    __builtin_popcountll(cards_serving(j->gpu, n, r->cards[node], p->model)) /
		    j->gpu->per_task;
		if (c < cap)
			cap = c;
	}
	return cap;
}

/* qsort has no context argument: the pass being sorted for */
static const struct pass *sort_pass;
static const struct res *sort_res;
static const struct job *sort_job;
static int by_cap(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (sort_job->svc_of) {
		/* a service replica: spread, the node with the fewest of its siblings first */
		struct gsched *s = sort_pass->s;
		int sx = s->siblings_on ? s->siblings_on(s, sort_job, x) : 0;
		int sy = s->siblings_on ? s->siblings_on(s, sort_job, y) : 0;
		if (sx != sy)
			return sx < sy ? -1 : 1;
	}
	if (sort_job->gpu && sort_job->gpu->optional) {
		/* --gpus-per-task 0-N: the nodes with free cards first, so that cards are used */
		int cx = __builtin_popcountll(cards_serving(
		    sort_job->gpu, nodes_get(sort_pass->s->nodes, x), sort_res->cards[x], NULL));
		int cy = __builtin_popcountll(cards_serving(
		    sort_job->gpu, nodes_get(sort_pass->s->nodes, y), sort_res->cards[y], NULL));
		if (cx != cy)
			return cx > cy ? -1 : 1;
	}
	/* the PC most likely to stay free of its owner for the job's time limit (owner.h):
	 * chances within a percent are alike */
	uint32_t limit =
	    sort_job->time_limit ? sort_job->time_limit : sort_pass->s->default_time_limit;
	int ox = (int)(100 * owner_free_chance(&nodes_get(sort_pass->s->nodes, x)->owner,
					       sort_pass->now_unix, limit));
	int oy = (int)(100 * owner_free_chance(&nodes_get(sort_pass->s->nodes, y)->owner,
					       sort_pass->now_unix, limit));
	if (ox != oy)
		return ox > oy ? -1 : 1;
	int64_t cx = cap_on(sort_pass, sort_job, sort_res, x);
	int64_t cy = cap_on(sort_pass, sort_job, sort_res, y);
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return x - y;
}

/* A sharing job's slices on node i: packed onto the cards its user already shares
 * (card_card_share.h), counted per card in p->slices. */
static bool pick_slices(struct pass *p, const struct job *j, const struct res *r, int i)
{
	struct node *n = nodes_get(p->s->nodes, i);
	struct share_view v = r->share[i];
	uint64_t free_mask = r->cards[i];
	uint32_t *slices = p->slices + (size_t)i * MAX_CARDS_PER_NODE;
	memset(slices, 0, MAX_CARDS_PER_NODE * sizeof(*slices));
	for (uint32_t t = 0; t < p->count[i]; t++) {
		int k = share_pick(&v, n, j->gpu, free_mask, p->model, j->uid);
		if (k < 0)
			return false;
		share_take(&v, k, j->gpu->mem_min, j->uid, &free_mask);
		slices[k]++;
		p->cardsel[i] |= 1ULL << k;
	}
	return true;
}

/* The cards each chosen node gives: best fit on VRAM. */
static bool pick_cards(struct pass *p, const struct job *j, const struct res *r)
{
	for (int i = 0; i < p->nn; i++) {
		p->cardsel[i] = 0;
		if (!j->gpu || !p->count[i])
			continue;
		if (j->gpu->share) {
			if (!pick_slices(p, j, r, i))
				return false;
			continue;
		}
		struct node *n = nodes_get(p->s->nodes, i);
		uint64_t serving = cards_serving(j->gpu, n, r->cards[i], p->model);
		uint32_t want = p->count[i] * j->gpu->per_task;
		if (j->gpu->optional) {
			/* as many whole tasks' cards as are free; the other tasks get none */
			uint32_t have = (uint32_t)__builtin_popcountll(serving);
			have -= have % j->gpu->per_task;
			want = want < have ? want : have;
			p->cardsel[i] = want ? cards_pick(n, serving, want) : 0;
			continue;
		}
		p->cardsel[i] = cards_pick(n, serving, want);
		if (!p->cardsel[i])
			return false;
	}
	return true;
}

/* Fit j into r: fills p->count per node. The tasks go block-wise: rank 0 on the roomiest node. */
static bool fit_model(struct pass *p, const struct job *j, const struct res *r)
{
	int nc = 0;
	for (int i = 0; i < p->nn; i++) {
		p->count[i] = 0;
		if (eligible(p, j, i) && cap_on(p, j, r, i) > 0)
			p->order[nc++] = i;
	}
	sort_pass = p;
	sort_res = r;
	sort_job = j;
	qsort(p->order, nc, sizeof(int), by_cap);
	if (j->gpu && !j->gpu->optional && j->nodes_min <= 1) {
		/* one node if any can hold it all: the one whose cards fit tightest */
		int best = -1;
		uint64_t best_vram = 0;
		for (int k = 0; k < nc; k++) {
			int i = p->order[k];
			if (cap_on(p, j, r, i) < (int64_t)j->ntasks)
				continue;
			struct node *n = nodes_get(p->s->nodes, i);
			uint64_t pick =
			    cards_pick(n, cards_serving(j->gpu, n, r->cards[i], p->model),
				       j->ntasks * j->gpu->per_task);
			uint64_t v = j->gpu->share ? 0 : cards_vram(n, pick); /* slices: in order */
			if (best < 0 || v < best_vram) {
				best = i;
				best_vram = v;
			}
		}
		if (best >= 0) {
			p->count[best] = j->ntasks;
			return pick_cards(p, j, r);
		}
	}
	if (j->nodes_min) {
		uint32_t nmax = j->nodes_max >= j->nodes_min ? j->nodes_max : j->nodes_min;
		for (uint32_t n = j->nodes_min; n <= nmax && n <= (uint32_t)nc; n++) {
			if (n > j->ntasks)
				break;
			uint32_t base = j->ntasks / n, more = j->ntasks % n;
			bool ok = true;
			for (uint32_t k = 0; k < n && ok; k++)
				if (cap_on(p, j, r, p->order[k]) < (int64_t)(base + (k < more)))
					ok = false;
			if (!ok)
				continue;
			for (uint32_t k = 0; k < n; k++)
				p->count[p->order[k]] = base + (k < more);
			return pick_cards(p, j, r);
		}
		return false;
	}
	uint32_t left = j->ntasks;
	for (int k = 0; k < nc && left; k++) {
		int64_t c = cap_on(p, j, r, p->order[k]);
		uint32_t take = c < (int64_t)left ? (uint32_t)c : left;
		p->count[p->order[k]] = take;
		left -= take;
	}
	return left == 0 && pick_cards(p, j, r);
}

struct model {
	const char *name;
	uint64_t vram;
};

static int by_vram(const void *a, const void *b)
{
	const struct model *x = a, *y = b;
	return x->vram < y->vram ? -1 : x->vram > y->vram;
}

/* Fit j into r. Without --gpu-mixed the cards come from one model: the models are tried from
 * the smallest VRAM up, so the tightest model that fits wins. */
static bool fit(struct pass *p, const struct job *j, const struct res *r)
{
	p->model = NULL;
	if (!j->gpu || j->gpu->mixed || j->gpu->optional) /* optional: whatever cards are free */
		return fit_model(p, j, r);
	struct model ms[256];
	int nm = 0;
	for (int i = 0; i < p->nn; i++) {
		struct node *n = nodes_get(p->s->nodes, i);
		if (!eligible(p, j, i))
			continue;
		for (size_t c = 0; c < n->n_cards && c < MAX_CARDS_PER_NODE; c++) {
			const Gpool__Card *card = n->cards[c];
			if (!card_serves(j->gpu, card, NULL))
				continue;
			int k = 0;
			while (k < nm && strcmp(ms[k].name, card->name) != 0)
				k++;
			if (k == nm && nm < 256) {
				ms[nm].name = card->name;
				ms[nm++].vram = card->vram_total;
			}
		}
	}
	qsort(ms, nm, sizeof(*ms), by_vram);
	for (int k = 0; k < nm; k++) {
		p->model = ms[k].name;
		if (fit_model(p, j, r))
			return true;
	}
	p->model = NULL;
	return false;
}

static void res_take(const struct pass *p, const struct job *j, struct res *r)
{
	for (int i = 0; i < p->nn; i++) {
		if (!p->count[i])
			continue;
		r->cpus[i] -= (int64_t)p->count[i] * j->cpus_per_task;
		r->mem[i] -= (int64_t)j->mem_mb;
		if (!j->gpu || !j->gpu->share) {
			r->cards[i] &= ~p->cardsel[i];
			continue;
		}
		const uint32_t *slices = p->slices + (size_t)i * MAX_CARDS_PER_NODE;
		for (int k = 0; k < MAX_CARDS_PER_NODE; k++)
			for (uint32_t t = 0; t < slices[k]; t++)
				share_take(&r->share[i], k, j->gpu->mem_min, j->uid, &r->cards[i]);
	}
}

static const uint32_t *sort_count;
static int by_count(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (sort_count[x] != sort_count[y])
		return sort_count[x] > sort_count[y] ? -1 : 1;
	return x - y;
}

/* Turn p->count and p->cardsel into CPU indices and cards, and start the job. Rank 0 goes
 * to the node with the most tasks. */
static bool commit(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	struct alloc a;
	a.node = calloc(j->ntasks, sizeof(int));
	a.cpu_first = calloc(j->ntasks, sizeof(uint32_t));
	a.cards = calloc(j->ntasks, sizeof(uint64_t));
	uint32_t rank = 0;
	if (!a.node || !a.cpu_first || !a.cards)
		goto fail;
	int nc = 0;
	for (int i = 0; i < p->nn; i++)
		if (p->count[i])
			p->order[nc++] = i;
	sort_count = p->count;
	qsort(p->order, nc, sizeof(int), by_count);
	for (int k = 0; k < nc; k++) {
		int i = p->order[k];
		struct node *n = nodes_get(s->nodes, i);
		uint64_t left = p->cardsel[i];
		uint32_t slices[MAX_CARDS_PER_NODE];
		bool share = j->gpu && j->gpu->share;
		if (share)
			memcpy(slices, p->slices + (size_t)i * MAX_CARDS_PER_NODE, sizeof(slices));
		for (uint32_t t = 0; t < p->count[i]; t++) {
			int first = node_cpus_alloc(n, j->cpus_per_task);
			if (first < 0)
				goto undo; /* fragmented */
			a.node[rank] = i;
			a.cpu_first[rank] = (uint32_t)first;
			for (uint32_t c = 0; j->gpu && !share && c < j->gpu->per_task; c++) {
				uint64_t bit = left & -left;
				a.cards[rank] |= bit;
				left &= ~bit;
			}
			for (int c = 0; share && c < MAX_CARDS_PER_NODE; c++) {
				if (!slices[c])
					continue;
				slices[c]--;
				a.cards[rank] = 1ULL << c;
				share_take(&n->share, c, j->gpu->mem_min, j->uid, NULL);
				break;
			}
			n->card_busy |= a.cards[rank];
			rank++;
		}
	}
	if (job_start(s, j, &a) < 0)
		goto undo;
	free(a.node);
	free(a.cpu_first);
	free(a.cards);
	return true;
undo:
	for (uint32_t r = 0; r < rank; r++) {
		struct node *n = nodes_get(s->nodes, a.node[r]);
		node_cpus_free(n, a.cpu_first[r], j->cpus_per_task);
		if (j->gpu && j->gpu->share && a.cards[r] &&
		    !share_release(&n->share, __builtin_ctzll(a.cards[r]), j->gpu->mem_min))
			continue; /* other slices still hold the card */
		n->card_busy &= ~a.cards[r];
	}
fail:
	free(a.node);
	free(a.cpu_first);
	free(a.cards);
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

/* What slices may go on node n's shared cards now without delaying the reservation: a card
 * shared now keeps no more room than it has once the reserved job took its place (none where
 * another user's slices or an exclusive task hold it then). */
static void extra_share(struct pass *p, const struct res *shadow, int n)
{
	struct share_view *e = &p->extra.share[n];
	const struct share_view *sh = &shadow->share[n];
	const struct node *nd = nodes_get(p->s->nodes, n);
	*e = p->now.share[n];
	for (size_t k = 0; k < nd->n_cards && k < MAX_CARDS_PER_NODE; k++) {
		if (!e->tasks[k])
			continue;
		uint64_t full = nd->cards[k]->vram_total;
		if (!sh->tasks[k]) {
			if (!(shadow->cards[n] >> k & 1))
				e->used[k] = full;
		} else if (sh->uid[k] != e->uid[k]) {
			e->used[k] = full;
		} else if (sh->used[k] > e->used[k]) {
			e->used[k] = sh->used[k];
		}
	}
}

/* The earliest time j fits if running jobs end at their time limits; sets extra. */
static void reserve(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	size_t nr = running_count(s), k = 0, pos = 0;
	struct release *rel = calloc(nr ? nr : 1, sizeof(*rel));
	struct res shadow;
	int shadow_ok = res_alloc(&shadow, p->nn) == 0;
	p->have_resv = true;
	p->resv_time = INFINITY;
	if (!rel || !shadow_ok)
		goto out;
	const struct job *r;
	while ((r = running_iter(s, &pos)) && k < nr) {
		uint32_t limit = r->time_limit ? r->time_limit : s->default_time_limit;
		rel[k].at = limit ? r->start_time + limit : INFINITY;
		rel[k].j = r;
		k++;
	}
	qsort(rel, k, sizeof(*rel), by_time);
	res_copy(&shadow, &p->now, p->nn);
	for (size_t i = 0; i < k && isfinite(rel[i].at); i++) {
		const struct job *x = rel[i].j;
		int *seen = p->order; /* reuse as a per-node flag */
		memset(seen, 0, p->nn * sizeof(int));
		for (uint32_t t = 0; t < x->ntasks; t++) {
			if (x->tasks[t].state == 2)
				continue;
			int n = x->tasks[t].node;
			shadow.cpus[n] += x->cpus_per_task;
			if (x->gpu && x->gpu->share && x->tasks[t].cards) {
				if (share_release(&shadow.share[n],
						  __builtin_ctzll(x->tasks[t].cards),
						  x->gpu->mem_min))
					shadow.cards[n] |= x->tasks[t].cards;
			} else {
				shadow.cards[n] |= x->tasks[t].cards;
			}
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
				p->extra.mem[n] =
				    shadow.mem[n] < p->now.mem[n] ? shadow.mem[n] : p->now.mem[n];
				p->extra.cards[n] = shadow.cards[n] & p->now.cards[n];
				extra_share(p, &shadow, n);
			}
			break;
		}
	}
out:
	if (!isfinite(p->resv_time)) {
		/* nothing with a time limit frees enough: the job waits on unlimited jobs, so
		 * whatever fits now cannot delay it */
		res_copy(&p->extra, &p->now, p->nn);
	}
	j->reserved_start = isfinite(p->resv_time) ? p->resv_time : 0;
	free(rel);
	if (shadow_ok)
		res_free(&shadow);
}

/* A pending reason's detail, shown after the reason. */
static void set_detail(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_detail(struct job *j, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (j->reason_detail && strcmp(j->reason_detail, buf) == 0)
		return;
	free(j->reason_detail);
	j->reason_detail = strdup(buf);
}

static void clear_detail(struct job *j)
{
	free(j->reason_detail);
	j->reason_detail = NULL;
}

static enum pend_reason beyond_cluster(struct pass *p, struct job *j, bool any_card);

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
	return beyond_cluster(p, j, false);
}

/* Whether j is larger than the whole cluster, every node counted whatever its state (one that
 * is down may come back), and with any_card every card too (one that failed screening or was
 * drained may come back; the pending reason still names a failed card, the refusal at
 * submission does not count it out): PEND_TOO_LARGE or PEND_NO_CARD with its detail set, or
 * PEND_NONE. */
static enum pend_reason beyond_cluster(struct pass *p, struct job *j, bool any_card)
{
	struct gsched *s = p->s;
	struct res empty;
	enum pend_reason r = PEND_NONE;
	if (res_alloc(&empty, p->nn) == 0) {
		for (int i = 0; i < p->nn; i++) {
			struct node *n = nodes_get(s->nodes, i);
			empty.cpus[i] = n->cpus;
			empty.mem[i] = (int64_t)n->mem_mb;
			empty.cards[i] = n->n_cards >= 64 ? ~0ULL : (1ULL << n->n_cards) - 1;
		}
		/* every node it could use, up or not: a node that is down may come back */
		struct gpu_req *g = j->gpu, any;
		if (g && any_card) {
			any = *g;
			any.any_state = true;
			j->gpu = &any;
		}
		p->any_state = true;
		bool fits = fit(p, j, &empty);
		p->any_account = !fits;
		bool fits_elsewhere = !fits && fit(p, j, &empty);
		p->any_state = p->any_account = false;
		if (fits_elsewhere) {
			/* it fits, but not on the nodes where its owner's uid has the owner's name
			 */
			r = PEND_TOO_LARGE;
			set_detail(
			    j,
			    "NoAccount (uid %u is not '%s' on enough nodes: the pool needs one "
			    "uid space)",
			    (unsigned)j->uid, j->user ? j->user : "?");
		} else if (!fits) {
			r = PEND_TOO_LARGE;
			if (j->gpu) {
				/* is there any card at all that could serve it? */
				bool some = false;
				for (int i = 0; i < p->nn && !some; i++)
					some = cards_serving(j->gpu, nodes_get(s->nodes, i), ~0ULL,
							     NULL) != 0;
				char what[160];
				gpu_req_describe(j->gpu, what, sizeof(what));
				if (!some) {
					r = PEND_NO_CARD;
					set_detail(j, "NoMatchingCard (%s)", what);
				} else {
					set_detail(
					    j, "TooLarge (not %u cards%s at once in this cluster)",
					    j->ntasks * j->gpu->per_task,
					    j->gpu->mixed ? "" : " of one model");
				}
			}
		}
		j->gpu = g;
		res_free(&empty);
	}
	return r;
}

/* Whether j's dependencies allow it to start now; sets its reason when not. Evaluated again
 * only when some job changed since (s->dep_epoch); once satisfied they are dropped. */
static bool deps_ready(struct gsched *s, struct job *j)
{
	if (!j->n_deps)
		return true;
	if (j->deps_epoch == s->dep_epoch)
		return false; /* nothing changed: the reason set last time holds */
	j->deps_epoch = s->dep_epoch;
	enum gp_dep_result r[256];
	for (uint8_t i = 0; i < j->n_deps; i++) {
		const struct gp_dep *d = &j->deps[i];
		struct gp_dep_target t = {0};
		if (d->type == GP_DEP_SINGLETON) {
			/* an earlier job of the same user and name, still to end */
			size_t pos = 0;
			struct job *o;
			while ((o = jobs_iter(s->jobs, &pos)))
				if (o->id < j->id && o->uid == j->uid &&
				    !gp_job_state_final(o->state) && !strcmp(o->name, j->name))
					t.total++;
		} else if (!s->dep_target ||
			   s->dep_target(s, d->job, d->has_task, d->task, &t) < 0) {
			r[i] = GP_DEP_WAIT; /* not known (the store could not say): ask again next
					       time */
			j->deps_epoch = 0;
			continue;
		}
		r[i] = gp_dep_eval(d, &t);
	}
	enum gp_dep_result all = gp_depend_combine(j->deps_any, r, j->n_deps);
	if (all == GP_DEP_OK) {
		free(j->deps);
		j->deps = NULL;
		j->n_deps = 0;
		return true;
	}
	j->reason = all == GP_DEP_NEVER ? PEND_DEP_NEVER : PEND_DEPENDENCY;
	return false;
}

/* Whether j's array may start one more task now (its %N limit). */
static bool array_room(struct pass *p, const struct job *j)
{
	if (!j->array_limit)
		return true;
	if (!p->array_running) {
		if (!(p->array_running = gp_u64map_create()))
			return true;
		size_t pos = 0;
		struct job *r;
		while ((r = gp_u64map_next(p->s->running, &pos, NULL))) {
			if (!r->array_limit)
				continue;
			uintptr_t n = (uintptr_t)gp_u64map_get(p->array_running, r->array_job_id);
			gp_u64map_put(p->array_running, r->array_job_id, (void *)(n + 1));
		}
	}
	return (uintptr_t)gp_u64map_get(p->array_running, j->array_job_id) < j->array_limit;
}

static void array_started(struct pass *p, const struct job *j)
{
	if (!j->array_limit || !p->array_running)
		return;
	uintptr_t n = (uintptr_t)gp_u64map_get(p->array_running, j->array_job_id);
	gp_u64map_put(p->array_running, j->array_job_id, (void *)(n + 1));
}

static void pass_release(struct pass *p);

/* Nothing more of node i in this pass (an --exclusive job holds it). */
static void take_node(struct pass *p, int i, int64_t *free_total)
{
	if (i < 0 || i >= p->nn)
		return;
	if (p->now.cpus[i] > 0)
		*free_total -= p->now.cpus[i];
	p->now.cpus[i] = p->extra.cpus[i] = 0;
	p->now.mem[i] = p->extra.mem[i] = 0;
	p->now.cards[i] = p->extra.cards[i] = 0;
}

/* qsort has no context: the pass whose victims are sorted */
static struct gsched *victim_sched;
static int by_victim(const void *a, const void *b)
{
	const struct job *x = *(const struct job *const *)a, *y = *(const struct job *const *)b;
	double fx = fairshare_factor(victim_sched->fairshare, x->user);
	double fy = fairshare_factor(victim_sched->fairshare, y->user);
	if (fx != fy)
		return fx < fy ? -1 : 1; /* the user furthest over their share first */
	if (x->start_time != y->start_time)
		return x->start_time > y->start_time ? -1 : 1; /* then the youngest: least lost */
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Fair-share preemption (priority.h): the fewest victims, lowest factor and youngest first,
 * whose resources let the blocked job b fit now; none when no such set exists. */
static void try_preempt(struct pass *p, struct prio_pass *pp, struct job *b)
{
	struct gsched *s = p->s;
	size_t nr = running_count(s), k = 0, pos = 0;
	struct job **v = calloc(nr ? nr : 1, sizeof(*v));
	struct res shadow;
	if (!v || res_alloc(&shadow, p->nn) < 0) {
		free(v);
		return;
	}
	struct job *r;
	while ((r = running_iter(s, &pos)) && k < nr)
		if (priority_may_preempt(s, pp, b, r))
			v[k++] = r;
	victim_sched = s;
	qsort(v, k, sizeof(*v), by_victim);
	res_copy(&shadow, &p->now, p->nn);
	size_t take = 0;
	bool fits = false;
	for (size_t i = 0; i < k && !fits; i++) {
		const struct job *x = v[i];
		int *seen = p->order; /* a per-node flag */
		memset(seen, 0, p->nn * sizeof(int));
		for (uint32_t t = 0; t < x->ntasks; t++) {
			int n = x->tasks[t].node;
			if (x->tasks[t].state == 2 || n < 0 || n >= p->nn)
				continue;
			if (x->exclusive) { /* the whole node comes free */
				struct node *nd = nodes_get(s->nodes, n);
				shadow.cpus[n] = (int64_t)nd->cpus;
				shadow.mem[n] = (int64_t)nd->mem_mb;
				shadow.cards[n] =
				    nd->n_cards >= 64 ? ~0ULL : (1ULL << nd->n_cards) - 1;
				continue;
			}
			shadow.cpus[n] += x->cpus_per_task;
			shadow.cards[n] |= x->tasks[t].cards;
			if (!seen[n]++)
				shadow.mem[n] += (int64_t)x->mem_mb;
		}
		take = i + 1;
		fits = fit(p, b, &shadow);
	}
	for (size_t i = 0; fits && i < take; i++)
		priority_preempt(s, v[i], b);
	free(v);
	res_free(&shadow);
}

/* Nobody can run anything: the first jobs of the queue say so. */
static void no_nodes(struct gsched *s, size_t qlen)
{
	for (size_t i = 0; i < qlen && i < BACKFILL_DEPTH; i++) {
		struct job *j = jobs_queue_at(s->jobs, i);
		j->reason = j->hold ? PEND_HELD : PEND_NO_NODES;
	}
}

/* What is free on each node now, the cards' draw, and the nodes an --exclusive job holds.
 * 0 / -1 (out of memory). */
static int pass_measure(struct pass *p)
{
	struct gsched *s = p->s;
	bool ok_alloc = res_alloc(&p->now, p->nn) == 0;
	ok_alloc &= res_alloc(&p->extra, p->nn) == 0;
	p->order = calloc(p->nn, sizeof(int));
	p->count = calloc(p->nn, sizeof(uint32_t));
	p->cardsel = calloc(p->nn, sizeof(uint64_t));
	p->slices = calloc((size_t)p->nn * MAX_CARDS_PER_NODE, sizeof(uint32_t));
	if (!ok_alloc || !p->order || !p->count || !p->cardsel || !p->slices)
		return -1;
	p->free_total = 0;
	for (int i = 0; i < p->nn; i++) {
		struct node *n = nodes_get(s->nodes, i);
		p->watts_running += cards_watts(n, n->card_busy);
		if (!node_usable(n))
			continue;
		p->now.cpus[i] = (int64_t)n->cpus - n->cpus_used;
		p->now.mem[i] = (int64_t)n->mem_mb - (int64_t)n->mem_used_mb;
		uint64_t all = n->n_cards >= 64 ? ~0ULL : (1ULL << n->n_cards) - 1;
		p->now.cards[i] = all & ~n->card_busy;
		p->now.share[i] = n->share;
		p->free_total += p->now.cpus[i];
	}
	/* a node an --exclusive job runs on takes nobody else's */
	size_t rpos = 0;
	const struct job *rj;
	while ((rj = running_iter(s, &rpos)))
		if (rj->exclusive)
			for (uint32_t t = 0; t < rj->ntasks; t++)
				take_node(p, rj->tasks[t].node, &p->free_total);
	return 0;
}

/* Whether j waits this pass whatever is free: held, a step, not yet on disk, its dependencies,
 * its array's limit, a replica's backoff, its --begin time, its user's limits, or nothing
 * free behind the reservation. */
static bool waits(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	if (j->step_of)
		return true; /* steps run on their allocation (steps_run) */
	if (j->hold) {
		j->reason = PEND_HELD;
		return true;
	}
	if (!j->durable)
		return true; /* started only once its submission is on disk */
	if (!deps_ready(s, j))
		return true;
	if (!array_room(p, j)) {
		j->reason = PEND_ARRAY_LIMIT;
		return true;
	}
	if (j->not_before_ms && sched_mono_ms(s) < j->not_before_ms)
		return true; /* a service replica's restart backoff (service_tick wakes it) */
	if (j->begin_time > p->clock) {
		j->reason = PEND_BEGIN_TIME;
		clear_detail(j);
		if (!s->plan_wake || j->begin_time < s->plan_wake)
			s->plan_wake = j->begin_time;
		return true;
	}
	char lim[160];
	uint32_t want_cpus = j->ntasks * j->cpus_per_task;
	uint32_t want_cards = j->gpu ? j->ntasks * j->gpu->per_task : 0;
	if (!priority_within_limits(p->pp, j, want_cpus, want_cards, lim, sizeof(lim))) {
		j->reason = PEND_USER_LIMIT;
		set_detail(j, "%s", lim);
		return true;
	}
	if (p->free_total <= 0 && p->have_resv) {
		j->reason = PEND_PRIORITY;
		return true;
	}
	return false;
}

/* j fits in what is free now: start it unless the power cap or the reservation says no. */
static void start_fitting(struct pass *p, struct job *j)
{
	struct gsched *s = p->s;
	uint32_t w = 0;
	for (int i = 0; i < p->nn; i++) /* a shared card draws once */
		w += cards_watts(nodes_get(s->nodes, i), j->gpu && j->gpu->share
							     ? p->cardsel[i] & p->now.cards[i]
							     : p->cardsel[i]);
	if (p->power_cap && w && p->watts_running + w > p->power_cap) {
		j->reason = PEND_POWER;
		set_detail(j, "PowerCap (its cards draw %u W; %u W of %u W in use)", w,
			   p->watts_running, p->power_cap);
		return;
	}
	if (p->have_resv) {
		uint32_t limit = j->time_limit ? j->time_limit : s->default_time_limit;
		bool ends_before = limit && p->clock + limit <= p->resv_time;
		if (!ends_before) {
			/* must leave the reservation's resources alone */
			if (!fit(p, j, &p->extra)) {
				j->reason = PEND_PRIORITY;
				return;
			}
			res_take(p, j, &p->extra);
		}
	}
	res_take(p, j, &p->now);
	for (int i = 0; i < p->nn; i++)
		p->free_total -= (int64_t)p->count[i] * j->cpus_per_task;
	j->reason = PEND_NONE;
	clear_detail(j);
	if (!commit(p, j)) {
		j->reason = PEND_RESOURCES;
		return;
	}
	p->watts_running += w;
	array_started(p, j);
	uint32_t hc, hk;
	priority_job_holds(s, j, &hc, &hk);
	priority_pass_started(p->pp, j, hc, hk);
	if (j->exclusive)
		for (uint32_t t = 0; t < j->ntasks; t++)
			take_node(p, j->tasks[t].node, &p->free_total);
}

/* j does not fit now: say why, and the first such job holds the reservation (EASY backfill). */
static void wait_for_room(struct pass *p, struct job *j)
{
	enum pend_reason never = never_fits(p, j);
	if (never != PEND_NONE) {
		j->reason = never;
		if (!j->gpu)
			clear_detail(j);
		return;
	}
	if (j->gpu && j->gpu->share) {
		char b[32];
		gp_format_size(j->gpu->mem_min, b, sizeof(b));
		set_detail(j, "Resources (waiting for %u slices of %s on cards)", j->ntasks, b);
	} else if (j->gpu)
		set_detail(j, "Resources (waiting for %u cards%s)", j->ntasks * j->gpu->per_task,
			   j->gpu->mixed ? "" : " of one model");
	else
		clear_detail(j);
	if (!p->have_resv) {
		reserve(p, j);
		p->blocked = j;
		j->reason = PEND_RESOURCES;
	} else {
		j->reason = PEND_PRIORITY;
	}
}

void plan_run(struct gsched *s)
{
	steps_run(s);
	struct pass p = {.s = s,
			 .nn = nodes_count(s->nodes),
			 .power_cap = s->power_cap_watts,
			 .now_unix = sched_now(s)};
	s->plan_dirty = false;
	struct job **order = NULL;
	size_t qlen = jobs_queue_len(s->jobs);
	if (!qlen)
		return;
	if (p.nn == 0) {
		no_nodes(s, qlen);
		return;
	}
	if (pass_measure(&p) < 0)
		goto out;
	p.clock = sched_now(s);
	s->plan_wake = 0;
	p.pp = priority_pass_create(s, p.clock);
	order = priority_order(s, p.pp, &qlen);
	if (!order)
		goto out;
	for (size_t qi = 0; qi < qlen; qi++) {
		struct job *j = order[qi];
		if (j->state != GPOOL__JOB_STATE__PENDING || j->qpos == SIZE_MAX)
			continue;
		if (p.have_resv && ++p.looked > BACKFILL_DEPTH)
			break;
		if (waits(&p, j))
			continue;
		if (fit(&p, j, &p.now))
			start_fitting(&p, j);
		else
			wait_for_room(&p, j);
	}
	if (p.blocked && s->preempt) {
		if (!priority_preempting(s))
			try_preempt(&p, p.pp, p.blocked);
		/* look again in a second: a grace may end with nothing else changing */
		if (!s->plan_wake || s->plan_wake > p.clock + 1)
			s->plan_wake = p.clock + 1;
	}
out:
	free(order);
	priority_pass_destroy(&p.pp);
	pass_release(&p);
}

static void pass_release(struct pass *p)
{
	gp_u64map_destroy(&p->array_running);
	res_free(&p->now);
	res_free(&p->extra);
	free(p->order);
	free(p->count);
	free(p->cardsel);
	free(p->slices);
}

/* What the cluster offers at most, for the message that refuses a job. */
static void describe_cluster(struct gsched *s, char *buf, size_t len)
{
	uint64_t cpus = 0, max_cpus = 0, max_mem = 0, cards = 0;
	int nn = nodes_count(s->nodes);
	for (int i = 0; i < nn; i++) {
		const struct node *n = nodes_get(s->nodes, i);
		cpus += n->cpus;
		cards += n->n_cards;
		max_cpus = n->cpus > max_cpus ? n->cpus : max_cpus;
		max_mem = n->mem_mb > max_mem ? n->mem_mb : max_mem;
	}
	snprintf(
	    buf, len,
	    "the cluster has %d node%s, %llu CPUs, %llu cards; the largest node %llu CPUs, %llu MB",
	    nn, nn == 1 ? "" : "s", (unsigned long long)cpus, (unsigned long long)cards,
	    (unsigned long long)max_cpus, (unsigned long long)max_mem);
}

bool plan_refuse(struct gsched *s, struct job *j, char *why, size_t len)
{
	if (!nodes_capacity_known(s->nodes))
		return false; /* a node that ran before may still come back: it may fit there */
	for (int i = 0; i < j->n_nodelist; i++) {
		if (nodes_find(s->nodes, j->nodelist[i]) < 0) {
			snprintf(why, len, "invalid node name '%s' (no such node in this cluster)",
				 j->nodelist[i]);
			return true;
		}
	}
	struct pass p = {.s = s, .nn = nodes_count(s->nodes), .now_unix = sched_now(s)};
	bool ok_alloc = res_alloc(&p.now, p.nn) == 0;
	ok_alloc &= res_alloc(&p.extra, p.nn) == 0;
	p.order = calloc(p.nn, sizeof(int));
	p.count = calloc(p.nn, sizeof(uint32_t));
	p.cardsel = calloc(p.nn, sizeof(uint64_t));
	p.slices = calloc((size_t)p.nn * MAX_CARDS_PER_NODE, sizeof(uint32_t));
	enum pend_reason r = PEND_NONE;
	if (ok_alloc && p.order && p.count && p.cardsel && p.slices)
		r = beyond_cluster(&p, j, true);
	pass_release(&p);
	if (r == PEND_NONE)
		return false;
	char cluster[200];
	describe_cluster(s, cluster, sizeof(cluster));
	if (j->reason_detail) {
		snprintf(why, len, "requested node configuration is not available: %s; %s",
			 j->reason_detail, cluster);
		return true;
	}
	char mem[48] = "", nodes[48] = "";
	if (j->mem_mb)
		snprintf(mem, sizeof(mem), ", %llu MB a node", (unsigned long long)j->mem_mb);
	if (j->nodes_min > 1 || j->nodes_max > 1)
		snprintf(nodes, sizeof(nodes), ", on %u-%u nodes", j->nodes_min, j->nodes_max);
	snprintf(why, len,
		 "requested node configuration is not available: %u task%s of %u CPU%s%s%s; %s",
		 j->ntasks, j->ntasks == 1 ? "" : "s", j->cpus_per_task,
		 j->cpus_per_task == 1 ? "" : "s", mem, nodes, cluster);
	return true;
}
