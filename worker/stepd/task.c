/* task.c: starting a job's tasks, reaping them, and killing their process trees.
 *
 * gstepd has ZeroMQ threads, so between fork and exec the child only makes async-signal-safe
 * calls: everything it needs (environment, argv, groups) is prepared before the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/node/env.h"
#include "common/log.h"
#include "worker/stepd/lazy.h"
#include "worker/stepd/step.h"
#include "common/util.h"

extern char **environ;

static void send_event(struct step *s, struct task *t, Gpool__TaskEventKind kind, const char *why)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	Gpool__Rusage ru = GPOOL__RUSAGE__INIT;
	ev.job_id = s->launch->job_id;
	ev.attempt = s->launch->attempt;
	ev.rank = t->tp->rank;
	ev.kind = kind;
	ev.pid = t->pid;
	ev.time = gp_now();
	if (s->launch->spec && s->launch->spec->service)
		ev.port = s->launch->spec->service_port;
	if (kind == GPOOL__TASK_EVENT_KIND__TASK_EXITED) {
		ev.status = t->status;
		ev.oom = t->oom;
		ru.user_sec = (double)t->ru.ru_utime.tv_sec + t->ru.ru_utime.tv_usec / 1e6;
		ru.sys_sec = (double)t->ru.ru_stime.tv_sec + t->ru.ru_stime.tv_usec / 1e6;
		ru.max_rss_kb = (uint64_t)t->ru.ru_maxrss;
		ev.rusage = &ru;
	}
	if (why)
		ev.reason = (char *)why;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_TASK_EVENT;
	m.task_event = &ev;
	if (step_send(s, &m) < 0)
		gp_err("job %llu rank %u: task event lost: out of memory",
		       (unsigned long long)s->launch->job_id, t->tp->rank);
}

static void task_failed(struct step *s, struct task *t, const char *why)
{
	gp_warn("job %llu rank %u failed to start: %s", (unsigned long long)s->launch->job_id,
		t->tp->rank, why);
	for (int i = 1; i <= 2; i++) {
		if (t->fd[i] >= 0)
			close(t->fd[i]);
		t->fd[i] = -1;
	}
	t->failed = true;
	t->state = TASK_DONE;
	send_event(s, t, GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START, why);
}

void tasks_fail_all(struct step *s, const char *reason)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].state != TASK_DONE)
			task_failed(s, &s->tasks[i], reason);
}

/* Report a setup failure to the parent through fd and end. */
static void child_fail(int fd, const char *what, int e)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(e));
	if (write(fd, msg, strlen(msg)) < 0) {
	}
	_exit(126);
}

struct spawn_prep {
	char **argv;
	gid_t groups[256];
	int ngroups;
	bool switch_user;
	char fallback[PATH_MAX]; /* argv[0] beside gstepd, tried when the PATH has none ("") */
};

/* A replica that takes its socket (JobSpec.service_listen_fd): a socket listening on port
 * on every address (IPv6 with IPv4 mapped, else IPv4), CLOEXEC. The fd / -1 with why. Bound by
 * gstepd just before the task starts: a process that took the port since the agent chose it
 * makes the start fail (the replica restarts on another port) instead of taking its traffic. */
__attribute__((noinline)) /* its locals stay out of task_start's vfork */
static int
replica_socket(uint32_t port, char *why, size_t len)
{
	int one = 1, zero = 0;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6,
					 .sin6_port = htons((uint16_t)port),
					 .sin6_addr = in6addr_any};
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4096) == 0)
			return fd;
		int e = errno;
		close(fd);
		errno = e;
		if (e != EAFNOSUPPORT && e != EADDRNOTAVAIL)
			fd = -2; /* in use, most likely: IPv4 alone would fail too */
	}
	if (fd == -1) { /* no IPv6 here */
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons((uint16_t)port),
					.sin_addr.s_addr = htonl(INADDR_ANY)};
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0) {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
			    listen(fd, 4096) == 0)
				return fd;
			int e = errno;
			close(fd);
			errno = e;
		}
	}
	snprintf(why, len, "cannot bind the replica's port %u: %s", port, strerror(errno));
	return -1;
}

