/* steps.c: the supervisors (gstepd) this agent holds, and the local socket they speak on.
 *
 * A ROUTER at ipc://<state_dir>/worker.sock; each gstepd connects a DEALER with routing id
 * "<job>.<attempt>". TaskEvent and Output from a supervisor carry its sequence number in
 * Msg.id; while registered, the agent forwards each new one to the scheduler (id 0) and
 * answers StepAck{upto} once per pass. While not registered nothing is forwarded or
 * acknowledged: the supervisor keeps and resends. Launch files in <state_dir>/steps tell a
 * restarted agent which steps it holds before they say hello.
 *
 * Durability: an exited task stays held (listed in every Heartbeat and NodeRegister) until the
 * scheduler answers a message that carried it, which it does only after the exit is on disk.
 * Until then it is also kept in <state_dir>/steps/<job>.<attempt>.exit, written before the
 * supervisor gets the StepAck that lets it forget the exit.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/node/account.h"
#include "worker/node/cgroup.h"
#include "worker/agent/agent.h"
#include "worker/node/launchfile.h"
#include "worker/node/shellkey.h"
#include "worker/stepd/step.h"
#include "worker/node/svcport.h"
#include "worker/stepd/taskevent.h"
#include "common/log.h"
#include "common/endpoint.h"
#include "common/util.h"
#include "common/wire.h"

#define STEP_FORGET_MS 10000 /* a step silent this long whose process is gone is forgotten */
#define EXIT_FILE_MAX  (16u << 20)
#define SHELL_IDLE_MS  2000 /* a task shell without a job this long is told to close */
#define SHELL_STEPS    64   /* job attempts handed to one task shell at once, at most */
/* a replica's port: who listens there is checked this often, and this often while some
 * replica's is not its own yet (docs/services.md "Ports"); a replica's processes looked at */
#define PORT_CHECK_MS	   1000
#define PORT_CHECK_FAST_MS 200
#define PORT_CHECK_PIDS	   4096

struct task_rec {
	Gpool__HeldTask ht;
	Gpool__Rusage ru;
	uint64_t cards;		  /* a bit per card index the task holds */
	uint64_t carried;	  /* first fresh register/heartbeat id that listed its exit */
	bool acked;		  /* the scheduler has its exit on disk: no longer held */
	bool dropped;		  /* its supervisor vanished before it exited: no longer held */
	struct gp_port_seen seen; /* a replica: who listens on its port (ht.port_state) */
};

/* One supervisor process and its channel: a gstepd of one job attempt (routing id
 * "<job>.<attempt>") or a task shell (routing id "s<pid>") that runs several attempts of one
 * account (of one array, or single-task jobs that are not array tasks), one sequence of messages
 * for all of them. */
struct sup {
	char rid[48];
	size_t rid_len;
	pid_t pid;	   /* gstepd (known from the fork, or from its hello) */
	bool child;	   /* pid is our child: its end comes as SIGCHLD */
	bool ours;	   /* launched by this agent (not re-adopted after a restart) */
	uint64_t last_seq; /* highest sequence number forwarded */
	bool seq_known;	   /* last_seq is the supervisor's acknowledged position */
	bool ack_due;
	bool ack_blocked; /* an exit file could not be written: no acknowledgement this pass */
	bool hello_seen;
	int64_t last_heard_ms;
	size_t nsteps; /* step records that name it */
	/* a task shell */
	bool shell;
	bool closing;		 /* told to close: hands nothing more */
	struct gp_shell_key key; /* the jobs it takes (shellkey.h) */
	int64_t idle_since_ms;	 /* when its last step went (0: it holds some) */
};

struct step_rec {
	uint64_t job;
	uint32_t attempt;
	char rid[48]; /* "<job>.<attempt>", for the log */
	struct sup *sup;
	bool seen;	   /* its supervisor has it (hello or an event named it) */
	bool handover_due; /* to be handed to its shell once the shell says hello */
	struct task_rec *tasks;
	size_t ntasks;
	bool requeueable; /* !spec.no_requeue: killed when the lease runs out */
	bool fenced;	  /* killed when the lease ran out: its exits say so */
	bool exit_dirty;  /* the exit file must be written (or removed) */
	bool kill_pending;
	Gpool__Kill kill;
	bool screen;   /* a screening job: its tasks' results are reported (relay.c) */
	uid_t owner;   /* the account its tasks run as (who writes the results) */
	uint32_t port; /* the master port its rank 0 here binds (0: no rank 0 here) */
	/* the PC's owner (owner.h): stopped by a vacate (its exits say so); never frozen (gsub
	 * --no-suspend, or a job of several nodes); its checkpoint signal and grace */
	bool vacated;
	bool no_suspend;
	int ckpt_signal;
	uint32_t ckpt_sec;
};

struct steps {
	char *argv[32]; /* gstepd's command line, argv[2] set per launch */
	char *ep;
	char grace[32];
	char sched_uid[32];
	int shell_arg;	/* argv[shell_arg] is "--shell" for a task shell, else NULL */
	bool fork_only; /* gstepd is the one beside us: run its code without exec */
	void *sock;
	gp_endpoint_t *endpoint; /* over sock: local, unsealed; one routing id per step */
	struct step_rec **v;
	size_t n;
	struct sup **sups;
	size_t nsups;
	bool share; /* share_stepd: small jobs of one account share task shells */
	Gpool__HeldTask **held;
	size_t nheld;
	char sock_path[4200];
	int64_t next_port_ms; /* the replicas' ports are checked then (ports_tick) */
};

static int stepd_argv(struct agent *a, struct steps *ss);

/* The master port rank 0 binds, when rank 0 is one of the launch's tasks (else 0). */
static uint32_t port_here(const Gpool__Launch *l)
{
	for (size_t i = 0; i < l->n_tasks; i++)
		if (l->tasks[i] && l->tasks[i]->rank == 0)
			return l->master_port;
	return 0;
}

