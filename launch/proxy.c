/* proxy.c: the exec-proxy (see proxy.h). One thread, one poll loop: the listening socket, a
 * signalfd (SIGCHLD and the stop signals), each connection and each command's two pipes. */
#include "launch/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/frame.h"
#include "launch/proxyauth.h"
#include "common/util.h"
#include "common/sigfd.h"

#define KILL_GRACE_MS 2000 /* SIGTERM, then SIGKILL this much later */
#define DRAIN_MS      2000 /* after a command exits, wait this long for its pipes' EOF */
#define CONNS_MAX     1024
#define READ_CHUNK    65536
/* a connection that has not authenticated: closed this long after it came, and at most this
 * many at once from one address (or in all); a new one over the count evicts the oldest, so
 * idle connections cannot keep the job's own client out */
#define AUTH_TIMEOUT_MS	  5000
#define UNAUTH_PER_SOURCE 8
#define UNAUTH_MAX	  64

enum conn_state {
	C_NEW,	  /* waits for AUTH */
	C_AUTHED, /* waits for EXEC or HOLD */
	C_EXEC,	  /* runs a command */
	C_HOLD,	  /* holds the proxy open */
};

struct conn {
	int fd;
	enum conn_state st;
	uint8_t nonce[GP_PROXY_NONCE]; /* this connection's challenge */
	uint32_t src;		       /* the peer's IPv4 address (network order) */
	int64_t since_ms;	       /* accepted at */
	gp_buf_t in;
	bool peer_gone;
	pid_t pid;
	int pipe[3]; /* [1] stdout, [2] stderr read ends, -1 when closed */
	bool reaped;
	int status;
	int64_t reaped_ms;
	int64_t kill_ms; /* SIGKILL due; 0: none */
};

struct gp_proxy {
	int lfd;
	uint16_t port;
	gp_auth_t *auth;
	uint64_t job;
	uid_t owner; /* the proxy's own uid: the job's account */
	uint64_t auth_failures, evicted;
	int sigfd;
	sigset_t oldmask;
	struct conn **c;
	size_t nc;
	pid_t *groups; /* every command's process group, for the final sweep */
	size_t ngroups;
	bool had_hold;
	int stop_errno; /* nonzero: stop with this */
};

gp_proxy_t *gp_proxy_create(const char *addr, uint64_t job, gp_error_t *err)
{
	gp_proxy_t *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	p->sigfd = -1;
	p->lfd = -1;
	p->job = job;
	p->owner = geteuid();
	if (!(p->auth = gp_auth_create(NULL, err)))
		goto fail;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		errno = EINVAL;
		gp_errprintf(err, "invalid address '%s'", addr);
		goto fail;
	}
	socklen_t sl = sizeof(sin);
	if ((p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    bind(p->lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(p->lfd, 64) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&sin, &sl) < 0) {
		gp_errprintf(err, "cannot listen on '%s': %s", addr, strerror(errno));
		goto fail;
	}
	p->port = ntohs(sin.sin_port);
	if ((p->sigfd = gp_sigfd_open(&p->oldmask)) < 0) {
		gp_errprintf(err, "signalfd: %s", strerror(errno));
		goto fail;
	}
	return p;
fail:;
	int e = errno;
	if (p->lfd >= 0)
		close(p->lfd);
	gp_auth_destroy(&p->auth);
	free(p);
	errno = e;
	return NULL;
}

static void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	for (int k = 1; k <= 2; k++)
		if (c->pipe[k] >= 0)
			close(c->pipe[k]);
	gp_buf_release(&c->in);
	free(c);
}

void gp_proxy_destroy(gp_proxy_t **pp)
{
	if (!pp || !*pp)
		return;
	gp_proxy_t *p = *pp;
	for (size_t i = 0; i < p->nc; i++)
		conn_free(p->c[i]);
	free(p->c);
	free(p->groups);
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->sigfd >= 0)
		close(p->sigfd);
	sigprocmask(SIG_SETMASK, &p->oldmask, NULL);
	gp_auth_destroy(&p->auth);
	free(p);
	*pp = NULL;
}

