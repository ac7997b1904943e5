/* service.c: service jobs and their replicas (see service.h). */
#include "scheduler/features/service.h"
#include "scheduler/core/events.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/cards.h"
#include "scheduler/features/files.h"
#include "scheduler/core/identity.h"
#include "scheduler/core/lifecycle.h"
#include "common/log.h"
#include "common/names.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/features/owner.h"
#include "common/parse.h"
#include "common/u64map.h"
#include "scheduler/store/store.h"
#include "scheduler/features/svcreport.h"
#include "common/util.h"

/* A service's replica set: slot i holds the id of replica i's job (0: none). A replica is
 * ranks_max tasks started together (a gang, ranks_max > 1), or one; with per_node it has a
 * rank on each of as many nodes as the pool has for it, from ranks_min up to ranks_max
 * (gsub -N MIN-MAX, one task a node), and is re-planned when that number changes. */
struct svc {
	uint32_t want;
	uint32_t ranks_min, ranks_max;
	bool per_node;
	uint32_t nslots;
	uint64_t *slot;
	char *health_path;
	char *route_hash; /* JobSpec.route_token_sha256 */
	bool keep_prefix; /* JobSpec.route_keep_prefix */
};

static void svc_free(struct svc *v)
{
	if (!v)
		return;
	free(v->slot);
	free(v->health_path);
	free(v->route_hash);
	free(v);
}

/* What services keep of jobs, by job id, beside the job table: nothing of it is in struct
 * job. */
struct services {
	gp_u64map_t *sets;     /* a service's id -> its replica set (struct svc) */
	gp_u64map_t *replicas; /* a replica's id -> struct svc_replica */
	uint64_t *ids;	       /* the active services (a short list: scanned every tick) */
	size_t n, cap;
	struct svc_replica scratch; /* out of memory: a replica's state is lost, not its job */
};

static struct services *services_create(void)
{
	struct services *v = calloc(1, sizeof(*v));
	if (!v || !(v->sets = gp_u64map_create()) || !(v->replicas = gp_u64map_create())) {
		if (v) {
			gp_u64map_destroy(&v->sets);
			free(v);
		}
		return NULL;
	}
	return v;
}

void services_destroy(struct services **p)
{
	if (!p || !*p)
		return;
	struct services *v = *p;
	size_t pos = 0;
	void *x;
	while ((x = gp_u64map_next(v->sets, &pos, NULL)))
		svc_free(x);
	pos = 0;
	while ((x = gp_u64map_next(v->replicas, &pos, NULL)))
		free(x);
	gp_u64map_destroy(&v->sets);
	gp_u64map_destroy(&v->replicas);
	free(v->ids);
	free(v);
	*p = NULL;
}

/* A service's replica set (NULL: j is no service). */
static struct svc *set_of(struct gsched *s, const struct job *j)
{
	return s->services ? gp_u64map_get(s->services->sets, j->id) : NULL;
}

