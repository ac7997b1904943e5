/* mps.c: starting and stopping an MPS control daemon per shared card (mps.h). libc only. */
#include "worker/node/mps.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(char *err, size_t len, int e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && len)
		vsnprintf(err, len, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
}

int gp_mps_dir(const char *root, unsigned card, char *dir, size_t len)
{
	int n = snprintf(dir, len, "%s/card%u", root, card);
	if (n < 0 || (size_t)n + 8 >= len) { /* room for "/pipe/..." is checked by the callers */
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* mkdir path with mode, owned by uid:gid. Never through a symbolic link: the last component
 * is opened O_NOFOLLOW and changed through that descriptor (its parent is checked by the
 * caller: this process's own, or the job user's directory under one). */
static int make_dir(const char *path, mode_t mode, uid_t uid, gid_t gid, char *err, size_t len)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return fail(err, len, errno, "mps: cannot make '%s': %s", path, strerror(errno));
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return fail(err, len, errno, "mps: '%s' is not a directory: %s", path,
			    strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0 ||
	    ((st.st_uid != uid || st.st_gid != gid) && fchown(fd, uid, gid) < 0) ||
	    fchmod(fd, mode) < 0)
		rc = fail(err, len, errno, "mps: cannot own '%s': %s", path, strerror(errno));
	close(fd);
	return rc;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* The root (DIR's parent) is this process's own and nobody else may write it, so that no user
 * can swap a card's directory for a link; a card directory left by another user goes (renamed
 * inside the root first, then removed without following links). */
static int prepare_root(const char *dir, uid_t uid, char *err, size_t len)
{
	char root[4096];
	snprintf(root, sizeof(root), "%s", dir);
	char *slash = strrchr(root, '/');
	if (!slash || slash == root)
		return fail(err, len, EINVAL, "mps: '%s' has no parent directory", dir);
	*slash = 0;
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return fail(err, len, errno, "mps: cannot make '%s': %s", root, strerror(errno));
	struct stat st;
	if (lstat(root, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022))
		return fail(err, len, EPERM,
			    "mps: '%s' must be a directory of uid %u that others cannot write",
			    root, (unsigned)geteuid());
	if (lstat(dir, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != uid)) {
		char aside[4200];
		snprintf(aside, sizeof(aside), "%s/.old-%ld-%ld", root, (long)getpid(),
			 (long)time(NULL));
		if (rename(dir, aside) < 0 || nftw(aside, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
			return fail(err, len, errno, "mps: cannot clear '%s': %s", dir,
				    strerror(errno));
	}
	return 0;
}

static int become(uid_t uid, gid_t gid)
{
	if (uid == geteuid())
		return 0;
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
		return -1;
	return 0;
}

/* Run `control ARG` with the card's environment, stdin from `input` (NULL: /dev/null); its
 * exit status, -1 when it could not run. */
static int run_control(const char *control, const char *dir, const char *visible, uid_t uid,
		       gid_t gid, const char *arg, const char *input)
{
	int in[2] = {-1, -1};
	if (input && pipe(in) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		if (input) {
			close(in[0]);
			close(in[1]);
		}
		return -1;
	}
	if (pid == 0) {
		/* the daemon must not inherit the caller's blocked signals (gworkerd takes its
		 * signals through a signalfd) nor its ignored ones: it could not be stopped */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		static const int dfl[] = {SIGPIPE, SIGCHLD, SIGTERM, SIGINT,
					  SIGHUP,  SIGQUIT, SIGUSR1, SIGUSR2};
		for (size_t i = 0; i < sizeof(dfl) / sizeof(dfl[0]); i++)
			signal(dfl[i], SIG_DFL);
		char pipe_dir[4096], log_dir[4096];
		snprintf(pipe_dir, sizeof(pipe_dir), "%s/pipe", dir);
		snprintf(log_dir, sizeof(log_dir), "%s/log", dir);
		setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
		setenv("CUDA_MPS_LOG_DIRECTORY", log_dir, 1);
		if (visible)
			setenv("CUDA_VISIBLE_DEVICES", visible, 1);
		int fd = input ? in[0] : open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != 0) {
			dup2(fd, 0);
			close(fd);
		}
		if (input)
			close(in[1]);
		if (become(uid, gid) < 0)
			_exit(126);
		if (arg)
			execlp(control, control, arg, (char *)NULL);
		else
			execlp(control, control, (char *)NULL);
		_exit(127);
	}
	if (input) {
		close(in[0]);
		size_t n = strlen(input);
		/* a program that exits unread must not end this process: SIGPIPE ignored for the
		 * write alone (one raised meanwhile is discarded), the caller's handling kept */
		struct sigaction ign = {.sa_handler = SIG_IGN}, old;
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPIPE, &ign, &old);
		if (write(in[1], input, n) != (ssize_t)n) {
		} /* a daemon that is gone reads nothing: its exit status says so */
		sigaction(SIGPIPE, &old, NULL);
		close(in[1]);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int path_in(const char *dir, const char *rel, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", dir, rel);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* the daemon's pid from its pid file in the pipe directory (the name differs between driver
 * versions), 0: none */
static pid_t daemon_pid(const char *dir)
{
	static const char *const names[] = {"pipe/nvidia-cuda-mps-control.pid", "pipe/control.pid"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[4096];
		if (path_in(dir, names[i], p, sizeof(p)) < 0)
			return 0;
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		long v = 0;
		if (fscanf(f, "%ld", &v) != 1)
			v = 0;
		fclose(f);
		if (v > 1)
			return (pid_t)v;
	}
	return 0;
}

/* Is pid alive? A daemon that has exited may stay a zombie until its reaper (a subreaper such
 * as gworkerd, which inherits the daemonised process) gets to it: that counts as gone. */
static bool alive(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return errno != ENOENT;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

int gp_mps_start(const char *control, const char *dir, const char *visible, uid_t uid, gid_t gid,
		 char *err, size_t errlen)
{
	char pipe_dir[4096], log_dir[4096], ctl[4096];
	if (path_in(dir, "pipe", pipe_dir, sizeof(pipe_dir)) < 0 ||
	    path_in(dir, "log", log_dir, sizeof(log_dir)) < 0 ||
	    path_in(dir, "pipe/control", ctl, sizeof(ctl)) < 0)
		return fail(err, errlen, ENAMETOOLONG, "mps: directory name too long '%s'", dir);
	if (prepare_root(dir, uid, err, errlen) < 0)
		return -1;
	pid_t old = daemon_pid(dir);
	if (old && alive(old) && access(ctl, F_OK) == 0)
		return 0; /* already serving this card (an agent restarted under it) */
	if (make_dir(dir, 0700, uid, gid, err, errlen) < 0 ||
	    make_dir(pipe_dir, 0700, uid, gid, err, errlen) < 0 ||
	    make_dir(log_dir, 0700, uid, gid, err, errlen) < 0)
		return -1;
	int rc = run_control(control, dir, visible, uid, gid, "-d", NULL);
	if (rc != 0)
		return fail(err, errlen, rc < 0 ? errno : EIO,
			    rc == 127
				? "mps: cannot run '%s -d': not found (the NVIDIA driver's MPS "
				  "control daemon is not installed on this node: card sharing "
				  "needs it)"
			    : rc == 126 ? "mps: cannot run '%s -d' as the job's user"
					: "mps: '%s -d' failed",
			    control);
	for (int i = 0; i < 200; i++) {
		if (access(ctl, F_OK) == 0)
			return 0;
		nap_ms(50);
	}
	return fail(err, errlen, ETIMEDOUT, "mps: no control pipe '%s' after 10 s (log: %s)", ctl,
		    log_dir);
}

int gp_mps_stop(const char *control, const char *dir, char *err, size_t errlen)
{
	char ctl[4096];
	if (path_in(dir, "pipe/control", ctl, sizeof(ctl)) < 0)
		return fail(err, errlen, ENAMETOOLONG, "mps: directory name too long '%s'", dir);
	pid_t pid = daemon_pid(dir);
	if (access(ctl, F_OK) < 0 && (!pid || !alive(pid)))
		return 0; /* nothing runs there */
	struct stat st;
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (stat(dir, &st) == 0) { /* as the daemon's user: its pipes are 0700 */
		uid = st.st_uid;
		gid = st.st_gid;
	}
	if (uid != geteuid() && geteuid() != 0) {
		uid = geteuid();
		gid = getegid();
	}
	int rc = run_control(control, dir, NULL, uid, gid, NULL, "quit\n");
	if (rc < 0)
		return fail(err, errlen, errno, "mps: cannot run '%s': %s", control,
			    strerror(errno));
	if (rc != 0)
		return fail(err, errlen, EIO, "mps: '%s' refused quit (exit %d)", control, rc);
	for (int i = 0; i < 200; i++) {
		if (pid ? !alive(pid) : access(ctl, F_OK) < 0)
			return 0;
		nap_ms(50);
	}
	if (pid)
		return fail(err, errlen, ETIMEDOUT,
			    "mps: control daemon %ld still runs 10 s after quit", (long)pid);
	return 0; /* no pid file and a pipe that stays: quit was taken, nothing to wait on */
}

void gp_mps_mem_limit(uint64_t budget, char *buf, size_t len)
{
	uint64_t mb = (budget + (1ULL << 20) - 1) >> 20;
	snprintf(buf, len, "0=%lluM", (unsigned long long)(mb ? mb : 1));
}

unsigned gp_mps_thread_pct(uint64_t budget, uint64_t vram_total)
{
	if (!vram_total || budget >= vram_total)
		return 100;
	uint64_t pct = (budget * 100 + vram_total - 1) / vram_total;
	return pct < 1 ? 1 : (unsigned)pct;
}