uint16_t gp_proxy_port(const gp_proxy_t *p)
{
	return p->port;
}

void gp_proxy_counts(const gp_proxy_t *p, uint64_t *auth_failures, uint64_t *evicted)
{
	*auth_failures = p->auth_failures;
	*evicted = p->evicted;
}

/* ---- replies -------------------------------------------------------------------------- */

static void send_frame(struct conn *c, uint32_t type, const void *data, size_t len)
{
	if (c->peer_gone)
		return;
	gp_buf_t b = {0};
	if (gp_frame_put(&b, type, data, len) < 0 || gp_frame_flush(c->fd, &b) < 0)
		c->peer_gone = true; /* its reads will see the end */
	gp_buf_release(&b);
}

static void send_fail(struct conn *c, const char *why)
{
	send_frame(c, GP_FRAME_FAIL, why, strlen(why));
	c->peer_gone = true;
}

/* ---- commands ------------------------------------------------------------------------- */

/* The command line as ssh hands it to the remote shell: the words joined by spaces. */
static char *join(char **argv)
{
	gp_buf_t b = {0};
	for (size_t i = 0; argv[i]; i++)
		if ((i && gp_buf_append(&b, " ", 1) < 0) ||
		    gp_buf_append(&b, argv[i], strlen(argv[i])) < 0)
			goto fail;
	if (gp_buf_append(&b, "", 1) < 0)
		goto fail;
	return (char *)b.data;
fail:
	gp_buf_release(&b);
	return NULL;
}

static int start(gp_proxy_t *p, struct conn *c, char **argv)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1};
	char *cmd = join(argv);
	pid_t *ng = realloc(p->groups, (p->ngroups + 1) * sizeof(*ng));
	if (ng)
		p->groups = ng;
	if (!ng || !cmd || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0)
		goto fail;
	pid_t pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		setpgid(0, 0);
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* both sides, so a signal at once finds the group */
	setpgid(pid, pid);
	p->groups[p->ngroups++] = pid;
	free(cmd);
	close(po[1]);
	close(pe[1]);
	c->pid = pid;
	c->pipe[1] = po[0];
	c->pipe[2] = pe[0];
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	return 0;
fail:;
	int e = errno;
	free(cmd);
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	errno = e;
	return -1;
}

static void kill_cmd(struct conn *c, int sig)
{
	if (c->pid > 0 && !c->reaped)
		kill(-c->pid, sig);
}

/* ---- requests ------------------------------------------------------------------------- */

static void on_frame(gp_proxy_t *p, struct conn *c, const struct gp_frame *f)
{
	char why[160];
	switch (c->st) {
	case C_NEW: {
		gp_error_t err = {{0}};
		if (f->type != GP_FRAME_AUTH ||
		    gp_proxy_cred_check(p->auth, p->job, c->nonce, f->data, f->len, p->owner,
					&err) < 0) {
			p->auth_failures++;
			snprintf(why, sizeof(why), "gpool-proxy: authentication failed: %.100s",
				 f->type != GP_FRAME_AUTH ? "no credential" : err.text);
			send_fail(c, why);
			return;
		}
		c->st = C_AUTHED;
		return;
	}
	case C_AUTHED:
		if (f->type == GP_FRAME_HOLD) {
			c->st = C_HOLD;
			p->had_hold = true;
			send_frame(c, GP_FRAME_OK, NULL, 0);
			return;
		}
		if (f->type == GP_FRAME_EXEC) {
			char **argv = gp_frame_argv(f);
			if (!argv) {
				send_fail(c, "gpool-proxy: malformed command");
				return;
			}
			int rc = start(p, c, argv);
			gp_frame_argv_free(argv);
			if (rc < 0) {
				snprintf(why, sizeof(why), "gpool-proxy: cannot start: %s",
					 strerror(errno));
				send_fail(c, why);
				return;
			}
			c->st = C_EXEC;
			send_frame(c, GP_FRAME_OK, NULL, 0);
			return;
		}
		send_fail(c, "gpool-proxy: unexpected request");
		return;
	case C_EXEC: {
		uint32_t sig;
		if (f->type == GP_FRAME_SIGNAL && gp_frame_u32(f, &sig) == 0 && sig > 0 && sig < 65)
			kill_cmd(c, (int)sig);
		return;
	}
	case C_HOLD:
		return;
	}
}

