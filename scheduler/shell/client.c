/* client.c - gschedd's handlers for the requests of the user commands (gsub, gstat, gcancel,
 * gnodes, glogs, gpool), each acting as the credential's uid (client.h) */
#include "scheduler/shell/client.h"
#include "scheduler/core/admit.h"
#include "scheduler/core/core.h"
#include "scheduler/shell/commit.h"
#include "scheduler/core/events.h"
#include "scheduler/features/files.h"
#include "scheduler/shell/budget.h"
#include "scheduler/core/identity.h"
#include "scheduler/core/card_memory.h"
#include "scheduler/features/service.h"
#include "scheduler/core/steps.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/card_state.h"
#include "scheduler/core/cards.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/shell/net.h"
#include "common/log.h"
#include "common/array.h"
#include "common/chunk.h"
#include "common/depend.h"
#include "common/names.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "common/parse.h"
#include "scheduler/store/store.h"
#include "common/util.h"
#include "scheduler/core/plan.h"

#define MAX_TASKS 65536
#define MAX_LIST  4096

static bool valid_token(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || s[i] == 0x7f || s[i] == ',' || s[i] == '/')
			return false;
	return true;
}

/* Setuid, setgid and sticky bits are not kept in a stored manifest, whoever sent them. */
static void plain_modes(Gpool__StageEntry **e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		e[i]->mode = gp_mode_plain(e[i]->mode, 0);
}

int client_check_spec(struct gsched *s, Gpool__JobSpec *sp, char *why, size_t len)
{
#define BAD(...) return snprintf(why, len, __VA_ARGS__), -1
	if (sp->n_argv == 0 || !sp->argv[0][0])
		BAD("no command given");
	if (sp->ntasks == 0)
		sp->ntasks = 1;
	if (sp->ntasks > MAX_TASKS)
		BAD("too many tasks (%u, at most %d)", sp->ntasks, MAX_TASKS);
	if (sp->cpus_per_task == 0)
		sp->cpus_per_task = 1;
	if (sp->cpus_per_task > 4096)
		BAD("too many CPUs per task (%u)", sp->cpus_per_task);
	if (sp->nodes_max && sp->nodes_max < sp->nodes_min)
		BAD("invalid node count %u-%u", sp->nodes_min, sp->nodes_max);
	if (sp->nodes_min > sp->ntasks)
		BAD("more nodes (%u) than tasks (%u)", sp->nodes_min, sp->ntasks);
	if (s->max_time_limit && sp->time_limit_sec > s->max_time_limit)
		BAD("time limit %u s is over the cluster's maximum of %u s", sp->time_limit_sec,
		    s->max_time_limit);
	if (sp->priority < -10000 || sp->priority > 10000)
		BAD("priority %d out of range -10000..10000", sp->priority);
	if (strlen(sp->name) > 256 || strlen(sp->output) > 256 || strlen(sp->error) > 256 ||
	    strlen(sp->chdir) > 4096)
		BAD("name, output or directory too long");
	if (sp->n_nodelist > MAX_LIST || sp->n_exclude > MAX_LIST)
		BAD("node list too long");
	if (sp->mpi != GPOOL__MPI_LAUNCH__MPI_NONE && sp->mpi != GPOOL__MPI_LAUNCH__MPI_MPIRUN &&
	    sp->mpi != GPOOL__MPI_LAUNCH__MPI_PMIX)
		BAD("MPI launch mode %d is not supported", (int)sp->mpi);
	if (sp->mpi != GPOOL__MPI_LAUNCH__MPI_NONE && sp->service)
		BAD("a service cannot be an MPI job");
	for (size_t i = 0; i < sp->n_nodelist; i++)
		if (!valid_token(sp->nodelist[i], 63))
			BAD("invalid node name '%.64s'", sp->nodelist[i]);
	for (size_t i = 0; i < sp->n_exclude; i++)
		if (!valid_token(sp->exclude[i], 63))
			BAD("invalid node name '%.64s'", sp->exclude[i]);
	if (sp->service_of || sp->replica_index)
		BAD("service_of and replica_index are set by the scheduler");
	if (sp->service && sp->replicas > SVC_MAX_REPLICAS)
		BAD("too many replicas (%u, at most %d)", sp->replicas, SVC_MAX_REPLICAS);
	if (strlen(sp->health_path) > 1024 || (sp->health_path[0] && sp->health_path[0] != '/'))
		BAD("invalid health path (must start with '/')");
	if (sp->route_token_sha256[0] && !sp->service)
		BAD("a route token is a service's");
	if (sp->route_keep_prefix && !sp->service)
		BAD("a route prefix is a service's");
	if (sp->pty_keep_sec && !sp->pty)
		BAD("a detached terminal's keep (pty_keep_sec) is a --pty job's");
	if (sp->pty_keep_sec > 7 * 86400)
		BAD("a detached terminal is kept at most 7 days (%u s asked)", sp->pty_keep_sec);
	if (sp->route_token_sha256[0] && (strlen(sp->route_token_sha256) != 64 ||
					  strspn(sp->route_token_sha256, "0123456789abcdef") != 64))
		BAD("invalid route token hash (64 lowercase hex digits)");
	for (size_t i = 0; i < sp->n_files; i++) {
		const char *f = sp->files[i]->name;
		if (!*f || f[0] == '/' || strstr(f, "..") || strlen(f) > 255)
			BAD("invalid staged file name '%.64s'", f);
	}
	if (sp->array && *sp->array && sp->service)
		BAD("a service cannot be a job array (use --replicas)");
	if (sp->array && *sp->array) {
		gp_array_t *a;
		int rc = job_array_of(sp, &a);
		int e = errno;
		free(a);
		if (rc < 0 && e == E2BIG)
			BAD("array '%.64s' too large (at most %u tasks, indices up to %u)",
			    sp->array, GP_ARRAY_MAX_TASKS, GP_ARRAY_MAX_INDEX);
		if (rc < 0)
			BAD("invalid array '%.64s'", sp->array);
	}
	if (sp->dependency && *sp->dependency) {
		gp_depend_t *d = malloc(sizeof(*d));
		int rc = d ? gp_depend_parse(sp->dependency, d) : -1;
		if (rc < 0) {
			free(d);
			BAD("invalid dependency '%.64s'", sp->dependency);
		}
		/* like sbatch: a dependency on a job that never existed is refused now (asked
		 * through the port placement asks too: the store, in gschedd) */
		for (size_t i = 0; i < d->n; i++) {
			struct gp_dep_target t;
			if (d->d[i].type == GP_DEP_SINGLETON || !s->dep_target)
				continue;
			if (s->dep_target(s, d->d[i].job, d->d[i].has_task, d->d[i].task, &t) ==
				0 &&
			    !t.exists) {
				char id[48];
				if (d->d[i].has_task)
					snprintf(id, sizeof(id), "%llu_%u",
						 (unsigned long long)d->d[i].job, d->d[i].task);
				else
					snprintf(id, sizeof(id), "%llu",
						 (unsigned long long)d->d[i].job);
				free(d);
				BAD("invalid dependency: job %s not found", id);
			}
		}
		free(d);
	}
	if (files_check_spec(s, sp, why, len) < 0)
		return -1;
	plain_modes(sp->stage, sp->n_stage);
	for (size_t i = 0; i < sp->n_files; i++)
		sp->files[i]->mode = gp_mode_plain(sp->files[i]->mode, 0);
	return 0;
#undef BAD
}

