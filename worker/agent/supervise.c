/* supervise.c: the records of the supervisors (gstepd) this agent holds, the job attempts they run
 * and their tasks: their life, re-adoption after a restart (launch files in <state_dir>/steps
 * tell a restarted agent which steps it holds before they say hello), the lease running out,
 * vacates, the cards in use, who listens on each replica's port, the tick. The local socket is
 * supervise_channel.c's, held exits supervise_held.c's, launching supervise_launch.c's
 * (supervise_int.h).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/agent/supervise_int.h"
#include "worker/node/cgroup.h"
#include "worker/node/launchfile.h"
#include "common/log.h"
#include "common/util.h"

#define STEP_FORGET_MS 10000 /* a step silent this long whose process is gone is forgotten */
/* a replica's port: who listens there is checked this often, and this often while some
 * replica's is not its own yet (docs/services.md "Ports"); a replica's processes looked at */
#define PORT_CHECK_MS	   1000
#define PORT_CHECK_FAST_MS 200
#define PORT_CHECK_PIDS	   4096

/* The master port rank 0 binds, when rank 0 is one of the launch's tasks (else 0). */
uint32_t steps_port_here(const Gpool__Launch *l)
{
	for (size_t i = 0; i < l->n_tasks; i++)
		if (l->tasks[i] && l->tasks[i]->rank == 0)
			return l->master_port;
	return 0;
}

bool steps_port_busy(uint32_t port, void *agent)
{
	const struct steps *ss = ((struct agent *)agent)->steps;
	for (size_t i = 0; ss && i < ss->n; i++)
		if (ss->v[i]->port == port)
			return true;
	return false;
}

struct step_rec *steps_rec_find(struct steps *ss, uint64_t job, uint32_t attempt)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->job == job && ss->v[i]->attempt == attempt)
			return ss->v[i];
	return NULL;
}

struct sup *steps_sup_find(struct steps *ss, const char *rid, size_t len)
{
	for (size_t i = 0; i < ss->nsups; i++)
		if (ss->sups[i]->rid_len == len && !memcmp(ss->sups[i]->rid, rid, len))
			return ss->sups[i];
	return NULL;
}