/* LISTEN_PID in env (made with room for it by env.c) becomes the calling process's pid. For
 * the child between vfork and exec: no allocation, no locale. */
static void set_listen_pid(char **env)
{
	for (char **e = env; e && *e; e++) {
		if (strncmp(*e, "LISTEN_PID=", 11) != 0)
			continue;
		char digits[16];
		int n = 0;
		for (unsigned long v = (unsigned long)getpid(); v && n < 15; v /= 10)
			digits[n++] = (char)('0' + v % 10);
		char *p = *e + 11;
		for (size_t room = strlen(p); n && room; room--)
			*p++ = digits[--n];
		*p = '\0';
		return;
	}
}

/* What crun itself runs with (the task's own environment is in its bundle). */
static char *const crun_environ[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};

static void child(struct step *s, struct task *t, const struct spawn_prep *p, int in, int out,
		  int err, int errfd, int lfd)
{
	/* a --container task: crun (root) switches the user and enters the working directory */
	bool ctr = t->cargv != NULL;
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/* every signal as a fresh process has it: an agent started in the background by a shell
	 * ignores SIGINT and SIGQUIT, and an ignored signal stays ignored across exec (a --pty
	 * task's Ctrl-C would reach nothing) */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	if (setsid() < 0)
		child_fail(errfd, "setsid", errno);
	if (gp_cgroup_attach_self(s->cg) < 0)
		child_fail(errfd, "cannot join the job's cgroup", errno);
	/* a --pty task's terminal becomes its session's controlling terminal */
	if (in >= 0 && ioctl(in, TIOCSCTTY, 0) < 0)
		child_fail(errfd, "cannot take the terminal", errno);
	int null = in >= 0 ? in : open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		child_fail(errfd, "cannot set up stdio", errno);
	if (null > 2 && in < 0)
		close(null);
	/* a replica's socket, handed over as fd 3 (systemd's convention) */
	if (lfd >= 0) {
		if (errfd == 3) {
			int e2 = fcntl(errfd, F_DUPFD_CLOEXEC, 4);
			if (e2 < 0)
				child_fail(errfd, "cannot hand the replica its socket", errno);
			errfd = e2;
		}
		if (lfd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(lfd, 3) < 0)
			child_fail(errfd, "cannot hand the replica its socket", errno);
		set_listen_pid(t->env);
	}
	/* crun refuses a hybrid host whose cgroup2 mount has controllers ("cgroups in hybrid mode
	 * not supported"), even with --cgroup-manager=disabled: it gets a mount namespace of its
	 * own without that mount (the job's v1 groups, which hold the limits, stay; a mount there
	 * may have others beneath it) */
	if (ctr) {
		/* and the bind below must stay in it: without a namespace of its own (or with one
		 * that still propagates to the host's) the tree would be bound for everyone */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
			child_fail(errfd, "cannot make the container's mount namespace", errno);
		for (int i = 0; i < 8 && umount2("/sys/fs/cgroup/unified", MNT_DETACH) == 0; i++)
			;
		/* the image's tree where crun, in the user namespace, can reach it (container.h) */
		if (step_container_bind(s, t) < 0)
			child_fail(errfd, "cannot bind the image's tree for the container", errno);
	}
	/* the job's own /tmp, /var/tmp and /dev/shm (privtmp.h), while still root */
	if (!ctr && step_privtmp_enter(s) < 0)
		child_fail(errfd, "cannot give the task the job's own /tmp", errno);
	if (p->switch_user && !ctr) {
		if (setgroups((size_t)p->ngroups, p->groups) < 0)
			child_fail(errfd, "setgroups", errno);
		if (setgid(s->account.gid) < 0)
			child_fail(errfd, "setgid", errno);
		if (setuid(s->account.uid) < 0)
			child_fail(errfd, "setuid", errno);
		if (s->account.uid != 0 && setuid(0) == 0)
			child_fail(errfd, "could not drop root", EPERM);
	}
	if (!ctr && chdir(s->workdir) < 0) {
		char what[PATH_MAX + 32];
		snprintf(what, sizeof(what), "cannot enter '%s'", s->workdir);
		child_fail(errfd, what, errno);
	}
	umask(022);
	char *const *argv = ctr ? t->cargv : p->argv;
	environ = ctr ? (char **)crun_environ : t->env;
	execvp(argv[0], argv);
	if (errno == ENOENT && p->fallback[0] && !ctr)
		execv(p->fallback, p->argv);
	/* the command itself is wrong: the task ran and exits 127, as a shell would; a command
	 * not installed here (jupyter-notebook on a PC without it) says where it was looked for */
	int e = errno;
	char msg[1024];
	const char *path = "";
	for (char **v = environ; v && *v && !*path; v++)
		if (!strncmp(*v, "PATH=", 5))
			path = *v + 5;
	int n = e == ENOENT && !strchr(argv[0], '/')
		    ? snprintf(msg, sizeof(msg),
			       "gstepd: cannot execute '%s': not found on node %s (PATH=%s)\n",
			       argv[0], s->node ? s->node : "?", path)
		    : snprintf(msg, sizeof(msg), "gstepd: cannot execute '%s': %s\n", argv[0],
			       strerror(e));
	if (n > 0 && write(2, msg, (size_t)n) < 0) {
	}
	_exit(127);
}