/* The submission's own links of the admission chain (admit.h, client.h). */

int client_admit_spec(struct gsched *s, struct admission *a)
{
	if (client_check_spec(s, a->sp, a->why, sizeof(a->why)) < 0) {
		a->code = GPOOL__ERROR_CODE__ERROR_INVALID;
		return -1;
	}
	return 0;
}

int client_admit_shape(struct gsched *s, struct admission *a)
{
	(void)s;
	if (job_array_of(a->sp, &a->arr) < 0) /* client_check_spec parsed it: out of memory */
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
	a->ntasks = a->arr ? a->arr->count : 1;
	int bad;
	a->gpu = gpu_req_from_spec(a->sp, a->why, sizeof(a->why), &bad);
	if (bad) {
		a->code = GPOOL__ERROR_CODE__ERROR_INVALID;
		return -1;
	}
	return 0;
}

/* A screening job's agent reports what its tasks measured as the agent's own: only those who
 * may report grades themselves may submit one. */
int client_admit_screen(struct gsched *s, struct admission *a)
{
	if (!a->sp->screen)
		return 0;
	if (a->uid != 0 && a->uid != s->agent_uid)
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				    "only root or the agents' account may submit screening jobs");
	if (!a->gpu)
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_INVALID,
				    "a screening job needs cards (--gpus-per-task, --gpu-index)");
	/* the agent finds the result in the scratch directory it made */
	if (a->sp->chdir && *a->sp->chdir)
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_INVALID,
				    "a screening job runs in its scratch directory (no --chdir)");
	return 0;
}

/* Whose the submitted job is: the credential's uid and the name the pool has for it; a
 * screening job is the agents' account's, by the scheduler's decision (identity.h). */
int client_admit_owner(struct gsched *s, struct admission *a)
{
	a->owner_uid = a->sp->screen ? s->agent_uid : a->uid;
	a->owner_gid = a->gid;
	/* the scheduler PC's passwd, read here in the shell, unless a test gives its own */
	identity_lookup_f lookup = s->owner_name ? s->owner_name : gp_uid_name;
	if (identity_owner(a->sp->screen ? NULL : &s->uids, s->nodes, lookup, a->owner_uid,
			   a->owner, sizeof(a->owner), a->why, sizeof(a->why)) < 0) {
		a->code = GPOOL__ERROR_CODE__ERROR_PERMISSION;
		return -1;
	}
	return 0;
}

int client_admit_room(struct gsched *s, struct admission *a)
{
	if (jobs_count(s->jobs) + a->ntasks > s->max_jobs)
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				    "the queue is full (%llu jobs)",
				    (unsigned long long)s->max_jobs);
	return 0;
}

/* What is stored must read back at launch: libprotobuf-c re-encodes some unknown fields (tag 0)
 * into bytes it then refuses to decode. */
int client_admit_storable(struct gsched *s, struct admission *a)
{
	(void)s;
	size_t len = gpool__job_spec__get_packed_size(a->sp);
	if (!(a->packed = malloc(len ? len : 1)))
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
	a->packed_len = len;
	gpool__job_spec__pack(a->sp, a->packed);
	Gpool__JobSpec *check = gpool__job_spec__unpack(NULL, len, a->packed);
	if (!check)
		return admit_refuse(a, GPOOL__ERROR_CODE__ERROR_INVALID,
				    "the job spec carries fields that cannot be stored");
	gpool__job_spec__free_unpacked(check, NULL);
	return 0;
}

static char **copy_list(char **v, size_t n)
{
	if (!n)
		return NULL;
	char **c = calloc(n, sizeof(*c));
	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++)
		c[i] = strdup(v[i]);
	return c;
}