/* The launch reserves rank 0's master port (a bind: refused when something on the PC took it
 * since the agent offered it) and lets go of it just before the tasks start, for rank 0 to
 * bind. The idle agent held nothing (ports.h). */
static void reserve_master_port(struct agent *a, const Gpool__Launch *l, uint32_t port)
{
	if (gp_ports_reserve(a->ports, port) < 0)
		gp_warn("job %" PRIu64 ".%u: master port %u is taken on this PC (%s): the job's "
			"rank 0 may fail to bind it",
			l->job_id, l->attempt, port, strerror(errno));
	else
		gp_debug("job %" PRIu64 ".%u: master port %u reserved", l->job_id, l->attempt,
			 port);
	gp_ports_release(a->ports, port);
}

bool steps_port_busy(uint32_t port, void *agent)
{
	const struct steps *ss = ((struct agent *)agent)->steps;
	for (size_t i = 0; ss && i < ss->n; i++)
		if (ss->v[i]->port == port)
			return true;
	return false;
}

static struct step_rec *find(struct steps *ss, uint64_t job, uint32_t attempt)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->job == job && ss->v[i]->attempt == attempt)
			return ss->v[i];
	return NULL;
}

static struct sup *sup_find(struct steps *ss, const char *rid, size_t len)
{
	for (size_t i = 0; i < ss->nsups; i++)
		if (ss->sups[i]->rid_len == len && !memcmp(ss->sups[i]->rid, rid, len))
			return ss->sups[i];
	return NULL;
}

static struct sup *sup_new(struct steps *ss, const char *rid)
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

static void sup_free(struct steps *ss, struct sup *u)
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
static void attach(struct steps *ss, struct step_rec *r, struct sup *u)
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
			sup_free(ss, old);
	}
}

/* A record with a supervisor of its own (routing id "<job>.<attempt>"). */
static struct step_rec *add(struct steps *ss, uint64_t job, uint32_t attempt,
			    const Gpool__TaskPlacement *const *tp, size_t ntp);

static struct step_rec *add_own(struct steps *ss, uint64_t job, uint32_t attempt,
				const Gpool__TaskPlacement *const *tp, size_t ntp)
{
	struct step_rec *r = add(ss, job, attempt, tp, ntp);
	if (!r)
		return NULL;
	struct sup *u = sup_find(ss, r->rid, strlen(r->rid));
	if (!u && !(u = sup_new(ss, r->rid))) {
		ss->n--;
		free(r->tasks);
		free(r);
		return NULL;
	}
	attach(ss, r, u);
	return r;
}

