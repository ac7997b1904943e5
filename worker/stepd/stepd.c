/* stepd.c: gstepd, the supervisor of one job attempt's tasks on one node, or (--shell) a
 * task shell that supervises several job attempts of one account (an array's tasks, or single-task
 * jobs that are not array tasks; worker/node/shellkey.h says which) one after another.
 *
 * gworkerd starts it (detached, in its own session) with the launch file it wrote. gstepd
 * prepares the account, working directory, files and cgroup, starts the tasks, streams their
 * output and exit statuses to the agent over ipc://<state_dir>/worker.sock, and exits once
 * every task has ended and the agent has acknowledged every event (StepAck), so an agent
 * restart loses nothing: the supervisor says StepHello every 2 s and sends again whatever is
 * unacknowledged.
 *
 * A task shell takes further job attempts over the same channel (StepShellLaunch: the launch
 * file's path) and gives each what a gstepd of its own would: its working directory, its
 * cgroup (limits, cards, OOM count), its tasks, kills and events (with its job id); only the
 * process, the ZeroMQ context and the sequence of messages to the agent are shared. A step
 * that is done and acknowledged is cleaned up at once; the shell exits when the agent says
 * StepShellClose (it has been idle for the agent's grace period).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/endpoint.h"
#include "worker/node/env.h"
#include "worker/node/launchfile.h"
#include "common/log.h"
#include "common/opt.h"
#include "worker/node/staging.h"
#include "worker/stepd/lazy.h"
#include "worker/stepd/step.h"
#include "worker/stepd/taskevent.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/xfer.h"
#include "common/sigfd.h"

#define HELLO_MS     2000
#define ENVELOPE_MAX (4u << 20)

#define SHELL_MAX_STEPS 1024 /* a shell refuses more at once (the agent hands it far fewer) */
#define CGROUP_POOL_MAX 32   /* a shell's idle cgroups kept for its next jobs (cgroup.h) */

struct stepd {
	struct step **steps; /* the job attempts held (a plain gstepd: one) */
	size_t nsteps;
	bool shell;   /* --shell: takes further steps, exits on StepShellClose */
	bool closing; /* a shell told to close */
	gp_outbox_t *out;
	const char *node;
	const char *iface, *subnet;
	struct gp_config *xfer_cfg;
	const char *cache_dir;
	const char *agent;
	const char *scratch;
	const char *cgroups;
	gp_cgroup_pool_t *cgpool;      /* a shell's idle cgroups (v1), NULL otherwise */
	const char *state_dir;	       /* the node's chunk cache is <state_dir>/cache */
	struct step_ctr_opts ctr;      /* the node's image settings (container.h) */
	struct step_privtmp_opts ptmp; /* a job's own /tmp (privtmp.h) */
	const char *scheduler;	       /* the chunk store's endpoint */
	const char *sched_uid;
	bool allow_root;
	uint32_t kill_grace_ms;
	void *zctx, *sock;
	gp_endpoint_t *ep; /* the agent, over sock (local: unsealed) */
	int sigfd;
	bool hello_due;
	int64_t next_hello_ms;
	uint64_t acked_at_last_hello;
	bool quit;
};

static size_t ntasks_all(const struct stepd *d)
{
	size_t n = 0;
	for (size_t i = 0; i < d->nsteps; i++)
		n += d->steps[i]->ntasks;
	return n;
}

static int send_batch(struct stepd *d, gp_batch_t *b)
{
	gp_error_t err;
	return gp_endpoint_send(d->ep, NULL, 0, b, &err);
}

static void send_hello(struct stepd *d)
{
	size_t nt = ntasks_all(d);
	Gpool__StepHello h = GPOOL__STEP_HELLO__INIT;
	Gpool__HeldTask *ht = calloc(nt ? nt : 1, sizeof(*ht));
	Gpool__HeldTask **hp = calloc(nt ? nt : 1, sizeof(*hp));
	if (!ht || !hp)
		goto out;
	/* a shell names no job of its own: its tasks name theirs */
	if (!d->shell && d->nsteps) {
		h.job_id = d->steps[0]->launch->job_id;
		h.attempt = d->steps[0]->launch->attempt;
	}
	h.pid = getpid();
	size_t k = 0;
	for (size_t j = 0; j < d->nsteps; j++) {
		struct step *s = d->steps[j];
		for (size_t i = 0; i < s->ntasks; i++, k++) {
			struct task *t = &s->tasks[i];
			gpool__held_task__init(&ht[k]);
			ht[k].job_id = s->launch->job_id;
			ht[k].attempt = s->launch->attempt;
			ht[k].rank = t->tp->rank;
			ht[k].pid = t->pid;
			ht[k].exited = t->state == TASK_DONE || t->state == TASK_REAPED;
			ht[k].status = t->failed ? (1 << 8) : t->status;
			ht[k].requeueable =
			    !s->launch->spec->no_requeue && !s->launch->spec->service;
			ht[k].port = s->launch->spec->service ? s->launch->spec->service_port : 0;
			hp[k] = &ht[k];
		}
	}
	h.tasks = hp;
	h.n_tasks = k;
	Gpool__Msg m = GPOOL__MSG__INIT;
	/* local convention: a hello's id is what the agent has acknowledged, so a restarted
	 * agent knows where our sequence resumes */
	m.id = gp_outbox_acked(d->out);
	m.m_case = GPOOL__MSG__M_STEP_HELLO;
	m.step_hello = &h;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) == 0 && send_batch(d, &b) == 0) {
		d->hello_due = false;
		d->next_hello_ms = gp_mono_ms() + HELLO_MS;
	}
	gp_batch_release(&b);