/* A pending job from a checked spec (gpu: its card request, which the job takes). NULL when
 * out of memory (gpu freed). */
static struct job *new_job(struct gsched *s, const struct admission *a, struct gpu_req *gpu)
{
	const Gpool__JobSpec *sp = a->sp;
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		gpu_req_free(gpu);
		return NULL;
	}
	j->gpu = gpu;
	j->id = jobs_next_id(s->jobs);
	j->uid = a->owner_uid;
	j->gid = a->owner_gid;
	j->user = strdup(a->owner);
	j->name = strdup(sp->name[0] ? sp->name : sp->argv[0]);
	j->out_pattern = strdup(sp->output);
	j->err_pattern = strdup(sp->error);
	j->state = GPOOL__JOB_STATE__PENDING;
	j->priority = sp->priority;
	j->hold = sp->hold;
	j->no_requeue = sp->no_requeue;
	j->ckpt_signal = sp->ckpt_signal;
	j->ckpt_sec = sp->ckpt_signal_sec;
	j->screen = sp->screen;
	j->alloc = sp->alloc;
	j->step_of = sp->step_of;
	j->pty = sp->pty;
	j->pty_keep_sec = sp->pty_keep_sec;
	if (j->step_of)
		j->no_requeue = true; /* placed on its allocation only (steps.h) */
	j->reason = sp->hold ? PEND_HELD : PEND_NONE;
	j->submit_time = gp_now();
	j->ntasks = sp->ntasks;
	j->cpus_per_task = sp->cpus_per_task;
	j->nodes_min = sp->nodes_min;
	j->nodes_max = sp->nodes_max ? sp->nodes_max : sp->nodes_min;
	j->mem_mb = sp->mem_per_node_mb;
	j->time_limit = sp->time_limit_sec;
	j->nodelist = copy_list(sp->nodelist, sp->n_nodelist);
	j->n_nodelist = j->nodelist ? (int)sp->n_nodelist : 0;
	j->exclude = copy_list(sp->exclude, sp->n_exclude);
	j->n_exclude = j->exclude ? (int)sp->n_exclude : 0;
	if (!j->user || !j->name || !j->out_pattern || !j->err_pattern ||
	    job_take_spec_extras(j, sp) < 0) {
		job_free(j);
		return NULL;
	}
	if (sp->dependency && *sp->dependency)
		j->reason = sp->hold ? PEND_HELD : PEND_DEPENDENCY;
	return j;
}

/* A retried submission (same uid and token as one before): answer with the first one's job,
 * once what it depends on is on disk. true when answered. */
static bool answer_duplicate(struct req *r, const char *token)
{
	struct gsched *s = r->s;
	if (!token || !*token)
		return false;
	uint64_t id = store_job_by_token(s->store, r->from.uid, token);
	if (!id)
		return false;
	struct job *j = jobs_get(s->jobs, id);
	Gpool__SubmitReply rep = GPOOL__SUBMIT_REPLY__INIT;
	rep.job_id = id;
	rep.duplicate = true;
	if (j && j->array_job_id == id) { /* an array: count its tasks (consecutive ids) */
		uint32_t n = 0;
		struct job *t;
		while ((t = jobs_get(s->jobs, id + n)) && t->array_job_id == id)
			n++;
		rep.array_task_count = n;
	}
	gp_info("submission token of uid %u seen before: job %llu", (unsigned)r->from.uid,
		(unsigned long long)id);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_SUBMIT_REPLY;
	m.submit_reply = &rep;
	req_reply(r, &m, true);
	return true;
}

/* Make the jobs of an admitted submission: every task of an array is a job of its own, with
 * consecutive ids; all of them go into the open transaction (one commit), the spec stored once
 * with the first. The reply waits for the commit (commit_save_new). */
static void make_jobs(struct req *r, struct admission *a, const char *token)
{
	struct gsched *s = r->s;
	Gpool__JobSpec *sp = a->sp;
	uint64_t first = 0;
	bool want_gpu = a->gpu != NULL;
	int staged = 0; /* the first task's staged input kept in the replicated state: 0 */
	int bad;
	errno = 0;
	for (uint32_t i = 0; i < a->ntasks; i++) {
		struct gpu_req *gpu = a->gpu;
		a->gpu = NULL; /* the first job takes it */
		if (i > 0 && !(gpu = gpu_req_from_spec(sp, a->why, sizeof(a->why), &bad)) &&
		    want_gpu)
			goto fail;
		struct job *j = new_job(s, a, gpu);
		if (!j)
			goto fail;
		if (i == 0 && plan_refuse(s, j, a->why, sizeof(a->why))) {
			/* as sbatch: a job no node configuration can ever hold is not queued */
			job_free(j);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "%s", a->why);
			return;
		}
		if (a->arr) {
			j->array_job_id = i ? first : j->id;
			j->array_task_id = gp_array_index(a->arr, i);
		}
		if (sp->service && service_submitted(s, j, sp) < 0) {
			job_free(j);
			goto fail;
		}
		if (jobs_add(s->jobs, j) < 0) {
			job_free(j);
			goto fail;
		}
		if (commit_save_new(s, j, i ? NULL : a->packed, a->packed_len, token,
				    i ? NULL : r) < 0) {
			sched_forget(s, j);
			goto fail;
		}
		/* a standby that takes over before the job starts stages it from its own copy */
		if (staged == 0 &&
		    (staged = files_replicate_stage(s, j, sp->stage, sp->n_stage, i > 0)) < 0) {
			gp_err("job %llu: cannot keep its staged input in the replicated state: %s",
			       (unsigned long long)j->id, strerror(errno));
			/* the reply is queued: the failed transaction refuses it and forgets every
			 * task made so far */
			store_fail_txn(s->store);
			return;
		}
		if (i == 0)
			first = j->id;
		if (i == 0 && a->arr)
			s->subs[s->nsubs - 1].array_count = a->ntasks;
	}
	s->submitted += a->ntasks;
	s->plan_dirty = true;
	return;
