/* pmixsrv.c: gstepd's PMIx server for a `gsub --mpi=pmix` job (see pmixsrv.h).
 *
 * The namespace is "gpool.JOB.ATTEMPT"; its map (every rank's node and local rank, the node
 * list, sizes) comes from the Launch (rank_nodes, nodelist). PMIx calls fence_nb from its
 * own progress thread; the exchange blocks on gschedd, so a thread of ours does it, one fence
 * at a time in the order they come (every node sees the same fences in the same order, as
 * MPI's collective calls are ordered): fence k puts this node's blob as
 * "pmix.f<k>.n<node>" and reads every other node's key of that fence (a get waits until the
 * key is put, so the reads are the fence), then hands PMIx the blobs in node order.
 *
 * Open MPI 4.1 decides how it was started in its "schizo" framework: its orte component
 * declares any process that no resource manager claims (it knows Slurm, Flux, ALPS) and that
 * mpirun did not start a singleton, before it looks at PMIx. Every rank therefore gets
 * OMPI_MCA_schizo=^orte (unless the submitter set OMPI_MCA_schizo): no component claims
 * the process, and Open MPI's PMIx-based start (ess pmi) finds this server.
 */
#include "worker/stepd/pmixsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "worker/node/env.h"
#include "common/log.h"
#include "gpool/gcomm_rdv.h"
#include "common/util.h"

#define FENCE_TIMEOUT_MS (7 * 24 * 3600 * 1000) /* a rank may compute long between fences */

struct fence_req {
	char *data;
	size_t ndata;
	pmix_modex_cbfunc_t cbfunc;
	void *cbdata;
	struct fence_req *next;
};

struct gp_pmixsrv {
	char nspace[PMIX_MAX_NSLEN + 1];
	char dir[64];
	uid_t uid;
	gid_t gid;
	uint32_t node_index, nnodes, first_rank;
	char spec[48]; /* the rendezvous: JOB:ATTEMPT */
	const struct gp_config *cfg;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fence_req *head, **tail;
	bool quit;
	bool busy; /* the thread is in the rendezvous (joining it, or a fence): it may block long */
	bool inited;
};

static gp_pmixsrv_t *the_server; /* PMIx's callbacks carry no context of ours */

/* ---- waiting for PMIx's callbacks ---- */

struct op {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	pmix_status_t st;
};

static void op_done(pmix_status_t st, void *cbdata)
{
	struct op *o = cbdata;
	pthread_mutex_lock(&o->mu);
	o->st = st;
	o->done = true;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

static pmix_status_t op_wait(struct op *o, pmix_status_t rc)
{
	if (rc == PMIX_OPERATION_SUCCEEDED)
		return PMIX_SUCCESS;
	if (rc != PMIX_SUCCESS)
		return rc;
	pthread_mutex_lock(&o->mu);
	while (!o->done)
		pthread_cond_wait(&o->cv, &o->mu);
	pthread_mutex_unlock(&o->mu);
	return o->st;
}

#define OP_INIT                                                                                    \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, PMIX_SUCCESS           \
	}

/* ---- the fences ---- */

static void release_blob(void *cbdata)
{
	free(cbdata);
}

/* Put this node's blob of fence k, read every node's; the concatenation in node order is
 * malloc'd in *out. */
static int exchange(gp_pmixsrv_t *p, gc_rdv_t *r, unsigned k, const struct fence_req *q, char **out,
		    size_t *outlen)
{
	char key[64];
	snprintf(key, sizeof(key), "pmix.f%u.n%u", k, p->node_index);
	if (p->nnodes > 1 && gc_rdv_gpool.put(r, key, q->data, q->ndata) < 0)
		return -1;
	gp_buf_t all = {0};
	for (uint32_t n = 0; n < p->nnodes; n++) {
		if (n == p->node_index) {
			if (q->ndata)
				gp_buf_append(&all, q->data, q->ndata);
			continue;
		}
		void *val = NULL;
		size_t len = 0;
		snprintf(key, sizeof(key), "pmix.f%u.n%u", k, n);
		if (gc_rdv_gpool.get(r, key, &val, &len) < 0) {
			gp_buf_release(&all);
			return -1;
		}
		if (len)
			gp_buf_append(&all, val, len);
		free(val);
	}
	*out = (char *)all.data;
	*outlen = all.len;
	return 0;
}

