/* supervise_channel.c: the local socket the supervisors (gstepd, task shells) speak on.
 *
 * A ROUTER at ipc://<state_dir>/worker.sock; each gstepd connects a DEALER with routing id
 * "<job>.<attempt>" (a task shell "s<pid>"). TaskEvent and Output from a supervisor carry its
 * sequence number in Msg.id; while registered, the agent forwards each new one to the scheduler
 * (id 0) and answers StepAck{upto} once per pass (steps_flush). While not registered nothing is
 * forwarded or acknowledged: the supervisor keeps and resends. Kills go to the supervisor; a
 * supervisor reaped or gone loses what it had not reported.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/agent/supervise_int.h"
#include "worker/node/cgroup.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

/* Send one message to a supervisor (now: the local socket costs no credential). */
int steps_send_sup(struct steps *ss, struct sup *u, const Gpool__Msg *m)
{
	gp_error_t err;
	return gp_endpoint_send_msg(ss->endpoint, (const uint8_t *)u->rid, u->rid_len, m, &err);
}

static int send_step(struct steps *ss, struct step_rec *r, const Gpool__Msg *m)
{
	return steps_send_sup(ss, r->sup, m);
}

void steps_deliver_kill(struct steps *ss, struct step_rec *r)
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
		steps_deliver_kill(ss, r);
		hit++;
	}
	if (!hit)
		gp_info("kill for job %" PRIu64 ".%u, which this node does not hold: ignored",
			k->job_id, k->attempt);
}

static void on_hello(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	struct sup *u = peer;
	const Gpool__StepHello *h = m->step_hello;
	struct step_rec *own = NULL;
	if (!u->shell) {
		own = steps_rec_find(a->steps, h->job_id, h->attempt);
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
		struct step_rec *r = own ? own : steps_rec_find(a->steps, ht->job_id, ht->attempt);
		if (!r)
			continue;
		if (r->sup != u) {
			/* after our restart: a shell names the jobs it runs */
			if (!u->shell || r->sup->shell)
				continue;
			steps_attach(a->steps, r, u);
			gp_info("job %s runs in task shell %s", r->rid, u->rid);
		}
		r->seen = true;
		struct task_rec *t = steps_task_of(r, ht->rank);
		if (!t || t->acked)
			continue;
		t->ht.pid = ht->pid;
		if (ht->port)
			t->ht.port = ht->port;
		/* an exit is held from its TASK_EXITED (status, rusage), not from a hello */
	}
	if (u->shell)
		steps_handovers_flush(a, u);
	for (size_t i = 0; i < a->steps->n; i++) {
		struct step_rec *r = a->steps->v[i];
		if (r->sup == u && r->kill_pending && !r->handover_due)
			steps_deliver_kill(a->steps, r);
	}
}

static void update_task(struct step_rec *r, const Gpool__TaskEvent *ev)
{
	struct task_rec *t = steps_task_of(r, ev->rank);
	if (!t || t->acked)
		return;
	if (ev->pid)
		t->ht.pid = ev->pid;
	if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED)
		steps_task_exited(r, t, ev->status, ev->oom, ev->rusage, ev->time);
	else if (ev->kind == GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START)
		steps_task_exited(r, t, 1 << 8, false, NULL, 0);
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
	struct step_rec *r = steps_rec_find(a->steps, job, att);
	if (!r || r->sup != u) {
		/* taken in its place in the sequence, so what follows is not held up */
		gp_warn("step %s sent an event for job %" PRIu64 ".%u: dropped", u->rid, job, att);
	} else {
		r->seen = true;
		/* a screening task's grades go first: gschedd checks them against the running
		 * job */
		if (r->screen && m->m_case == GPOOL__MSG__M_TASK_EVENT &&
		    m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
			struct task_rec *t = steps_task_of(r, m->task_event->rank);
			if (t && !t->ht.exited && !t->acked)
				screen_relay(a, r->job, r->attempt, t->ht.rank, t->cards, r->owner);
		}
		Gpool__Msg fwd = *m;
		fwd.id = 0;
		Gpool__TaskEvent ev;
		if (m->m_case == GPOOL__MSG__M_TASK_EVENT &&
		    m->task_event->kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED &&
		    steps_exit_is_stop(r, m->task_event->time)) {
			ev = *m->task_event; /* the scheduler requeues it rather than fail it */
			ev.fenced = r->fenced;
			ev.vacated = r->vacated;
			if (r->stop_reason) /* why its agent stopped it: the job's reason */
				ev.reason = r->stop_reason;
			fwd.task_event = &ev;
		}
		if (m->m_case == GPOOL__MSG__M_OUTPUT)
			sched_link_forward_output(a, &fwd);
		else
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
	struct sup *u = steps_sup_find(ss, buf, len);
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
		if (!(u = steps_sup_new(ss, buf)))
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
		r = steps_rec_add_own(ss, job, att, (const Gpool__TaskPlacement *const *)tpp,
				      h->n_tasks);
		if (r) {
			r->sup->seq_known = false;
			steps_set_requeueable(r, !h->n_tasks || h->tasks[0]->requeueable);
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

gp_endpoint_t *steps_endpoint(struct agent *a, struct steps *ss)
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

/* A supervisor is gone: what it had not reported exited is lost (not listed any more: the
 * scheduler requeues or fails it), or never started. */
static void stepd_gone(struct agent *a, struct step_rec *r, const char *why)
{
	if (r->sup->ours && (!r->seen || r->handover_due)) {
		r->handover_due = false;
		steps_fail_tasks(a, r, why);
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
void steps_sup_gone(struct agent *a, struct sup *u, const char *why)
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
				steps_sup_free(ss, u);
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
		steps_sup_gone(a, u, why);
		if (u->shell && !u->nsteps)
			steps_sup_free(ss, u);
		return;
	}
}