fail:
	if (!first) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "cannot save the job: %s",
				strerror(errno ? errno : ENOMEM));
		return;
	}
	/* the first task's reply is queued: make the transaction fail, which refuses it and
	 * forgets every task made so far */
	gp_err("array %llu: cannot make all its tasks; the submission is refused",
	       (unsigned long long)first);
	store_fail_txn(s->store);
}

/* A submission: a retried one is answered as before; a new one passes the admission chain
 * (admit.h: the checks the features registered) and its jobs are made. */
void client_submit(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__SubmitRequest *sr = r->msg->submit;
	if (!sr->spec) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "submission without a job");
		return;
	}
	if (sr->token && *sr->token && !valid_token(sr->token, 64)) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "invalid submission token");
		return;
	}
	if (answer_duplicate(r, sr->token))
		return;
	struct admission a = {.sp = sr->spec, .uid = r->from.uid, .gid = r->from.gid, .ntasks = 1};
	if (admit_run(s, s->admit, &a) < 0)
		req_reply_error(r, a.code, "%s", a.why);
	else
		make_jobs(r, &a, sr->token);
	free(a.arr);
	gpu_req_free(a.gpu);
	free(a.packed);
}

struct qctx {
	struct gsched *s;
	Gpool__JobSpec **specs; /* full specs loaded for detailed answers */
	size_t nspecs;
	const Gpool__JobQuery *q;
	Gpool__JobInfo **infos;
	struct job **loaded; /* jobs read from the store, freed after the reply */
	size_t n, cap, nloaded;
	uint32_t limit;
};

static bool match(const struct qctx *c, const struct job *j)
{
	const Gpool__JobQuery *q = c->q;
	if (q->user && *q->user && strcmp(q->user, j->user ? j->user : "") != 0)
		return false;
	if (q->n_states) {
		bool ok = false;
		for (size_t i = 0; i < q->n_states; i++)
			if (q->states[i] == j->state)
				ok = true;
		if (!ok)
			return false;
	}
	if (!q->all && !q->n_ids && gp_job_state_final(j->state))
		return false;
	if (q->since && j->submit_time < q->since && (!j->end_time || j->end_time < q->since))
		return false;
	if (q->until && j->submit_time > q->until)
		return false;
	return true;
}

static int add_info(struct qctx *c, const struct job *j)
{
	if (c->n >= c->limit)
		return 1;
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		Gpool__JobInfo **ni = realloc(c->infos, nc * sizeof(*ni));
		if (!ni)
			return -1;
		c->infos = ni;
		c->cap = nc;
	}
	Gpool__JobInfo *ji = malloc(sizeof(*ji));
	if (!ji)
		return -1;
	jobinfo_fill(ji, j, c->s->nodes);
	service_info_fill(c->s, j, ji);
	card_mem_info_fill(c->s, j, ji);
	c->infos[c->n++] = ji;
	return 0;
}

static int keep_loaded(struct qctx *c, struct job *j)
{
	struct job **nl = realloc(c->loaded, (c->nloaded + 1) * sizeof(*nl));
	if (!nl) {
		job_free(j);
		return -1;
	}
	c->loaded = nl;
	c->loaded[c->nloaded++] = j;
	return 0;
}

static int hist_cb(void *arg, struct job *j)
{
	struct qctx *c = arg;
	if (jobs_get(c->s->jobs, j->id) || !match(c, j)) {
		job_free(j);
		return 0;
	}
	if (keep_loaded(c, j) < 0)
		return -1;
	return add_info(c, j) > 0 ? -1 : 0;
}

static int by_id(const void *a, const void *b)
{
	uint64_t x = (*(Gpool__JobInfo *const *)a)->id, y = (*(Gpool__JobInfo *const *)b)->id;
	return x < y ? -1 : x > y;
}

/* What a listing costs the loop (jobs walked), taken from its sender's budget: 0, or -1 with
 * ERROR_RATE answered. */
static int listing_budget(struct req *r, const Gpool__JobQuery *q, uint32_t limit)
{
	struct gsched *s = r->s;
	if (!s->lists || r->from.uid == 0 || r->from.uid == s->agent_uid)
		return 0;
	double cost = q->n_ids ? (double)q->n_ids : (double)jobs_count(s->jobs);
	if (q->all)
		cost += limit;
	int64_t retry;
	if (budget_take(s->lists, r->from.uid, cost, gp_mono_ms(), &retry) == 0)
		return 0;
	req_reply_error(r, GPOOL__ERROR_CODE__ERROR_RATE,
			"too many listings from uid %u (list_records_per_user): ask again in %lld "
			"ms",
			(unsigned)r->from.uid, (long long)retry);
	return -1;
}