static void *fence_thread(void *arg)
{
	gp_pmixsrv_t *p = arg;
	gc_error_t ge = {{0}};
	gc_rdv_t *r = NULL; /* one node: nothing to exchange */
	if (p->nnodes > 1 &&
	    !(r = gc_rdv_gpool_open_cfg(p->cfg, p->spec, (int)p->first_rank, (int)p->first_rank + 1,
					FENCE_TIMEOUT_MS, &ge)))
		gp_err("pmix: cannot join the job's rendezvous: %s", ge.text);
	unsigned k = 0;
	while (1) {
		pthread_mutex_lock(&p->mu);
		p->busy = false;
		while (!p->head && !p->quit)
			pthread_cond_wait(&p->cv, &p->mu);
		struct fence_req *q = p->head;
		if (q) {
			p->head = q->next;
			if (!p->head)
				p->tail = &p->head;
			p->busy = true;
		}
		pthread_mutex_unlock(&p->mu);
		if (!q)
			break;
		char *blob = NULL;
		size_t len = 0;
		int64_t t0 = gp_mono_ms();
		k++;
		if ((r || p->nnodes == 1) && exchange(p, r, k, q, &blob, &len) == 0) {
			gp_debug("pmix: fence %u: %zu bytes in, %zu bytes from %u nodes, %lld ms",
				 k, q->ndata, len, p->nnodes, (long long)(gp_mono_ms() - t0));
			q->cbfunc(PMIX_SUCCESS, blob, len, q->cbdata, release_blob, blob);
		} else {
			gp_err("pmix: fence %u failed: %s", k,
			       r ? gc_rdv_gpool.error(r) : "no rendezvous");
			q->cbfunc(PMIX_ERROR, NULL, 0, q->cbdata, NULL, NULL);
		}
		free(q->data);
		free(q);
	}
	if (r)
		gc_rdv_gpool.close(r);
	return NULL;
}

static pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
			      size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
			      void *cbdata)
{
	(void)procs;
	(void)nprocs;
	(void)info;
	(void)ninfo;
	gp_pmixsrv_t *p = the_server;
	struct fence_req *q = calloc(1, sizeof(*q));
	if (!p || !q || (ndata && !(q->data = malloc(ndata)))) {
		free(q);
		return PMIX_ERR_NOMEM;
	}
	if (ndata)
		memcpy(q->data, data, ndata);
	q->ndata = ndata;
	q->cbfunc = cbfunc;
	q->cbdata = cbdata;
	pthread_mutex_lock(&p->mu);
	*p->tail = q;
	p->tail = &q->next;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return PMIX_SUCCESS;
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *server_object, int status,
			      const char msg[], pmix_proc_t procs[], size_t nprocs,
			      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)server_object;
	(void)procs;
	(void)nprocs;
	(void)cbfunc;
	(void)cbdata;
	/* the rank exits with the status; gschedd ends the job as it does for any failed task */
	gp_warn("pmix: rank %u aborts with status %d: %s", proc ? proc->rank : 0, status,
		msg ? msg : "");
	return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t module = {
    .abort = on_abort,
    .fence_nb = on_fence,
};

/* ---- the job's map ---- */

/* PMIx_Info_list_add, counting failures in *bad. */
static void add(void *list, const char *key, const void *val, pmix_data_type_t type, int *bad)
{
	if (PMIx_Info_list_add(list, key, val, type) != PMIX_SUCCESS)
		(*bad)++;
}

static char *join_u32(const uint32_t *v, size_t n)
{
	gp_buf_t b = {0};
	for (size_t i = 0; i < n; i++) {
		char num[16];
		int len = snprintf(num, sizeof(num), "%s%u", i ? "," : "", v[i]);
		gp_buf_append(&b, num, (size_t)len);
	}
	gp_buf_append(&b, "", 1);
	return (char *)b.data;
}

