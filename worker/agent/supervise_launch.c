/* supervise_launch.c: launching a job attempt: gstepd spawned (detached, or its code run in the
 * fork) with its command line, a launch refused or failed (its tasks held as failed to start),
 * small jobs handed to a task shell of their account, a replica's port, steps_reconfigure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "worker/agent/supervise_int.h"
#include "worker/node/launchfile.h"
#include "worker/stepd/step.h"
#include "worker/stepd/taskevent.h"
#include "common/log.h"
#include "common/util.h"

#define SHELL_STEPS 64 /* job attempts handed to one task shell at once, at most */

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

/* Answer every task of a launch TASK_FAILED_TO_START; the tasks stay held as exited
 * (status 1 << 8) until the scheduler acknowledges them. */
void steps_fail_tasks(struct agent *a, struct step_rec *r, const char *why)
{
	for (size_t i = 0; i < r->ntasks; i++) {
		struct task_rec *t = &r->tasks[i];
		if (t->ht.exited || t->acked)
			continue;
		steps_task_exited(r, t, 1 << 8, false, NULL, 0);
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
	struct step_rec *r = steps_rec_find(ss, l->job_id, l->attempt);
	if (!r)
		r = steps_rec_add_own(ss, l->job_id, l->attempt,
				      (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	if (!r) {
		gp_err("job %" PRIu64 ".%u: out of memory: refusal not held", l->job_id,
		       l->attempt);
		return;
	}
	if (!r->sup->shell)
		r->sup->pid = -1;
	r->handover_due = false;
	steps_set_requeueable(r, !(l->spec && l->spec->no_requeue));
	steps_fail_tasks(a, r, why);
}

/* Start gstepd detached: our child in its own session, so that it outlives this agent
 * (systemd KillMode=process; a dying parent leaves it to the next subreaper). Nothing here
 * waits for the child: an exec that fails ends it with STEPD_EXEC_FAILED, reaped later. */
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
int steps_stepd_argv(struct agent *a, struct steps *ss)
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
	snprintf(ss->image_cache, sizeof(ss->image_cache), "%lld",
		 (long long)gp_config_int(c, "image_cache"));
	ss->argv[n++] = "--image-cache";
	ss->argv[n++] = ss->image_cache;
	snprintf(ss->pull_max, sizeof(ss->pull_max), "%lld",
		 (long long)gp_config_int(c, "container_pull_max"));
	ss->argv[n++] = "--pull-max";
	ss->argv[n++] = ss->pull_max;
	/* a job's own /tmp (docs/security.md) */
	snprintf(ss->ptmp_size, sizeof(ss->ptmp_size), "%lld",
		 (long long)gp_config_int(c, "private_tmp_size"));
	ss->argv[n++] = "--private-tmp";
	ss->argv[n++] = (char *)gp_config_str(c, "private_tmp");
	ss->argv[n++] = "--private-tmp-size";
	ss->argv[n++] = ss->ptmp_size;
	if (*gp_config_str(c, "private_tmp_keep")) {
		ss->argv[n++] = "--private-tmp-keep";
		ss->argv[n++] = (char *)gp_config_str(c, "private_tmp_keep");
	}
	if (*gp_config_str(c, "container_insecure_registries")) {
		ss->argv[n++] = "--insecure-registries";
		ss->argv[n++] = (char *)gp_config_str(c, "container_insecure_registries");
	}
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
	if (steps_stepd_argv(a, ss) < 0) {
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
	return steps_send_sup(ss, r->sup, &m);
}

/* Hand the launch (its file written at path) to the shell u: held from now on, as with a
 * gstepd of its own; a shell that has not said hello yet gets it when it does. */
static int hand_to_shell(struct agent *a, struct sup *u, const Gpool__Launch *l, const char *path)
{
	struct steps *ss = a->steps;
	struct step_rec *r = steps_rec_add(
	    ss, l->job_id, l->attempt, (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	if (!r)
		return -1;
	steps_attach(ss, r, u);
	steps_set_requeueable(r, steps_lease_kills(l->spec));
	steps_set_owner_prefs(r, l);
	if ((r->port = steps_port_here(l)))
		reserve_master_port(a, l, r->port);
	r->handover_due = !u->hello_seen || send_handover(ss, r, path) < 0;
	gp_debug("job %" PRIu64 ".%u: to task shell %s%s", l->job_id, l->attempt, u->rid,
		 r->handover_due ? " (when it says hello)" : "");
	return 0;
}

/* The jobs handed to shell u before it said hello (and kills that came for them). */
void steps_handovers_flush(struct agent *a, struct sup *u)
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
			steps_deliver_kill(ss, r);
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
		if (l->job_id && l->n_tasks && !steps_rec_find(ss, l->job_id, l->attempt))
			refuse(a, l, "launch without a command");
		return;
	}
	if (steps_rec_find(ss, l->job_id, l->attempt)) {
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
	/* a card shared by small jobs: its MPS server before the tasks start */
	if (share_launch(a, l, acct.uid, acct.gid, why, sizeof(why)) < 0) {
		refuse(a, l, why);
		return;
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
	struct step_rec *r = steps_rec_add_own(
	    ss, l->job_id, l->attempt, (const Gpool__TaskPlacement *const *)l->tasks, l->n_tasks);
	pid_t pid = -1;
	if (r) {
		r->sup->seq_known = true;
		for (size_t i = 0; i < r->ntasks; i++)
			r->tasks[i].ht.port = port;
		steps_set_requeueable(r, steps_lease_kills(l->spec));
		steps_set_owner_prefs(r, l);
		steps_set_screen(r, l, &acct);
		if ((r->port = steps_port_here(l)))
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
		struct sup *sh = steps_sup_new(ss, rid);
		if (sh) {
			sh->shell = true;
			sh->key = key;
			steps_attach(ss, r, sh);
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