void client_job_query(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__JobQuery *q = r->msg->job_query;
	struct qctx c = {.s = s, .q = q, .limit = q->limit ? q->limit : 100000};
	if (listing_budget(r, q, c.limit) < 0)
		return;
	if (q->n_ids) {
		for (size_t i = 0; i < q->n_ids; i++) {
			struct job *j = jobs_get(s->jobs, q->ids[i]);
			if (!j) {
				j = store_job_load(s->store, q->ids[i]);
				if (!j && q->include_purged)
					j = store_summary_load(s->store, q->ids[i]);
				if (!j || keep_loaded(&c, j) < 0) {
					req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
							"job %llu not found",
							(unsigned long long)q->ids[i]);
					goto out;
				}
			}
			add_info(&c, j);
			/* a detailed answer names the command too (the spec lives in the store) */
			Gpool__JobSpec *full =
			    q->n_ids <= 16 ? store_job_spec(s->store, j->id) : NULL;
			Gpool__JobSpec **ns =
			    full ? realloc(c.specs, (c.nspecs + 1) * sizeof(*ns)) : NULL;
			if (ns && c.n && c.infos[c.n - 1]->spec) {
				c.specs = ns;
				c.specs[c.nspecs++] = full;
				Gpool__JobSpec *sum = c.infos[c.n - 1]->spec;
				sum->argv = full->argv;
				sum->n_argv = full->n_argv;
				sum->chdir = full->chdir;
				sum->n_nodelist = full->n_nodelist;
				sum->nodelist = full->nodelist;
				sum->n_exclude = full->n_exclude;
				sum->exclude = full->exclude;
				sum->n_gpu_index = full->n_gpu_index;
				sum->gpu_index = full->gpu_index;
				sum->service = full->service;
				sum->replicas = full->replicas;
				sum->health_path = full->health_path;
				sum->service_port = full->service_port;
				sum->service_of = full->service_of;
				sum->replica_index = full->replica_index;
			} else if (full) {
				gpool__job_spec__free_unpacked(full, NULL);
			}
		}
	} else {
		size_t pos = 0;
		struct job *j;
		while ((j = jobs_iter(s->jobs, &pos)))
			if (match(&c, j) && add_info(&c, j) != 0)
				break;
		if (q->all)
			store_history(s->store, 0, true, q->since, q->until, c.limit, hist_cb, &c);
		if (q->all && q->include_purged && c.n < c.limit)
			store_summary_history(s->store, 0, true, q->since, q->until, c.limit - c.n,
					      hist_cb, &c);
		if (c.n) /* qsort(NULL, 0) is undefined */
			qsort(c.infos, c.n, sizeof(*c.infos), by_id);
	}
	Gpool__JobQueryReply rep = GPOOL__JOB_QUERY_REPLY__INIT;
	rep.jobs = c.infos;
	rep.n_jobs = c.n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_JOB_QUERY_REPLY;
	m.job_query_reply = &rep;
	req_reply(r, &m, false);
out:
	for (size_t i = 0; i < c.n; i++) {
		jobinfo_release(c.infos[i]);
		free(c.infos[i]);
	}
	free(c.infos);
	for (size_t i = 0; i < c.nloaded; i++)
		job_free(c.loaded[i]);
	free(c.loaded);
	for (size_t i = 0; i < c.nspecs; i++)
		gpool__job_spec__free_unpacked(c.specs[i], NULL);
	free(c.specs);
}

static bool may_act(const struct req *r, const struct job *j)
{
	return r->from.uid == 0 || r->from.uid == j->uid;
}

static void result(Gpool__JobResult *res, uint64_t id, Gpool__ErrorCode code, char *text)
{
	gpool__job_result__init(res);
	res->id = id;
	res->code = code;
	res->text = text;
}

