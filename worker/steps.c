/* steps.c: the supervisors (gstepd) this agent holds, and the local socket they speak on.
 *
 * A ROUTER at ipc://<state_dir>/worker.sock; each gstepd connects a DEALER with routing id
 * "<job>.<attempt>". TaskEvent and Output from a supervisor carry its sequence number in
 * Msg.id; while registered, the agent forwards each new one to the scheduler (id 0) and
 * answers StepAck{upto} once per pass. While not registered nothing is forwarded or
 * acknowledged: the supervisor keeps and resends. Launch files in <state_dir>/steps tell a
 * restarted agent which steps it holds before they say hello.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "account.h"
#include "agent.h"
#include "launchfile.h"
#include "log.h"
#include "util.h"
#include "wire.h"

#define STEP_FORGET_MS 10000 /* a step silent this long whose process is gone is forgotten */

struct step_rec {
	uint64_t job;
	uint32_t attempt;
	char rid[48];
	size_t rid_len;
	pid_t pid;		/* gstepd, once it said hello */
	Gpool__HeldTask *tasks;
	size_t ntasks;
	uint64_t last_seq;	/* highest sequence number forwarded */
	bool ack_due;
	bool hello_seen;
	int64_t last_heard_ms;
	bool kill_pending;
	Gpool__Kill kill;
};

struct steps {
	void *sock;
	gp_wire_t *wire;
	gp_buf_t env;
	struct step_rec **v;
	size_t n;
	Gpool__HeldTask **held;
	size_t nheld;
	char sock_path[4200];
};

static struct step_rec *find(struct steps *ss, uint64_t job, uint32_t attempt)
{
	for (size_t i = 0; i < ss->n; i++)
		if (ss->v[i]->job == job && ss->v[i]->attempt == attempt)
			return ss->v[i];
	return NULL;
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
	r->rid_len = (size_t)snprintf(r->rid, sizeof(r->rid), "%" PRIu64 ".%u", job, attempt);
	r->ntasks = ntp;
	for (size_t i = 0; i < ntp; i++) {
		gpool__held_task__init(&r->tasks[i]);
		r->tasks[i].job_id = job;
		r->tasks[i].attempt = attempt;
		r->tasks[i].rank = tp[i]->rank;
	}
	r->last_heard_ms = gp_mono_ms();
	ss->v[ss->n++] = r;
	return r;
}