out:
	free(ht);
	free(hp);
}

/* Send what the agent has not seen yet, one envelope per ENVELOPE_MAX. */
static void flush(struct stepd *d)
{
	gp_batch_t b = {0};
	while (gp_outbox_unsent(d->out)) {
		gp_batch_reset(&b);
		int n = gp_outbox_fill(d->out, &b, ENVELOPE_MAX);
		if (n <= 0 || send_batch(d, &b) < 0)
			break;
		gp_outbox_sent(d->out, n);
	}
	gp_batch_release(&b);
}

/* ---- steps ---- */

static struct step *step_find(struct stepd *d, uint64_t job, uint32_t attempt)
{
	for (size_t i = 0; i < d->nsteps; i++)
		if (d->steps[i]->launch->job_id == job &&
		    (!attempt || d->steps[i]->launch->attempt == attempt))
			return d->steps[i];
	return NULL;
}

static void cleanup(struct step *s)
{
	step_container_release(s);
	step_privtmp_release(s);
	gp_cgroup_destroy(&s->cg);
	if (s->workdir && s->workdir_owned && gp_rm_rf(s->workdir) < 0)
		gp_warn("cannot remove '%s': %s", s->workdir, strerror(errno));
	if (s->launch_path && unlink(s->launch_path) < 0 && errno != ENOENT)
		gp_warn("cannot remove '%s': %s", s->launch_path, strerror(errno));
}

static void step_free(struct step *s)
{
	if (!s)
		return;
	gp_pmixsrv_destroy(&s->pmix);
	gp_ptyserv_destroy(&s->pty);
	step_lazy_destroy(&s->lazy);
	step_container_release(s);
	step_privtmp_release(s);
	for (size_t i = 0; s->tasks && i < s->ntasks; i++) {
		gp_env_free(s->tasks[i].env);
		step_container_argv_free(s->tasks[i].cargv);
		free(s->tasks[i].croot);
	}
	free(s->workdir);
	free(s->tasks);
	free(s->launch_path);
	if (s->launch)
		gpool__launch__free_unpacked(s->launch, NULL);
	free(s);
}

/* Read a launch file into a new step (not yet set up); NULL when it cannot be used (logged;
 * the file is removed when it names no command or no tasks). */
static struct step *step_load(struct stepd *d, const char *path)
{
	gp_error_t err = {{0}};
	struct step *s = calloc(1, sizeof(*s));
	if (!s || !(s->launch_path = strdup(path))) {
		gp_err("out of memory");
		free(s);
		return NULL;
	}
	if (!(s->launch = gp_launch_read(path, &err))) {
		gp_err("%s", err.text);
		step_free(s);
		return NULL;
	}
	if (!s->launch->spec || !s->launch->spec->n_argv || !s->launch->n_tasks) {
		gp_err("launch file '%s' has no command or no tasks", path);
		unlink(path);
		step_free(s);
		return NULL;
	}
	s->ntasks = s->launch->n_tasks;
	if (!(s->tasks = calloc(s->ntasks, sizeof(*s->tasks)))) {
		gp_err("out of memory");
		step_free(s);
		return NULL;
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		s->tasks[i].tp = s->launch->tasks[i];
		s->tasks[i].fd[0] = s->tasks[i].fd[1] = s->tasks[i].fd[2] = -1;
	}
	s->out = d->out;
	s->node = d->node;
	s->iface = d->iface;
	s->subnet = d->subnet;
	snprintf(s->mps_root, sizeof(s->mps_root), "%s/mps", d->scratch);
	s->xfer_cfg = d->xfer_cfg;
	s->cache_dir = d->cache_dir;
	return s;
}