static Gpool__ErrorCode control_one(struct req *r, struct job *j, char *text, size_t len)
{
	struct gsched *s = r->s;
	Gpool__JobControl *c = r->msg->job_control;
	bool pending = j->state == GPOOL__JOB_STATE__PENDING;
	bool live =
	    j->state == GPOOL__JOB_STATE__RUNNING || j->state == GPOOL__JOB_STATE__COMPLETING;
	if (!may_act(r, j)) {
		snprintf(text, len, "belongs to %s: permission denied", j->user);
		return GPOOL__ERROR_CODE__ERROR_PERMISSION;
	}
	if (gp_job_state_final(j->state)) {
		snprintf(text, len, "already ended (%s)", gp_job_state_name(j->state));
		return GPOOL__ERROR_CODE__ERROR_STATE;
	}
	char who[96];
	snprintf(who, sizeof(who), "cancelled by uid %u", (unsigned)r->from.uid);
	switch (c->action) {
	case GPOOL__JOB_ACTION__JOB_CANCEL:
		if (service_is(s, j))
			service_cancel(s, j, who);
		else if (pending)
			job_end_pending(s, j, GPOOL__JOB_STATE__CANCELLED, who);
		else if (live)
			job_kill(s, j, GPOOL__JOB_STATE__CANCELLED, SIGTERM, who);
		return GPOOL__ERROR_CODE__ERROR_NONE;
	case GPOOL__JOB_ACTION__JOB_SIGNAL:
		if (!live || c->value <= 0 || c->value >= 65) {
			snprintf(text, len, "cannot signal (not running or bad signal)");
			return GPOOL__ERROR_CODE__ERROR_STATE;
		}
		for (uint32_t i = 0; i < j->ntasks; i++) {
			bool first = true;
			for (uint32_t k = 0; k < i; k++)
				if (j->tasks[k].node == j->tasks[i].node)
					first = false;
			if (!first)
				continue;
			Gpool__Kill k = GPOOL__KILL__INIT;
			k.job_id = j->id;
			k.attempt = j->attempt;
			k.signal = c->value;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_KILL;
			m.kill = &k;
			orders_send(s->orders, j->tasks[i].node, &m);
		}
		return GPOOL__ERROR_CODE__ERROR_NONE;
	case GPOOL__JOB_ACTION__JOB_HOLD:
	case GPOOL__JOB_ACTION__JOB_RELEASE:
		if (!pending) {
			snprintf(text, len, "not pending");
			return GPOOL__ERROR_CODE__ERROR_STATE;
		}
		j->hold = c->action == GPOOL__JOB_ACTION__JOB_HOLD;
		j->reason = j->hold ? PEND_HELD : PEND_NONE;
		job_save(s, j);
		s->plan_dirty = true;
		return GPOOL__ERROR_CODE__ERROR_NONE;
	case GPOOL__JOB_ACTION__JOB_SET_PRIORITY:
		if (c->value < -10000 || c->value > 10000) {
			snprintf(text, len, "priority %d out of range -10000..10000", c->value);
			return GPOOL__ERROR_CODE__ERROR_INVALID;
		}
		if (r->from.uid != 0 && c->value > j->priority) {
			snprintf(text, len, "only root may raise a job's priority");
			return GPOOL__ERROR_CODE__ERROR_PERMISSION;
		}
		if (pending)
			jobs_queue_remove(s->jobs, j);
		j->priority = c->value;
		if (pending)
			jobs_queue_insert(s->jobs, j);
		job_save(s, j);
		s->plan_dirty = true;
		return GPOOL__ERROR_CODE__ERROR_NONE;
	case GPOOL__JOB_ACTION__JOB_UPDATE:
		if (files_check_use(s, r->from.uid, c->stage, c->n_stage, text, len) < 0)
			return errno == EACCES ? GPOOL__ERROR_CODE__ERROR_PERMISSION
					       : GPOOL__ERROR_CODE__ERROR_INVALID;
		plain_modes(c->stage, c->n_stage);
		if (service_update(s, j, c->argv, c->n_argv, c->stage, c->n_stage, text, len) < 0)
			return service_is(s, j) ? GPOOL__ERROR_CODE__ERROR_INVALID
						: GPOOL__ERROR_CODE__ERROR_STATE;
		return GPOOL__ERROR_CODE__ERROR_NONE;
	case GPOOL__JOB_ACTION__JOB_SCALE:
		if (service_scale(s, j, c->value, text, len) < 0)
			return service_is(s, j) ? GPOOL__ERROR_CODE__ERROR_INVALID
						: GPOOL__ERROR_CODE__ERROR_STATE;
		return GPOOL__ERROR_CODE__ERROR_NONE;
	default:
		snprintf(text, len, "unknown action %d", c->action);
		return GPOOL__ERROR_CODE__ERROR_INVALID;
	}
}

/* The jobs a JobControl names: each id (an array's id: every task of it not yet ended), and
 * each selector ("12", "12_7", "12_[3-5]"). A target that names nothing live keeps the id it
 * was given, so that its result says why. */
struct targets {
	uint64_t *ids;
	size_t n, cap;
};

static int target_push(struct targets *t, uint64_t id)
{
	for (size_t i = t->n; i-- > 0 && i + 64 >= t->n;) /* a repeat given next to it */
		if (t->ids[i] == id)
			return 0;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 64;
		uint64_t *ni = realloc(t->ids, nc * sizeof(*ni));
		if (!ni)
			return -1;
		t->ids = ni;
		t->cap = nc;
	}
	t->ids[t->n++] = id;
	return 0;
}

/* Job `id`, or when it is an array's id, the array's live tasks (those in sel, when given). */
static int target_expand(struct gsched *s, struct targets *t, uint64_t id, const gp_array_t *sel)
{
	struct job *j = jobs_get(s->jobs, id);
	struct job *old = j ? NULL : store_job_load(s->store, id);
	bool array = (j ? j->array_job_id : old ? old->array_job_id : 0) == id;
	job_free(old);
	if (!array)
		return sel ? 0 : target_push(t, id);
	uint64_t *ids;
	uint32_t *tasks;
	size_t n, before = t->n;
	if (store_array_tasks(s->store, id, &ids, &tasks, &n) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (sel && !gp_array_has(sel, tasks[i]))
			continue;
		struct job *tj = jobs_get(s->jobs, ids[i]);
		if (tj && !gp_job_state_final(tj->state))
			rc = target_push(t, ids[i]);
	}
	free(ids);
	free(tasks);
	if (rc == 0 && t->n == before && !sel)
		rc = target_push(t, id); /* nothing live: its result says so */
	return rc;
}

static int resolve_targets(struct gsched *s, const Gpool__JobControl *c, struct targets *t,
			   char *why, size_t len)
{
	for (size_t i = 0; i < c->n_ids; i++)
		if (target_expand(s, t, c->ids[i], NULL) < 0)
			return snprintf(why, len, "out of memory"), -1;
	gp_array_t *sel = malloc(sizeof(*sel));
	if (!sel)
		return snprintf(why, len, "out of memory"), -1;
	for (size_t i = 0; i < c->n_selectors; i++) {
		uint64_t id;
		bool has_tasks;
		if (gp_array_selector(c->selectors[i], &id, &has_tasks, sel) < 0) {
			snprintf(why, len, "invalid job '%.64s'", c->selectors[i]);
			free(sel);
			return -1;
		}
		size_t before = t->n;
		if (target_expand(s, t, id, has_tasks ? sel : NULL) < 0) {
			free(sel);
			return snprintf(why, len, "out of memory"), -1;
		}
		if (has_tasks && t->n == before) {
			snprintf(why, len, "no such task pending or running: %.64s",
				 c->selectors[i]);
			free(sel);
			errno = ENOENT;
			return -1;
		}
	}
	free(sel);
	return 0;
}

