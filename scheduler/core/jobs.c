/* jobs.c - the job table, the pending queue in priority order and the job state machine
 * (jobs.h) */
#include "scheduler/core/jobs.h"
#include "scheduler/core/cards.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/depend.h"
#include "common/names.h"
#include "scheduler/core/nodes.h"
#include "common/parse.h"
#include "common/u64map.h"

#include <stdio.h>

static const char *const reason_names[PEND_NREASONS] = {
    [PEND_NONE] = "None",
    [PEND_PRIORITY] = "Priority",
    [PEND_RESOURCES] = "Resources",
    [PEND_HELD] = "JobHeld",
    [PEND_NODE_NOT_AVAIL] = "ReqNodeNotAvail",
    [PEND_NO_NODES] = "NoNodes",
    [PEND_TOO_LARGE] = "TooLarge",
    [PEND_REQUEUED] = "Requeued",
    [PEND_NO_CARD] = "NoMatchingCard",
    [PEND_POWER] = "PowerCap",
    [PEND_DEPENDENCY] = "Dependency",
    [PEND_DEP_NEVER] = "DependencyNeverSatisfied",
    [PEND_ARRAY_LIMIT] = "JobArrayTaskLimit",
    [PEND_USER_LIMIT] = "UserLimit",
    [PEND_BEGIN_TIME] = "BeginTime",
};

const char *pend_reason_name(enum pend_reason r)
{
	return (unsigned)r < PEND_NREASONS ? reason_names[r] : "None";
}

struct jobs {
	gp_u64map_t *byid;
	struct job **q;
	size_t qlen, qcap;
	uint64_t next_id;
};

struct jobs *jobs_create(uint64_t next_id)
{
	struct jobs *js = calloc(1, sizeof(*js));
	if (!js || !(js->byid = gp_u64map_create())) {
		free(js);
		return NULL;
	}
	js->next_id = next_id ? next_id : 1;
	return js;
}

void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->user);
	free(j->name);
	free(j->out_pattern);
	free(j->err_pattern);
	free(j->end_reason);
	gp_strv_free(j->nodelist, j->n_nodelist);
	gp_strv_free(j->exclude, j->n_exclude);
	free(j->tasks);
	free(j->placement_text);
	free(j->reason_detail);
	free(j->deps);
	gpu_req_free(j->gpu);
	free(j);
}

int job_array_of(const Gpool__JobSpec *sp, gp_array_t **a)
{
	*a = NULL;
	if (!sp->array || !*sp->array)
		return 0;
	gp_array_t *p = malloc(sizeof(*p)); /* about 12 KiB: its ranges */
	if (!p)
		return -1;
	if (gp_array_parse(sp->array, p) < 0) {
		int e = errno;
		free(p);
		errno = e;
		return -1;
	}
	*a = p;
	return 0;
}

int job_take_spec_extras(struct job *j, const Gpool__JobSpec *sp)
{
	gp_array_t *a;
	if (job_array_of(sp, &a) < 0)
		return -1;
	if (a)
		j->array_limit = a->limit;
	free(a);
	j->begin_time = sp->begin_time;
	j->exclusive = sp->exclusive;
	free(j->deps);
	j->deps = NULL;
	j->n_deps = 0;
	if (!sp->dependency || !*sp->dependency || j->state != GPOOL__JOB_STATE__PENDING)
		return 0;
	gp_depend_t d;
	if (gp_depend_parse(sp->dependency, &d) < 0)
		return -1;
	if (!(j->deps = malloc(d.n * sizeof(*j->deps))))
		return -1;
	memcpy(j->deps, d.d, d.n * sizeof(*j->deps));
	j->n_deps = (uint8_t)d.n;
	j->deps_any = d.any;
	j->deps_epoch = UINT64_MAX; /* not evaluated yet */
	return 0;
}

void jobs_destroy(struct jobs **p)
{
	if (!p || !*p)
		return;
	size_t pos = 0;
	struct job *j;
	while ((j = gp_u64map_next((*p)->byid, &pos, NULL)))
		job_free(j);
	gp_u64map_destroy(&(*p)->byid);
	free((*p)->q);
	free(*p);
	*p = NULL;
}

uint64_t jobs_next_id(struct jobs *js)
{
	return js->next_id++;
}

struct job *jobs_get(struct jobs *js, uint64_t id)
{
	return gp_u64map_get(js->byid, id);
}

size_t jobs_count(struct jobs *js)
{
	return gp_u64map_count(js->byid);
}

struct job *jobs_iter(struct jobs *js, size_t *pos)
{
	return gp_u64map_next(js->byid, pos, NULL);
}

/* true when a runs before b */
static bool before(const struct job *a, const struct job *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	return a->id < b->id;
}