static struct step_rec *add(struct steps *ss, uint64_t job, uint32_t attempt,
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
static bool lease_kills(const Gpool__JobSpec *spec)
{
	return !(spec && (spec->no_requeue || spec->service));
}

/* What the owner policy needs from the launch (owner.h). */
static void set_owner_prefs(struct step_rec *r, const Gpool__Launch *l)
{
	r->no_suspend = (l->spec && l->spec->no_suspend) || l->local_size < l->size;
	r->ckpt_signal = l->spec ? l->spec->ckpt_signal : 0;
	r->ckpt_sec = l->spec ? l->spec->ckpt_signal_sec : 0;
}

static void set_requeueable(struct step_rec *r, bool yes)
{
	r->requeueable = yes;
	for (size_t i = 0; i < r->ntasks; i++)
		r->tasks[i].ht.requeueable = yes;
}

/* What relaying a screening job's results needs from its launch: the flag, the account that
 * writes the results, each task's cards. A job with --chdir writes none the agent reads. */
static void set_screen(struct step_rec *r, const Gpool__Launch *l, const struct gp_account *acct)
{
	r->screen = l->spec && l->spec->screen && !(l->spec->chdir && *l->spec->chdir);
	r->owner = acct->uid;
	for (size_t i = 0; i < r->ntasks && i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cards; c++)
			if (l->tasks[i]->cards[c] < 64)
				r->tasks[i].cards |= 1ULL << l->tasks[i]->cards[c];
}

static struct task_rec *task_of(struct step_rec *r, uint32_t rank)
{
	for (size_t k = 0; k < r->ntasks; k++)
		if (r->tasks[k].ht.rank == rank)
			return &r->tasks[k];
	return NULL;
}

/* Record an exit (once): it is held until the scheduler acknowledges it. */
static void task_exited(struct step_rec *r, struct task_rec *t, int status, bool oom,
			const Gpool__Rusage *ru)
{
	if (t->ht.exited || t->acked)
		return;
	t->ht.exited = true;
	t->ht.status = status;
	t->ht.oom = oom;
	t->ht.fenced = r->fenced;
	t->ht.vacated = r->vacated;
	if (ru) {
		t->ru.user_sec = ru->user_sec;
		t->ru.sys_sec = ru->sys_sec;
		t->ru.max_rss_kb = ru->max_rss_kb;
	}
	t->ht.rusage = &t->ru;
	t->dropped = false;
	r->exit_dirty = true;
}

static bool all_settled(const struct step_rec *r)
{
	for (size_t k = 0; k < r->ntasks; k++)
		if (!r->tasks[k].acked && !r->tasks[k].dropped)
			return false;
	return true;
}

static void exit_path(const struct agent *a, const struct step_rec *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/steps/%s.exit", a->state_dir, r->rid);
}

/* The exits not yet acknowledged, as a packed StepHello; no such exit: the file goes. */
static int write_exit_file(struct agent *a, struct step_rec *r)
{
	char path[4400];
	exit_path(a, r, path, sizeof(path));
	Gpool__HeldTask **v = calloc(r->ntasks ? r->ntasks : 1, sizeof(*v));
	if (!v)
		return -1;
	Gpool__StepHello h = GPOOL__STEP_HELLO__INIT;
	h.job_id = r->job;
	h.attempt = r->attempt;
	h.tasks = v;
	for (size_t k = 0; k < r->ntasks; k++)
		if (r->tasks[k].ht.exited && !r->tasks[k].acked)
			v[h.n_tasks++] = &r->tasks[k].ht;
	int rc = 0;
	if (!h.n_tasks) {
		if (unlink(path) < 0 && errno != ENOENT)
			gp_warn("cannot remove '%s': %s", path, strerror(errno));
	} else {
		size_t n = gpool__step_hello__get_packed_size(&h);
		uint8_t *buf = malloc(n ? n : 1);
		if (!buf) {
			rc = -1;
		} else {
			gpool__step_hello__pack(&h, buf);
			rc = gp_write_file(path, buf, n, 0600);
			if (rc < 0)
				gp_err("cannot write '%s': %s (exit kept in memory only)", path,
				       strerror(errno));
			free(buf);
		}
	}
	free(v);
	if (rc == 0)
		r->exit_dirty = false;
	return rc;
}

static void forget(struct steps *ss, size_t i)
{
	struct step_rec *r = ss->v[i];
	struct sup *u = r->sup;
	if (u && --u->nsteps == 0) {
		if (u->shell)
			u->idle_since_ms = gp_mono_ms();
		else
			sup_free(ss, u);
	}
	free(r->tasks);
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
		struct step_rec *r = add_own(
		    ss, job, att, (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
		if (r) {
			r->sup->seq_known = false; /* learnt from its hello */
			r->port = port_here(l);
			set_requeueable(r, lease_kills(l->spec));
			set_owner_prefs(r, l);
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
				set_screen(r, l, &acct);
			gp_info("holding job %" PRIu64 ".%u from before the restart", job, att);
		}
		gpool__launch__free_unpacked(l, NULL);
	}
	/* exits not yet acknowledged by the scheduler */
	rewinddir(d);
	while ((e = readdir(d))) {
		unsigned long long job;
		unsigned att;
		int end = 0;
		if (sscanf(e->d_name, "%llu.%u.exit%n", &job, &att, &end) != 2 || e->d_name[end] ||
		    !job)
			continue;
		char path[4500];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		uint8_t *data = NULL;
		size_t len = 0;
		Gpool__StepHello *h = NULL;
		if (gp_read_file(path, EXIT_FILE_MAX, &data, &len) < 0 ||
		    !(h = gpool__step_hello__unpack(NULL, len, data))) {
			gp_warn("cannot read exit file '%s': ignored", path);
			free(data);
			continue;
		}
		free(data);
		struct step_rec *r = find(ss, job, att);
		if (!r) {
			Gpool__TaskPlacement *tp = calloc(h->n_tasks + 1, sizeof(*tp));
			Gpool__TaskPlacement **tpp = calloc(h->n_tasks + 1, sizeof(*tpp));
			for (size_t k = 0; tp && tpp && k < h->n_tasks; k++) {
				gpool__task_placement__init(&tp[k]);
				tp[k].rank = h->tasks[k]->rank;
				tpp[k] = &tp[k];
			}
			if (tp && tpp)
				r = add_own(ss, job, att, (const Gpool__TaskPlacement *const *)tpp,
					    h->n_tasks);
			free(tp);
			free(tpp);
			if (r)
				r->sup->pid = -1; /* its supervisor is done */
		}
		for (size_t k = 0; r && k < h->n_tasks; k++) {
			struct task_rec *t = task_of(r, h->tasks[k]->rank);
			if (t) {
				t->ht.requeueable = h->tasks[k]->requeueable;
				task_exited(r, t, h->tasks[k]->status, h->tasks[k]->oom,
					    h->tasks[k]->rusage);
			}
		}
		if (r) {
			r->exit_dirty = false; /* it is what the file says */
			gp_info("holding the exit of job %" PRIu64 ".%u until the scheduler has it",
				(uint64_t)job, att);
		}
		gpool__step_hello__free_unpacked(h, NULL);
	}
	closedir(d);
}

static gp_endpoint_t *step_endpoint(struct agent *a, struct steps *ss);

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
	    !(ss->endpoint = step_endpoint(a, ss))) {
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
	if (stepd_argv(a, ss) < 0) {
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
		forget(ss, 0);
	while (ss->nsups)
		sup_free(ss, ss->sups[0]);
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

/* Send one message to a supervisor (now: the local socket costs no credential). */
static int send_sup(struct steps *ss, struct sup *u, const Gpool__Msg *m)
{
	gp_error_t err;
	return gp_endpoint_send_msg(ss->endpoint, (const uint8_t *)u->rid, u->rid_len, m, &err);
}

static int send_step(struct steps *ss, struct step_rec *r, const Gpool__Msg *m)
{
	return send_sup(ss, r->sup, m);
}

static void deliver_kill(struct steps *ss, struct step_rec *r)
{
	if (r->handover_due) {
		r->kill_pending = true; /* its shell gets it after the job itself */
		return;
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_KILL;
	m.kill = &r->kill;
	if (send_step(ss, r, &m) == 0) {
		r->kill_pending = false;
		gp_debug("kill forwarded to job %s", r->rid);
	} else {
		/* not connected yet: deliver when it says hello */
		r->kill_pending = true;
	}
}

void steps_kill(struct agent *a, const Gpool__Kill *k)
{
	struct steps *ss = a->steps;
	int hit = 0;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (r->job != k->job_id || (k->attempt && r->attempt != k->attempt))
			continue;
		gpool__kill__init(&r->kill);
		r->kill.job_id = k->job_id;
		r->kill.attempt = r->attempt;
		r->kill.signal = k->signal;
		r->kill.grace_ms = k->grace_ms;
		r->kill.reason = k->reason;
		deliver_kill(ss, r);
		hit++;
	}
	if (!hit)
		gp_info("kill for job %" PRIu64 ".%u, which this node does not hold: ignored",
			k->job_id, k->attempt);
}

/* Answer every task of a launch TASK_FAILED_TO_START; the tasks stay held as exited
 * (status 1 << 8) until the scheduler acknowledges them. */
static void fail_tasks(struct agent *a, struct step_rec *r, const char *why)
{
	for (size_t i = 0; i < r->ntasks; i++) {
		struct task_rec *t = &r->tasks[i];
		if (t->ht.exited || t->acked)
			continue;
		task_exited(r, t, 1 << 8, false, NULL);
		Gpool__TaskEvent ev;
		Gpool__Msg m;
		gp_task_failed_msg(&ev, &m, r->job, r->attempt, t->ht.rank, why);
		sched_link_queue(a, &m);
	}
}

static void refuse(struct agent *a, const Gpool__Launch *l, const char *why)
{
	struct steps *ss = a->steps;
	gp_warn("job %" PRIu64 ".%u refused: %s", l->job_id, l->attempt, why);
	struct step_rec *r = find(ss, l->job_id, l->attempt);
	if (!r)
		r = add_own(ss, l->job_id, l->attempt,
			    (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	if (!r) {
		gp_err("job %" PRIu64 ".%u: out of memory: refusal not held", l->job_id,
		       l->attempt);
		return;
	}
	if (!r->sup->shell)
		r->sup->pid = -1;
	r->handover_due = false;
	set_requeueable(r, !(l->spec && l->spec->no_requeue));
	fail_tasks(a, r, why);
}

/* Start gstepd detached: our child in its own session, so that it outlives this agent
 * (systemd KillMode=process; a dying parent leaves it to the next subreaper). Nothing here
 * waits for the child: an exec that fails ends it with STEPD_EXEC_FAILED, reaped later. */
#define STEPD_EXEC_FAILED 127

static pid_t spawn_stepd(struct agent *a, const char *launch_path, bool shell, gp_error_t *err)
{
	struct steps *ss = a->steps;
	pid_t pid = fork();
	if (pid < 0) {
		gp_errprintf(err, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		if (null > 2)
			close(null);
	}
	ss->argv[2] = (char *)launch_path;
	if (shell)
		ss->argv[ss->shell_arg] = "--shell";
	int keep = -1;
	const char *lf = gp_config_str(a->cfg, "log_file");
	if (ss->fork_only && *lf) {
		/* the log reopened here lands on the lowest free descriptor: keep that one */
		if ((keep = open("/dev/null", O_RDONLY)) >= 0)
			close(keep);
		if (gp_log_file(lf) < 0)
			keep = -1;
	}
	/* stdout/stderr stay: gstepd logs where the agent does */
	if (keep > 3)
		close_range(3, (unsigned)keep - 1, 0);
	if (close_range(keep >= 3 ? (unsigned)keep + 1 : 3, ~0u, 0) < 0)
		for (int fd = 3; fd < 1024; fd++)
			if (fd != keep)
				close(fd);
	if (ss->fork_only) {
		/* no exec, no dynamic loading: the supervisor's code is in this binary; it makes
		 * its own ZeroMQ context (the agent's threads do not exist here) */
		prctl(PR_SET_NAME, "gstepd");
		int argc = 0;
		while (ss->argv[argc])
			argc++;
		_exit(gp_stepd_main(argc, ss->argv));
	}
	execv(ss->argv[0], ss->argv);
	char msg[600];
	int n = snprintf(msg, sizeof(msg), "gworkerd: cannot execute gstepd '%s': %s\n",
			 ss->argv[0], strerror(errno));
	if (n > 0 && write(2, msg, (size_t)n) < 0) {
	}
	_exit(STEPD_EXEC_FAILED);
}

/* gstepd's argument vector, the same for every launch but the launch file (argv[2]). */
static int stepd_argv(struct agent *a, struct steps *ss)
{
	const gp_config_t *c = a->cfg;
	char ep[4300];
	snprintf(ep, sizeof(ep), "ipc://%s", ss->sock_path);
	snprintf(ss->grace, sizeof(ss->grace), "%lld", (long long)gp_config_int(c, "kill_grace"));
	int n = 0;
	ss->argv[n++] = a->stepd;
	ss->argv[n++] = "--launch";
	ss->argv[n++] = NULL;
	ss->argv[n++] = "--agent";
	if (!(ss->ep = strdup(ep)))
		return -1;
	ss->argv[n++] = ss->ep;
	ss->argv[n++] = "--node-name";
	ss->argv[n++] = a->node;
	ss->argv[n++] = "--scratch-dir";
	ss->argv[n++] = (char *)gp_config_str(c, "scratch_dir");
	ss->argv[n++] = "--cgroups";
	ss->argv[n++] = (char *)gp_config_str(c, "cgroups");
	ss->argv[n++] = "--kill-grace";
	ss->argv[n++] = ss->grace;
	ss->argv[n++] = "--log-level";
	ss->argv[n++] = (char *)gp_config_str(c, "log_level");
	if (*gp_config_str(c, "log_file") && !ss->fork_only) {
		ss->argv[n++] = "--log-file";
		ss->argv[n++] = (char *)gp_config_str(c, "log_file");
	}
	if (gp_config_bool(c, "allow_root"))
		ss->argv[n++] = "--allow-root";
	if (a->iface[0]) {
		ss->argv[n++] = "--net-iface";
		ss->argv[n++] = a->iface;
	}
	if (a->subnet[0]) {
		ss->argv[n++] = "--net-subnet";
		ss->argv[n++] = a->subnet;
	}
	/* staged and collected files: the node's cache and the scheduler's chunk store */
	snprintf(ss->sched_uid, sizeof(ss->sched_uid), "%lld",
		 (long long)gp_config_int(c, "sched_uid"));
	ss->argv[n++] = "--state-dir";
	ss->argv[n++] = (char *)gp_config_str(c, "state_dir");
	ss->argv[n++] = "--scheduler";
	ss->argv[n++] = (char *)gp_config_str(c, "scheduler");
	ss->argv[n++] = "--sched-uid";
	ss->argv[n++] = ss->sched_uid;
	ss->shell_arg = n;
	ss->argv[n] = NULL;
	ss->argv[n + 1] = NULL;
	return 0;
}

int steps_reconfigure(struct agent *a)
{
	struct steps *ss = a->steps;
	char *old = ss->ep;
	ss->ep = NULL;
	if (stepd_argv(a, ss) < 0) {
		ss->ep = old;
		return -1;
	}
	free(old);
	return 0;
}

/* A free port for a new replica, none of those given to the replicas this node holds. */
static uint32_t service_port(struct steps *ss, uint32_t wish)
{
	size_t n = 0;
	for (size_t i = 0; i < ss->n; i++)
		n += ss->v[i]->ntasks;
	uint32_t *taken = calloc(n ? n : 1, sizeof(*taken));
	if (!taken)
		return 0;
	size_t k = 0;
	for (size_t i = 0; i < ss->n; i++)
		for (size_t t = 0; t < ss->v[i]->ntasks; t++)
			if (ss->v[i]->tasks[t].ht.port && !ss->v[i]->tasks[t].ht.exited)
				taken[k++] = ss->v[i]->tasks[t].ht.port;
	uint32_t p = gp_svcport_pick(wish, taken, k);
	free(taken);
	return p;
}

/* A task shell of key k (l's array or none, l's account) that takes one more job; NULL: none. */
static struct sup *shell_for(struct steps *ss, const struct gp_shell_key *k)
{
	for (size_t i = 0; i < ss->nsups; i++) {
		struct sup *u = ss->sups[i];
		if (u->shell && u->ours && !u->closing && u->pid > 0 &&
		    gp_shell_key_eq(&u->key, k) && u->nsteps < SHELL_STEPS)
			return u;
	}
	return NULL;
}

static int send_handover(struct steps *ss, struct step_rec *r, const char *path)
{
	uint32_t ranks[64];
	Gpool__StepShellLaunch sl = GPOOL__STEP_SHELL_LAUNCH__INIT;
	sl.job_id = r->job;
	sl.attempt = r->attempt;
	sl.launch_path = (char *)path;
	for (size_t i = 0; i < r->ntasks && i < 64; i++)
		ranks[sl.n_ranks++] = r->tasks[i].ht.rank;
	sl.ranks = ranks;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_STEP_SHELL_LAUNCH;
	m.step_shell_launch = &sl;
	return send_sup(ss, r->sup, &m);
}

/* Hand the launch (its file written at path) to the shell u: held from now on, as with a
 * gstepd of its own; a shell that has not said hello yet gets it when it does. */
static int hand_to_shell(struct agent *a, struct sup *u, const Gpool__Launch *l, const char *path)
{
	struct steps *ss = a->steps;
	struct step_rec *r = add(ss, l->job_id, l->attempt,
				 (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	if (!r)
		return -1;
	attach(ss, r, u);
	set_requeueable(r, lease_kills(l->spec));
	set_owner_prefs(r, l);
	if ((r->port = port_here(l)))
		reserve_master_port(a, l, r->port);
	r->handover_due = !u->hello_seen || send_handover(ss, r, path) < 0;
	gp_debug("job %" PRIu64 ".%u: to task shell %s%s", l->job_id, l->attempt, u->rid,
		 r->handover_due ? " (when it says hello)" : "");
	return 0;
}

/* The jobs handed to shell u before it said hello (and kills that came for them). */
static void handovers_flush(struct agent *a, struct sup *u)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (r->sup != u || !r->handover_due)
			continue;
		char path[4300];
		if (gp_launch_path(path, sizeof(path), a->state_dir, r->job, r->attempt) < 0 ||
		    send_handover(ss, r, path) < 0)
			return;
		r->handover_due = false;
		if (r->kill_pending)
			deliver_kill(ss, r);
	}
}

void steps_launch(struct agent *a, const Gpool__Launch *l)
{
	struct steps *ss = a->steps;
	char why[sizeof(((gp_error_t *)0)->text) + 300];
	bool shell_new = false;
	if (!l->job_id || !l->spec || !l->spec->n_argv || !l->n_tasks) {
		gp_warn("launch of job %" PRIu64 ".%u without a command or tasks: dropped",
			l->job_id, l->attempt);
		if (l->job_id && l->n_tasks && !find(ss, l->job_id, l->attempt))
			refuse(a, l, "launch without a command");
		return;
	}
	if (find(ss, l->job_id, l->attempt)) {
		gp_info("launch of job %" PRIu64 ".%u, which this node already holds: ignored",
			l->job_id, l->attempt);
		return;
	}
	struct gp_account acct;
	gp_error_t err = {{0}};
	struct gp_account_rules rules = {.run_as = gp_config_str(a->cfg, "run_as"),
					 .allow_root = gp_config_bool(a->cfg, "allow_root"),
					 .self = geteuid(),
					 .node = a->node,
					 .policy = &a->uids};
	struct gp_owner owner = {.uid = l->uid, .name = l->user};
	if (gp_account_resolve(&rules, &owner, &acct, &err) < 0) {
		refuse(a, l, err.text);
		return;
	}
	char path[4300];
	if (gp_launch_path(path, sizeof(path), a->state_dir, l->job_id, l->attempt) < 0) {
		refuse(a, l, "state directory path too long");
		return;
	}
	/* gstepd resolves the account again from the launch: with run_as, hand it that name */
	Gpool__Launch copy = *l;
	copy.user = acct.name;
	copy.uid = acct.uid;
	copy.gid = acct.gid;
	/* a service replica gets its own free port (GPOOL_PORT): --port is a wish */
	Gpool__JobSpec spec_copy;
	uint32_t port = 0;
	if (l->spec->service) {
		port = service_port(ss, l->spec->service_port);
		if (!port) {
			snprintf(why, sizeof(why), "node %s: no free port for the replica: %s",
				 a->node, strerror(errno));
			refuse(a, l, why);
			return;
		}
		spec_copy = *l->spec;
		spec_copy.service_port = port;
		copy.spec = &spec_copy;
	}
	if (gp_launch_write(path, &copy, &err) < 0) {
		snprintf(why, sizeof(why), "node %s: %s", a->node, err.text);
		refuse(a, l, why);
		return;
	}
	/* a small job goes to a task shell of its account (and array) when one takes more */
	struct gp_shell_key key;
	gp_shell_key_of(l, acct.uid, acct.gid, acct.name, &key);
	if (ss->share && gp_shell_eligible(l)) {
		struct sup *u = shell_for(ss, &key);
		if (u) {
			if (hand_to_shell(a, u, l, path) == 0)
				return;
		} else {
			shell_new = true;
		}
	}
	/* held from now on: the scheduler must see it before the supervisor says hello */
	struct step_rec *r = add_own(ss, l->job_id, l->attempt,
				     (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	pid_t pid = -1;
	if (r) {
		r->sup->seq_known = true;
		for (size_t i = 0; i < r->ntasks; i++)
			r->tasks[i].ht.port = port;
		set_requeueable(r, lease_kills(l->spec));
		set_owner_prefs(r, l);
		set_screen(r, l, &acct);
		if ((r->port = port_here(l)))
			reserve_master_port(a, l, r->port);
		pid = spawn_stepd(a, path, shell_new, &err);
	}
	if (pid < 0) {
		snprintf(why, sizeof(why), "node %s: %s", a->node, r ? err.text : "out of memory");
		unlink(path);
		refuse(a, l, why);
		return;
	}
	struct sup *u = r->sup;
	if (shell_new) {
		/* the shell's routing id is its pid: the record of its first job moves to it */
		char rid[48];
		snprintf(rid, sizeof(rid), "s%d", (int)pid);
		struct sup *sh = sup_new(ss, rid);
		if (sh) {
			sh->shell = true;
			sh->key = key;
			attach(ss, r, sh);
			u = sh;
		}
	}
	u->pid = pid;
	u->child = true;
	u->ours = true;
	u->seq_known = true;
	gp_debug("job %" PRIu64 ".%u: %zu task(s), gstepd pid %d%s, as '%s'", l->job_id, l->attempt,
		 l->n_tasks, (int)pid, u->shell ? " (task shell)" : "", acct.name);
}

/* ---- messages from supervisors ---- */

static void on_hello(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	struct sup *u = peer;
	const Gpool__StepHello *h = m->step_hello;
	struct step_rec *own = NULL;
	if (!u->shell) {
		own = find(a->steps, h->job_id, h->attempt);
		if (!own || own->sup != u) {
			gp_warn("step %s says it is job %" PRIu64 ".%u: dropped", u->rid, h->job_id,
				h->attempt);
			return;
		}
	}
	if (!u->hello_seen)
		gp_debug("step %s (pid %d) connected", u->rid, (int)h->pid);
	u->hello_seen = true;
	if (u->pid != h->pid) {
		u->pid = h->pid;
		u->child = false;
	}
	/* a hello's Msg.id is the supervisor's acknowledged position: after our restart, what
	 * follows it is forwarded in order from there */
	if (!u->seq_known) {
		u->last_seq = m->id;
		u->seq_known = true;
	}
	if (own)
		own->seen = true;
	for (size_t i = 0; i < h->n_tasks; i++) {
		const Gpool__HeldTask *ht = h->tasks[i];
		struct step_rec *r = own ? own : find(a->steps, ht->job_id, ht->attempt);
		if (!r)
			continue;
		if (r->sup != u) {
			/* after our restart: a shell names the jobs it runs */
			if (!u->shell || r->sup->shell)
				continue;
			attach(a->steps, r, u);
			gp_info("job %s runs in task shell %s", r->rid, u->rid);
		}
		r->seen = true;
		struct task_rec *t = task_of(r, ht->rank);
		if (!t || t->acked)
			continue;
		t->ht.pid = ht->pid;
		if (ht->port)
			t->ht.port = ht->port;
		/* an exit is held from its TASK_EXITED (status, rusage), not from a hello */
	}
	if (u->shell)
		handovers_flush(a, u);
	for (size_t i = 0; i < a->steps->n; i++) {
		struct step_rec *r = a->steps->v[i];
		if (r->sup == u && r->kill_pending && !r->handover_due)
			deliver_kill(a->steps, r);
	}
}

static void update_task(struct step_rec *r, const Gpool__TaskEvent *ev)
{
	struct task_rec *t = task_of(r, ev->rank);
	if (!t || t->acked)
		return;
	if (ev->pid)
		t->ht.pid = ev->pid;
	if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED)
		task_exited(r, t, ev->status, ev->oom, ev->rusage);
	else if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START)
		task_exited(r, t, 1 << 8, false, NULL);
}

/* TaskEvent and Output: forward new ones in order, acknowledge once per pass. */
static void on_event(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	struct sup *u = peer;
	uint64_t job =
	    m->m_case == GPOOL__MSG__M_TASK_EVENT ? m->task_event->job_id : m->output->job_id;
	uint32_t att =
	    m->m_case == GPOOL__MSG__M_TASK_EVENT ? m->task_event->attempt : m->output->attempt;
	if (!sched_link_up(a->link))
		return; /* not acknowledged: the supervisor sends it again */
	if (m->id && !u->seq_known)
		return; /* after our restart: wait for its hello, then its resend */
	if (m->id && m->id <= u->last_seq) {
		u->ack_due = true; /* a resend of what we forwarded: acknowledge again */
		return;
	}
	if (m->id && m->id != u->last_seq + 1)
		return; /* a gap (sent to the agent before us): it resends in order */
	struct step_rec *r = find(a->steps, job, att);
	if (!r || r->sup != u) {
		/* taken in its place in the sequence, so what follows is not held up */
		gp_warn("step %s sent an event for job %" PRIu64 ".%u: dropped", u->rid, job, att);
	} else {
		r->seen = true;
		/* a screening task's grades go first: gschedd checks them against the running
		 * job */
		if (r->screen && m->m_case == GPOOL__MSG__M_TASK_EVENT &&
		    m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
			struct task_rec *t = task_of(r, m->task_event->rank);
			if (t && !t->ht.exited && !t->acked)
				screen_relay(a, r->job, r->attempt, t->ht.rank, t->cards, r->owner);
		}
		Gpool__Msg fwd = *m;
		fwd.id = 0;
		Gpool__TaskEvent ev;
		if ((r->fenced || r->vacated) && m->m_case == GPOOL__MSG__M_TASK_EVENT &&
		    m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
			ev = *m->task_event; /* the scheduler requeues it rather than fail it */
			ev.fenced = r->fenced;
			ev.vacated = r->vacated;
			fwd.task_event = &ev;
		}
		sched_link_queue(a, &fwd);
		if (m->m_case == GPOOL__MSG__M_TASK_EVENT)
			update_task(r, m->task_event);
	}
	if (m->id) {
		u->last_seq = m->id;
		u->ack_due = true;
	}
}

static const struct gp_ep_handler step_msgs[] = {
    {GPOOL__MSG__M_STEP_HELLO, GP_EP_ANYONE, on_hello, "step_hello"},
    {GPOOL__MSG__M_TASK_EVENT, GP_EP_ANYONE, on_event, "task_event"},
    {GPOOL__MSG__M_OUTPUT, GP_EP_ANYONE, on_event, "output"},
};

/* A routing id "<job>.<attempt>" or "s<pid>" (a task shell): the supervisor it names, adopted
 * from its hello if unknown (its launch file was lost or an earlier agent started it). */
static struct sup *sup_of(struct steps *ss, const char *rid, size_t len, const Gpool__Batch *b)
{
	char buf[48];
	if (len == 0 || len >= sizeof(buf))
		return NULL;
	memcpy(buf, rid, len);
	buf[len] = '\0';
	struct sup *u = sup_find(ss, buf, len);
	if (u)
		return u;
	const Gpool__StepHello *h = NULL;
	for (size_t i = 0; i < b->n_msgs && !h; i++)
		if (b->msgs[i]->m_case == GPOOL__MSG__M_STEP_HELLO)
			h = b->msgs[i]->step_hello;
	int end = 0;
	int pid;
	if (buf[0] == 's') {
		if (sscanf(buf + 1, "%d%n", &pid, &end) != 1 || buf[1 + end] || pid <= 0 || !h ||
		    h->pid != pid)
			return NULL;
		if (!(u = sup_new(ss, buf)))
			return NULL;
		u->shell = true;
		u->closing = false;
		u->seq_known = false;
		u->pid = pid;
		u->idle_since_ms = gp_mono_ms();
		gp_info("adopted task shell %s", u->rid);
		return u;
	}
	unsigned long long job;
	unsigned att;
	if (sscanf(buf, "%llu.%u%n", &job, &att, &end) != 2 || buf[end] || !job)
		return NULL;
	if (!h || h->job_id != job || h->attempt != att)
		return NULL;
	Gpool__TaskPlacement *tp = calloc(h->n_tasks ? h->n_tasks : 1, sizeof(*tp));
	Gpool__TaskPlacement **tpp = calloc(h->n_tasks ? h->n_tasks : 1, sizeof(*tpp));
	struct step_rec *r = NULL;
	if (tp && tpp) {
		for (size_t k = 0; k < h->n_tasks; k++) {
			gpool__task_placement__init(&tp[k]);
			tp[k].rank = h->tasks[k]->rank;
			tpp[k] = &tp[k];
		}
		r = add_own(ss, job, att, (const Gpool__TaskPlacement *const *)tpp, h->n_tasks);
		if (r) {
			r->sup->seq_known = false;
			set_requeueable(r, !h->n_tasks || h->tasks[0]->requeueable);
			gp_info("adopted job %s", r->rid);
		}
	}
	free(tp);
	free(tpp);
	return r ? r->sup : NULL;
}

/* The supervisor an envelope's routing id names (adopted from its hello when unknown): the
 * peer its messages' handlers get. */
static int on_accept(void *arg, const struct gp_ep_envelope *e, void **peer)
{
	struct agent *a = arg;
	struct sup *u = sup_of(a->steps, (const char *)e->rid, e->rid_len, e->batch);
	if (!u) {
		gp_warn("dropped a message from an unknown supervisor");
		return -1;
	}
	u->last_heard_ms = gp_mono_ms();
	*peer = u;
	return 0;
}

static void on_rejected(void *arg, void *peer, const struct gp_ep_envelope *e, const Gpool__Msg *m,
			Gpool__ErrorCode code, const char *why)
{
	const struct sup *u = peer;
	gp_warn("step %s sent an unexpected message (type %d): dropped", u->rid, (int)m->m_case);
}

static gp_endpoint_t *step_endpoint(struct agent *a, struct steps *ss)
{
	struct gp_ep_config c = {
	    .sock = ss->sock,
	    .routed = true,
	    .max_message = (size_t)gp_config_int(a->cfg, "max_message"),
	    .handlers = step_msgs,
	    .nhandlers = sizeof(step_msgs) / sizeof(step_msgs[0]),
	    .peer_name = "a supervisor",
	    .hooks = {.accept = on_accept, .rejected = on_rejected},
	    .arg = a,
	};
	return gp_endpoint_create(&c);
}

/* An envelope that came another way (the fuzz harness): dispatched as one received. */
void steps_handle(struct agent *a, const char *rid, size_t len, const Gpool__Batch *b)
{
	struct gp_ep_envelope e = {
	    .rid = (const uint8_t *)rid, .rid_len = len, .addr = "local", .batch = b};
	e.from.uid = getuid();
	e.from.gid = getgid();
	gp_endpoint_deliver(a->steps->endpoint, &e);
}

void steps_recv(struct agent *a)
{
	gp_endpoint_dispatch(a->steps->endpoint, 256);
}

void steps_flush(struct agent *a)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->nsups; i++)
		ss->sups[i]->ack_blocked = false;
	/* on disk before the supervisor may forget it */
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (r->exit_dirty && write_exit_file(a, r) < 0)
			r->sup->ack_blocked = true; /* not acknowledged: it sends again, we retry */
	}
	int64_t now = gp_mono_ms();
	for (size_t i = 0; i < ss->nsups;) {
		struct sup *u = ss->sups[i];
		if (u->ack_due && !u->ack_blocked) {
			Gpool__StepAck ack = GPOOL__STEP_ACK__INIT;
			ack.upto = u->last_seq;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_STEP_ACK;
			m.step_ack = &ack;
			if (send_sup(ss, u, &m) == 0)
				u->ack_due = false;
		}
		/* a task shell idle for the grace period closes; it hands nothing more */
		if (u->shell && !u->nsteps && !u->ack_due &&
		    (u->closing || u->pid <= 0 ||
		     (u->idle_since_ms && now - u->idle_since_ms >= SHELL_IDLE_MS))) {
			if (!u->closing && u->pid > 0) {
				Gpool__StepShellClose c = GPOOL__STEP_SHELL_CLOSE__INIT;
				Gpool__Msg m = GPOOL__MSG__INIT;
				m.m_case = GPOOL__MSG__M_STEP_SHELL_CLOSE;
				m.step_shell_close = &c;
				if (send_sup(ss, u, &m) == 0) {
					u->closing = true;
					gp_info("task shell %s: idle, closed", u->rid);
				}
			}
			/* our child is kept until reaped (SIGCHLD), another is forgotten now */
			if (u->closing && !u->child) {
				sup_free(ss, u);
				continue;
			}
		}
		i++;
	}
	for (size_t i = 0; i < ss->n;) {
		struct step_rec *r = ss->v[i];
		if (all_settled(r) && !r->sup->ack_due && !r->exit_dirty) {
			forget(ss, i);
			continue;
		}
		i++;
	}
}

Gpool__HeldTask **steps_held(struct agent *a, size_t *n, uint64_t msg_id, bool fresh)
{
	struct steps *ss = a->steps;
	size_t total = 0;
	for (size_t i = 0; i < ss->n; i++)
		total += ss->v[i]->ntasks;
	Gpool__HeldTask **nv = realloc(ss->held, (total ? total : 1) * sizeof(*nv));
	if (!nv) {
		*n = 0;
		return ss->held;
	}
	ss->held = nv;
	size_t k = 0;
	for (size_t i = 0; i < ss->n; i++) {
		for (size_t t = 0; t < ss->v[i]->ntasks; t++) {
			struct task_rec *tr = &ss->v[i]->tasks[t];
			if (tr->acked || tr->dropped)
				continue;
			/* a register resent under an old id may be answered for a copy that did not
			 * carry this exit: only a fresh id counts */
			if (tr->ht.exited && !tr->carried && fresh)
				tr->carried = msg_id;
			uint64_t fms = 0;
			tr->ht.frozen =
			    owner_step_frozen(a, ss->v[i]->job, ss->v[i]->attempt, &fms);
			tr->ht.frozen_ms = fms;
			ss->held[k++] = &tr->ht;
		}
	}
	*n = k;
	return ss->held;
}

void steps_acked(struct agent *a, uint64_t msg_id)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		for (size_t t = 0; t < r->ntasks; t++) {
			struct task_rec *tr = &r->tasks[t];
			if (!tr->ht.exited || tr->acked || !tr->carried || tr->carried > msg_id)
				continue;
			tr->acked = true;
			r->exit_dirty = true;
			gp_debug("job %s rank %u: exit acknowledged by the scheduler", r->rid,
				 tr->ht.rank);
		}
	}
}

/* A supervisor is gone: what it had not reported exited is lost (not listed any more: the
 * scheduler requeues or fails it), or never started. */
static void stepd_gone(struct agent *a, struct step_rec *r, const char *why)
{
	if (r->sup->ours && (!r->seen || r->handover_due)) {
		r->handover_due = false;
		fail_tasks(a, r, why);
		return;
	}
	for (size_t t = 0; t < r->ntasks; t++) {
		struct task_rec *tr = &r->tasks[t];
		if (!tr->ht.exited && !tr->dropped) {
			tr->dropped = true;
			gp_warn("job %s rank %u: %s: task lost", r->rid, tr->ht.rank, why);
		}
	}
}

/* Every job of supervisor u: it is gone. */
static void sup_gone(struct agent *a, struct sup *u, const char *why)
{
	struct steps *ss = a->steps;
	u->pid = -1;
	u->closing = true;
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->sup == u)
			stepd_gone(a, ss->v[i], why);
}