void client_job_control(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__JobControl *c = r->msg->job_control;
	if ((c->n_ids == 0 && c->n_selectors == 0) || c->n_ids > 100000 || c->n_selectors > 4096) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "no job ids given");
		return;
	}
	struct targets tg = {0};
	char why[160];
	errno = 0;
	if (resolve_targets(s, c, &tg, why, sizeof(why)) < 0) {
		free(tg.ids);
		req_reply_error(r,
				errno == ENOENT ? GPOOL__ERROR_CODE__ERROR_NOT_FOUND
						: GPOOL__ERROR_CODE__ERROR_INVALID,
				"%s", why);
		return;
	}
	size_t n = tg.n;
	Gpool__JobResult *res = calloc(n ? n : 1, sizeof(*res));
	Gpool__JobResult **resp = calloc(n ? n : 1, sizeof(*resp));
	char(*text)[160] = calloc(n ? n : 1, sizeof(*text));
	if (!res || !resp || !text) {
		free(res);
		free(resp);
		free(text);
		free(tg.ids);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t id = tg.ids[i];
		struct job *j = jobs_get(s->jobs, id);
		Gpool__ErrorCode code;
		if (!j) {
			struct job *old = store_job_load(s->store, id);
			if (old)
				snprintf(text[i], sizeof(text[i]), "already ended (%s)",
					 gp_job_state_name(old->state));
			else
				snprintf(text[i], sizeof(text[i]), "not found");
			code = old ? GPOOL__ERROR_CODE__ERROR_STATE
				   : GPOOL__ERROR_CODE__ERROR_NOT_FOUND;
			job_free(old);
		} else {
			code = control_one(r, j, text[i], sizeof(text[i]));
		}
		result(&res[i], id, code, text[i]);
		resp[i] = &res[i];
	}
	Gpool__JobControlReply rep = GPOOL__JOB_CONTROL_REPLY__INIT;
	rep.results = resp;
	rep.n_results = n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_JOB_CONTROL_REPLY;
	m.job_control_reply = &rep;
	req_reply(r, &m, true);
	free(res);
	free(resp);
	free(text);
	free(tg.ids);
}

void client_node_query(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__NodeQuery *q = r->msg->node_query;
	int nn = nodes_count(s->nodes);
	Gpool__NodeInfo *ni = calloc(nn ? nn : 1, sizeof(*ni));
	Gpool__NodeInfo **nip = calloc(nn ? nn : 1, sizeof(*nip));
	if (!ni || !nip) {
		free(ni);
		free(nip);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	size_t k = 0;
	for (int i = 0; i < nn; i++) {
		struct node *n = nodes_get(s->nodes, i);
		bool want = q->n_names == 0;
		for (size_t x = 0; x < q->n_names; x++)
			if (strcmp(q->names[x], n->name) == 0)
				want = true;
		if (!want)
			continue;
		nodeinfo_fill(&ni[k], n);
		nip[k] = &ni[k];
		k++;
	}
	Gpool__NodeQueryReply rep = GPOOL__NODE_QUERY_REPLY__INIT;
	rep.nodes = nip;
	rep.n_nodes = k;
	/* agents refused in the last 10 minutes, unless that name has registered since */
	size_t nref;
	const struct net_refused *ref = net_refused_list(s->net, &nref);
	Gpool__OpsRefusedNode rn[32], *rnp[32];
	for (size_t i = 0; i < nref && rep.n_refused < 32; i++) {
		if (gp_now() - ref[i].last > 600)
			continue;
		bool back = false;
		for (int x = 0; x < nn; x++) {
			struct node *n = nodes_get(s->nodes, x);
			if (!strcmp(n->name, ref[i].name) &&
			    n->state != GPOOL__NODE_STATE__NODE_DOWN && n->last_heard > ref[i].last)
				back = true;
		}
		if (back)
			continue;
		Gpool__OpsRefusedNode *o = &rn[rep.n_refused];
		gpool__ops_refused_node__init(o);
		o->name = (char *)ref[i].name;
		o->addr = (char *)ref[i].addr;
		o->reason = (char *)ref[i].reason;
		o->count = ref[i].count;
		o->last = ref[i].last;
		rnp[rep.n_refused++] = o;
	}
	rep.refused = rnp;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_NODE_QUERY_REPLY;
	m.node_query_reply = &rep;
	req_reply(r, &m, false);
	free(ni);
	free(nip);
}

void client_node_control(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__NodeControl *c = r->msg->node_control;
	if (r->from.uid != 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"only root may drain or resume nodes");
		return;
	}
	int idx = nodes_find(s->nodes, c->name);
	if (idx < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "node '%.64s' not found",
				c->name);
		return;
	}
	struct node *n = nodes_get(s->nodes, idx);
	bool drain = c->action == GPOOL__NODE_ACTION__NODE_DRAIN;
	if (!drain && c->action != GPOOL__NODE_ACTION__NODE_RESUME) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "unknown node action");
		return;
	}
	if (c->card >= 0) {
		if ((size_t)c->card >= n->n_cards) {
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
					"node %s has no card %d", n->name, c->card);
			return;
		}
		Gpool__Card *card = n->cards[c->card];
		card->state = drain ? GPOOL__CARD_STATE__CARD_DRAINED : GPOOL__CARD_STATE__CARD_UP;
		card_set_text(&card->state_reason, drain && c->reason ? c->reason : "");
		orders_save_node(s->orders, idx);
	} else {
		if (node_set_drain(n, drain, c->reason) < 0) {
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
			return;
		}
		orders_save_node(s->orders, idx);
		if (drain)
			sched_publish_node(s, SEV_NODE_DRAINED, idx);
	}
	char which[32] = "";
	if (c->card >= 0)
		snprintf(which, sizeof(which), " card %d", c->card);
	gp_info("node %s%s %s by uid %u%s%s", n->name, which, drain ? "drained" : "resumed",
		(unsigned)r->from.uid, drain ? ": " : "",
		drain ? (c->reason ? c->reason : "") : "");
	s->plan_dirty = true;
	Gpool__NodeControlReply rep = GPOOL__NODE_CONTROL_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_NODE_CONTROL_REPLY;
	m.node_control_reply = &rep;
	req_reply(r, &m, true); /* answered once the drain is in the store */
}