static void forget(struct steps *ss, size_t i)
{
	free(ss->v[i]->tasks);
	free(ss->v[i]);
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
		if (add(ss, job, att, (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks))
			gp_info("holding job %" PRIu64 ".%u from before the restart", job, att);
		gpool__launch__free_unpacked(l, NULL);
	}
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
	if (!(ss->wire = gp_wire_create(NULL, (size_t)gp_config_int(a->cfg, "max_message"))) ||
	    !(ss->sock = zmq_socket(a->zctx, ZMQ_ROUTER))) {
		gp_errprintf(err, "cannot make the local socket: %s", zmq_strerror(errno));
		goto fail;
	}
	int one = 1, zero = 0;
	zmq_setsockopt(ss->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
	zmq_setsockopt(ss->sock, ZMQ_ROUTER_HANDOVER, &one, sizeof(one));
	zmq_setsockopt(ss->sock, ZMQ_LINGER, &zero, sizeof(zero));
	char ep[4300];
	snprintf(ep, sizeof(ep), "ipc://%s", ss->sock_path);
	if (zmq_bind(ss->sock, ep) < 0) {
		gp_errprintf(err, "cannot bind '%s': %s", ep, zmq_strerror(errno));
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
	free(ss->v);
	free(ss->held);
	gp_wire_destroy(&ss->wire);
	gp_buf_release(&ss->env);
	free(ss);
	*p = NULL;
}

void *steps_socket(struct steps *ss)
{
	return ss->sock;
}

/* Send one message to a step (now: the local socket costs no credential). */
static int send_step(struct steps *ss, struct step_rec *r, const Gpool__Msg *m)
{
	gp_batch_t b = { 0 };
	gp_error_t err;
	int rc = -1;
	if (gp_batch_add(&b, m) == 0 && gp_wire_seal(ss->wire, &b, &ss->env, &err) == 0 &&
	    zmq_send(ss->sock, r->rid, r->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
	    zmq_send(ss->sock, ss->env.data, ss->env.len, ZMQ_DONTWAIT) >= 0)
		rc = 0;
	gp_batch_release(&b);
	return rc;
}

static void deliver_kill(struct steps *ss, struct step_rec *r)
{
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

static void refuse(struct agent *a, const Gpool__Launch *l, const char *why)
{
	gp_warn("job %" PRIu64 ".%u refused: %s", l->job_id, l->attempt, why);
	for (size_t i = 0; i < l->n_tasks; i++) {
		Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
		ev.job_id = l->job_id;
		ev.attempt = l->attempt;
		ev.rank = l->tasks[i]->rank;
		ev.kind = GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START;
		ev.reason = (char *)why;
		ev.time = gp_now();
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_TASK_EVENT;
		m.task_event = &ev;
		sched_link_queue(a, &m);
	}
}

/* Start gstepd detached: a grandchild in its own session, so it outlives this agent. The
 * middle child reports the exec's errno through a close-on-exec pipe. */
static int spawn_stepd(struct agent *a, const char *launch_path, const char *node, gp_error_t *err)
{
	char ep[4300], grace[32];
	snprintf(ep, sizeof(ep), "ipc://%s", a->steps->sock_path);
	snprintf(grace, sizeof(grace), "%lld", (long long)gp_config_int(a->cfg, "kill_grace"));
	const char *argv[24];
	int n = 0;
	argv[n++] = a->stepd;
	argv[n++] = "--launch";
	argv[n++] = launch_path;
	argv[n++] = "--agent";
	argv[n++] = ep;
	argv[n++] = "--node-name";
	argv[n++] = node;
	argv[n++] = "--scratch-dir";
	argv[n++] = gp_config_str(a->cfg, "scratch_dir");
	argv[n++] = "--cgroups";
	argv[n++] = gp_config_str(a->cfg, "cgroups");
	argv[n++] = "--kill-grace";
	argv[n++] = grace;
	argv[n++] = "--log-level";
	argv[n++] = gp_config_str(a->cfg, "log_level");
	if (*gp_config_str(a->cfg, "log_file")) {
		argv[n++] = "--log-file";
		argv[n++] = gp_config_str(a->cfg, "log_file");
	}
	if (gp_config_bool(a->cfg, "allow_root"))
		argv[n++] = "--allow-root";
	argv[n] = NULL;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return gp_errprintf(err, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return gp_errprintf(err, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		pid_t g = fork();
		if (g != 0)
			_exit(g < 0 ? 1 : 0);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			if (null > 2)
				close(null);
		}
		/* stdout/stderr stay: gstepd logs where the agent does */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != p[1])
				close(fd);
		execv(argv[0], (char *const *)argv);
		int e = errno;
		if (write(p[1], &e, sizeof(e)) < 0) {
		}
		_exit(127);
	}
	close(p[1]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int e = 0;
	ssize_t r;
	while ((r = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(p[0]);
	if (r == (ssize_t)sizeof(e))
		return gp_errprintf(err, "cannot start gstepd '%s': %s", a->stepd, strerror(e));
	return 0;
}

void steps_launch(struct agent *a, const Gpool__Launch *l)
{
	struct steps *ss = a->steps;
	char why[sizeof(((gp_error_t *)0)->text) + 300];
	if (!l->job_id || !l->spec || !l->spec->n_argv || !l->n_tasks) {
		gp_warn("launch of job %" PRIu64 ".%u without a command or tasks: dropped",
			l->job_id, l->attempt);
		if (l->job_id && l->n_tasks)
			refuse(a, l, "launch without a command");
		return;
	}
	if (find(ss, l->job_id, l->attempt)) {
		gp_info("launch of job %" PRIu64 ".%u, which this node already holds: ignored",
			l->job_id, l->attempt);
		return;
	}
	struct gp_account acct;
	gp_error_t err = { { 0 } };
	struct gp_account_rules rules = { .run_as = gp_config_str(a->cfg, "run_as"),
					  .allow_root = gp_config_bool(a->cfg, "allow_root"),
					  .self = geteuid(),
					  .node = a->node };
	if (gp_account_resolve(&rules, l->user, &acct, &err) < 0) {
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
	if (gp_launch_write(path, &copy, &err) < 0) {
		snprintf(why, sizeof(why), "node %s: %s", a->node, err.text);
		refuse(a, l, why);
		return;
	}
	struct step_rec *r = add(ss, l->job_id, l->attempt,
				 (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	if (!r || spawn_stepd(a, path, a->node, &err) < 0) {
		snprintf(why, sizeof(why), "node %s: %s", a->node, r ? err.text : "out of memory");
		unlink(path);
		if (r)
			forget(ss, ss->n - 1);
		refuse(a, l, why);
		return;
	}
	gp_info("job %" PRIu64 ".%u: %zu task(s) started as '%s'", l->job_id, l->attempt,
		l->n_tasks, acct.name);
}

/* ---- messages from supervisors ---- */

typedef void (*step_msg_f)(struct agent *a, struct step_rec *r, const Gpool__Msg *m);

static void on_hello(struct agent *a, struct step_rec *r, const Gpool__Msg *m)
{
	const Gpool__StepHello *h = m->step_hello;
	if (h->job_id != r->job || h->attempt != r->attempt) {
		gp_warn("step %s says it is job %" PRIu64 ".%u: dropped", r->rid, h->job_id,
			h->attempt);
		return;
	}
	if (!r->hello_seen)
		gp_debug("step %s (pid %d) connected", r->rid, (int)h->pid);
	r->hello_seen = true;
	r->pid = h->pid;
	for (size_t i = 0; i < h->n_tasks; i++) {
		for (size_t k = 0; k < r->ntasks; k++) {
			if (r->tasks[k].rank != h->tasks[i]->rank)
				continue;
			r->tasks[k].pid = h->tasks[i]->pid;
			r->tasks[k].exited = h->tasks[i]->exited;
			r->tasks[k].status = h->tasks[i]->status;
		}
	}
	if (r->kill_pending)
		deliver_kill(a->steps, r);
}

static void update_task(struct step_rec *r, const Gpool__TaskEvent *ev)
{
	for (size_t k = 0; k < r->ntasks; k++) {
		if (r->tasks[k].rank != ev->rank)
			continue;
		if (ev->pid)
			r->tasks[k].pid = ev->pid;
		if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
			r->tasks[k].exited = true;
			r->tasks[k].status = ev->status;
		} else if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START) {
			r->tasks[k].exited = true;
			r->tasks[k].status = 1 << 8;
		}
	}
}

/* TaskEvent and Output: forward new ones in order, acknowledge once per pass. */
static void on_event(struct agent *a, struct step_rec *r, const Gpool__Msg *m)
{
	uint64_t job = m->m_case == GPOOL__MSG__M_TASK_EVENT ? m->task_event->job_id
							     : m->output->job_id;
	uint32_t att = m->m_case == GPOOL__MSG__M_TASK_EVENT ? m->task_event->attempt
							     : m->output->attempt;
	if (job != r->job || att != r->attempt) {
		gp_warn("step %s sent an event for job %" PRIu64 ".%u: dropped", r->rid, job, att);
		return;
	}
	if (!sched_link_up(a->link))
		return; /* not acknowledged: the supervisor sends it again */
	if (m->id && m->id <= r->last_seq) {
		r->ack_due = true; /* a resend of what we forwarded: acknowledge again */
		return;
	}
	Gpool__Msg fwd = *m;
	fwd.id = 0;
	sched_link_queue(a, &fwd);
	if (m->m_case == GPOOL__MSG__M_TASK_EVENT)
		update_task(r, m->task_event);
	if (m->id) {
		r->last_seq = m->id;
		r->ack_due = true;
	}
}

static const struct {
	Gpool__Msg__MCase type;
	step_msg_f cb;
} step_msgs[] = {
	{ GPOOL__MSG__M_STEP_HELLO, on_hello },
	{ GPOOL__MSG__M_TASK_EVENT, on_event },
	{ GPOOL__MSG__M_OUTPUT, on_event },
};

/* A routing id "<job>.<attempt>": the step it names, adopted if unknown (its launch file was
 * lost or it was started by an earlier agent). */
static struct step_rec *step_of(struct steps *ss, const char *rid, size_t len,
				const Gpool__Batch *b)
{
	char buf[48];
	if (len == 0 || len >= sizeof(buf))
		return NULL;
	memcpy(buf, rid, len);
	buf[len] = '\0';
	unsigned long long job;
	unsigned att;
	int end = 0;
	if (sscanf(buf, "%llu.%u%n", &job, &att, &end) != 2 || buf[end] || !job)
		return NULL;
	struct step_rec *r = find(ss, job, att);
	if (r)
		return r;
	for (size_t i = 0; i < b->n_msgs; i++) {
		const Gpool__StepHello *h = b->msgs[i]->m_case == GPOOL__MSG__M_STEP_HELLO
						    ? b->msgs[i]->step_hello
						    : NULL;
		if (!h || h->job_id != job || h->attempt != att)
			continue;
		Gpool__TaskPlacement *tp = calloc(h->n_tasks ? h->n_tasks : 1, sizeof(*tp));
		Gpool__TaskPlacement **tpp = calloc(h->n_tasks ? h->n_tasks : 1, sizeof(*tpp));
		if (tp && tpp) {
			for (size_t k = 0; k < h->n_tasks; k++) {
				gpool__task_placement__init(&tp[k]);
				tp[k].rank = h->tasks[k]->rank;
				tpp[k] = &tp[k];
			}
			r = add(ss, job, att, (const Gpool__TaskPlacement *const *)tpp, h->n_tasks);
			if (r)
				gp_info("adopted job %s", r->rid);
		}
		free(tp);
		free(tpp);
		return r;
	}
	return NULL;
}

void steps_recv(struct agent *a)
{
	struct steps *ss = a->steps;
	for (int k = 0; k < 256; k++) {
		zmq_msg_t id, body;
		zmq_msg_init(&id);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&id, ss->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&id);
			zmq_msg_close(&body);
			return;
		}
		int more = zmq_msg_more(&id);
		if (!more || zmq_msg_recv(&body, ss->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&id);
			zmq_msg_close(&body);
			continue;
		}
		while (zmq_msg_more(&body)) { /* a malformed multipart: drain it */
			zmq_msg_close(&body);
			zmq_msg_init(&body);
			if (zmq_msg_recv(&body, ss->sock, ZMQ_DONTWAIT) < 0)
				break;
		}
		struct gp_sender from;
		Gpool__ErrorCode code;
		gp_error_t err = { { 0 } };
		Gpool__Batch *b = gp_wire_open(ss->wire, zmq_msg_data(&body), zmq_msg_size(&body),
					       &from, &code, &err);
		struct step_rec *r =
			b ? step_of(ss, zmq_msg_data(&id), zmq_msg_size(&id), b) : NULL;
		zmq_msg_close(&id);
		zmq_msg_close(&body);
		if (!b) {
			gp_warn("dropped a message from a supervisor: %s", err.text);
			continue;
		}
		if (!r) {
			gp_warn("dropped a message from an unknown supervisor");
			gpool__batch__free_unpacked(b, NULL);
			continue;
		}
		r->last_heard_ms = gp_mono_ms();
		for (size_t i = 0; i < b->n_msgs; i++) {
			const Gpool__Msg *m = b->msgs[i];
			size_t t;
			for (t = 0; t < sizeof(step_msgs) / sizeof(step_msgs[0]); t++)
				if (step_msgs[t].type == m->m_case)
					break;
			if (t == sizeof(step_msgs) / sizeof(step_msgs[0])) {
				gp_warn("step %s sent an unexpected message (type %d): dropped", r->rid,
					(int)m->m_case);
				continue;
			}
			step_msgs[t].cb(a, r, m);
		}
		gpool__batch__free_unpacked(b, NULL);
	}
}

void steps_flush(struct agent *a)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n; i++) {
		struct step_rec *r = ss->v[i];
		if (!r->ack_due)
			continue;
		Gpool__StepAck ack = GPOOL__STEP_ACK__INIT;
		ack.upto = r->last_seq;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_STEP_ACK;
		m.step_ack = &ack;
		if (send_step(ss, r, &m) == 0)
			r->ack_due = false;
	}
}

Gpool__HeldTask **steps_held(struct agent *a, size_t *n)
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
	for (size_t i = 0; i < ss->n; i++)
		for (size_t t = 0; t < ss->v[i]->ntasks; t++)
			ss->held[k++] = &ss->v[i]->tasks[t];
	*n = k;
	return ss->held;
}

int64_t steps_tick(struct agent *a, int64_t now)
{
	struct steps *ss = a->steps;
	for (size_t i = 0; i < ss->n;) {
		struct step_rec *r = ss->v[i];
		char path[4300];
		bool silent = now - r->last_heard_ms > STEP_FORGET_MS;
		bool gone = r->pid > 0 ? (kill(r->pid, 0) < 0 && errno == ESRCH) : silent;
		if (gone && silent) {
			gp_launch_path(path, sizeof(path), a->state_dir, r->job, r->attempt);
			if (access(path, F_OK) == 0)
				gp_warn("step %s ended without cleaning up (its launch file is left)",
					r->rid);
			gp_debug("step %s is gone: forgotten", r->rid);
			forget(ss, i);
			continue;
		}
		i++;
	}
	return now + 1000;
}