static void task_start(struct step *s, struct task *t, const struct spawn_prep *p)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pr[2] = {-1, -1};
	int pty[2] = {-1, -1}; /* gsub --pty's rank 0: master, slave (ptyserv.h) */
	char why[320];
	/* volatile: read again after vfork (the child shares this frame; -Wclobbered) */
	volatile bool use_pty = s->launch->spec->pty && t->tp->rank == 0;
	if (use_pty &&
	    gp_pty_open(s->account.uid, s->account.gid, &pty[0], &pty[1], why, sizeof(why)) < 0)
		goto fail;
	if ((!use_pty && (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)) ||
	    pipe2(pr, O_CLOEXEC) < 0) {
		snprintf(why, sizeof(why), "pipe: %s", strerror(errno));
		goto fail;
	}
	/* the replica's socket, if it takes one (in memory, as the pipes: vfork's child shares
	 * the frame) */
	const Gpool__JobSpec *spec = s->launch->spec;
	int lfd[1] = {-2};
	if (spec && spec->service && spec->service_listen_fd && spec->service_port &&
	    (lfd[0] = replica_socket(spec->service_port, why, sizeof(why))) < 0)
		goto fail;
	/* vfork: the child borrows gstepd's memory until it execs (or _exits), so no page tables
	 * are copied for it and none torn down at its exec: that copy and teardown of a
	 * supervisor forked from the agent were the largest part of a short task's start
	 * (perf, docs/benchmarks.md). child() only makes system calls with what was prepared
	 * above; what it changes in the shared memory (environ) is put back here. */
	char **saved_environ = environ;
	pid_t pid = vfork();
	if (pid == 0)
		child(s, t, p, pty[1], use_pty ? pty[1] : po[1], use_pty ? pty[1] : pe[1], pr[1],
		      lfd[0]); /* does not return */
	environ = saved_environ;
	if (lfd[0] >= 0)
		close(lfd[0]); /* the task's now */
	if (pid < 0) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		goto fail;
	}
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	if (pty[1] >= 0)
		close(pty[1]);
	close(pr[1]);
	po[1] = pe[1] = pr[1] = pty[1] = -1;
	/* the error pipe closes at exec (CLOEXEC) or carries why setup failed */
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(why) - 1 && (n = read(pr[0], why + got, sizeof(why) - 1 - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	why[got] = '\0';
	close(pr[0]);
	pr[0] = -1;
	if (got) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (po[0] >= 0)
			close(po[0]);
		if (pe[0] >= 0)
			close(pe[0]);
		if (pty[0] >= 0)
			close(pty[0]);
		t->pid = pid;
		task_failed(s, t, why);
		return;
	}
	t->pid = pid;
	t->fd[1] = po[0];
	t->fd[2] = pe[0];
	if (po[0] >= 0)
		fcntl(po[0], F_SETFL, O_NONBLOCK);
	if (pe[0] >= 0)
		fcntl(pe[0], F_SETFL, O_NONBLOCK);
	t->state = TASK_RUNNING;
	gp_debug("job %llu rank %u started, pid %d", (unsigned long long)s->launch->job_id,
		 t->tp->rank, (int)pid);
	send_event(s, t, GPOOL__TASK_EVENT_KIND__TASK_STARTED, NULL);
	if (use_pty) {
		gp_error_t err = {{0}};
		if (!(s->pty = gp_ptyserv_create(s, t, pty[0], &err))) {
			/* a terminal nobody can reach: end the task rather than leave it waiting */
			gp_err("job %llu: %s", (unsigned long long)s->launch->job_id, err.text);
			kill(-pid, SIGKILL);
		}
	}
	return;
fail:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
		if (pr[i] >= 0)
			close(pr[i]);
		if (pty[i] >= 0)
			close(pty[i]);
	}
	task_failed(s, t, why);
}