/* Every rank's keys (PMIX_PROC_DATA) added to list; *bad counts what failed. */
static void add_ranks(void *list, const Gpool__Launch *l, const uint16_t *lrank, char **names,
		      int *bad)
{
	uint32_t zero = 0;
	for (uint32_t r = 0; r < l->size && !*bad; r++) {
		void *pl = PMIx_Info_list_start();
		pmix_data_array_t arr;
		pmix_rank_t rank = r;
		uint32_t nid = l->rank_nodes[r];
		add(pl, PMIX_RANK, &rank, PMIX_PROC_RANK, bad);
		add(pl, PMIX_GLOBAL_RANK, &rank, PMIX_PROC_RANK, bad);
		add(pl, PMIX_APP_RANK, &rank, PMIX_PROC_RANK, bad);
		add(pl, PMIX_APPNUM, &zero, PMIX_UINT32, bad);
		add(pl, PMIX_LOCAL_RANK, &lrank[r], PMIX_UINT16, bad);
		add(pl, PMIX_NODE_RANK, &lrank[r], PMIX_UINT16, bad);
		add(pl, PMIX_NODEID, &nid, PMIX_UINT32, bad);
		add(pl, PMIX_HOSTNAME, names[nid], PMIX_STRING, bad);
		if (!*bad && PMIx_Info_list_convert(pl, &arr) == PMIX_SUCCESS) {
			add(list, PMIX_PROC_DATA, &arr, PMIX_DATA_ARRAY, bad);
			PMIx_Data_array_destruct(&arr);
		} else {
			(*bad)++;
		}
		PMIx_Info_list_release(pl);
	}
}

/* Register the namespace: the job-level keys, this node's, and every rank's. */
static int register_nspace(gp_pmixsrv_t *p, const Gpool__Launch *l, const char *node,
			   gp_error_t *err)
{
	uint32_t size = l->size, zero = 0, one = 1;
	char **names = calloc(p->nnodes, sizeof(*names));
	char *nodelist = strdup(l->nodelist ? l->nodelist : "");
	uint32_t **ranks_of = calloc(p->nnodes, sizeof(*ranks_of));
	uint32_t *nranks = calloc(p->nnodes, sizeof(*nranks));
	uint16_t *lrank = calloc(size, sizeof(*lrank));
	char *nodemap = NULL, *procmap = NULL, *peers = NULL;
	gp_buf_t ppn = {0};
	void *list = PMIx_Info_list_start();
	int bad = 0, rc = -1;
	if (!names || !nodelist || !ranks_of || !nranks || !lrank || !list) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	uint32_t nn = 0;
	char *save = NULL;
	for (char *w = strtok_r(nodelist, ",", &save); w && nn < p->nnodes;
	     w = strtok_r(NULL, ",", &save))
		names[nn++] = w;
	if (nn != p->nnodes) {
		gp_errprintf(err, "the launch names %u nodes, its map %u", nn, p->nnodes);
		goto out;
	}
	for (uint32_t n = 0; n < p->nnodes; n++)
		if (!(ranks_of[n] = calloc(size, sizeof(uint32_t)))) {
			gp_errprintf(err, "out of memory");
			goto out;
		}
	for (uint32_t r = 0; r < size; r++) {
		uint32_t n = l->rank_nodes[r];
		lrank[r] = (uint16_t)nranks[n];
		ranks_of[n][nranks[n]++] = r;
	}
	for (uint32_t n = 0; n < p->nnodes; n++) {
		char *s = join_u32(ranks_of[n], nranks[n]);
		if (n)
			gp_buf_append(&ppn, ";", 1);
		gp_buf_append(&ppn, s, strlen(s));
		free(s);
	}
	gp_buf_append(&ppn, "", 1);
	uint32_t me = p->node_index, nlocal = nranks[me];
	if (PMIx_generate_regex(l->nodelist, &nodemap) != PMIX_SUCCESS ||
	    PMIx_generate_ppn((char *)ppn.data, &procmap) != PMIX_SUCCESS) {
		gp_errprintf(err, "cannot encode the job's map for pmix");
		goto out;
	}
	peers = join_u32(ranks_of[me], nlocal);
	char jobid[64];
	snprintf(jobid, sizeof(jobid), "%llu", (unsigned long long)l->job_id);
	pmix_rank_t ldr = ranks_of[me][0];
	add(list, PMIX_JOBID, jobid, PMIX_STRING, &bad);
	add(list, PMIX_UNIV_SIZE, &size, PMIX_UINT32, &bad);
	add(list, PMIX_JOB_SIZE, &size, PMIX_UINT32, &bad);
	add(list, PMIX_MAX_PROCS, &size, PMIX_UINT32, &bad);
	add(list, PMIX_APP_SIZE, &size, PMIX_UINT32, &bad);
	add(list, PMIX_JOB_NUM_APPS, &one, PMIX_UINT32, &bad);
	add(list, PMIX_APPNUM, &zero, PMIX_UINT32, &bad);
	add(list, PMIX_NUM_NODES, &p->nnodes, PMIX_UINT32, &bad);
	add(list, PMIX_NODE_MAP, nodemap, PMIX_STRING, &bad);
	add(list, PMIX_PROC_MAP, procmap, PMIX_STRING, &bad);
	add(list, PMIX_LOCAL_SIZE, &nlocal, PMIX_UINT32, &bad);
	add(list, PMIX_NODE_SIZE, &nlocal, PMIX_UINT32, &bad);
	add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING, &bad);
	add(list, PMIX_LOCALLDR, &ldr, PMIX_PROC_RANK, &bad);
	add(list, PMIX_HOSTNAME, node, PMIX_STRING, &bad);
	add(list, PMIX_NODEID, &me, PMIX_UINT32, &bad);
	add(list, PMIX_TMPDIR, p->dir, PMIX_STRING, &bad);
	add(list, PMIX_NSDIR, p->dir, PMIX_STRING, &bad);
	add_ranks(list, l, lrank, names, &bad);
	pmix_data_array_t info;
	if (bad || PMIx_Info_list_convert(list, &info) != PMIX_SUCCESS) {
		gp_errprintf(err, "cannot describe the job to pmix");
		goto out;
	}
	struct op o = OP_INIT;
	pmix_status_t st =
	    op_wait(&o, PMIx_server_register_nspace(p->nspace, (int)nlocal, info.array, info.size,
						    op_done, &o));
	PMIx_Data_array_destruct(&info);
	if (st != PMIX_SUCCESS) {
		gp_errprintf(err, "pmix: cannot register the job's namespace: %s",
			     PMIx_Error_string(st));
		goto out;
	}
	rc = 0;