int jobs_queue_insert(struct jobs *js, struct job *j)
{
	if (js->qlen == js->qcap) {
		size_t nc = js->qcap ? js->qcap * 2 : 1024;
		struct job **nq = realloc(js->q, nc * sizeof(*nq));
		if (!nq)
			return -1;
		js->q = nq;
		js->qcap = nc;
	}
	/* binary search; new jobs usually go last */
	size_t lo = 0, hi = js->qlen;
	if (hi == 0 || before(js->q[hi - 1], j))
		lo = hi;
	else
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (before(js->q[mid], j))
				lo = mid + 1;
			else
				hi = mid;
		}
	memmove(&js->q[lo + 1], &js->q[lo], (js->qlen - lo) * sizeof(*js->q));
	js->q[lo] = j;
	js->qlen++;
	for (size_t i = lo; i < js->qlen; i++)
		js->q[i]->qpos = i;
	return 0;
}

void jobs_queue_remove(struct jobs *js, struct job *j)
{
	size_t i = j->qpos;
	if (i >= js->qlen || js->q[i] != j)
		return;
	memmove(&js->q[i], &js->q[i + 1], (js->qlen - i - 1) * sizeof(*js->q));
	js->qlen--;
	for (size_t k = i; k < js->qlen; k++)
		js->q[k]->qpos = k;
	j->qpos = SIZE_MAX;
}

size_t jobs_queue_len(struct jobs *js)
{
	return js->qlen;
}

struct job *jobs_queue_at(struct jobs *js, size_t i)
{
	return i < js->qlen ? js->q[i] : NULL;
}

int jobs_add(struct jobs *js, struct job *j)
{
	j->qpos = SIZE_MAX;
	if (gp_u64map_put(js->byid, j->id, j) < 0)
		return -1;
	if (j->state == GPOOL__JOB_STATE__PENDING && jobs_queue_insert(js, j) < 0) {
		gp_u64map_del(js->byid, j->id);
		return -1;
	}
	if (j->id >= js->next_id)
		js->next_id = j->id + 1;
	return 0;
}

void jobs_forget(struct jobs *js, struct job *j)
{
	jobs_queue_remove(js, j);
	gp_u64map_del(js->byid, j->id);
	job_free(j);
}

/* A summary of j's spec: what gstat shows (malloc'd; NULL on ENOMEM). */
static Gpool__JobSpec *spec_summary(const struct job *j)
{
	Gpool__JobSpec *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	gpool__job_spec__init(sp);
	sp->name = j->name ? j->name : "";
	sp->ntasks = j->ntasks;
	sp->cpus_per_task = j->cpus_per_task;
	sp->mem_per_node_mb = j->mem_mb;
	sp->time_limit_sec = j->time_limit;
	sp->priority = j->priority;
	sp->hold = j->hold;
	sp->nodes_min = j->nodes_min;
	sp->nodes_max = j->nodes_max;
	sp->output = j->out_pattern ? j->out_pattern : "";
	sp->error = j->err_pattern ? j->err_pattern : "";
	sp->no_requeue = j->no_requeue;
	sp->ckpt_signal = j->ckpt_signal;
	sp->ckpt_signal_sec = j->ckpt_sec;
	sp->screen = j->screen;
	sp->pty = j->pty; /* its key's hash stays out: gstat shows anyone's spec */
	sp->pty_keep_sec = j->pty_keep_sec;
	if (j->gpu) {
		sp->gpus_per_task = j->gpu->per_task;
		sp->gpu_mem_min = j->gpu->mem_min;
		sp->gpu_vendor = j->gpu->vendor;
		sp->gpu_model = j->gpu->model ? j->gpu->model : "";
		sp->gpu_mixed = j->gpu->mixed;
		sp->gpu_share = j->gpu->share;
		sp->gpus_optional = j->gpu->optional;
	}
	return sp;
}

/* The tasks' placement of a placed job j into ji (its tasks and node list): from memory, or from
 * the stored placement of a job read back from the store. */