static void on_readable(gp_proxy_t *p, struct conn *c)
{
	/* before AUTH a peer gets no more than one small frame's worth of buffer */
	size_t want = c->st == C_NEW ? GP_FRAME_HDR + GP_FRAME_PREAUTH_MAX : READ_CHUNK;
	if (gp_buf_reserve(&c->in, want) < 0) {
		c->peer_gone = true;
		return;
	}
	size_t room = c->in.cap - c->in.len;
	if (c->st == C_NEW)
		room = c->in.len < want ? want - c->in.len : 0;
	if (room == 0) {
		send_fail(c, "gpool-proxy: frame too large before authentication");
		return;
	}
	ssize_t n = read(c->fd, c->in.data + c->in.len, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		c->peer_gone = true;
		return;
	}
	c->in.len += (size_t)n;
	size_t off = 0;
	while (!c->peer_gone) {
		struct gp_frame f;
		if (c->st == C_NEW && c->in.len - off >= GP_FRAME_HDR) {
			const uint8_t *h = c->in.data + off + 4;
			uint32_t flen = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
					(uint32_t)h[2] << 8 | h[3];
			if (flen > GP_FRAME_PREAUTH_MAX) {
				send_fail(c, "gpool-proxy: frame too large before authentication");
				break;
			}
		}
		int k = gp_frame_parse(c->in.data + off, c->in.len - off, &f);
		if (k < 0) {
			send_fail(c, "gpool-proxy: malformed frame");
			break;
		}
		if (k == 0)
			break;
		on_frame(p, c, &f);
		off += (size_t)k;
	}
	memmove(c->in.data, c->in.data + off, c->in.len - off);
	c->in.len -= off;
}

static void on_pipe(struct conn *c, int k)
{
	uint8_t buf[READ_CHUNK];
	ssize_t n = read(c->pipe[k], buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		close(c->pipe[k]);
		c->pipe[k] = -1;
		return;
	}
	send_frame(c, k == 1 ? GP_FRAME_OUT : GP_FRAME_ERR, buf, (size_t)n);
}

static void reap(gp_proxy_t *p)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (size_t i = 0; i < p->nc; i++) {
			struct conn *c = p->c[i];
			if (c->pid != pid || c->reaped)
				continue;
			/* What it left in its group stays, as under ssh: a daemon that forks,
			 * lets its parent exit and only then calls setsid (orted --daemonize)
			 * is still in the group at this moment. The final sweep ends them. */
			c->reaped = true;
			c->status = st;
			c->reaped_ms = gp_mono_ms();
		}
	}
}