static int step_add(struct stepd *d, struct step *s)
{
	struct step **nv = realloc(d->steps, (d->nsteps + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	d->steps = nv;
	d->steps[d->nsteps++] = s;
	return 0;
}

/* A step whose tasks have all ended and whose every event the agent has acknowledged: its
 * cgroup, working directory and launch file go now (a shell keeps running). */
static void steps_retire(struct stepd *d)
{
	uint64_t acked = gp_outbox_acked(d->out);
	for (size_t i = 0; i < d->nsteps;) {
		struct step *s = d->steps[i];
		if (!tasks_all_done(s) || !gp_ptyserv_done(s->pty) || s->last_seq > acked) {
			i++;
			continue;
		}
		gp_debug("job %llu.%u: done", (unsigned long long)s->launch->job_id,
			 s->launch->attempt);
		cleanup(s);
		step_free(s);
		d->steps[i] = d->steps[--d->nsteps];
	}
}

/* ---- messages from the agent ---- */

static void on_ack(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	gp_outbox_ack(d->out, m->step_ack->upto);
}

static void on_kill(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	const Gpool__Kill *k = m->kill;
	struct step *s = step_find(d, k->job_id, k->attempt);
	if (!s) {
		gp_warn("kill for job %llu.%u is not for this step: ignored",
			(unsigned long long)k->job_id, k->attempt);
		return;
	}
	int sig = k->signal > 0 && k->signal < 65 ? k->signal : SIGTERM;
	gp_info("job %llu.%u: kill with signal %d (grace %u ms)",
		(unsigned long long)s->launch->job_id, s->launch->attempt, sig, k->grace_ms);
	tasks_kill(s, sig, k->grace_ms);
}

static int setup_step(struct stepd *d, struct step *s, gp_error_t *err);

/* A job attempt the shell cannot take: each of its tasks failed to start, with the reason. */
static void shell_refuse(struct stepd *d, const Gpool__StepShellLaunch *sl, const char *why)
{
	gp_warn("job %llu.%u: %s", (unsigned long long)sl->job_id, sl->attempt, why);
	for (size_t i = 0; i < sl->n_ranks; i++) {
		Gpool__TaskEvent ev;
		Gpool__Msg m;
		gp_task_failed_msg(&ev, &m, sl->job_id, sl->attempt, sl->ranks[i], why);
		if (gp_outbox_push(d->out, &m) < 0)
			gp_err("job %llu: task event lost: out of memory",
			       (unsigned long long)sl->job_id);
	}
}

/* A shell takes one more job attempt: set up and started as a gstepd of its own would. */
static void on_shell_launch(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	const Gpool__StepShellLaunch *sl = m->step_shell_launch;
	if (!d->shell || d->closing) {
		shell_refuse(d, sl, "handed to a supervisor that takes no more jobs");
		return;
	}
	if (step_find(d, sl->job_id, sl->attempt)) {
		gp_info("job %llu.%u, which this shell already holds: ignored",
			(unsigned long long)sl->job_id, sl->attempt);
		return;
	}
	if (d->nsteps >= SHELL_MAX_STEPS || !sl->launch_path || !*sl->launch_path) {
		shell_refuse(d, sl, "the task shell holds too many jobs");
		return;
	}
	struct step *s = step_load(d, sl->launch_path);
	if (!s) {
		shell_refuse(d, sl, "the task shell cannot read its launch file");
		return;
	}
	if (s->launch->job_id != sl->job_id || s->launch->attempt != sl->attempt) {
		s->launch_path[0] = '\0'; /* not ours to remove */
		step_free(s);
		shell_refuse(d, sl, "its launch file names another job");
		return;
	}
	if (step_add(d, s) < 0) {
		step_free(s);
		shell_refuse(d, sl, "out of memory");
		return;
	}
	gp_error_t err = {{0}};
	if (setup_step(d, s, &err) < 0)
		tasks_fail_all(s, err.text);
	else
		tasks_start(s);
}

/* Take nothing more; exit once every job held is done and reported. */
static void on_shell_close(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	if (!d->shell)
		return;
	if (d->nsteps)
		gp_debug("closing after the %zu job(s) held", d->nsteps);
	d->closing = true;
}

static const struct gp_ep_handler agent_msgs[] = {
    {GPOOL__MSG__M_STEP_ACK, GP_EP_ANYONE, on_ack, "step_ack"},
    {GPOOL__MSG__M_KILL, GP_EP_ANYONE, on_kill, "kill"},
    {GPOOL__MSG__M_STEP_SHELL_LAUNCH, GP_EP_ANYONE, on_shell_launch, "step_shell_launch"},
    {GPOOL__MSG__M_STEP_SHELL_CLOSE, GP_EP_ANYONE, on_shell_close, "step_shell_close"},
};

/* ---- setup ---- */

/* The chunk store's client settings, when the agent gave them. */
static int setup_xfer(struct stepd *d, gp_error_t *err)
{
	static char cache[4200];
	if (!d->scheduler || !d->state_dir)
		return 0;
	gp_config_t *c = gp_config_create(GP_WORKER);
	if (!c)
		return gp_errprintf(err, "out of memory");
	if (gp_config_set(c, "scheduler", d->scheduler, err) < 0 ||
	    (d->sched_uid && gp_config_set(c, "sched_uid", d->sched_uid, err) < 0)) {
		gp_config_destroy(&c);
		return -1;
	}
	snprintf(cache, sizeof(cache), "%s/cache", d->state_dir);
	d->xfer_cfg = c;
	d->cache_dir = cache;
	return 0;
}

/* Fetch what the node's cache lacks of the staged manifest, then write it into the working
 * directory. */
static int stage_manifest(struct step *s, gp_error_t *err)
{
	const Gpool__Launch *l = s->launch;
	if (!s->xfer_cfg)
		return gp_errprintf(err, "staged files, but this agent knows no chunk store");
	double t0 = gp_now();
	struct gp_xfer_stats st = {0};
	gp_client_t *c = gp_client_create(s->xfer_cfg, err);
	if (!c)
		return -1;
	struct gp_xfer_peers peers = step_stage_peers(s);
	/* lazily staged files are fetched later, a range at a time, as their tasks ask (lazy.c) */
	Gpool__StageEntry **whole = calloc(l->spec->n_stage, sizeof(*whole));
	size_t nwhole = 0;
	for (size_t i = 0; whole && i < l->spec->n_stage; i++)
		if (!l->spec->stage[i]->lazy || l->spec->stage[i]->dir)
			whole[nwhole++] = l->spec->stage[i];
	int rc = whole ? gp_xfer_fetch_cache(c, whole, nwhole, s->cache_dir,
					     l->n_stage_peers > 1 ? &peers : NULL, &st, err)
		       : gp_errprintf(err, "out of memory");
	free(whole);
	gp_client_destroy(&c);
	if (rc < 0)
		return -1;
	double t1 = gp_now();
	if (gp_stage_manifest(l->spec, s->workdir, &s->account, s->cache_dir, err) < 0)
		return -1;
	err->text[0] = '\0';
	if (!(s->lazy = step_lazy_create(s, err)) && err->text[0])
		return -1;
	char what[128];
	gp_xfer_describe(&st, what, sizeof(what));
	gp_info("job %llu.%u: staged %s: %llu chunks, %llu cached, %llu fetched (%llu bytes), "
		"%llu refused, %llu from peers (%zu nodes); fetch %.3f s, write %.3f s",
		(unsigned long long)l->job_id, l->attempt, what, (unsigned long long)st.chunks,
		(unsigned long long)st.cached_chunks, (unsigned long long)st.got_chunks,
		(unsigned long long)st.got_bytes, (unsigned long long)st.refused_chunks,
		(unsigned long long)st.peer_chunks, l->n_stage_peers, t1 - t0, gp_now() - t1);
	return 0;
}

static int setup_step(struct stepd *d, struct step *s, gp_error_t *err)
{
	const Gpool__Launch *l = s->launch;
	struct gp_account_rules r = {
	    .run_as = NULL, .allow_root = d->allow_root, .self = geteuid(), .node = s->node};
	struct gp_owner owner = {.uid = l->uid, .name = l->user};
	if (gp_account_resolve(&r, &owner, &s->account, err) < 0)
		return -1;
	if (gp_stage_workdir(l, d->scratch, &s->account, &s->workdir, &s->workdir_owned, err) < 0)
		return -1;
	if (gp_stage_files(l->spec, s->workdir, &s->account, err) < 0)
		return -1;
	if (l->spec->n_stage && stage_manifest(s, err) < 0)
		return -1;
	if (l->spec->container && *l->spec->container &&
	    step_container_prepare(s, d->state_dir, &d->ctr, err) < 0)
		return -1;
	if (step_privtmp_prepare(s, d->scratch, &d->ptmp, err) < 0)
		return -1;
	/* the job's cpus: every task's placement, the cgroup holds them all */
	size_t ncpus = 0;
	for (size_t i = 0; i < l->n_tasks; i++)
		ncpus += l->tasks[i]->n_cpus;
	uint32_t *cpus = calloc(ncpus ? ncpus : 1, sizeof(*cpus));
	if (!cpus)
		return gp_errprintf(err, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cpus; c++)
			cpus[k++] = l->tasks[i]->cpus[c];
	/* the node's name in it: agents that share one cgroup hierarchy (hosts simulated on one
	 * machine) must not share a job's group */
	char name[160];
	snprintf(name, sizeof(name), "job%llu.%u.%s", (unsigned long long)l->job_id, l->attempt,
		 s->node ? s->node : "");
	/* the node's cards that none of this job's tasks here was given */
	uint32_t given[64];
	size_t ngiven = 0;
	int vendor[64];
	bool fake[64];
	uint32_t dev_node[64];
	size_t ncards = l->n_cards < 64 ? l->n_cards : 64;
	for (size_t i = 0; i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cards && ngiven < 64; c++)
			given[ngiven++] = l->tasks[i]->cards[c];
	for (size_t i = 0; i < ncards; i++) {
		vendor[i] = l->cards[i]->vendor;
		fake[i] = l->cards[i]->fake;
		dev_node[i] = l->cards[i]->dev_node;
	}
	char rulebuf[64][32];
	const char *rules[64];
	size_t nrules =
	    gp_cgroup_card_rules(given, ngiven, vendor, fake, dev_node, ncards, rulebuf, rules, 64);
	struct gp_cgroup_limits lim = {.mem_bytes = l->mem_limit_mb << 20,
				       .cpus = cpus,
				       .ncpus = ncpus,
				       .pids_max = 0,
				       .deny = rules,
				       .ndeny = nrules};
	/* a job step's group inside its job's here: the job's limits bound its steps' together */
	char parent[160] = "";
	if (l->spec && l->spec->step_of && l->step_of_attempt)
		snprintf(parent, sizeof(parent), "job%llu.%u.%s",
			 (unsigned long long)l->spec->step_of, l->step_of_attempt,
			 s->node ? s->node : "");
	s->cg = gp_cgroup_create_in(d->cgroups, parent[0] ? parent : NULL, name, &lim,
				    parent[0] ? NULL : d->cgpool, err);
	free(cpus);
	if (!s->cg)
		return -1;
	gp_debug("%s: cgroups %s", name, gp_cgroup_version(s->cg));
	if (gp_cgroup_nested(s->cg))
		gp_info("job %llu.%u: step of job %llu: its cgroup is inside the job's",
			(unsigned long long)l->job_id, l->attempt,
			(unsigned long long)l->spec->step_of);
	return 0;
}

static int setup_link(struct stepd *d, gp_error_t *err)
{
	/* a plain gstepd is "<job>.<attempt>"; a shell "s<pid>" (it serves many jobs) */
	char rid[64];
	int n = d->shell ? snprintf(rid, sizeof(rid), "s%d", (int)getpid())
			 : snprintf(rid, sizeof(rid), "%llu.%u",
				    (unsigned long long)d->steps[0]->launch->job_id,
				    d->steps[0]->launch->attempt);
	int one = 1, zero = 0;
	if (!(d->zctx = zmq_ctx_new()) || !(d->sock = zmq_socket(d->zctx, ZMQ_DEALER)))
		return gp_errprintf(err, "zmq: %s", zmq_strerror(errno));
	zmq_setsockopt(d->sock, ZMQ_ROUTING_ID, rid, (size_t)n);
	/* hold messages here (and retry) rather than queue them for an absent agent */
	zmq_setsockopt(d->sock, ZMQ_IMMEDIATE, &one, sizeof(one));
	zmq_setsockopt(d->sock, ZMQ_LINGER, &zero, sizeof(zero));
	int ivl = 100;
	zmq_setsockopt(d->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
	if (zmq_connect(d->sock, d->agent) < 0)
		return gp_errprintf(err, "cannot connect to the agent at '%s': %s", d->agent,
				    zmq_strerror(errno));
	/* the agent's socket is root's (its folder is 0700): local, unsealed envelopes */
	struct gp_ep_config ec = {.sock = d->sock,
				  .max_message = 256u << 20,
				  .handlers = agent_msgs,
				  .nhandlers = sizeof(agent_msgs) / sizeof(agent_msgs[0]),
				  .peer_name = "the agent",
				  .arg = d};
	if (!(d->ep = gp_endpoint_create(&ec)))
		return gp_errprintf(err, "out of memory");
	return 0;
}

static int setup_signals(struct stepd *d)
{
	d->sigfd = gp_sigfd_open(NULL);
	return d->sigfd < 0 ? -1 : 0;
}

static void kill_all(struct stepd *d, int sig, uint32_t grace_ms)
{
	for (size_t i = 0; i < d->nsteps; i++)
		tasks_kill(d->steps[i], sig, grace_ms);
}

/* Reap every child that ended and give it to the step it is a task of. */
static void reap(struct stepd *d)
{
	int st;
	struct rusage ru;
	pid_t pid;
	/* gstepd is a subreaper: orphaned grandchildren land here too and are reaped silently */
	while ((pid = wait4(-1, &st, WNOHANG, &ru)) > 0)
		for (size_t i = 0; i < d->nsteps; i++)
			if (tasks_reaped(d->steps[i], pid, st, &ru))
				break;
}

static void on_signals(struct stepd *d)
{
	struct signalfd_siginfo si;
	bool chld = false;
	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			chld = true;
		} else {
			/* someone stops the supervisor: stop the jobs, then report as usual; a
			 * shell takes nothing more */
			gp_info("signal %u: killing the tasks", si.ssi_signo);
			kill_all(d, SIGTERM, d->kill_grace_ms ? d->kill_grace_ms : 1);
			if (d->shell)
				d->closing = true;
		}
	}
	if (chld)
		reap(d);
}

/* ---- the loop ---- */

static bool finished(const struct stepd *d)
{
	if (d->shell && !d->closing)
		return false;
	return d->nsteps == 0 && gp_outbox_count(d->out) == 0;
}

static void run(struct stepd *d)
{
	size_t cap = 0;
	zmq_pollitem_t *items = NULL;
	struct task **owner = NULL;
	struct step **sowner = NULL;
	int *which = NULL;
	while (1) {
		int64_t now = gp_mono_ms();
		int64_t td = INT64_MAX;
		for (size_t j = 0; j < d->nsteps; j++) {
			struct step *s = d->steps[j];
			if (s->kill_deadline_ms && now >= s->kill_deadline_ms) {
				gp_info("job %llu.%u: grace period over, SIGKILL",
					(unsigned long long)s->launch->job_id, s->launch->attempt);
				tasks_kill_hard(s);
			}
			if (s->pty) { /* first: a terminal that finishes ends its task's wait */
				int64_t pd = gp_ptyserv_tick(s->pty, now);
				if (pd < td)
					td = pd;
			}
			tasks_finish(s, now);
		}
		if (d->hello_due || now >= d->next_hello_ms) {
			/* no acknowledgement since the last hello: the agent may have restarted */
			if (!d->hello_due && gp_outbox_count(d->out) &&
			    gp_outbox_acked(d->out) == d->acked_at_last_hello)
				gp_outbox_rewind(d->out);
			d->acked_at_last_hello = gp_outbox_acked(d->out);
			d->hello_due = true;
			send_hello(d);
		}
		flush(d);
		steps_retire(d);
		if (finished(d))
			break;
		size_t need = 2 + 2 * ntasks_all(d) + PTY_POLL_MAX * d->nsteps;
		if (need > cap) {
			size_t nc = need * 2;
			zmq_pollitem_t *ni = realloc(items, nc * sizeof(*ni));
			if (ni)
				items = ni;
			struct task **no = realloc(owner, nc * sizeof(*no));
			if (no)
				owner = no;
			struct step **ns = realloc(sowner, nc * sizeof(*ns));
			if (ns)
				sowner = ns;
			int *nw = realloc(which, nc * sizeof(*nw));
			if (nw)
				which = nw;
			if (!ni || !no || !ns || !nw) {
				gp_err("out of memory");
				exit(1);
			}
			cap = nc;
		}
		int n = 0;
		items[n++] = (zmq_pollitem_t){.socket = d->sock, .events = ZMQ_POLLIN};
		items[n++] = (zmq_pollitem_t){.fd = d->sigfd, .events = ZMQ_POLLIN};
		bool room = gp_outbox_bytes(d->out) < STEP_OUTBOX_MAX;
		for (size_t j = 0; j < d->nsteps; j++) {
			struct step *s = d->steps[j];
			int64_t sd = tasks_next_deadline(s);
			if (sd < td)
				td = sd;
			for (size_t i = 0; room && i < s->ntasks; i++) {
				for (int k = 1; k <= 2; k++) {
					if (s->tasks[i].fd[k] < 0)
						continue;
					owner[n] = &s->tasks[i];
					sowner[n] = s;
					which[n] = k;
					items[n++] = (zmq_pollitem_t){.fd = s->tasks[i].fd[k],
								      .events = ZMQ_POLLIN};
				}
			}
		}
		int nfds = n; /* the tasks' pipes end here; pty servers' items follow */
		for (size_t j = 0; j < d->nsteps; j++)
			if (d->steps[j]->pty)
				n += (int)gp_ptyserv_poll(d->steps[j]->pty, items, (size_t)n);
		int64_t wake = d->hello_due ? now + 100 : d->next_hello_ms;
		if (td < wake)
			wake = td;
		long timeout = wake > now ? (long)(wake - now) : 0;
		if (zmq_poll(items, n, timeout) < 0 && errno != EINTR) {
			gp_err("poll: %s", zmq_strerror(errno));
			break;
		}
		if (items[1].revents)
			on_signals(d);
		for (int i = 2; i < nfds; i++)
			if (items[i].revents)
				output_read(sowner[i], owner[i], which[i]);
		for (size_t j = 0; j < d->nsteps; j++)
			if (d->steps[j]->pty)
				gp_ptyserv_ready(d->steps[j]->pty, items);
		/* a shell's new steps come in here: the arrays above are rebuilt next pass */
		if (items[0].revents)
			gp_endpoint_dispatch(d->ep, 256);
		/* a SIGCHLD may have raced with the pipes' EOF: reap now so the order holds */
		reap(d);
	}
	free(items);
	free(owner);
	free(sowner);
	free(which);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gstepd --launch FILE --agent ENDPOINT [options]\n"
		"  --launch FILE       the packed Launch to run (removed at the end)\n"
		"  --agent ENDPOINT    gworkerd's local socket (ipc://STATE_DIR/worker.sock)\n"
		"  --node-name NAME    this node's name (default: the host name)\n"
		"  --scratch-dir DIR   one directory per job attempt is made under DIR\n"
		"  --cgroups MODE      auto, v1, v2 or off (default auto)\n"
		"  --allow-root        run jobs owned by root as root\n"
		"  --state-dir DIR     the node's chunk cache is DIR/cache (staged files)\n"
		"  --scheduler EP      the scheduler's chunk store (staged and collected files)\n"
		"  --sched-uid UID     the uid the scheduler's replies must carry\n"
		"  --kill-grace MS     SIGKILL this long after SIGTERM when gstepd is stopped\n"
		"  --log-level LEVEL   err, warn, info or debug\n"
		"  --log-file FILE     append log lines here\n"
		"  --net-iface NAME    the network interface joining the nodes "
		"(GLOO_SOCKET_IFNAME...)\n"
		"  --net-subnet CIDR   its subnet (OMPI_MCA_btl_tcp_if_include...)\n"
		"  --image-cache BYTES the bound on unpacked container images (0: none)\n"
		"  --pull-max BYTES    the largest image pulled from a registry (0: none)\n"
		"  --insecure-registries LIST  registries (host:port) spoken to over plain HTTP\n"
		"  --private-tmp MODE  a job's own /tmp, /var/tmp, /dev/shm: scratch, tmpfs, off\n"
		"  --private-tmp-size BYTES  its tmpfs (0: the job's memory limit)\n"
		"  --private-tmp-keep LIST   paths under them every job sees (a,b)\n"
		"  --shell             a task shell: take further job attempts from the agent\n"
		"                      (StepShellLaunch) until it says StepShellClose\n");
}

