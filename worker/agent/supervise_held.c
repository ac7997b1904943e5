/* supervise_held.c: task exits held until the scheduler acknowledges them.
 *
 * Durability: an exited task stays held (listed in every Heartbeat and NodeRegister) until the
 * scheduler answers a message that carried it, which it does only after the exit is on disk.
 * Until then it is also kept in <state_dir>/steps/<job>.<attempt>.exit, written before the
 * supervisor gets the StepAck that lets it forget the exit (steps_flush, which also closes idle
 * task shells).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/agent/supervise_int.h"
#include "common/log.h"
#include "common/util.h"

#define EXIT_FILE_MAX (16u << 20)
#define SHELL_IDLE_MS 2000 /* a task shell without a job this long is told to close */

/* Record an exit (once): it is held until the scheduler acknowledges it. */
void steps_task_exited(struct step_rec *r, struct task_rec *t, int status, bool oom,
		       const Gpool__Rusage *ru, double exit_time)
{
	if (t->ht.exited || t->acked)
		return;
	bool stop = steps_exit_is_stop(r, exit_time);
	t->ht.exited = true;
	t->ht.status = status;
	t->ht.oom = oom;
	t->ht.fenced = stop && r->fenced;
	t->ht.vacated = stop && r->vacated;
	if (ru) {
		t->ru.user_sec = ru->user_sec;
		t->ru.sys_sec = ru->sys_sec;
		t->ru.max_rss_kb = ru->max_rss_kb;
	}
	t->ht.rusage = &t->ru;
	t->dropped = false;
	r->exit_dirty = true;
}

bool steps_all_settled(const struct step_rec *r)
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

/* After a restart: the exits each <job>.<attempt>.exit file of dir (open as d, rewound here)
 * holds, held again until the scheduler acknowledges them. */
void steps_exits_load(struct steps *ss, DIR *d, const char *dir)
{
	struct dirent *e;
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
		struct step_rec *r = steps_rec_find(ss, job, att);
		if (!r) {
			Gpool__TaskPlacement *tp = calloc(h->n_tasks + 1, sizeof(*tp));
			Gpool__TaskPlacement **tpp = calloc(h->n_tasks + 1, sizeof(*tpp));
			for (size_t k = 0; tp && tpp && k < h->n_tasks; k++) {
				gpool__task_placement__init(&tp[k]);
				tp[k].rank = h->tasks[k]->rank;
				tpp[k] = &tp[k];
			}
			if (tp && tpp)
				r = steps_rec_add_own(ss, job, att,
						      (const Gpool__TaskPlacement *const *)tpp,
						      h->n_tasks);
			free(tp);
			free(tpp);
			if (r)
				r->sup->pid = -1; /* its supervisor is done */
		}
		for (size_t k = 0; r && k < h->n_tasks; k++) {
			struct task_rec *t = steps_task_of(r, h->tasks[k]->rank);
			if (t) {
				t->ht.requeueable = h->tasks[k]->requeueable;
				steps_task_exited(r, t, h->tasks[k]->status, h->tasks[k]->oom,
						  h->tasks[k]->rusage, 0);
			}
		}
		if (r) {
			r->exit_dirty = false; /* it is what the file says */
			gp_info("holding the exit of job %" PRIu64 ".%u until the scheduler has it",
				(uint64_t)job, att);
		}
		gpool__step_hello__free_unpacked(h, NULL);
	}
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
			if (steps_send_sup(ss, u, &m) == 0)
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
				if (steps_send_sup(ss, u, &m) == 0) {
					u->closing = true;
					gp_info("task shell %s: idle, closed", u->rid);
				}
			}
			/* our child is kept until reaped (SIGCHLD), another is forgotten now */
			if (u->closing && !u->child) {
				steps_sup_free(ss, u);
				continue;
			}
		}
		i++;
	}
	for (size_t i = 0; i < ss->n;) {
		struct step_rec *r = ss->v[i];
		if (steps_all_settled(r) && !r->sup->ack_due && !r->exit_dirty) {
			steps_rec_forget(ss, i);
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