struct sup *steps_sup_new(struct steps *ss, const char *rid)
{
	struct sup **nv = realloc(ss->sups, (ss->nsups + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	ss->sups = nv;
	struct sup *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->rid_len = (size_t)snprintf(u->rid, sizeof(u->rid), "%s", rid);
	u->pid = 0;
	u->last_heard_ms = gp_mono_ms();
	ss->sups[ss->nsups++] = u;
	return u;
}

void steps_sup_free(struct steps *ss, struct sup *u)
{
	for (size_t i = 0; i < ss->nsups; i++) {
		if (ss->sups[i] == u) {
			ss->sups[i] = ss->sups[--ss->nsups];
			free(u);
			return;
		}
	}
}

/* r is supervised by u from now on (the one it had is let go). */
void steps_attach(struct steps *ss, struct step_rec *r, struct sup *u)
{
	struct sup *old = r->sup;
	if (old == u)
		return;
	r->sup = u;
	u->nsteps++;
	u->idle_since_ms = 0;
	if (old && --old->nsteps == 0) {
		if (old->shell)
			old->idle_since_ms = gp_mono_ms();
		else
			steps_sup_free(ss, old);
	}
}

/* A record with a supervisor of its own (routing id "<job>.<attempt>"). */
struct step_rec *steps_rec_add_own(struct steps *ss, uint64_t job, uint32_t attempt,
				   const Gpool__TaskPlacement *const *tp, size_t ntp)
{
	struct step_rec *r = steps_rec_add(ss, job, attempt, tp, ntp);
	if (!r)
		return NULL;
	struct sup *u = steps_sup_find(ss, r->rid, strlen(r->rid));
	if (!u && !(u = steps_sup_new(ss, r->rid))) {
		ss->n--;
		free(r->tasks);
		free(r);
		return NULL;
	}
	steps_attach(ss, r, u);
	return r;
}

struct step_rec *steps_rec_add(struct steps *ss, uint64_t job, uint32_t attempt,
			       const Gpool__TaskPlacement *const *tp, size_t ntp)
{
	struct step_rec **nv = realloc(ss->v, (ss->n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	ss->v = nv;
	struct step_rec *r = calloc(1, sizeof(*r));
	if (!r || (ntp && !(r->tasks = calloc(ntp, sizeof(*r->tasks))))) {
		free(r);
		return NULL;
	}
	r->job = job;
	r->attempt = attempt;
	snprintf(r->rid, sizeof(r->rid), "%" PRIu64 ".%u", job, attempt);
	r->ntasks = ntp;
	r->requeueable = true;
	for (size_t i = 0; i < ntp; i++) {
		Gpool__HeldTask *h = &r->tasks[i].ht;
		gpool__held_task__init(h);
		gpool__rusage__init(&r->tasks[i].ru);
		h->job_id = job;
		h->attempt = attempt;
		h->rank = tp[i]->rank;
		h->requeueable = true;
		for (size_t k = 0; k < tp[i]->n_cards; k++)
			if (tp[i]->cards[k] < 64)
				r->tasks[i].cards |= 1ull << tp[i]->cards[k];
	}
	ss->v[ss->n++] = r;
	return r;
}

/* Whether the lease running out stops a job's tasks: not with --no-requeue (gschedd will not
 * start it elsewhere), nor a service replica's (gschedd may start it elsewhere, but a second
 * copy of a service for a while is harmless, and it keeps serving through a scheduler
 * restart; the stale copy is killed when its node is heard again). */
bool steps_lease_kills(const Gpool__JobSpec *spec)
{
	return !(spec && (spec->no_requeue || spec->service));
}

/* Whether the owner's return vacates a job rather than freezing it (docs/owner.md): one that
 * asked (--no-suspend), one with ranks on other nodes (a frozen rank would stall them), and a
 * service replica that is a gang of ranks (a frozen stage stalls the whole pipeline; the
 * service restarts it on the PCs it still has). */
bool steps_owner_vacates(const Gpool__Launch *l)
{
	const Gpool__JobSpec *sp = l->spec;
	return (sp && sp->no_suspend) || l->local_size < l->size ||
	       (sp && sp->service && sp->service_of && l->size > 1);
}

/* A task that ended by itself before its agent stopped it ended as it would have anyway: an
 * agent restarted while its owner is back vacates the jobs it holds before their shells have
 * told it the tasks that exited meanwhile, and an exit marked vacated then ran a job that had
 * completed again (found by the soak, docs/reliability.md). The same holds for a lease's fence
 * and a stop. The times are the same host's clock. */
bool steps_exit_is_stop(const struct step_rec *r, double exit_time)
{
	if (!r->fenced && !r->vacated && !r->stop_reason)
		return false;
	return !(exit_time > 0 && exit_time < r->stopped_at);
}

/* What the owner policy needs from the launch (owner.h). */
void steps_set_owner_prefs(struct step_rec *r, const Gpool__Launch *l)
{
	r->no_suspend = steps_owner_vacates(l);
	r->ckpt_signal = l->spec ? l->spec->ckpt_signal : 0;
	r->ckpt_sec = l->spec ? l->spec->ckpt_signal_sec : 0;
	r->step_of = l->spec ? l->spec->step_of : 0;
	r->step_of_attempt = l->step_of_attempt;
}

void steps_set_requeueable(struct step_rec *r, bool yes)
{
	r->requeueable = yes;
	for (size_t i = 0; i < r->ntasks; i++)
		r->tasks[i].ht.requeueable = yes;
}

/* What relaying a screening job's results needs from its launch: the flag, the account that
 * writes the results, each task's cards. A job with --chdir writes none the agent reads. */
void steps_set_screen(struct step_rec *r, const Gpool__Launch *l, const struct gp_account *acct)
{
	r->screen = l->spec && l->spec->screen && !(l->spec->chdir && *l->spec->chdir);
	r->owner = acct->uid;
	for (size_t i = 0; i < r->ntasks && i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cards; c++)
			if (l->tasks[i]->cards[c] < 64)
				r->tasks[i].cards |= 1ULL << l->tasks[i]->cards[c];
}

struct task_rec *steps_task_of(struct step_rec *r, uint32_t rank)
{
	for (size_t k = 0; k < r->ntasks; k++)
		if (r->tasks[k].ht.rank == rank)
			return &r->tasks[k];
	return NULL;
}

void steps_rec_forget(struct steps *ss, size_t i)
{
	struct step_rec *r = ss->v[i];
	struct sup *u = r->sup;
	if (u && --u->nsteps == 0) {
		if (u->shell)
			u->idle_since_ms = gp_mono_ms();
		else
			steps_sup_free(ss, u);
	}
	free(r->tasks);
	free(r->stop_reason);
	free(r);
	ss->v[i] = ss->v[--ss->n];
}

/* Re-adopt after a restart: every launch file is a step we hold. */
static void scan_launch_files(struct agent *a, struct steps *ss)
{
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/steps", a->state_dir);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint64_t job;
		uint32_t att;
		if (gp_launch_name_parse(e->d_name, &job, &att) < 0)
			continue;
		char path[4500];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		gp_error_t err;
		Gpool__Launch *l = gp_launch_read(path, &err);
		if (!l) {
			gp_warn("%s", err.text);
			continue;
		}
		/* a shell's step is moved to the shell when the shell's hello names it */
		struct step_rec *r = steps_rec_add_own(
		    ss, job, att, (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
		if (r) {
			r->sup->seq_known = false; /* learnt from its hello */
			r->port = steps_port_here(l);
			steps_set_requeueable(r, steps_lease_kills(l->spec));
			steps_set_owner_prefs(r, l);
			for (size_t i = 0; l->spec && l->spec->service && i < r->ntasks; i++)
				r->tasks[i].ht.port = l->spec->service_port;
			/* the launch file names the account the tasks run as */
			struct gp_account acct;
			struct gp_account_rules rules = {
			    .run_as = NULL, .allow_root = true, .self = geteuid(), .node = a->node};
			gp_error_t e2;
			struct gp_owner owner = {.uid = l->uid, .name = l->user};
			if (l->spec && l->spec->screen &&
			    gp_account_resolve(&rules, &owner, &acct, &e2) == 0)
				steps_set_screen(r, l, &acct);
			gp_info("holding job %" PRIu64 ".%u from before the restart", job, att);
		}
		gpool__launch__free_unpacked(l, NULL);
	}
	/* exits not yet acknowledged by the scheduler */
	steps_exits_load(ss, d, dir);
	closedir(d);
}

struct steps *steps_create(struct agent *a, gp_error_t *err)
{
	struct steps *ss = calloc(1, sizeof(*ss));
	char dir[4200];
	if (!ss) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s/steps", a->state_dir);
	if (gp_mkdir_p(a->state_dir, 0700) < 0 || chmod(a->state_dir, 0700) < 0 ||
	    gp_mkdir_p(dir, 0700) < 0) {
		gp_errprintf(err, "cannot make state directory '%s': %s", a->state_dir,
			     strerror(errno));
		goto fail;
	}
	snprintf(ss->sock_path, sizeof(ss->sock_path), "%s/worker.sock", a->state_dir);
	if (strlen(ss->sock_path) >= 108) {
		gp_errprintf(err, "state directory path '%s' is too long for a socket",
			     a->state_dir);
		goto fail;
	}
	unlink(ss->sock_path);
	if (!(ss->sock = zmq_socket(a->zctx, ZMQ_ROUTER)) ||
	    !(ss->endpoint = steps_endpoint(a, ss))) {
		gp_errprintf(err, "cannot make the local socket: %s", zmq_strerror(errno));
		goto fail;
	}
	int one = 1, zero = 0;
	/* a root-only socket, but still every ROUTER has a largest frame */
	int64_t maxmsg = gp_config_int(a->cfg, "max_message") + 4096;
	zmq_setsockopt(ss->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(ss->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
	zmq_setsockopt(ss->sock, ZMQ_ROUTER_HANDOVER, &one, sizeof(one));
	zmq_setsockopt(ss->sock, ZMQ_LINGER, &zero, sizeof(zero));
	char ep[4300];
	snprintf(ep, sizeof(ep), "ipc://%s", ss->sock_path);
	if (zmq_bind(ss->sock, ep) < 0) {
		gp_errprintf(err, "cannot bind '%s': %s", ep, zmq_strerror(errno));
		goto fail;
	}
	/* an explicitly configured stepd is executed; the default one runs in the fork */
	ss->fork_only = !*gp_config_str(a->cfg, "stepd");
	ss->share = gp_config_bool(a->cfg, "share_stepd");
	if (steps_stepd_argv(a, ss) < 0) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	scan_launch_files(a, ss);
	return ss;
fail:
	steps_destroy(&ss);
	return NULL;
}

void steps_destroy(struct steps **p)
{
	if (!p || !*p)
		return;
	struct steps *ss = *p;
	if (ss->sock)
		zmq_close(ss->sock);
	while (ss->n)
		steps_rec_forget(ss, 0);
	while (ss->nsups)
		steps_sup_free(ss, ss->sups[0]);
	free(ss->v);
	free(ss->sups);
	free(ss->held);
	free(ss->ep);
	gp_endpoint_destroy(&ss->endpoint);
	free(ss);
	*p = NULL;
}

void *steps_socket(struct steps *ss)
{
	return ss->sock;
}

void steps_lease_expired(struct agent *a, int64_t silent_ms)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		bool running = false;
		for (size_t t = 0; t < r->ntasks; t++)
			running |= !r->tasks[t].ht.exited && !r->tasks[t].dropped;
		if (!running)
			continue;
		if (!r->requeueable) {
			gp_warn(
			    "lease expired: no word from the scheduler for %lld ms: job %s keeps "
			    "running (not requeueable)",
			    (long long)silent_ms, r->rid);
			continue;
		}
		gp_warn("lease expired: no word from the scheduler for %lld ms: killing job %s "
			"(requeueable: the scheduler will run it again)",
			(long long)silent_ms, r->rid);
		gpool__kill__init(&r->kill);
		r->kill.job_id = r->job;
		r->kill.attempt = r->attempt;
		r->kill.signal = SIGKILL;
		r->kill.reason = GPOOL__JOB_STATE__NODE_FAIL;
		r->fenced = true;
		r->stopped_at = gp_now();
		steps_deliver_kill(ss, r);
	}
}

size_t steps_live(const struct agent *a, struct steps_live *out, size_t max)
{
	const struct steps *ss = a->steps;
	size_t k = 0;
	for (size_t i = 0; ss && i < ss->n && k < max; i++) {
		const struct step_rec *r = ss->v[i];
		bool live = false;
		for (size_t t = 0; t < r->ntasks; t++)
			live |=
			    !r->tasks[t].ht.exited && !r->tasks[t].acked && !r->tasks[t].dropped;
		if (!live || r->vacated || r->fenced)
			continue;
		out[k++] = (struct steps_live){.job = r->job,
					       .attempt = r->attempt,
					       .no_suspend = r->no_suspend,
					       .ckpt_signal = r->ckpt_signal,
					       .ckpt_sec = r->ckpt_sec,
					       .step_of = r->step_of,
					       .step_of_attempt = r->step_of_attempt};
	}
	return k;
}

int steps_vacate(struct agent *a, uint64_t job, uint32_t attempt, int sig, uint32_t grace_ms)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (r->job != job || r->attempt != attempt)
			continue;
		gpool__kill__init(&r->kill);
		r->kill.job_id = job;
		r->kill.attempt = attempt;
		r->kill.signal = sig;
		r->kill.grace_ms = grace_ms;
		r->kill.reason = GPOOL__JOB_STATE__REQUEUED;
		r->vacated = true;
		r->stopped_at = gp_now();
		steps_deliver_kill(ss, r);
		return 0;
	}
	errno = ENOENT;
	return -1;
}

int steps_stop(struct agent *a, uint64_t job, uint32_t attempt, const char *why)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (r->job != job || r->attempt != attempt || r->vacated || r->fenced)
			continue;
		if (r->stop_reason)
			return 0; /* stopped already */
		if (!(r->stop_reason = strdup(why)))
			return -1;
		r->stopped_at = gp_now();
		gpool__kill__init(&r->kill);
		r->kill.job_id = job;
		r->kill.attempt = attempt;
		r->kill.signal = SIGKILL;
		r->kill.reason = GPOOL__JOB_STATE__FAILED;
		steps_deliver_kill(ss, r);
		return 0;
	}
	errno = ENOENT;
	return -1;
}

uint64_t steps_cards_busy(const struct agent *a)
{
	const struct steps *ss = a->steps;
	uint64_t busy = 0;
	for (size_t i = 0; ss && i < ss->n; i++) {
		const struct step_rec *r = ss->v[i];
		for (size_t k = 0; r->sup->pid >= 0 && k < r->ntasks; k++) {
			const struct task_rec *t = &r->tasks[k];
			if (!t->ht.exited && !t->acked && !t->dropped)
				busy |= t->cards;
		}
	}
	return busy;
}

uint64_t steps_cards_of(const struct agent *a, uint64_t job, uint32_t attempt)
{
	const struct steps *ss = a->steps;
	uint64_t busy = 0;
	for (size_t i = 0; ss && i < ss->n; i++) {
		const struct step_rec *r = ss->v[i];
		if (r->job != job || r->attempt != attempt || r->sup->pid < 0)
			continue;
		for (size_t k = 0; k < r->ntasks; k++) {
			const struct task_rec *t = &r->tasks[k];
			if (!t->ht.exited && !t->acked && !t->dropped)
				busy |= t->cards;
		}
	}
	return busy;
}

/* The processes of replica task t of r: its cgroup's, else (cgroups off) its session's. */
static size_t replica_pids(struct agent *a, const struct step_rec *r, const struct task_rec *t,
			   pid_t *out, size_t max)
{
	char name[320], path[PATH_MAX];
	snprintf(name, sizeof(name), "job%" PRIu64 ".%u.%s", r->job, r->attempt, a->node);
	size_t n = 0;
	FILE *f = gp_cgroup_procs_path(name, path, sizeof(path)) == 0 ? fopen(path, "re") : NULL;
	if (f) {
		int pid;
		while (n < max && fscanf(f, "%d", &pid) == 1)
			out[n++] = pid;
		fclose(f);
		return n;
	}
	return gp_svcport_session(t->ht.pid, out, max);
}

size_t steps_pids_of(struct agent *a, uint64_t job, uint32_t attempt, pid_t *out, size_t max)
{
	const struct steps *ss = a->steps;
	for (size_t i = 0; ss && i < ss->n; i++) {
		const struct step_rec *r = ss->v[i];
		if (r->job != job || r->attempt != attempt || r->sup->pid < 0)
			continue;
		size_t n = 0;
		for (size_t k = 0; k < r->ntasks && n < max; k++) {
			const struct task_rec *t = &r->tasks[k];
			if (t->ht.exited || t->acked || t->dropped || t->ht.pid <= 0)
				continue;
			n += replica_pids(a, r, t, out + n, max - n);
			if (n && r->ntasks > 1)
				break; /* the job's cgroup on this node holds every task's processes
					*/
		}
		return n;
	}
	return 0;
}

/* Who listens on each running replica's port, checked every PORT_CHECK_MS (PORT_CHECK_FAST_MS
 * while one is not its own: a replica starting up); a change goes to the scheduler at once
 * (an early heartbeat). Returns when to check next. */
static int64_t ports_tick(struct agent *a, int64_t now)
{
	struct steps *ss = a->steps;
	if (now < ss->next_port_ms)
		return ss->next_port_ms;
	bool changed = false, unsettled = false;
	pid_t pids[PORT_CHECK_PIDS];
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		for (size_t k = 0; k < r->ntasks; k++) {
			struct task_rec *t = &r->tasks[k];
			if (!t->ht.port || t->ht.exited || t->acked || t->dropped || t->ht.pid <= 0)
				continue;
			size_t n = replica_pids(a, r, t, pids, PORT_CHECK_PIDS);
			Gpool__PortState was = t->seen.state;
			pid_t was_pid = t->seen.pid;
			gp_svcport_owner(t->ht.port, pids, n, &t->seen);
			if (t->seen.state != was || t->seen.pid != was_pid) {
				changed = true;
				if (t->seen.state == GPOOL__PORT_STATE__PORT_FOREIGN)
					gp_warn(
					    "job %s: port %u is held by pid %d (uid %u), outside "
					    "the replica: not ready",
					    r->rid, t->ht.port, (int)t->seen.pid,
					    (unsigned)t->seen.uid);
				else
					gp_debug("job %s: port %u %s", r->rid, t->ht.port,
						 t->seen.state == GPOOL__PORT_STATE__PORT_OWN
						     ? "listened on by the replica"
						     : "not listened on");
			}
			t->ht.port_state = t->seen.state;
			t->ht.port_holder_pid = t->seen.pid;
			t->ht.port_holder_uid = t->seen.uid;
			unsettled |= t->seen.state != GPOOL__PORT_STATE__PORT_OWN;
		}
	}
	if (changed)
		sched_link_soon(a);
	ss->next_port_ms = now + (unsettled ? PORT_CHECK_FAST_MS : PORT_CHECK_MS);
	return changed ? now : ss->next_port_ms;
}