void tasks_start(struct step *s)
{
	const Gpool__JobSpec *spec = s->launch->spec;
	struct spawn_prep p = {0};
	/* an --mpi=mpirun job: gpool-launch (found on the task's PATH) decides what each task
	 * does: rank 0 runs the command, one task per other node serves as its exec-proxy */
	static char *const mpirun_prefix[] = {"gpool-launch", "mpirun", "--"};
	size_t np = spec->mpi == GPOOL__MPI_LAUNCH__MPI_MPIRUN ? 3 : 0;
	p.argv = calloc(np + spec->n_argv + 1, sizeof(char *));
	if (!p.argv) {
		tasks_fail_all(s, "out of memory");
		return;
	}
	for (size_t i = 0; i < np; i++)
		p.argv[i] = mpirun_prefix[i];
	if (np) {
		/* not on the task's PATH (--export=NONE, say): the one installed beside gstepd */
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
		if (slash) {
			*slash = '\0';
			if (snprintf(p.fallback, sizeof(p.fallback), "%s/%s", self,
				     mpirun_prefix[0]) >= (int)sizeof(p.fallback))
				p.fallback[0] = '\0';
		}
	}
	for (size_t i = 0; i < spec->n_argv; i++)
		p.argv[np + i] = spec->argv[i];
	p.switch_user = geteuid() == 0 && s->account.uid != 0;
	if (p.switch_user) {
		p.ngroups = (int)(sizeof(p.groups) / sizeof(p.groups[0]));
		if (getgrouplist(s->account.name, s->account.gid, p.groups, &p.ngroups) < 0) {
			/* more groups than we carry: keep the primary one */
			p.groups[0] = s->account.gid;
			p.ngroups = 1;
		}
	}
	/* an --mpi=pmix job: every task is a rank, wired up by this node's PMIx server */
	if (spec->mpi == GPOOL__MPI_LAUNCH__MPI_PMIX && !s->pmix) {
		gp_error_t err = {{0}};
		s->pmix = gp_pmixsrv_create(s->launch, s->node, s->account.uid, s->account.gid,
					    s->xfer_cfg, &err);
		if (!s->pmix) {
			gp_err("job %llu: %s", (unsigned long long)s->launch->job_id, err.text);
			tasks_fail_all(s, err.text);
			free(p.argv);
			return;
		}
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		struct task *t = &s->tasks[i];
		if (t->state != TASK_NEW)
			continue;
		struct gp_task_env_ctx ec = {s->launch,	 t->tp,	   &s->account, s->node,
					     s->workdir, s->iface, s->subnet,	s->mps_root};
		gp_error_t err = {{0}};
		if (!(t->env = gp_env_build(&ec, &err)) ||
		    (s->pmix && gp_pmixsrv_client(s->pmix, t->tp->rank, &t->env, &err) < 0) ||
		    step_lazy_env(s->lazy, &t->env, &err) < 0) {
			task_failed(s, t, err.text);
			continue;
		}
		if (s->ctr && !(t->cargv = step_container_argv(s, t, &err))) {
			task_failed(s, t, err.text);
			continue;
		}
		task_start(s, t, &p);
	}
	free(p.argv);
}