static void fill_placement(Gpool__JobInfo *ji, const struct job *j, struct nodes *ns)
{
	/* each task's node, local rank and cards: from memory, or from the stored placement of a
	 * job read back from the store ("node:local_rank:cpu:state:status:oom:cards") */
	const char **names = calloc(j->ntasks, sizeof(*names));
	uint16_t *lr = calloc(j->ntasks, sizeof(*lr));
	uint64_t *cards = calloc(j->ntasks, sizeof(*cards));
	char *text = j->tasks ? NULL : strdup(j->placement_text);
	uint32_t n = 0;
	if (names && lr && cards && (j->tasks || text)) {
		if (j->tasks) {
			for (; n < j->ntasks; n++) {
				names[n] = nodes_name(ns, j->tasks[n].node);
				lr[n] = j->tasks[n].local_rank;
				cards[n] = j->tasks[n].cards;
			}
		} else {
			char *save = NULL;
			for (char *it = strtok_r(text, ",", &save); it && n < j->ntasks;
			     it = strtok_r(NULL, ",", &save), n++) {
				char *colon = strchr(it, ':');
				unsigned l = 0, cpu, st;
				int status, oom;
				unsigned long long c = 0;
				if (!colon)
					break;
				*colon = '\0';
				sscanf(colon + 1, "%u:%u:%u:%d:%d:%llx", &l, &cpu, &st, &status,
				       &oom, &c);
				names[n] = it;
				lr[n] = (uint16_t)l;
				cards[n] = c;
			}
		}
	}
	size_t namelen = 0;
	for (uint32_t i = 0; i < n; i++)
		namelen += strlen(names[i]) + 1;
	ji->tasks = n ? calloc(n, sizeof(*ji->tasks)) : NULL;
	Gpool__TaskPlacement *tp = n ? calloc(n, sizeof(*tp)) : NULL;
	uint32_t *cardv = n ? calloc((size_t)n * 64 + 1, sizeof(uint32_t)) : NULL;
	char *list = n ? calloc(1, 4096) : NULL;
	char *namebuf = n ? malloc(namelen) : NULL;
	if (ji->tasks && tp && list && cardv && namebuf) {
		size_t used = 0, nb = 0;
		for (uint32_t i = 0; i < n; i++) {
			gpool__task_placement__init(&tp[i]);
			tp[i].rank = i;
			tp[i].node =
			    strcpy(namebuf + nb, names[i]); /* tasks[0]->node owns namebuf */
			nb += strlen(names[i]) + 1;
			tp[i].local_rank = lr[i];
			tp[i].cards = cardv + (size_t)i * 64;
			for (int b = 0; b < 64; b++)
				if (cards[i] >> b & 1)
					tp[i].cards[tp[i].n_cards++] = (uint32_t)b;
			ji->tasks[i] = &tp[i];
			/* distinct nodes in rank order */
			bool seen = false;
			for (uint32_t k = 0; k < i; k++)
				if (strcmp(names[k], names[i]) == 0)
					seen = true;
			if (!seen && used + strlen(names[i]) + 2 < 4096) {
				if (used)
					list[used++] = ',';
				strcpy(list + used, names[i]);
				used += strlen(names[i]);
			}
		}
		ji->n_tasks = n;
		ji->nodelist = list;
	} else {
		free(ji->tasks);
		free(tp);
		free(list);
		free(cardv);
		free(namebuf);
		ji->tasks = NULL;
	}
	free(names);
	free(lr);
	free(cards);
	free(text);
}

void jobinfo_fill(Gpool__JobInfo *ji, const struct job *j, struct nodes *ns)
{
	gpool__job_info__init(ji);
	ji->id = j->id;
	ji->uid = j->uid;
	ji->gid = j->gid;
	ji->user = j->user ? j->user : "";
	ji->state = j->state;
	ji->attempt = j->attempt;
	if (j->state == GPOOL__JOB_STATE__PENDING && j->reason_detail && j->reason != PEND_NONE &&
	    j->reason != PEND_HELD && j->reason != PEND_PRIORITY)
		ji->reason = j->reason_detail;
	else if (j->state == GPOOL__JOB_STATE__PENDING)
		ji->reason = (char *)pend_reason_name(j->reason);
	else
		ji->reason = j->end_reason ? j->end_reason : "";
	ji->submit_time = j->submit_time;
	ji->start_time = j->start_time;
	ji->end_time = j->end_time;
	ji->exit_code = j->exit_code;
	ji->cpu_sec = j->cpu_sec;
	ji->max_rss_kb = j->max_rss_kb;
	ji->energy_j = j->energy_j;
	ji->energy_sources = j->energy_sources;
	ji->frozen_sec = (double)j->frozen_ms / 1000.0;
	ji->vacates = j->vacates;
	ji->frozen = j->frozen;
	ji->reserved_start = j->reserved_start;
	ji->array_job_id = j->array_job_id;
	ji->array_task_id = j->array_task_id;
	ji->service_of = j->svc_of;
	ji->step_of = j->step_of;
	ji->alloc = j->alloc;
	ji->replica_index = j->svc_index;
	ji->spec = spec_summary(j); /* NULL: out of memory, no spec shown */
	ji->nodelist = "";
	bool placed = j->state == GPOOL__JOB_STATE__RUNNING ||
		      j->state == GPOOL__JOB_STATE__COMPLETING || gp_job_state_final(j->state);
	if (placed && (j->tasks || j->placement_text))
		fill_placement(ji, j, ns);
}

void jobinfo_release(Gpool__JobInfo *ji)
{
	free(ji->replicas); /* a service's, as service_info_fill made them (one block) */
	ji->replicas = NULL;
	ji->n_replicas = 0;
	if (ji->n_card_memory) { /* as card_mem_info_fill made them: one block of entries */
		free(ji->card_memory[0]);
		free(ji->card_memory);
	}
	ji->card_memory = NULL;
	ji->n_card_memory = 0;
	free(ji->spec);
	if (ji->n_tasks) {
		free(ji->tasks[0]->cards);
		free(ji->tasks[0]->node);
		free(ji->tasks[0]);
		free(ji->tasks);
		free(ji->nodelist);
	}
}