static void on_signals(gp_proxy_t *p)
{
	struct signalfd_siginfo si;
	while (read(p->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap(p);
		else
			p->stop_errno = EINTR;
	}
}

/* Make room for one more unauthenticated connection from src: close the oldest one of that
 * address when it has UNAUTH_PER_SOURCE, the oldest of all when there are UNAUTH_MAX. */
static void evict_for(gp_proxy_t *p, uint32_t src)
{
	size_t same = 0, all = 0;
	struct conn *old_same = NULL, *old_all = NULL;
	for (size_t i = 0; i < p->nc; i++) {
		struct conn *c = p->c[i];
		if (c->st != C_NEW || c->peer_gone)
			continue;
		all++;
		if (!old_all || c->since_ms < old_all->since_ms)
			old_all = c;
		if (c->src == src) {
			same++;
			if (!old_same || c->since_ms < old_same->since_ms)
				old_same = c;
		}
	}
	struct conn *victim = same >= UNAUTH_PER_SOURCE ? old_same
			      : all >= UNAUTH_MAX	? old_all
							: NULL;
	if (victim) {
		victim->peer_gone = true; /* closed at the next sweep, unanswered */
		p->evicted++;
	}
}

static void on_accept(gp_proxy_t *p)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int fd = accept4(p->lfd, (struct sockaddr *)&sin, &sl, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	uint32_t src = sin.sin_family == AF_INET ? sin.sin_addr.s_addr : 0;
	evict_for(p, src);
	struct conn *c = calloc(1, sizeof(*c));
	struct conn **nv = c && p->nc < CONNS_MAX ? realloc(p->c, (p->nc + 1) * sizeof(*nv)) : NULL;
	if (!nv) {
		free(c);
		close(fd);
		return;
	}
	p->c = nv;
	c->fd = fd;
	c->src = src;
	c->since_ms = gp_mono_ms();
	c->pipe[0] = c->pipe[1] = c->pipe[2] = -1;
	p->c[p->nc++] = c;
	/* the challenge: a write of 40 bytes to a fresh socket does not block */
	randombytes_buf(c->nonce, sizeof(c->nonce));
	send_frame(c, GP_FRAME_CHALLENGE, c->nonce, sizeof(c->nonce));
}

/* A connection is finished when its command (if any) is reaped and drained, or when its peer
 * left before a command started. */
static bool conn_done(struct conn *c, int64_t now)
{
	if (c->st != C_EXEC)
		return c->peer_gone;
	if (!c->reaped)
		return false;
	if (now - c->reaped_ms >= DRAIN_MS)
		for (int k = 1; k <= 2; k++)
			if (c->pipe[k] >= 0) {
				close(c->pipe[k]);
				c->pipe[k] = -1;
			}
	return c->pipe[1] < 0 && c->pipe[2] < 0;
}

static void sweep(gp_proxy_t *p, int64_t now)
{
	size_t k = 0;
	for (size_t i = 0; i < p->nc; i++) {
		struct conn *c = p->c[i];
		if (c->st == C_NEW && !c->peer_gone && now - c->since_ms >= AUTH_TIMEOUT_MS)
			c->peer_gone = true; /* never authenticated: closed */
		if (c->st == C_EXEC && c->peer_gone && !c->reaped && !c->kill_ms) {
			/* whoever asked for it is gone (gpool-rsh killed): so is the command */
			kill_cmd(c, SIGTERM);
			c->kill_ms = now + KILL_GRACE_MS;
		}
		if (c->kill_ms && now >= c->kill_ms && !c->reaped) {
			kill_cmd(c, SIGKILL);
			c->kill_ms = 0;
		}
		if (conn_done(c, now)) {
			if (c->st == C_EXEC) {
				uint32_t st = (uint32_t)c->status;
				uint8_t b[4] = {(uint8_t)(st >> 24), (uint8_t)(st >> 16),
						(uint8_t)(st >> 8), (uint8_t)st};
				send_frame(c, GP_FRAME_EXIT, b, sizeof(b));
			}
			conn_free(c);
			continue;
		}
		p->c[k++] = c;
	}
	p->nc = k;
}

static size_t holds(const gp_proxy_t *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nc; i++)
		n += p->c[i]->st == C_HOLD && !p->c[i]->peer_gone;
	return n;
}

/* Signal what is left in the process groups of the commands that ended: a group whose leader
 * is gone still has that id (Linux reuses no pid while a group of that id exists), and a live
 * process of that pid outside this proxy's session is some other, later process. */