out:
	if (list)
		PMIx_Info_list_release(list);
	for (uint32_t n = 0; ranks_of && n < p->nnodes; n++)
		free(ranks_of[n]);
	free(ranks_of);
	free(nranks);
	free(lrank);
	free(names);
	free(nodelist);
	free(nodemap);
	free(procmap);
	free(peers);
	gp_buf_release(&ppn);
	return rc;
}

/* ---- the server ---- */

gp_pmixsrv_t *gp_pmixsrv_create(const Gpool__Launch *l, const char *node, uid_t uid, gid_t gid,
				const struct gp_config *cfg, gp_error_t *err)
{
	if (the_server) {
		gp_errprintf(err, "pmix: one server per process");
		return NULL;
	}
	if (!l->n_tasks || l->n_rank_nodes != l->size || !l->size) {
		gp_errprintf(err, "pmix: the launch carries no map of the job's ranks");
		return NULL;
	}
	uint32_t nnodes = 0;
	for (size_t i = 0; i < l->n_rank_nodes; i++)
		if (l->rank_nodes[i] + 1 > nnodes)
			nnodes = l->rank_nodes[i] + 1;
	if (nnodes > l->size) {
		gp_errprintf(err, "pmix: the map names %u nodes for %u ranks", nnodes, l->size);
		return NULL;
	}
	uint32_t first = l->tasks[0]->rank;
	for (size_t i = 1; i < l->n_tasks; i++)
		if (l->tasks[i]->rank < first)
			first = l->tasks[i]->rank;
	if (first >= l->size) {
		gp_errprintf(err, "pmix: rank %u out of range", first);
		return NULL;
	}
	if (!cfg && nnodes > 1) {
		gp_errprintf(err, "pmix: this agent knows no scheduler endpoint (--scheduler)");
		return NULL;
	}
	gp_pmixsrv_t *p = calloc(1, sizeof(*p));
	if (!p) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->tail = &p->head;
	p->uid = uid;
	p->gid = gid;
	p->cfg = cfg;
	p->nnodes = nnodes;
	p->first_rank = first;
	p->node_index = l->rank_nodes[first];
	snprintf(p->nspace, sizeof(p->nspace), "gpool.%llu.%u", (unsigned long long)l->job_id,
		 l->attempt);
	snprintf(p->spec, sizeof(p->spec), "%llu:%u", (unsigned long long)l->job_id, l->attempt);
	/* the server's rendezvous and shared-memory files: private to the job's owner */
	snprintf(p->dir, sizeof(p->dir), "/tmp/gpool-pmix.XXXXXX");
	if (!mkdtemp(p->dir)) {
		gp_errprintf(err, "pmix: cannot make a directory in /tmp: %s", strerror(errno));
		p->dir[0] = '\0';
		goto fail;
	}
	if (geteuid() == 0) {
		/* by descriptor, as the scratch directories: the name is never followed as root */
		int dfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0 || fchown(dfd, uid, gid) < 0) {
			gp_errprintf(err, "pmix: cannot give '%s' to uid %u: %s", p->dir,
				     (unsigned)uid, strerror(errno));
			if (dfd >= 0)
				close(dfd);
			goto fail;
		}
		close(dfd);
	}
	the_server = p;
	void *list = PMIx_Info_list_start();
	int bad = 0;
	bool no = false;
	add(list, PMIX_SERVER_TMPDIR, p->dir, PMIX_STRING, &bad);
	add(list, PMIX_SYSTEM_TMPDIR, p->dir, PMIX_STRING, &bad);
	add(list, PMIX_USERID, &uid, PMIX_UINT32, &bad);
	add(list, PMIX_GRPID, &gid, PMIX_UINT32, &bad);
	add(list, PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL, &bad);
	pmix_data_array_t info;
	if (bad || PMIx_Info_list_convert(list, &info) != PMIX_SUCCESS) {
		PMIx_Info_list_release(list);
		gp_errprintf(err, "pmix: out of memory");
		goto fail;
	}
	PMIx_Info_list_release(list);
	pmix_status_t st = PMIx_server_init(&module, info.array, info.size);
	PMIx_Data_array_destruct(&info);
	if (st != PMIX_SUCCESS) {
		gp_errprintf(err, "pmix: cannot start the server: %s", PMIx_Error_string(st));
		goto fail;
	}
	p->inited = true;
	if (register_nspace(p, l, node, err) < 0)
		goto fail;
	p->busy = true; /* until the thread has joined the rendezvous */
	if (pthread_create(&p->thread, NULL, fence_thread, p) != 0) {
		gp_errprintf(err, "pmix: cannot start a thread");
		goto fail;
	}
	p->thread_started = true;
	gp_info("job %llu.%u: pmix server for %zu of %u ranks, node %u of %u",
		(unsigned long long)l->job_id, l->attempt, l->n_tasks, l->size, p->node_index,
		p->nnodes);
	return p;