void steps_reaped(struct agent *a, pid_t pid, int status)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->nsups; i++) {
		struct sup *u = ss->sups[i];
		if (u->pid != pid || !u->child)
			continue;
		u->child = false;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			u->pid = -1;
			u->closing = true;
			/* a shell that ended on its own leaves nothing to hold; its jobs' records
			 * go with their exits */
			if (u->shell && !u->nsteps)
				sup_free(ss, u);
			return;
		}
		char why[4600];
		if (WIFEXITED(status) && WEXITSTATUS(status) == STEPD_EXEC_FAILED && !u->hello_seen)
			snprintf(why, sizeof(why), "node %s: cannot execute gstepd '%s'", a->node,
				 a->stepd);
		else if (WIFEXITED(status))
			snprintf(why, sizeof(why), "node %s: gstepd exited with status %d", a->node,
				 WEXITSTATUS(status));
		else
			snprintf(why, sizeof(why), "node %s: gstepd killed by signal %d", a->node,
				 WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		if (u->shell) /* a shell killed: its idle cgroups are left (cgroup.h) */
			gp_cgroup_sweep_idle(a->node, pid);
		sup_gone(a, u, why);
		if (u->shell && !u->nsteps)
			sup_free(ss, u);
		return;
	}
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
		deliver_kill(ss, r);
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
					       .ckpt_sec = r->ckpt_sec};
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
		deliver_kill(ss, r);
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
			busy = ss->v[k]->sup == u && !all_settled(ss->v[k]);
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
			sup_gone(a, u, "its supervisor is gone");
		}
	}
	/* idle task shells are closed in steps_flush */
	int64_t next = now + (ss->nsups ? 500 : 1000);
	return ports < next ? ports : next;
}