static size_t kill_groups(const gp_proxy_t *p, int sig)
{
	pid_t self = getsid(0);
	size_t n = 0;
	for (size_t i = 0; i < p->ngroups; i++) {
		pid_t s = getsid(p->groups[i]);
		if (((s < 0 && errno == ESRCH) || s == self) && kill(-p->groups[i], sig) == 0)
			n++;
	}
	return n;
}

/* Stop every command and what it left in its group: SIGTERM, a grace period, SIGKILL, and
 * reap them all. */
static void shutdown_all(gp_proxy_t *p)
{
	int64_t deadline = gp_mono_ms() + KILL_GRACE_MS;
	kill_groups(p, SIGTERM);
	for (size_t i = 0; i < p->nc; i++)
		kill_cmd(p->c[i], SIGTERM);
	while (1) {
		bool left = kill_groups(p, 0) > 0; /* not our children: no SIGCHLD, so look */
		for (size_t i = 0; i < p->nc; i++)
			left |= p->c[i]->pid > 0 && !p->c[i]->reaped;
		int64_t now = gp_mono_ms();
		if (!left || now >= deadline)
			break;
		struct pollfd pf = {.fd = p->sigfd, .events = POLLIN};
		poll(&pf, 1, deadline - now < 50 ? (int)(deadline - now) : 50);
		on_signals(p);
	}
	kill_groups(p, SIGKILL);
	for (size_t i = 0; i < p->nc; i++) {
		struct conn *c = p->c[i];
		if (c->pid > 0 && !c->reaped) {
			kill(-c->pid, SIGKILL);
			while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
				;
			c->reaped = true;
		}
	}
}

int gp_proxy_run(gp_proxy_t *p, int hold_timeout_ms)
{
	int64_t hold_deadline = gp_mono_ms() + hold_timeout_ms;
	struct pollfd *pf = NULL;
	struct conn **owner = NULL;
	int *which = NULL;
	int rc = 0;
	while (1) {
		int64_t now = gp_mono_ms();
		sweep(p, now);
		if (p->stop_errno) {
			rc = -1;
			errno = p->stop_errno;
			break;
		}
		if (p->had_hold && holds(p) == 0)
			break;
		if (!p->had_hold && now >= hold_deadline) {
			rc = -1;
			errno = ETIMEDOUT;
			break;
		}
		size_t cap = 2 + 3 * p->nc;
		struct pollfd *npf = realloc(pf, cap * sizeof(*pf));
		struct conn **no = npf ? realloc(owner, cap * sizeof(*owner)) : NULL;
		int *nw = no ? realloc(which, cap * sizeof(*which)) : NULL;
		if (npf)
			pf = npf;
		if (no)
			owner = no;
		if (!nw) {
			rc = -1;
			errno = ENOMEM;
			break;
		}
		which = nw;
		nfds_t n = 0;
		pf[n++] = (struct pollfd){.fd = p->sigfd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
		for (size_t i = 0; i < p->nc; i++) {
			struct conn *c = p->c[i];
			if (!c->peer_gone) {
				owner[n] = c;
				which[n] = 0;
				pf[n++] = (struct pollfd){.fd = c->fd, .events = POLLIN};
			}
			for (int k = 1; k <= 2; k++) {
				if (c->pipe[k] < 0)
					continue;
				owner[n] = c;
				which[n] = k;
				pf[n++] = (struct pollfd){.fd = c->pipe[k], .events = POLLIN};
			}
		}
		int timeout =
		    500; /* deadlines (kill, drain, hold) are checked at least this often */
		if (poll(pf, n, timeout) < 0 && errno != EINTR) {
			rc = -1;
			break;
		}
		if (pf[0].revents)
			on_signals(p);
		if (pf[1].revents)
			on_accept(p);
		for (nfds_t i = 2; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (which[i] == 0)
				on_readable(p, owner[i]);
			else if (owner[i]->pipe[which[i]] >= 0)
				on_pipe(owner[i], which[i]);
		}
	}
	int e = errno;
	shutdown_all(p);
	free(pf);
	free(owner);
	free(which);
	errno = e;
	return rc;
}