/* What the command line sets beside gstepd's context. */
struct args {
	const char *level, *logfile, *launch, *node;
};

/* One option of getopt_long's table: 0, or 1 when it is none of the table's (--help, an
 * unknown option). */
static int set_opt(int c, const char *arg, struct stepd *d, struct args *a)
{
	long v;
	switch (c) {
	case 'l':
		a->launch = arg;
		break;
	case 'a':
		d->agent = arg;
		break;
	case 'n':
		a->node = arg;
		break;
	case 's':
		d->scratch = arg;
		break;
	case 'c':
		d->cgroups = arg;
		break;
	case 'r':
		d->allow_root = true;
		break;
	case 'S':
		d->state_dir = arg;
		break;
	case 'C':
		d->scheduler = arg;
		break;
	case 'U':
		d->sched_uid = arg;
		break;
	case 'k':
		v = strtol(arg, NULL, 10);
		d->kill_grace_ms = v > 0 ? (uint32_t)v : 0;
		break;
	case 'v':
		a->level = arg;
		break;
	case 'f':
		a->logfile = arg;
		break;
	case 'i':
		d->iface = arg;
		break;
	case 'N':
		d->subnet = arg;
		break;
	case 'H':
		d->shell = true;
		break;
	case 'I':
		d->ctr.cache_max = strtoull(arg, NULL, 10);
		break;
	case 'T':
		d->ptmp.mode = arg;
		break;
	case 'Z':
		d->ptmp.size = strtoull(arg, NULL, 10);
		break;
	case 'K':
		d->ptmp.keep = arg;
		break;
	case 'P':
		d->ctr.pull_max = strtoull(arg, NULL, 10);
		break;
	case 'R':
		d->ctr.insecure_registries = arg;
		break;
	default:
		return 1;
	}
	return 0;
}