void client_log_query(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__LogQuery *q = r->msg->log_query;
	struct job *j = jobs_get(s->jobs, q->job_id);
	struct job *old = NULL;
	if (!j)
		j = old = store_job_load(s->store, q->job_id);
	if (!j) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "job %llu not found",
				(unsigned long long)q->job_id);
		return;
	}
	if (!may_act(r, j)) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"job %llu belongs to %s: permission denied",
				(unsigned long long)j->id, j->user);
	} else {
		if (old)
			q->wait = false; /* a job read from the store is final */
		output_query(s, r, j, q);
	}
	job_free(old);
}

void client_watch(struct req *r)
{
	struct gsched *s = r->s;
	struct job *j = jobs_get(s->jobs, r->msg->watch->job_id);
	struct job *old = j ? NULL : store_job_load(s->store, r->msg->watch->job_id);
	if (!j)
		j = old;
	if (!j) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "job %llu not found",
				(unsigned long long)r->msg->watch->job_id);
		return;
	}
	Gpool__JobEvent ev = GPOOL__JOB_EVENT__INIT;
	ev.job_id = j->id;
	ev.state = j->state;
	ev.exit_code = j->exit_code;
	ev.attempt = j->attempt;
	ev.reason = j->end_reason ? j->end_reason : "";
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_JOB_EVENT;
	m.job_event = &ev;
	req_reply(r, &m, false);
	job_free(old);
}

/* A report an agent relays for a screening job: it comes over that node's own agent link, and
 * the job is a running screening job one of whose tasks there holds the card. 0 / -1 with why. */
static int check_relay(struct gsched *s, const struct req *r, int node, const Gpool__CardReport *c,
		       char *why, size_t len)
{
	struct job *j = jobs_get(s->jobs, c->job_id);
	if (r->node < 0 || r->node != node) {
		snprintf(why, len, "a screening result for node '%.64s' comes from its own agent",
			 c->node);
		return -1;
	}
	if (!j || !j->screen || !j->tasks) {
		snprintf(why, len, "job %llu is not a running screening job",
			 (unsigned long long)c->job_id);
		return -1;
	}
	for (uint32_t t = 0; t < j->ntasks; t++)
		if (j->tasks[t].node == node && c->card < 64 && (j->tasks[t].cards >> c->card & 1))
			return 0;
	snprintf(why, len, "job %llu was not given card %u of node %.64s",
		 (unsigned long long)c->job_id, c->card, c->node);
	return -1;
}

void client_card_report(struct req *r)
{
	struct gsched *s = r->s;
	Gpool__CardReport *c = r->msg->card_report;
	if (r->from.uid != 0 && r->from.uid != s->agent_uid) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"only root or the agents' account may grade cards");
		return;
	}
	static const char *const grades[] = {"good", "warn", "fail"};
	bool known = false;
	for (size_t i = 0; i < sizeof(grades) / sizeof(grades[0]); i++)
		known |= c->grade && strcmp(c->grade, grades[i]) == 0;
	if (!known || !(c->throughput >= 0) || c->throughput > 1e7) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"invalid card report (grade '%.16s')", c->grade ? c->grade : "");
		return;
	}
	int idx = nodes_find(s->nodes, c->node);
	struct node *n = nodes_get(s->nodes, idx);
	if (!n || c->card >= n->n_cards) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "no card %u on node '%.64s'",
				c->card, c->node);
		return;
	}
	char why[256];
	if (c->job_id && check_relay(s, r, idx, c, why, sizeof(why)) < 0) {
		gp_warn("screening result of job %llu for node %s card %u refused: %s",
			(unsigned long long)c->job_id, n->name, c->card, why);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION, "%s", why);
		return;
	}
	Gpool__Card *card = n->cards[c->card];
	if (card_set_text(&card->grade, c->grade) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	card->throughput = c->throughput;
	card->screen_job = c->job_id;
	if (!strcmp(c->grade, "fail")) {
		snprintf(why, sizeof(why), "screening failed: %s", c->reason ? c->reason : "");
		card_set_text(&card->state_reason, why);
		card->state = GPOOL__CARD_STATE__CARD_FAILED;
		gp_warn("node %s card %u failed screening: %s", n->name, c->card,
			c->reason ? c->reason : "");
	} else if (card->state == GPOOL__CARD_STATE__CARD_FAILED) {
		card->state = GPOOL__CARD_STATE__CARD_UP; /* screened again and passed */
		card_set_text(&card->state_reason, "");
	}
	if (c->job_id)
		gp_info("node %s card %u graded %s by screening job %llu", n->name, c->card,
			c->grade, (unsigned long long)c->job_id);
	orders_save_node(s->orders, idx);
	s->plan_dirty = true;
	Gpool__CardReportReply rep = GPOOL__CARD_REPORT_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_CARD_REPORT_REPLY;
	m.card_report_reply = &rep;
	req_reply(r, &m, true);
}