int64_t steps_tick(struct agent *a, int64_t now)
{
	struct steps *ss = a->steps;
	int64_t ports = ports_tick(a, now);
	for (size_t i = 0; i < ss->nsups; i++) {
		struct sup *u = ss->sups[i];
		if (u->pid < 0 || u->child)
			continue; /* done, or its end comes as SIGCHLD */
		bool busy = false;
		for (size_t k = 0; k < ss->n && !busy; k++)
			busy = ss->v[k]->sup == u && !steps_all_settled(ss->v[k]);
		if (!busy)
			continue;
		bool silent = now - u->last_heard_ms > STEP_FORGET_MS;
		bool gone = u->pid > 0 ? (kill(u->pid, 0) < 0 && errno == ESRCH) : silent;
		if (gone && silent) {
			for (size_t k = 0; k < ss->n; k++) {
				struct step_rec *r = ss->v[k];
				char path[4300];
				if (r->sup != u)
					continue;
				gp_launch_path(path, sizeof(path), a->state_dir, r->job,
					       r->attempt);
				if (access(path, F_OK) == 0)
					gp_warn(
					    "step %s ended without cleaning up (its launch file is "
					    "left)",
					    r->rid);
			}
			if (u->shell && u->pid > 0)
				gp_cgroup_sweep_idle(a->node, u->pid);
			steps_sup_gone(a, u, "its supervisor is gone");
		}
	}
	/* idle task shells are closed in steps_flush */
	int64_t next = now + (ss->nsups ? 500 : 1000);
	return ports < next ? ports : next;
}