fail:
	gp_pmixsrv_destroy(&p);
	return NULL;
}

/* Add NAME=VALUE to *env unless NAME is there (the submitter's value wins). */
static int add_env(char ***env, const char *name, const char *value, gp_error_t *err)
{
	if (gp_env_get(*env, name))
		return 0;
	size_t n = 0;
	while ((*env)[n])
		n++;
	char *kv = NULL, **v = realloc(*env, (n + 2) * sizeof(**env));
	if (v)
		*env = v;
	if (!v || asprintf(&kv, "%s=%s", name, value) < 0)
		return gp_errprintf(err, "out of memory");
	v[n] = kv;
	v[n + 1] = NULL;
	return 0;
}

int gp_pmixsrv_client(gp_pmixsrv_t *p, uint32_t rank, char ***env, gp_error_t *err)
{
	pmix_proc_t proc;
	PMIX_LOAD_PROCID(&proc, p->nspace, rank);
	struct op o = OP_INIT;
	pmix_status_t st =
	    op_wait(&o, PMIx_server_register_client(&proc, p->uid, p->gid, NULL, op_done, &o));
	if (st != PMIX_SUCCESS)
		return gp_errprintf(err, "pmix: cannot register rank %u: %s", rank,
				    PMIx_Error_string(st));
	st = PMIx_server_setup_fork(&proc, env);
	if (st != PMIX_SUCCESS)
		return gp_errprintf(err, "pmix: cannot set up rank %u's environment: %s", rank,
				    PMIx_Error_string(st));
	return add_env(env, "OMPI_MCA_schizo", "^orte", err);
}

const char *gp_pmixsrv_dir(const gp_pmixsrv_t *p)
{
	return p ? p->dir : NULL;
}

void gp_pmixsrv_destroy(gp_pmixsrv_t **pp)
{
	gp_pmixsrv_t *p = pp ? *pp : NULL;
	if (!p)
		return;
	*pp = NULL;
	if (p->inited)
		PMIx_server_finalize();
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_signal(&p->cv);
	/* an idle thread ends at once: joined, and p freed; one in the rendezvous may be held in
	 * gschedd for a long poll: it is detached and ends with the process, and p stays for it */
	bool join = p->thread_started && !p->busy && !p->head;
	pthread_mutex_unlock(&p->mu);
	if (join)
		pthread_join(p->thread, NULL);
	else if (p->thread_started)
		pthread_detach(p->thread);
	if (p->dir[0] && gp_rm_rf(p->dir) < 0)
		gp_warn("cannot remove '%s': %s", p->dir, strerror(errno));
	if (the_server == p)
		the_server = NULL;
	if (join || !p->thread_started) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
	}
}