static struct task *task_by_pid(struct step *s, pid_t pid)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].pid == pid && s->tasks[i].state == TASK_RUNNING)
			return &s->tasks[i];
	return NULL;
}

bool tasks_reaped(struct step *s, pid_t pid, int st, const struct rusage *ru)
{
	struct task *t = task_by_pid(s, pid);
	if (!t)
		return false;
	t->status = st;
	t->ru = *ru;
	t->state = TASK_REAPED;
	t->reaped_ms = gp_mono_ms();
	bool killed9 = (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
		       (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGKILL);
	/* the limit's kills count per job: any task SIGKILLed after one is reported oom */
	s->oom_kills += gp_cgroup_oom_kills(s->cg);
	if (killed9 && s->oom_kills > 0)
		t->oom = true;
	/* what the task left behind in its session goes with it */
	kill(-pid, SIGKILL);
	gp_debug("job %llu rank %u exited, status 0x%x%s", (unsigned long long)s->launch->job_id,
		 t->tp->rank, st, t->oom ? " (oom)" : "");
	return true;
}

/* A --pty task's end waits for its terminal (ptyserv.h): the client reads its output and its
 * status there, and polls the job until then; a job that ended first would end gsub with the
 * status alone and the output lost. */
static bool waits_for_terminal(const struct step *s, const struct task *t)
{
	return s->pty && t->tp->rank == 0 && !gp_ptyserv_done(s->pty);
}

void tasks_finish(struct step *s, int64_t now)
{
	for (size_t i = 0; i < s->ntasks; i++) {
		struct task *t = &s->tasks[i];
		output_tick(s, t, now);
		if (t->state != TASK_REAPED || waits_for_terminal(s, t))
			continue;
		if (now - t->reaped_ms >= STEP_DRAIN_MS) {
			/* a process that escaped the session still holds the pipe */
			for (int k = 1; k <= 2; k++) {
				output_read(s, t, k);
				output_close(s, t, k);
			}
		}
		if (t->fd[1] >= 0 || t->fd[2] >= 0)
			continue;
		t->state = TASK_DONE;
		step_collect(s, t);
		send_event(s, t, GPOOL__TASK_EVENT_KIND__TASK_EXITED, NULL);
	}
}

void tasks_kill(struct step *s, int sig, uint32_t grace_ms)
{
	s->killed = true;
	for (size_t i = 0; i < s->ntasks; i++) {
		struct task *t = &s->tasks[i];
		if (t->state == TASK_RUNNING && t->pid > 0)
			kill(-t->pid, sig);
	}
	gp_cgroup_signal(s->cg, sig);
	if (sig != SIGKILL && grace_ms > 0) {
		int64_t dl = gp_mono_ms() + grace_ms;
		if (!s->kill_deadline_ms || dl < s->kill_deadline_ms)
			s->kill_deadline_ms = dl;
	} else if (sig == SIGKILL) {
		tasks_kill_hard(s);
	}
}

void tasks_kill_hard(struct step *s)
{
	s->kill_deadline_ms = 0;
	for (size_t i = 0; i < s->ntasks; i++) {
		struct task *t = &s->tasks[i];
		if (t->pid > 0 && (t->state == TASK_RUNNING || t->state == TASK_REAPED))
			kill(-t->pid, SIGKILL);
	}
	gp_cgroup_kill(s->cg);
}

bool tasks_all_done(const struct step *s)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].state != TASK_DONE)
			return false;
	return true;
}

int64_t tasks_next_deadline(const struct step *s)
{
	int64_t d = INT64_MAX;
	if (s->kill_deadline_ms)
		d = s->kill_deadline_ms;
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct task *t = &s->tasks[i];
		if (t->state == TASK_REAPED && !waits_for_terminal(s, t) &&
		    t->reaped_ms + STEP_DRAIN_MS < d)
			d = t->reaped_ms + STEP_DRAIN_MS;
		for (int k = 1; k <= 2; k++)
			if (t->partlen[k] && t->part_ms[k] + STEP_LINE_MS < d)
				d = t->part_ms[k] + STEP_LINE_MS;
	}
	return d;
}