/* The command line: 0 to go on, or -1 with the exit status in *status. */
static int parse_args(int argc, char **argv, struct stepd *d, struct args *a, int *status)
{
	static const struct option opts[] = {
	    {"launch", required_argument, NULL, 'l'},
	    {"agent", required_argument, NULL, 'a'},
	    {"node-name", required_argument, NULL, 'n'},
	    {"scratch-dir", required_argument, NULL, 's'},
	    {"cgroups", required_argument, NULL, 'c'},
	    {"allow-root", no_argument, NULL, 'r'},
	    {"state-dir", required_argument, NULL, 'S'},
	    {"scheduler", required_argument, NULL, 'C'},
	    {"sched-uid", required_argument, NULL, 'U'},
	    {"kill-grace", required_argument, NULL, 'k'},
	    {"log-level", required_argument, NULL, 'v'},
	    {"log-file", required_argument, NULL, 'f'},
	    {"net-iface", required_argument, NULL, 'i'},
	    {"net-subnet", required_argument, NULL, 'N'},
	    {"shell", no_argument, NULL, 'H'},
	    {"image-cache", required_argument, NULL, 'I'},
	    {"pull-max", required_argument, NULL, 'P'},
	    {"insecure-registries", required_argument, NULL, 'R'},
	    {"private-tmp", required_argument, NULL, 'T'},
	    {"private-tmp-size", required_argument, NULL, 'Z'},
	    {"private-tmp-keep", required_argument, NULL, 'K'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	optind = 0; /* also when forked from gworkerd, which may have used getopt */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1)
		if (set_opt(c, optarg, d, a) != 0) {
			*status = gp_opt_usage_status(usage, c == 'h', 1);
			return -1;
		}
	return 0;
}

/* After the loop: what a loop that broke on an error left, the cgroup pool, the sockets. */
static void stepd_stop(struct stepd *d)
{
	while (d->nsteps) {
		/* a loop that broke on an error: leave nothing behind */
		cleanup(d->steps[d->nsteps - 1]);
		step_free(d->steps[--d->nsteps]);
	}
	size_t idle;
	uint64_t taken, parked;
	gp_cgroup_pool_stats(d->cgpool, &idle, &taken, &parked);
	if (d->cgpool)
		gp_debug("cgroups: %llu taken again, %llu kept, %zu idle removed",
			 (unsigned long long)taken, (unsigned long long)parked, idle);
	gp_cgroup_pool_destroy(&d->cgpool);
	free(d->steps);
	zmq_close(d->sock);
	zmq_ctx_term(d->zctx);
	gp_endpoint_destroy(&d->ep);
	gp_outbox_destroy(&d->out);
	gp_config_destroy(&d->xfer_cfg);
}

int gp_stepd_main(int argc, char **argv)
{
	struct stepd d = {.scratch = "/var/tmp/gpool",
			  .cgroups = "auto",
			  .sigfd = -1,
			  .ptmp = {.mode = "scratch"}};
	struct args a = {.level = "info"};
	char host[256];
	int status;
	if (parse_args(argc, argv, &d, &a, &status) < 0)
		return status;
	int lv = gp_log_level_parse(a.level);
	gp_log_init("gstepd", lv < 0 ? GP_LOG_INFO : lv);
	if (a.logfile && *a.logfile && gp_log_file(a.logfile) < 0)
		fprintf(stderr, "gstepd: cannot open log file '%s': %s\n", a.logfile,
			strerror(errno));
	if (!a.launch || !d.agent) {
		usage(stderr);
		return 1;
	}
	const char *node = a.node;
	if (!node || !*node) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		node = host;
	}
	gp_error_t err = {{0}};
	d.node = node;
	char tag[300];
	snprintf(tag, sizeof(tag), "s%d.%s", (int)getpid(), node);
	if (!(d.out = gp_outbox_create()) ||
	    (d.shell && !(d.cgpool = gp_cgroup_pool_create(tag, CGROUP_POOL_MAX)))) {
		gp_err("out of memory");
		return 1;
	}
	struct step *s = step_load(&d, a.launch);
	if (!s || step_add(&d, s) < 0) {
		step_free(s);
		gp_outbox_destroy(&d.out);
		return 1;
	}
	/* orphans of the tasks become ours, so nothing escapes the count */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (setup_signals(&d) < 0) {
		gp_err("cannot set up: %s", strerror(errno));
		return 1;
	}
	/* prepare before the link exists, so the forks there have no threads to worry about */
	int ok = setup_xfer(&d, &err);
	for (size_t i = 0; i < d.nsteps; i++)
		d.steps[i]->xfer_cfg = d.xfer_cfg, d.steps[i]->cache_dir = d.cache_dir;
	if (ok == 0)
		ok = setup_step(&d, s, &err);
	if (setup_link(&d, &err) < 0) {
		gp_err("%s", err.text);
		cleanup(s);
		return 1;
	}
	d.hello_due = true;
	send_hello(&d);
	if (ok < 0)
		tasks_fail_all(s, err.text);
	else
		tasks_start(s);
	run(&d);
	stepd_stop(&d);
	return 0;
}