static int set_put(struct gsched *s, uint64_t id, struct svc *v)
{
	if (!s->services || !v || gp_u64map_put(s->services->sets, id, v) < 0) {
		svc_free(v);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* Replica j's state, made on first use. */
static struct svc_replica *replica_of(struct gsched *s, const struct job *j)
{
	struct services *v = s->services;
	struct svc_replica *r = v ? gp_u64map_get(v->replicas, j->id) : NULL;
	if (r)
		return r;
	if (v && (r = calloc(1, sizeof(*r)))) {
		if (gp_u64map_put(v->replicas, j->id, r) == 0)
			return r;
		free(r);
	}
	static struct svc_replica none; /* no tables (services not subscribed) */
	struct svc_replica *scratch = v ? &v->scratch : &none;
	if (v)
		gp_err("replica job %llu: out of memory for its state", (unsigned long long)j->id);
	memset(scratch, 0, sizeof(*scratch));
	return scratch;
}

struct svc_replica *service_replica(struct gsched *s, const struct job *j)
{
	return j->svc_of ? replica_of(s, j) : NULL;
}

bool service_is(struct gsched *s, const struct job *j)
{
	return set_of(s, j) != NULL;
}

static size_t nservices(const struct gsched *s)
{
	return s->services ? s->services->n : 0;
}

static void reg_del(struct gsched *s, uint64_t id);

/* Forget what services kept of job id (its job is gone from memory). */
static void forget(struct gsched *s, uint64_t id)
{
	struct services *v = s->services;
	void *x;
	if (!v)
		return;
	reg_del(s, id);
	if ((x = gp_u64map_get(v->sets, id))) {
		gp_u64map_del(v->sets, id);
		svc_free(x);
	}
	if ((x = gp_u64map_get(v->replicas, id))) {
		gp_u64map_del(v->replicas, id);
		free(x);
	}
}

bool service_name_idlike(const char *name)
{
	if (!name || name[0] < '0' || name[0] > '9')
		return false;
	return strspn(name, "0123456789_.[]-,") == strlen(name);
}

const char *service_name_of(const Gpool__JobSpec *sp)
{
	if (sp->name && sp->name[0])
		return sp->name;
	return sp->n_argv ? sp->argv[0] : "";
}

/* The oldest active service named name (NULL: none): its owner holds the name. */
static struct job *name_holder(struct gsched *s, const char *name)
{
	struct job *best = NULL;
	for (size_t k = 0; s->services && k < s->services->n; k++) {
		struct job *svc = jobs_get(s->jobs, s->services->ids[k]);
		if (svc && set_of(s, svc) && svc->state == GPOOL__JOB_STATE__RUNNING && svc->name &&
		    strcmp(svc->name, name) == 0 && (!best || svc->id < best->id))
			best = svc;
	}
	return best;
}

int service_name_check(struct gsched *s, const Gpool__JobSpec *sp, uint32_t uid, char *why,
		       size_t len)
{
	const char *name = service_name_of(sp);
	if (service_name_idlike(name)) {
		snprintf(why, len,
			 "service name '%.64s' reads as a job id (use a name with a letter)", name);
		errno = EINVAL;
		return -1;
	}
	struct job *holder = name_holder(s, name);
	if (holder && holder->uid != uid) {
		snprintf(why, len, "service name '%.64s' belongs to another user", name);
		errno = EPERM;
		return -1;
	}
	return 0;
}

int service_admit(struct gsched *s, struct admission *a)
{
	if (!a->sp->service || service_name_check(s, a->sp, a->uid, a->why, sizeof(a->why)) == 0)
		return 0;
	a->code =
	    errno == EPERM ? GPOOL__ERROR_CODE__ERROR_PERMISSION : GPOOL__ERROR_CODE__ERROR_INVALID;
	return -1;
}

static struct svc *svc_new(const Gpool__JobSpec *sp)
{
	struct svc *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->want = sp->replicas ? sp->replicas : 1;
	v->ranks_max = sp->ntasks ? sp->ntasks : 1;
	v->ranks_min = v->ranks_max;
	if (sp->nodes_max > sp->nodes_min && sp->nodes_min >= 1 && v->ranks_max == sp->nodes_max) {
		v->per_node = true;
		v->ranks_min = sp->nodes_min;
	}
	v->health_path = strdup(sp->health_path ? sp->health_path : "");
	v->route_hash = strdup(sp->route_token_sha256 ? sp->route_token_sha256 : "");
	v->keep_prefix = sp->route_keep_prefix;
	if (!v->health_path || !v->route_hash) {
		free(v->health_path);
		free(v->route_hash);
		free(v);
		return NULL;
	}
	return v;
}

static int svc_grow(struct svc *v, uint32_t n)
{
	if (n <= v->nslots)
		return 0;
	uint64_t *ns = realloc(v->slot, n * sizeof(*ns));
	if (!ns)
		return -1;
	memset(ns + v->nslots, 0, (n - v->nslots) * sizeof(*ns));
	v->slot = ns;
	v->nslots = n;
	return 0;
}

/* The services gschedd knows, by id (a short list: scanned every tick). */
static int reg_add(struct gsched *s, uint64_t id)
{
	struct services *v = s->services;
	if (!v)
		return -1;
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 16;
		uint64_t *n = realloc(v->ids, nc * sizeof(*n));
		if (!n)
			return -1;
		v->ids = n;
		v->cap = nc;
	}
	v->ids[v->n++] = id;
	return 0;
}

static void reg_del(struct gsched *s, uint64_t id)
{
	struct services *v = s->services;
	for (size_t i = 0; v && i < v->n; i++)
		if (v->ids[i] == id) {
			v->ids[i] = v->ids[--v->n];
			return;
		}
}

int service_submitted(struct gsched *s, struct job *j, const Gpool__JobSpec *sp)
{
	if (set_put(s, j->id, svc_new(sp)) < 0)
		return -1;
	if (reg_add(s, j->id) < 0) {
		forget(s, j->id);
		errno = ENOMEM;
		return -1;
	}
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->start_time = j->submit_time;
	j->ntasks = 0;
	j->nodes_min = j->nodes_max = 0; /* the replicas' tasks: the service runs none */
	return 0;
}

/* Whether two messages pack to the same bytes (allocation failure: false). */
static bool packs_same(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la = protobuf_c_message_get_packed_size(a);
	if (la != protobuf_c_message_get_packed_size(b))
		return false;
	uint8_t *ba = malloc(la ? la : 1), *bb = malloc(la ? la : 1);
	bool same = ba && bb;
	if (same) {
		protobuf_c_message_pack(a, ba);
		protobuf_c_message_pack(b, bb);
		same = memcmp(ba, bb, la) == 0;
	}
	free(ba);
	free(bb);
	return same;
}

bool service_spec_stale(const Gpool__JobSpec *svc, const Gpool__JobSpec *rep)
{
	if (svc->n_argv != rep->n_argv || svc->script.len != rep->script.len ||
	    svc->n_stage != rep->n_stage)
		return true;
	for (size_t i = 0; i < svc->n_argv; i++)
		if (strcmp(svc->argv[i], rep->argv[i]) != 0)
			return true;
	if (svc->script.len && memcmp(svc->script.data, rep->script.data, svc->script.len) != 0)
		return true;
	for (size_t i = 0; i < svc->n_stage; i++)
		if (!packs_same(&svc->stage[i]->base, &rep->stage[i]->base))
			return true;
	return false;
}

bool service_loaded(struct gsched *s, struct job *j, const Gpool__JobSpec *sp)
{
	if (!sp || !sp->service)
		return false;
	if (sp->service_of) {
		j->svc_of = sp->service_of;
		j->svc_index = sp->replica_index;
		struct job *svc = jobs_get(s->jobs, sp->service_of);
		if (svc && set_of(s, svc) && svc_grow(set_of(s, svc), j->svc_index + 1) == 0)
			set_of(s, svc)->slot[j->svc_index] = j->id;
		/* a rolling update that was under way (or a replica draining before its
		 * replacement) goes on: the replica's spec is not yet the service's */
		Gpool__JobSpec *ssp =
		    gp_job_state_final(j->state) ? NULL : store_job_spec(s->store, sp->service_of);
		if (ssp) {
			replica_of(s, j)->stale = service_spec_stale(ssp, sp);
			gpool__job_spec__free_unpacked(ssp, NULL);
		}
		return false; /* an ordinary job otherwise: restored or queued */
	}
	if (j->state != GPOOL__JOB_STATE__RUNNING)
		return false;
	int rc = set_put(s, j->id, svc_new(sp));
	j->ntasks = 0;
	j->nodes_min = j->nodes_max = 0;
	free(j->placement_text);
	j->placement_text = NULL;
	if (rc < 0 || reg_add(s, j->id) < 0)
		gp_err("service %llu: out of memory restoring it", (unsigned long long)j->id);
	return true;
}

static char **copy_list(char **v, size_t n)
{
	if (!n)
		return NULL;
	char **c = calloc(n, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			gp_strv_free(c, (int)i);
			return NULL;
		}
	return c;
}

/* Whether one rank of replica j (which may hold ranks now) could run on node n (index idx)
 * now: n takes new jobs, runs j's account, and has the rank's CPUs, memory and cards free
 * (cards that serve its request), or holds one of j's ranks. What placement checks besides
 * (one card model for all ranks without --gpu-mixed, CPUs in one block) it does not. */
static bool rank_fits(const struct node *n, int idx, const struct job *j)
{
	if (!node_usable(n) || !identity_node_fits(n, j->uid, j->user))
		return false;
	for (uint32_t t = 0; j->tasks && t < j->ntasks; t++)
		if (j->tasks[t].node == idx && j->tasks[t].state != 2)
			return true;
	if (n->cpus < n->cpus_used + j->cpus_per_task || n->mem_mb < n->mem_used_mb + j->mem_mb)
		return false;
	const struct gpu_req *gpu = j->gpu;
	if (gpu && gpu->per_task && !gpu->optional && !gpu->share) {
		uint64_t all = n->n_cards >= 64 ? ~0ULL : (1ULL << n->n_cards) - 1;
		uint64_t serving = cards_serving(gpu, n, all & ~n->card_busy, NULL);
		if ((uint32_t)__builtin_popcountll(serving) < gpu->per_task)
			return false;
	}
	return true;
}

static bool listed(char **names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* How many ranks a replica of v (its rank's needs in j, which may hold ranks now) gets: a
 * rank on each node that could take one, ranks_min at the least (it waits for them then),
 * ranks_max at the most; a replica that is not per_node always ranks_max. */
static uint32_t gang_size(struct gsched *s, const struct svc *v, const struct job *j)
{
	if (!v->per_node)
		return v->ranks_max;
	uint32_t k = 0;
	for (int i = 0; i < nodes_count(s->nodes) && k < v->ranks_max; i++) {
		struct node *n = nodes_get(s->nodes, i);
		if (!n || (j->n_nodelist && !listed(j->nodelist, j->n_nodelist, n->name)) ||
		    listed(j->exclude, j->n_exclude, n->name))
			continue;
		if (rank_fits(n, i, j))
			k++;
	}
	return k < v->ranks_min ? v->ranks_min : k;
}

/* Pending replica j of v gets k ranks, one a node (its stored spec too, which a restart of
 * gschedd reads). 0 / -1 (it keeps its count). */
static int gang_resize(struct gsched *s, const struct svc *v, struct job *j, uint32_t k)
{
	if (!v->per_node || j->tasks || j->ntasks == k)
		return 0;
	Gpool__JobSpec *sp = store_job_spec(s->store, j->id);
	if (!sp)
		return -1;
	sp->ntasks = sp->nodes_min = sp->nodes_max = k;
	size_t plen = gpool__job_spec__get_packed_size(sp);
	uint8_t *buf = malloc(plen ? plen : 1);
	int rc = -1;
	if (buf) {
		gpool__job_spec__pack(sp, buf);
		rc = store_job_spec_update(s->store, j->id, buf, plen);
	}
	free(buf);
	gpool__job_spec__free_unpacked(sp, NULL);
	if (rc < 0)
		return -1;
	gp_info("service %llu: replica %u (job %llu) re-planned from %u to %u ranks",
		(unsigned long long)j->svc_of, j->svc_index, (unsigned long long)j->id, j->ntasks,
		k);
	j->ntasks = j->nodes_min = j->nodes_max = k;
	s->plan_dirty = true;
	return 0;
}

/* A new job for replica `index` of svc: the service's spec (one task, or a gang of ranks), in
 * the open transaction (placed once it is on disk). */
static struct job *spawn(struct gsched *s, struct job *svc, uint32_t index)
{
	Gpool__JobSpec *sp = store_job_spec(s->store, svc->id);
	if (!sp)
		return NULL;
	char name[256];
	snprintf(name, sizeof(name), "%s.%u", svc->name ? svc->name : "service", index);
	struct svc *v = set_of(s, svc);
	if (!sp->ntasks)
		sp->ntasks = 1;
	if (sp->ntasks == 1)
		sp->nodes_min = sp->nodes_max = 0;
	sp->replicas = 1;
	sp->service_of = svc->id;
	sp->replica_index = index;
	sp->time_limit_sec = 0;
	char *oldname = sp->name;
	sp->name = name;
	size_t len = 0;
	uint8_t *buf = NULL;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		goto fail;
	char why[64];
	int bad;
	j->gpu = gpu_req_from_spec(sp, why, sizeof(why), &bad);
	j->id = jobs_next_id(s->jobs);
	j->uid = svc->uid;
	j->gid = svc->gid;
	j->user = strdup(svc->user);
	j->name = strdup(name);
	j->out_pattern = strdup(sp->output);
	j->err_pattern = strdup(sp->error);
	j->state = GPOOL__JOB_STATE__PENDING;
	j->priority = svc->priority;
	j->reason = PEND_NONE;
	j->submit_time = gp_now();
	j->cpus_per_task = sp->cpus_per_task ? sp->cpus_per_task : 1;
	j->mem_mb = sp->mem_per_node_mb;
	j->nodelist = copy_list(sp->nodelist, sp->n_nodelist);
	j->n_nodelist = j->nodelist ? (int)sp->n_nodelist : 0;
	j->exclude = copy_list(sp->exclude, sp->n_exclude);
	j->n_exclude = j->exclude ? (int)sp->n_exclude : 0;
	if (v && v->per_node) /* as many ranks as nodes can take one now */
		sp->ntasks = sp->nodes_min = sp->nodes_max = gang_size(s, v, j);
	j->ntasks = sp->ntasks;
	j->nodes_min = sp->nodes_min;
	j->nodes_max = sp->nodes_max ? sp->nodes_max : sp->nodes_min;
	len = gpool__job_spec__get_packed_size(sp);
	if (!(buf = malloc(len ? len : 1)))
		goto fail;
	gpool__job_spec__pack(sp, buf);
	j->svc_of = svc->id;
	j->svc_index = index;
	j->qpos = SIZE_MAX;
	if (!j->user || !j->name || !j->out_pattern || !j->err_pattern)
		goto fail;
	if (jobs_add(s->jobs, j) < 0)
		goto fail;
	if (orders_insert_job(s->orders, j->id, buf, len) < 0) {
		jobs_forget(s->jobs, j);
		j = NULL;
		goto fail;
	}
	sp->name = oldname;
	gpool__job_spec__free_unpacked(sp, NULL);
	free(buf);
	s->submitted++;
	gp_info("service %llu: replica %u is job %llu", (unsigned long long)svc->id, index,
		(unsigned long long)j->id);
	return j;
fail:
	sp->name = oldname;
	gpool__job_spec__free_unpacked(sp, NULL);
	free(buf);
	job_free(j);
	return NULL;
}

static bool live(const struct job *j)
{
	return j && !gp_job_state_final(j->state);
}

static void roll(struct gsched *s, struct job *svc);
static bool replica_ready(struct gsched *s, const struct job *j);
static int set_spec(struct gsched *s, uint64_t id, char **argv, size_t n, Gpool__StageEntry **stage,
		    size_t nstage);

/* Stop one replica for good. */
static void stop_replica(struct gsched *s, struct job *j, const char *why)
{
	replica_of(s, j)->end = SVC_STOP;
	if (j->state == GPOOL__JOB_STATE__PENDING)
		job_end_pending(s, j, GPOOL__JOB_STATE__CANCELLED, why);
	else
		job_kill(s, j, GPOOL__JOB_STATE__CANCELLED, SIGTERM, why);
}

/* Replica j's stored spec takes its service's command and staged files: it is no longer
 * stale. 0 / -1 (it stays stale). */
static int renew(struct gsched *s, struct job *svc, struct job *j)
{
	Gpool__JobSpec *sp = store_job_spec(s->store, svc->id);
	if (!sp)
		return -1;
	int rc = set_spec(s, j->id, sp->argv, sp->n_argv, sp->stage, sp->n_stage);
	gpool__job_spec__free_unpacked(sp, NULL);
	replica_of(s, j)->stale = rc < 0;
	return rc;
}

/* The rolling update's replacement of j, once drained: its new spec, then stopped and
 * restarted at once. */
static void replace_now(struct gsched *s, struct job *svc, struct job *j)
{
	if (renew(s, svc, j) < 0)
		return; /* still stale: tried again at the next roll */
	replica_of(s, j)->end = SVC_MOVE;
	gp_info("service %llu: rolling update replaces replica %u (job %llu)",
		(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id);
	job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGTERM, "rolling update");
}

/* j's node was drained: it moves (requeued at once, placed elsewhere). */
static void evict_now(struct gsched *s, struct job *svc, struct job *j)
{
	(void)svc;
	replica_of(s, j)->end = SVC_MOVE;
	job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGTERM, "its node was drained");
}

/* j runs on fewer ranks than it wants and the pool has nodes for more again: it restarts on
 * them (requeued at once; gang_size counts the ranks anew). */
static void grow_now(struct gsched *s, struct job *svc, struct job *j)
{
	(void)svc;
	replica_of(s, j)->end = SVC_MOVE;
	job_kill(s, j, GPOOL__JOB_STATE__NODE_FAIL, SIGTERM, "re-planned onto more nodes");
}

static void scaled_away_now(struct gsched *s, struct job *svc, struct job *j)
{
	(void)svc;
	stop_replica(s, j, "service scaled down");
}

/* How a leaving replica ends (leave()'s then), at once or when its drain is over. */
static const struct {
	const char *after; /* the log's "draining ... before it <after>" */
	void (*now)(struct gsched *s, struct job *svc, struct job *j);
} leaving[] = {
    [SVC_STOP] = {"stops", scaled_away_now},
    [SVC_MOVE] = {"is replaced", replace_now},
    [SVC_EVICT] = {"moves off its drained node", evict_now},
    [SVC_GROW] = {"is re-planned onto more nodes", grow_now},
};

/* j leaves (then: SVC_STOP scaled away, SVC_MOVE replaced by a rolling update, SVC_EVICT
 * moved off its drained node, SVC_GROW re-planned onto more nodes). A running
 * replica drains first: the gateways see it draining, send it nothing new and let its
 * requests finish; service_tick ends it service_drain later. */
static void leave(struct gsched *s, struct job *svc, struct job *j, enum svc_end then)
{
	if (replica_of(s, j)->drain_ms)
		return;
	if (j->state != GPOOL__JOB_STATE__RUNNING || s->service_drain_ms <= 0) {
		leaving[then].now(s, svc, j);
		return;
	}
	replica_of(s, j)->drain_end = (uint8_t)then;
	replica_of(s, j)->drain_from_ms = gp_mono_ms();
	replica_of(s, j)->drain_ms = replica_of(s, j)->drain_from_ms + s->service_drain_ms;
	gp_info("service %llu: replica %u (job %llu) draining for %lld ms before it %s",
		(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id,
		(long long)s->service_drain_ms, leaving[then].after);
}

/* A drained replica whose time has come ends as its leave() said (one already ending for
 * another reason is left to service_replica_ended): service_drain after its drain began, and
 * once no gateway reports a request in flight there, or service_drain_max after it began. */
static void drained(struct gsched *s, struct job *svc, struct job *j, int64_t now)
{
	if (!replica_of(s, j)->drain_ms || now < replica_of(s, j)->drain_ms ||
	    j->state != GPOOL__JOB_STATE__RUNNING)
		return;
	uint32_t restarts = j->attempt > 1 ? j->attempt - 1 : 0;
	bool idle =
	    svcrep_drained(s->svcrep, j->id, restarts, replica_of(s, j)->drain_from_ms, now);
	if (!idle && now < replica_of(s, j)->drain_from_ms + s->service_drain_max_ms)
		return; /* a gateway still has requests there */
	gp_info("service %llu: replica %u (job %llu) drained after %lld ms%s",
		(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id,
		(long long)(now - replica_of(s, j)->drain_from_ms),
		idle ? "" : " (service_drain_max: gateways still had requests there)");
	uint8_t then = replica_of(s, j)->drain_end;
	replica_of(s, j)->drain_ms = 0;
	struct node *n = j->tasks ? nodes_get(s->nodes, j->tasks[0].node) : NULL;
	if (then == SVC_EVICT && n && node_usable(n)) {
		gp_info("service %llu: replica %u (job %llu) stays: its node was resumed",
			(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id);
		return;
	}
	if (then == SVC_MOVE && j->svc_index >= set_of(s, svc)->want)
		return; /* scaled away meanwhile: service_tick stops it */
	if (then == SVC_GROW && gang_size(s, set_of(s, svc), j) <= j->ntasks) {
		gp_info(
		    "service %llu: replica %u (job %llu) stays on %u ranks: the nodes went again",
		    (unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id,
		    j->ntasks);
		return;
	}
	leaving[then].now(s, svc, j);
}

/* A replica on fewer ranks than it wants: pending, it takes the nodes there are now; running
 * and settled, it drains and restarts on more when more nodes could take a rank. */
static void regrow(struct gsched *s, struct job *svc, struct job *j)
{
	struct svc *v = set_of(s, svc);
	if (!v->per_node || j->ntasks >= v->ranks_max)
		return;
	if (j->state == GPOOL__JOB_STATE__PENDING) {
		uint32_t k = gang_size(s, v, j);
		if (k > j->ntasks)
			gang_resize(s, v, j, k);
		return;
	}
	if (!replica_ready(s, j) || gp_now() - j->start_time < SVC_ROLL_SETTLE_SEC ||
	    replica_of(s, j)->drain_ms || gang_size(s, v, j) <= j->ntasks)
		return;
	gp_info("service %llu: replica %u (job %llu) runs %u of %u ranks and %u nodes could take "
		"one: re-planning it",
		(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id, j->ntasks,
		v->ranks_max, gang_size(s, v, j));
	leave(s, svc, j, SVC_GROW);
}

void service_tick(struct gsched *s)
{
	int64_t now = gp_mono_ms();
	for (size_t k = 0; k < nservices(s); k++) {
		struct job *svc = jobs_get(s->jobs, s->services->ids[k]);
		if (!svc || !set_of(s, svc) || svc->state != GPOOL__JOB_STATE__RUNNING)
			continue;
		if (!svc->durable || svc->in_txn)
			continue; /* its own submission first */
		struct svc *v = set_of(s, svc);
		if (svc_grow(v, v->want) < 0)
			continue;
		for (uint32_t i = 0; i < v->nslots; i++) {
			struct job *j = v->slot[i] ? jobs_get(s->jobs, v->slot[i]) : NULL;
			if (!live(j)) {
				v->slot[i] = 0;
				if (i < v->want && (j = spawn(s, svc, i)))
					v->slot[i] = j->id;
				continue;
			}
			if (i >= v->want && replica_of(s, j)->end != SVC_STOP &&
			    (!replica_of(s, j)->drain_ms ||
			     replica_of(s, j)->drain_end != SVC_STOP)) {
				replica_of(s, j)->drain_ms =
				    0; /* a replacement's drain becomes a stop's */
				leave(s, svc, j, SVC_STOP);
			}
			/* scaled up again before it stopped: it stays */
			if (i < v->want && replica_of(s, j)->drain_ms &&
			    replica_of(s, j)->drain_end == SVC_STOP)
				replica_of(s, j)->drain_ms = 0;
			drained(s, svc, j, now);
			/* stale and not started (restored so, or requeued): the new spec at once */
			if (replica_of(s, j)->stale && j->state == GPOOL__JOB_STATE__PENDING)
				renew(s, svc, j);
			if (j->state == GPOOL__JOB_STATE__PENDING && j->not_before_ms &&
			    now >= j->not_before_ms) {
				j->not_before_ms = 0;
				s->plan_dirty = true;
			}
			if (i < v->want)
				regrow(s, svc, j);
		}
		roll(s, svc);
	}
}

bool service_replica_ended(struct gsched *s, struct job *j, int32_t exit_code)
{
	struct job *svc = jobs_get(s->jobs, j->svc_of);
	bool keep = svc && set_of(s, svc) && svc->state == GPOOL__JOB_STATE__RUNNING &&
		    j->svc_index < set_of(s, svc)->want && replica_of(s, j)->end != SVC_STOP;
	if (!keep)
		return false;
	/* it ended while draining: a replacement's drain becomes a restart on the new spec */
	if (replica_of(s, j)->drain_ms && replica_of(s, j)->drain_end == SVC_MOVE)
		replica_of(s, j)->stale = true;
	replica_of(s, j)->drain_ms = 0;
	char why[160];
	int64_t delay = 0;
	if (replica_of(s, j)->end == SVC_MOVE) {
		snprintf(why, sizeof(why), "%s",
			 !j->end_reason				    ? "moved off a drained node"
			 : !strcmp(j->end_reason, "rolling update") ? "replaced by a rolling update"
			 : !strcmp(j->end_reason, "re-planned onto more nodes")
			     ? "re-planned onto more nodes"
			     : "moved off a drained node");
	} else if (j->vacated) {
		/* its PC's owner came back (a gang's rank is vacated, never frozen): elsewhere at
		 * once, not counted as a failure */
		snprintf(why, sizeof(why), "%s",
			 j->end_reason ? j->end_reason : "vacated: its PC's owner came back");
		j->vacates++;
		owner_job_vacated(s, j);
	} else if (j->kill_reason == GPOOL__JOB_STATE__NODE_FAIL) {
		snprintf(why, sizeof(why), "%s", j->end_reason ? j->end_reason : "its node failed");
	} else {
		double ran = gp_now() - j->start_time;
		replica_of(s, j)->quick_fails =
		    ran < SVC_QUICK_SEC ? replica_of(s, j)->quick_fails + 1 : 0;
		delay = SVC_BACKOFF_FIRST_MS;
		for (uint32_t i = 1;
		     i < replica_of(s, j)->quick_fails && delay < SVC_BACKOFF_MAX_MS; i++)
			delay *= 2;
		if (delay > SVC_BACKOFF_MAX_MS)
			delay = SVC_BACKOFF_MAX_MS;
		const char *loop =
		    replica_of(s, j)->quick_fails >= SVC_CRASH_LOOP ? " (crash loop)" : "";
		if (j->ntasks > 1 && j->end_reason && strncmp(j->end_reason, "rank ", 5) == 0)
			/* a gang: which rank ended it (the others were stopped) */
			snprintf(why, sizeof(why), "%.100s after %.1f s%s", j->end_reason, ran,
				 loop);
		else
			snprintf(why, sizeof(why), "%s with code %d after %.1f s%s",
				 j->kill_reason == GPOOL__JOB_STATE__TIMEOUT ? "timed out"
									     : "exited",
				 exit_code, ran, loop);
	}
	free(j->end_reason);
	j->end_reason = strdup(why);
	replica_of(s, j)->end = SVC_RESTART;
	j->port = 0;
	replica_of(s, j)->port_state = GPOOL__PORT_STATE__PORT_UNCHECKED;
	j->not_before_ms = delay ? gp_mono_ms() + delay : 0;
	gp_info("service %llu replica %u (job %llu): %s; restarting in %lld ms",
		(unsigned long long)svc->id, j->svc_index, (unsigned long long)j->id, why,
		(long long)delay);
	job_requeue(s, j);
	/* a gang takes the nodes the pool has now: fewer when one went, more when it is back */
	if (set_of(s, svc)->per_node &&
	    gang_resize(s, set_of(s, svc), j, gang_size(s, set_of(s, svc), j)) == 0)
		job_save(s, j);
	if (replica_of(s, j)->stale)
		renew(s, svc, j); /* pending now: it starts on the new spec */
	return true;
}

void service_cancel(struct gsched *s, struct job *svc, const char *why)
{
	struct svc *v = set_of(s, svc);
	for (uint32_t i = 0; i < v->nslots; i++) {
		struct job *j = v->slot[i] ? jobs_get(s->jobs, v->slot[i]) : NULL;
		if (live(j))
			stop_replica(s, j, why);
	}
	svc->state = GPOOL__JOB_STATE__CANCELLED;
	svc->end_time = gp_now();
	free(svc->end_reason);
	svc->end_reason = why ? strdup(why) : NULL;
	reg_del(s, svc->id);
	s->completed++;
	job_save(s, svc);
	output_job_changed(s, svc);
}

int service_scale(struct gsched *s, struct job *svc, int32_t n, char *text, size_t len)
{
	if (!set_of(s, svc)) {
		snprintf(text, len, "not a service");
		return -1;
	}
	if (n < 0 || n > SVC_MAX_REPLICAS) {
		snprintf(text, len, "replicas %d out of range 0..%d", n, SVC_MAX_REPLICAS);
		return -1;
	}
	Gpool__JobSpec *sp = store_job_spec(s->store, svc->id);
	if (!sp) {
		snprintf(text, len, "its spec is missing from the store");
		return -1;
	}
	sp->replicas = (uint32_t)n;
	size_t plen = gpool__job_spec__get_packed_size(sp);
	uint8_t *buf = malloc(plen ? plen : 1);
	int rc = -1;
	if (buf) {
		gpool__job_spec__pack(sp, buf);
		rc = store_job_spec_update(s->store, svc->id, buf, plen);
	}
	free(buf);
	gpool__job_spec__free_unpacked(sp, NULL);
	if (rc < 0) {
		snprintf(text, len, "cannot save the new count: %s", strerror(errno));
		return -1;
	}
	gp_info("service %llu scaled from %u to %d replicas", (unsigned long long)svc->id,
		set_of(s, svc)->want, n);
	set_of(s, svc)->want = (uint32_t)n;
	job_save(s, svc); /* the reply waits for the commit */
	service_tick(s);
	return 0;
}

/* Job id's stored spec with a new command (argv, n; n == 0: kept; a script is dropped) and a
 * new set of staged files (stage, nstage; nstage == 0: kept). 0 / -1. */
static int set_spec(struct gsched *s, uint64_t id, char **argv, size_t n, Gpool__StageEntry **stage,
		    size_t nstage)
{
	Gpool__JobSpec *sp = store_job_spec(s->store, id);
	if (!sp)
		return -1;
	char **old = sp->argv;
	size_t oldn = sp->n_argv;
	ProtobufCBinaryData oldscript = sp->script;
	Gpool__StageEntry **oldstage = sp->stage;
	size_t oldnstage = sp->n_stage;
	if (n) {
		sp->argv = argv;
		sp->n_argv = n;
		sp->script.len = 0;
	}
	if (nstage) {
		sp->stage = stage;
		sp->n_stage = nstage;
	}
	size_t plen = gpool__job_spec__get_packed_size(sp);
	uint8_t *buf = malloc(plen ? plen : 1);
	int rc = -1;
	if (buf) {
		gpool__job_spec__pack(sp, buf);
		rc = store_job_spec_update(s->store, id, buf, plen);
	}
	free(buf);
	sp->argv = old;
	sp->n_argv = oldn;
	sp->script = oldscript;
	sp->stage = oldstage;
	sp->n_stage = oldnstage;
	gpool__job_spec__free_unpacked(sp, NULL);
	return rc;
}

int service_update(struct gsched *s, struct job *svc, char **argv, size_t n,
		   Gpool__StageEntry **stage, size_t nstage, char *text, size_t len)
{
	if (!set_of(s, svc)) {
		snprintf(text, len, "not a service");
		return -1;
	}
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += strlen(argv[i]) + 1;
	if ((!n && !nstage) || (n && !argv[0][0]) || total > 65536) {
		snprintf(text, len, "no new command or files given (or a command over 64 KiB)");
		return -1;
	}
	if (nstage) {
		Gpool__JobSpec check = GPOOL__JOB_SPEC__INIT;
		check.stage = stage;
		check.n_stage = nstage;
		if (files_check_spec(s, &check, text, len) < 0)
			return -1;
	}
	if (set_spec(s, svc->id, argv, n, stage, nstage) < 0) {
		snprintf(text, len, "cannot save the new spec: %s", strerror(errno));
		return -1;
	}
	struct svc *v = set_of(s, svc);
	uint32_t stale = 0;
	for (uint32_t i = 0; i < v->nslots; i++) {
		struct job *j = v->slot[i] ? jobs_get(s->jobs, v->slot[i]) : NULL;
		if (!live(j) || replica_of(s, j)->end == SVC_STOP)
			continue;
		/* a pending one starts with the new spec: it changes now */
		if (j->state == GPOOL__JOB_STATE__PENDING) {
			set_spec(s, j->id, argv, n, stage, nstage);
		} else {
			replica_of(s, j)->stale = true;
			stale++;
		}
	}
	gp_info("service %llu: new %s%s%s, %u running replicas to replace one by one",
		(unsigned long long)svc->id, n ? "command '" : "", n ? argv[0] : "",
		n && nstage ? "' and files"
		: n	    ? "'"
			    : "files",
		stale);
	job_save(s, svc); /* the reply waits for the commit */
	return 0;
}

void service_port_seen(struct gsched *s, struct job *j, const Gpool__HeldTask *h)
{
	uint8_t st = h->port_state <= GPOOL__PORT_STATE__PORT_FOREIGN
			 ? (uint8_t)h->port_state
			 : GPOOL__PORT_STATE__PORT_UNCHECKED;
	bool same_holder = replica_of(s, j)->port_holder_pid == h->port_holder_pid &&
			   replica_of(s, j)->port_holder_uid == h->port_holder_uid;
	if (st == replica_of(s, j)->port_state &&
	    (st != GPOOL__PORT_STATE__PORT_FOREIGN || same_holder))
		return;
	replica_of(s, j)->port_state = st;
	replica_of(s, j)->port_holder_pid =
	    st == GPOOL__PORT_STATE__PORT_FOREIGN ? h->port_holder_pid : 0;
	replica_of(s, j)->port_holder_uid =
	    st == GPOOL__PORT_STATE__PORT_FOREIGN ? h->port_holder_uid : 0;
	char why[160];
	if (st == GPOOL__PORT_STATE__PORT_FOREIGN)
		gp_warn("replica job %llu on %s: %s", (unsigned long long)j->id,
			nodes_name(s->nodes, j->tasks ? j->tasks[0].node : -1),
			service_port_problem(s, j, why, sizeof(why)));
	else
		gp_debug("replica job %llu: port %u %s", (unsigned long long)j->id, j->port,
			 st == GPOOL__PORT_STATE__PORT_OWN ? "is its own" : "not listened on");
}

const char *service_port_problem(struct gsched *s, const struct job *j, char *buf, size_t len)
{
	switch (replica_of(s, j)->port_state) {
	case GPOOL__PORT_STATE__PORT_OWN:
		return NULL;
	case GPOOL__PORT_STATE__PORT_CLOSED:
		snprintf(buf, len, "nothing listens on port %u yet", j->port);
		break;
	case GPOOL__PORT_STATE__PORT_FOREIGN:
		if (replica_of(s, j)->port_holder_pid)
			snprintf(
			    buf, len,
			    "port %u is held by pid %d (uid %u), a process outside the replica",
			    j->port, (int)replica_of(s, j)->port_holder_pid,
			    (unsigned)replica_of(s, j)->port_holder_uid);
		else
			snprintf(buf, len, "port %u is held by a process outside the replica",
				 j->port);
		break;
	default:
		snprintf(buf, len, "port %u not checked by its agent yet", j->port);
		break;
	}
	return buf;
}

static bool replica_ready(struct gsched *s, const struct job *j)
{
	if (!j || j->state != GPOOL__JOB_STATE__RUNNING || !j->tasks || !j->port ||
	    j->tasks[0].state != 1 || replica_of(s, j)->drain_ms ||
	    replica_of(s, j)->port_state != GPOOL__PORT_STATE__PORT_OWN)
		return false;
	struct node *n = nodes_get(s->nodes, j->tasks[0].node);
	return n && node_usable(n);
}

/* Rolling update: when every wanted replica is ready, replace the first stale one. */
static void roll(struct gsched *s, struct job *svc)
{
	struct svc *v = set_of(s, svc);
	struct job *next = NULL;
	for (uint32_t i = 0; i < v->nslots && i < v->want; i++) {
		struct job *j = v->slot[i] ? jobs_get(s->jobs, v->slot[i]) : NULL;
		/* one (re)starting, or started too recently for a gateway's health checks to have
		 * admitted it: wait */
		if (!replica_ready(s, j) || gp_now() - j->start_time < SVC_ROLL_SETTLE_SEC)
			return;
		if (replica_of(s, j)->stale && !next)
			next = j;
	}
	if (!next)
		return;
	replica_of(s, next)->stale = false;
	leave(s, svc, next, SVC_MOVE);
}

static bool has_rank_on(const struct job *j, int node)
{
	for (uint32_t t = 0; j->tasks && t < j->ntasks; t++)
		if (j->tasks[t].node == node && j->tasks[t].state != 2)
			return true;
	return false;
}

void service_node_drained(struct gsched *s, int node)
{
	for (size_t k = 0; k < nservices(s); k++) {
		struct job *svc = jobs_get(s->jobs, s->services->ids[k]);
		if (!svc || !set_of(s, svc))
			continue;
		for (uint32_t i = 0; i < set_of(s, svc)->nslots; i++) {
			struct job *j = jobs_get(s->jobs, set_of(s, svc)->slot[i]);
			if (!j || j->state != GPOOL__JOB_STATE__RUNNING || !has_rank_on(j, node))
				continue;
			leave(s, svc, j, SVC_EVICT); /* one draining already ends as it said */
		}
	}
}

int service_siblings_on(struct gsched *s, const struct job *rep, int node)
{
	struct job *svc = jobs_get(s->jobs, rep->svc_of);
	if (!svc || !set_of(s, svc))
		return 0;
	int n = 0;
	for (uint32_t i = 0; i < set_of(s, svc)->nslots; i++) {
		struct job *j =
		    set_of(s, svc)->slot[i] ? jobs_get(s->jobs, set_of(s, svc)->slot[i]) : NULL;
		if (j && j != rep && j->tasks && j->ntasks &&
		    (j->state == GPOOL__JOB_STATE__RUNNING ||
		     j->state == GPOOL__JOB_STATE__COMPLETING) &&
		    j->tasks[0].node == node)
			n++;
	}
	return n;
}

/* A replica's entry of a reply, and the text its reason may point to. */
struct replica_out {
	Gpool__ReplicaInfo ri;
	char why[160];
};

static void replica_fill(struct gsched *s, struct replica_out *o, const struct job *j)
{
	Gpool__ReplicaInfo *ri = &o->ri;
	gpool__replica_info__init(ri);
	ri->index = j->svc_index;
	ri->job_id = j->id;
	ri->state = j->state;
	ri->restarts = j->attempt > 1 ? j->attempt - 1 : 0;
	ri->crash_loop = replica_of(s, j)->quick_fails >= SVC_CRASH_LOOP;
	ri->reason = j->end_reason ? j->end_reason : "";
	if (j->state == GPOOL__JOB_STATE__PENDING && !j->end_reason)
		ri->reason = (char *)pend_reason_name(j->reason);
	bool on =
	    (j->state == GPOOL__JOB_STATE__RUNNING || j->state == GPOOL__JOB_STATE__COMPLETING) &&
	    j->tasks && j->ntasks;
	if (on) {
		struct node *n = nodes_get(s->nodes, j->tasks[0].node);
		ri->node = n ? n->name : "";
		ri->addr = n && n->addr ? n->addr : "";
		ri->port = j->port;
		ri->draining = replica_of(s, j)->drain_ms != 0;
		ri->port_state = (Gpool__PortState)replica_of(s, j)->port_state;
		ri->ready = replica_ready(s, j);
		const char *port_why = j->port && j->state == GPOOL__JOB_STATE__RUNNING
					   ? service_port_problem(s, j, o->why, sizeof(o->why))
					   : NULL;
		if (port_why)
			ri->reason = (char *)port_why;
	} else {
		ri->node = ri->addr = "";
	}
	ri->ranks = j->ntasks;
	struct job *svc = jobs_get(s->jobs, j->svc_of);
	ri->ranks_wanted = svc && set_of(s, svc) ? set_of(s, svc)->ranks_max : j->ntasks;
	ri->gateways =
	    svcrep_get(s->svcrep, j->id, ri->restarts, gp_mono_ms(), &ri->health, &ri->requests);
}

/* The replicas of svc, in index order, into a freshly allocated array. */
static Gpool__ReplicaInfo **replicas_of(struct gsched *s, const struct job *svc, size_t *n)
{
	struct svc *v = set_of(s, svc);
	*n = 0;
	if (!v || !v->nslots)
		return NULL;
	Gpool__ReplicaInfo **pv = calloc(v->nslots, sizeof(*pv) + sizeof(struct replica_out));
	if (!pv)
		return NULL;
	struct replica_out *ro = (struct replica_out *)(pv + v->nslots);
	for (uint32_t i = 0; i < v->nslots; i++) {
		struct job *j = v->slot[i] ? jobs_get(s->jobs, v->slot[i]) : NULL;
		if (!j)
			continue;
		replica_fill(s, &ro[*n], j);
		pv[*n] = &ro[*n].ri;
		(*n)++;
	}
	return pv;
}

void service_info_fill(struct gsched *s, const struct job *svc, Gpool__JobInfo *ji)
{
	if (!set_of(s, svc))
		return;
	ji->replicas = replicas_of(s, svc, &ji->n_replicas);
	ji->replicas_wanted = set_of(s, svc)->want;
}

void service_info_release(Gpool__JobInfo *ji)
{
	free(ji->replicas);
	ji->replicas = NULL;
	ji->n_replicas = 0;
}

static bool wanted(const Gpool__ServiceQuery *q, const struct job *svc)
{
	if (!q->n_ids && !q->n_names)
		return true;
	for (size_t i = 0; i < q->n_ids; i++)
		if (q->ids[i] == svc->id)
			return true;
	for (size_t i = 0; i < q->n_names; i++)
		if (svc->name && strcmp(q->names[i], svc->name) == 0)
			return true;
	return false;
}

bool service_reporter(struct gsched *s, const struct req *r, size_t n)
{
	if (r->from.uid == 0 || r->from.uid == s->gateway_uid)
		return true;
	s->svcrep_refused += n;
	int64_t now = gp_mono_ms();
	if (!s->svcrep_warned_ms || now - s->svcrep_warned_ms >= SVC_REFUSED_WARN_MS) {
		gp_warn("replica reports from uid %u at %s ignored: only gateway_uid %u and root "
			"report for gateways (%llu reports ignored so far)",
			(unsigned)r->from.uid, r->addr ? r->addr : "?", (unsigned)s->gateway_uid,
			(unsigned long long)s->svcrep_refused);
		s->svcrep_warned_ms = now;
	}
	return false;
}

void client_service_query(struct req *r)
{
	struct gsched *s = r->s;
	const Gpool__ServiceQuery *q = r->msg->service_query;
	Gpool__ServiceQuery heard = *q;
	heard.n_reports = 0;
	heard.reports = NULL;
	if (q->n_ids + q->n_names > 1000) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "too many services asked");
		return;
	}
	if (q->n_reports > 4096) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "too many replica reports");
		return;
	}
	if (q->n_reports && !service_reporter(s, r, q->n_reports))
		q = &heard; /* answered as a plain query */
	if (q->n_reports && !s->svcrep)
		s->svcrep = svcrep_create();
	for (size_t i = 0; s->svcrep && i < q->n_reports; i++)
		svcrep_put(s->svcrep, q->gateway, q->reports[i], gp_mono_ms());
	Gpool__ServiceInfo *si = calloc(nservices(s) ? nservices(s) : 1, sizeof(*si));
	Gpool__ServiceInfo **sv = calloc(nservices(s) ? nservices(s) : 1, sizeof(*sv));
	Gpool__ServiceQueryReply rep = GPOOL__SERVICE_QUERY_REPLY__INIT;
	if (!si || !sv) {
		free(si);
		free(sv);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	for (size_t k = 0; k < nservices(s); k++) {
		struct job *svc = jobs_get(s->jobs, s->services->ids[k]);
		if (!svc || !set_of(s, svc) || !wanted(q, svc))
			continue;
		Gpool__ServiceInfo *x = &si[rep.n_services];
		gpool__service_info__init(x);
		x->id = svc->id;
		x->name = svc->name ? svc->name : "";
		x->user = svc->user ? svc->user : "";
		x->health_path = set_of(s, svc)->health_path;
		x->route_token_sha256 = set_of(s, svc)->route_hash;
		x->route_keep_prefix = set_of(s, svc)->keep_prefix;
		x->replicas_wanted = set_of(s, svc)->want;
		x->state = svc->state;
		x->replicas = replicas_of(s, svc, &x->n_replicas);
		sv[rep.n_services++] = x;
	}
	rep.services = sv;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_SERVICE_QUERY_REPLY;
	m.service_query_reply = &rep;
	req_reply(r, &m, false);
	for (size_t i = 0; i < rep.n_services; i++)
		free(si[i].replicas);
	free(si);
	free(sv);
}

static int service_on_event(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	struct job *j = ev->job;
	switch (ev->kind) {
	case SEV_JOB_STARTED:
		if (j->svc_of) { /* a new attempt: its agent has not looked at its port yet */
			struct svc_replica *r = replica_of(s, j);
			r->port_state = GPOOL__PORT_STATE__PORT_UNCHECKED;
			r->port_holder_pid = 0;
			r->port_holder_uid = 0;
		}
		return 0;
	case SEV_JOB_ATTEMPT_ENDED:
		return j->svc_of && service_replica_ended(s, j, ev->exit_code) ? 1 : 0;
	case SEV_TASK_HELD:
		/* a gang's rank 0 is the one gateways reach: the other ranks' ports are theirs */
		if (j->svc_of && ev->held->port && !ev->held->exited && ev->held->rank == 0)
			service_port_seen(s, j, ev->held);
		return 0;
	case SEV_JOB_FORGOTTEN:
		forget(s, j->id);
		return 0;
	case SEV_NODE_DRAINED:
		service_node_drained(s, ev->node);
		return 0;
	default:
		return 0;
	}
}

int service_subscribe(struct gsched *s)
{
	if (!s->services && !(s->services = services_create()))
		return -1;
	s->siblings_on = service_siblings_on; /* placement spreads a service's replicas */
	return sched_events_subscribe(s->events,
				      1u << SEV_JOB_STARTED | 1u << SEV_JOB_ATTEMPT_ENDED |
					  1u << SEV_TASK_HELD | 1u << SEV_JOB_FORGOTTEN |
					  1u << SEV_NODE_DRAINED,
				      service_on_event, NULL);
}
