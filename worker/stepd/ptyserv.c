/* ptyserv.c: a pty job's terminal and its one client (ptyserv.h). */
#include "worker/stepd/ptyserv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/sched_client.h"
#include "common/log.h"
#include "common/ptylink.h"
#include "common/sha256.h"
#include "common/util.h"
#include "worker/stepd/step.h"

#define OUT_HIGH     (256u << 10) /* stop reading the terminal above this much unsent */
#define TOTERM_MAX   (64u << 10)  /* bytes for the terminal not yet taken by it */
#define EXIT_SEND_MS 3000	  /* after EXIT, the client's last chance to read it */

struct pending {
	gp_ptylink_t *l;
	int64_t deadline;
	char peer[64];
};

enum item { IT_LISTEN, IT_PEND, IT_LINK, IT_TERM };

struct gp_ptyserv {
	uint64_t job;
	uint32_t attempt;
	uid_t uid;
	uint8_t keyhash[32];
	const struct task *t;
	gp_auth_t *auth;
	int lfd;
	struct pending pend[PTY_PENDING];
	gp_ptylink_t *link;
	int ptm;
	bool ptm_eof;
	uint8_t toterm[TOTERM_MAX];
	size_t toterm_len;
	int64_t attach_deadline, drain_deadline, exit_deadline;
	bool exit_sent, finished;
	bool closing;	  /* EXIT flushed, our side shut: waiting for the client to close */
	uint32_t keep_ms; /* gsub --pty-keep: a detached terminal waits this long (0: hang up) */
	bool detached;	  /* its client went away, and it waits for gsub --attach */
	size_t poll_at, poll_n;
	enum item what[PTY_POLL_MAX];
	int which[PTY_POLL_MAX];
};

int gp_pty_open(uid_t uid, gid_t gid, int *master, int *slave, char *why, size_t len)
{
	char name[128];
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0) {
		snprintf(why, len, "cannot open a pseudo-terminal: %s", strerror(errno));
		if (m >= 0)
			close(m);
		return -1;
	}
	int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		snprintf(why, len, "cannot open '%s': %s", name, strerror(errno));
		close(m);
		return -1;
	}
	/* the user's terminal, as login and sshd make it */
	if (geteuid() == 0 && (fchown(s, uid, gid) < 0 || fchmod(s, 0620) < 0))
		gp_warn("%s: cannot give it to uid %u: %s", name, (unsigned)uid, strerror(errno));
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	ioctl(m, TIOCSWINSZ, &ws);
	*master = m;
	*slave = s;
	return 0;
}

/* Publish "ADDR:PORT" under "gpool.pty" in the attempt's rendezvous store. */
static int publish(struct step *s, uint16_t port, gp_error_t *err)
{
	const Gpool__Launch *l = s->launch;
	if (!s->xfer_cfg)
		return gp_errprintf(err, "no scheduler to publish the terminal's port to");
	if (!l->master_addr || !*l->master_addr)
		return gp_errprintf(err, "this node's address is not known");
	char val[128];
	snprintf(val, sizeof(val), "%s:%u", l->master_addr, (unsigned)port);
	gp_client_t *c = gp_client_create(s->xfer_cfg, err);
	if (!c)
		return -1;
	Gpool__RdvPut put = GPOOL__RDV_PUT__INIT;
	put.job_id = l->job_id;
	put.attempt = l->attempt;
	put.rank = 0;
	put.key = "gpool.pty";
	put.value.data = (uint8_t *)val;
	put.value.len = strlen(val);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_RDV_PUT;
	m.rdv_put = &put;
	Gpool__Msg *r = gp_client_call(c, &m, 5000, err);
	int rc = 0;
	if (!r)
		rc = -1;
	else if (r->m_case != GPOOL__MSG__M_RDV_PUT_REPLY)
		rc = gp_errprintf(err, "the scheduler refused the terminal's port: %s",
				  r->m_case == GPOOL__MSG__M_ERROR && r->error->text
				      ? r->error->text
				      : "unexpected reply");
	gp_client_destroy(&c);
	if (rc == 0)
		gp_info("job %llu.%u: terminal on %s", (unsigned long long)l->job_id, l->attempt,
			val);
	return rc;
}

gp_ptyserv_t *gp_ptyserv_create(struct step *s, const struct task *t, int master, gp_error_t *err)
{
	const Gpool__JobSpec *sp = s->launch->spec;
	gp_ptyserv_t *p = calloc(1, sizeof(*p));
	if (!p) {
		close(master);
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	p->ptm = master;
	p->lfd = -1;
	p->job = s->launch->job_id;
	p->attempt = s->launch->attempt;
	p->uid = s->account.uid;
	p->t = t;
	fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
	if (sp->pty_key_sha256.len != sizeof(p->keyhash)) {
		gp_errprintf(err, "the job carries no terminal key");
		goto fail;
	}
	memcpy(p->keyhash, sp->pty_key_sha256.data, sizeof(p->keyhash));
	/* at most a week, as gschedd lets in: in ms it fits 32 bits */
	p->keep_ms =
	    (sp->pty_keep_sec < PTY_KEEP_MAX_SEC ? sp->pty_keep_sec : PTY_KEEP_MAX_SEC) * 1000u;
	/* the owner as the launch names it: a job run as the agent's account (run_as) is still
	 * attached to by its submitter only */
	p->uid = s->launch->uid;
	if (!(p->auth = gp_auth_create(NULL, err)))
		goto fail;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t alen = sizeof(a);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->lfd, PTY_PENDING) < 0 ||
	    getsockname(p->lfd, (struct sockaddr *)&a, &alen) < 0) {
		gp_errprintf(err, "cannot listen for the terminal's client: %s", strerror(errno));
		goto fail;
	}
	if (publish(s, ntohs(a.sin_port), err) < 0)
		goto fail;
	p->attach_deadline = gp_mono_ms() + PTY_ATTACH_MS;
	return p;
fail:
	gp_ptyserv_destroy(&p);
	return NULL;
}

static void close_listener(gp_ptyserv_t *p)
{
	if (p->lfd >= 0)
		close(p->lfd);
	p->lfd = -1;
	for (size_t i = 0; i < PTY_PENDING; i++)
		gp_ptylink_destroy(&p->pend[i].l);
}

/* Hang the terminal up: the session's processes get SIGHUP. */
static void hangup(gp_ptyserv_t *p)
{
	if (p->ptm >= 0)
		close(p->ptm);
	p->ptm = -1;
	p->toterm_len = 0;
}

void gp_ptyserv_destroy(gp_ptyserv_t **pp)
{
	gp_ptyserv_t *p = pp ? *pp : NULL;
	if (!p)
		return;
	close_listener(p);
	gp_ptylink_destroy(&p->link);
	hangup(p);
	gp_auth_destroy(&p->auth);
	free(p);
	*pp = NULL;
}

static void refuse(gp_ptyserv_t *p, struct pending *c, const char *why)
{
	gp_warn("job %llu.%u: terminal connection from %s refused: %s", (unsigned long long)p->job,
		p->attempt, c->peer, why);
	gp_ptylink_send(c->l, GP_PTY_REFUSE, why, strlen(why));
	gp_ptylink_flush(c->l);
	gp_ptylink_destroy(&c->l);
}

static void on_accept(gp_ptyserv_t *p)
{
	while (1) {
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);
		int fd =
		    accept4(p->lfd, (struct sockaddr *)&a, &alen, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		struct pending *c = NULL;
		for (size_t i = 0; i < PTY_PENDING && !c; i++)
			if (!p->pend[i].l)
				c = &p->pend[i];
		if (!c) {
			/* too many at once: the one that has waited longest for its HELLO goes, so
			 * that strangers who fill the slots cannot keep the owner out (the owner's
			 * HELLO follows its connection at once) */
			c = &p->pend[0];
			for (size_t i = 1; i < PTY_PENDING; i++)
				if (p->pend[i].deadline < c->deadline)
					c = &p->pend[i];
			gp_ptylink_destroy(&c->l);
		}
		if (!(c->l = gp_ptylink_create(fd)))
			continue;
		c->deadline = gp_mono_ms() + PTY_HELLO_MS;
		char ip[INET_ADDRSTRLEN] = "?";
		inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)ntohs(a.sin_port));
	}
}

/* A pending connection's HELLO: attach it, or refuse it with the first reason that holds. */
static void on_hello(gp_ptyserv_t *p, struct pending *c, const struct gp_pty_frame *f)
{
	char cred[GP_PTY_HELLO_MAX + 1];
	memcpy(cred, f->data, f->len);
	cred[f->len] = '\0';
	void *payload = NULL;
	size_t plen = 0;
	uid_t uid;
	gid_t gid;
	enum gp_auth_status st = GP_AUTH_INVALID; /* a NUL inside is invalid too */
	gp_error_t e = {{0}};
	if (strlen(cred) != f->len ||
	    gp_auth_decode(p->auth, cred, &payload, &plen, &uid, &gid, &st, &e) < 0) {
		refuse(p, c,
		       st == GP_AUTH_REPLAYED  ? "credential replayed"
		       : st == GP_AUTH_EXPIRED ? "credential expired"
					       : "invalid credential");
		return;
	}
	struct gp_pty_hello h;
	int ok = gp_pty_hello_parse(payload, plen, &h);
	free(payload);
	if (uid != p->uid) {
		char why[96];
		snprintf(why, sizeof(why), "uid %u is not the job's owner", (unsigned)uid);
		refuse(p, c, why);
		return;
	}
	if (ok < 0 || h.job_id != p->job || h.attempt != p->attempt) {
		refuse(p, c, "the credential is not for this job attempt");
		return;
	}
	/* no key: a reattach (gsub --attach), for the owner while the terminal is detached */
	static const uint8_t none[GP_PTY_KEY_LEN];
	bool reattach = gp_pty_key_eq(h.key, none, sizeof(none));
	uint8_t hash[32];
	const void *parts[1] = {h.key};
	size_t lens[1] = {sizeof(h.key)};
	gp_sha256(parts, lens, 1, hash);
	if (reattach && !p->keep_ms) {
		refuse(p, c, "the job keeps no detached terminal (gsub --pty-keep)");
		return;
	}
	if (reattach && !p->detached) {
		refuse(p, c, "the terminal is not detached");
		return;
	}
	if (!reattach && !gp_pty_key_eq(hash, p->keyhash, sizeof(hash))) {
		refuse(p, c, "wrong key");
		return;
	}
	if (p->link || p->ptm < 0) {
		refuse(p, c, "the terminal is taken or gone");
		return;
	}
	gp_info("job %llu.%u: terminal %sattached from %s (uid %u)", (unsigned long long)p->job,
		p->attempt, p->detached ? "re" : "", c->peer, (unsigned)uid);
	p->link = c->l;
	c->l = NULL;
	p->detached = false;
	gp_ptylink_send(p->link, GP_PTY_ACCEPT, NULL, 0);
	if (!p->keep_ms)
		close_listener(p); /* the key is used */
}

static void on_pending(gp_ptyserv_t *p, struct pending *c)
{
	if (gp_ptylink_read(c->l) < 0) {
		gp_ptylink_destroy(&c->l);
		return;
	}
	struct gp_pty_frame f;
	int r = gp_ptylink_next(c->l, &f);
	if (r < 0)
		refuse(p, c, "bad frame");
	else if (r > 0 && f.type != GP_PTY_HELLO)
		refuse(p, c, "no credential");
	else if (r > 0)
		on_hello(p, c, &f);
}

static void to_term(gp_ptyserv_t *p, const void *d, size_t n)
{
	if (p->ptm < 0)
		return;
	if (n > TOTERM_MAX - p->toterm_len) /* cannot happen: the link is read only with room */
		n = TOTERM_MAX - p->toterm_len;
	memcpy(p->toterm + p->toterm_len, d, n);
	p->toterm_len += n;
}

static void drop_link(gp_ptyserv_t *p, const char *why)
{
	gp_ptylink_destroy(&p->link);
	if (!p->exit_sent && p->keep_ms && p->ptm >= 0 && p->lfd >= 0) {
		/* detached: the task runs on (its output waits in the terminal, as for a slow
		 * one) and the terminal waits for gsub --attach */
		p->detached = true;
		p->attach_deadline = gp_mono_ms() + p->keep_ms;
		gp_info("job %llu.%u: terminal client gone (%s): detached, kept %u s for gsub "
			"--attach",
			(unsigned long long)p->job, p->attempt, why, p->keep_ms / 1000);
		return;
	}
	gp_info("job %llu.%u: terminal client gone (%s)%s", (unsigned long long)p->job, p->attempt,
		why, p->exit_sent ? "" : ": hanging up");
	if (!p->exit_sent)
		hangup(p);
}

static void on_link(gp_ptyserv_t *p)
{
	if (p->closing) { /* what the client still sends is read and dropped until it closes */
		struct gp_pty_frame f;
		if (gp_ptylink_read(p->link) < 0)
			gp_ptylink_destroy(&p->link);
		else
			while (gp_ptylink_next(p->link, &f) > 0)
				;
		return;
	}
	if (gp_ptylink_read(p->link) < 0) {
		drop_link(p, errno ? strerror(errno) : "closed");
		return;
	}
	struct gp_pty_frame f;
	int r;
	while ((r = gp_ptylink_next(p->link, &f)) > 0) {
		switch (f.type) {
		case GP_PTY_DATA:
			to_term(p, f.data, f.len);
			break;
		case GP_PTY_WINSIZE: {
			struct winsize ws = {.ws_row = (unsigned short)(f.data[0] << 8 | f.data[1]),
					     .ws_col =
						 (unsigned short)(f.data[2] << 8 | f.data[3])};
			if (p->ptm >= 0)
				ioctl(p->ptm, TIOCSWINSZ, &ws);
			break;
		}
		case GP_PTY_SIGNAL: {
			pid_t pg = p->ptm >= 0 ? tcgetpgrp(p->ptm) : -1;
			if (gp_pty_signal_allowed(f.data[0]) && pg > 1)
				kill(-pg, f.data[0]);
			break;
		}
		case GP_PTY_EOF: {
			struct termios tio;
			if (p->ptm >= 0 && tcgetattr(p->ptm, &tio) == 0)
				to_term(p, &tio.c_cc[VEOF], 1);
			break;
		}
		default:
			drop_link(p, "unexpected frame");
			return;
		}
	}
	if (r < 0)
		drop_link(p, "bad frame");
}

static void term_write(gp_ptyserv_t *p)
{
	if (p->ptm < 0 || !p->toterm_len)
		return;
	ssize_t n = write(p->ptm, p->toterm, p->toterm_len);
	if (n > 0) {
		memmove(p->toterm, p->toterm + n, p->toterm_len - (size_t)n);
		p->toterm_len -= (size_t)n;
	}
}

static void term_read(gp_ptyserv_t *p)
{
	uint8_t buf[GP_PTY_DATA_MAX];
	ssize_t n = read(p->ptm, buf, sizeof(buf));
	if (n > 0) {
		if (p->link)
			gp_ptylink_send(p->link, GP_PTY_DATA, buf, (size_t)n);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		p->ptm_eof = true; /* EIO: every slave descriptor is closed */
	}
}

size_t gp_ptyserv_poll(gp_ptyserv_t *p, zmq_pollitem_t *items, size_t at)
{
	size_t n = 0;
	p->poll_at = at;
	if (p->finished) {
		p->poll_n = 0;
		return 0;
	}
	if (p->lfd >= 0) {
		p->what[n] = IT_LISTEN;
		items[at + n++] = (zmq_pollitem_t){.fd = p->lfd, .events = ZMQ_POLLIN};
	}
	for (size_t i = 0; i < PTY_PENDING; i++) {
		if (!p->pend[i].l)
			continue;
		p->what[n] = IT_PEND;
		p->which[n] = (int)i;
		items[at + n++] =
		    (zmq_pollitem_t){.fd = gp_ptylink_fd(p->pend[i].l), .events = ZMQ_POLLIN};
	}
	if (p->link) {
		short ev = p->closing || p->toterm_len + GP_PTY_FRAME_MAX * 2 <= TOTERM_MAX
			       ? ZMQ_POLLIN
			       : 0;
		if (gp_ptylink_pending(p->link))
			ev |= ZMQ_POLLOUT;
		p->what[n] = IT_LINK;
		items[at + n++] = (zmq_pollitem_t){.fd = gp_ptylink_fd(p->link), .events = ev};
	}
	/* the terminal is read only for an attached client with room: until then its output
	 * waits in the kernel, and a full buffer holds the task up as a slow terminal would */
	if (p->ptm >= 0 && !p->ptm_eof) {
		short ev = 0;
		if (p->link && !p->exit_sent && gp_ptylink_pending(p->link) < OUT_HIGH)
			ev |= ZMQ_POLLIN;
		if (p->toterm_len)
			ev |= ZMQ_POLLOUT;
		if (ev) {
			p->what[n] = IT_TERM;
			items[at + n++] = (zmq_pollitem_t){.fd = p->ptm, .events = ev};
		}
	}
	p->poll_n = n;
	return n;
}

void gp_ptyserv_ready(gp_ptyserv_t *p, const zmq_pollitem_t *items)
{
	for (size_t i = 0; i < p->poll_n; i++) {
		short rev = items[p->poll_at + i].revents;
		if (!rev)
			continue;
		switch (p->what[i]) {
		case IT_LISTEN:
			if (p->lfd >= 0)
				on_accept(p);
			break;
		case IT_PEND:
			if (p->pend[p->which[i]].l)
				on_pending(p, &p->pend[p->which[i]]);
			break;
		case IT_LINK:
			if (p->link && (rev & (ZMQ_POLLIN | ZMQ_POLLERR)))
				on_link(p);
			break;
		case IT_TERM:
			if (p->ptm >= 0 && (rev & ZMQ_POLLOUT))
				term_write(p);
			if (p->ptm >= 0 && (rev & (ZMQ_POLLIN | ZMQ_POLLERR)))
				term_read(p);
			break;
		}
	}
	if (p->link && gp_ptylink_flush(p->link) < 0)
		drop_link(p, strerror(errno));
}

int64_t gp_ptyserv_tick(gp_ptyserv_t *p, int64_t now)
{
	if (p->finished)
		return INT64_MAX;
	int64_t next = INT64_MAX;
	for (size_t i = 0; i < PTY_PENDING; i++) {
		struct pending *c = &p->pend[i];
		if (!c->l)
			continue;
		if (now >= c->deadline)
			refuse(p, c, "no credential in time");
		else if (c->deadline < next)
			next = c->deadline;
	}
	if (!p->link && !p->exit_sent && p->ptm >= 0 && p->lfd >= 0) {
		if (now >= p->attach_deadline) {
			gp_warn("job %llu.%u: nobody %sattached to the terminal: hanging up",
				(unsigned long long)p->job, p->attempt, p->detached ? "re" : "");
			close_listener(p);
			hangup(p);
		} else if (p->attach_deadline < next) {
			next = p->attach_deadline;
		}
	}
	if (p->t->state < TASK_REAPED)
		return next;
	/* the task ended before its submitter attached (a short command, a loaded machine: gsub
	 * polls for the job to start): its output and exit status wait for the client until the
	 * attach deadline, as they would in the terminal of a task still running */
	if (!p->exit_sent && !p->link && p->lfd >= 0 && now < p->attach_deadline)
		return next < p->attach_deadline ? next : p->attach_deadline;
	/* the task ended: drain the terminal (from when it ended or the client came, the later),
	 * then tell the client */
	if (!p->drain_deadline)
		p->drain_deadline = now + STEP_DRAIN_MS;
	if (!p->exit_sent && p->link && p->ptm >= 0 && !p->ptm_eof && now < p->drain_deadline)
		return next < p->drain_deadline ? next : p->drain_deadline;
	if (!p->exit_sent) {
		p->exit_sent = true;
		p->exit_deadline = now + EXIT_SEND_MS;
		close_listener(p);
		if (p->link) {
			int st = p->t->status;
			uint8_t b[4] = {(uint8_t)((uint32_t)st >> 24),
					(uint8_t)((uint32_t)st >> 16), (uint8_t)((uint32_t)st >> 8),
					(uint8_t)st};
			if (gp_ptylink_send(p->link, GP_PTY_EXIT, b, sizeof(b)) < 0 ||
			    gp_ptylink_flush(p->link) < 0)
				gp_ptylink_destroy(&p->link);
		}
	}
	if (p->link && gp_ptylink_pending(p->link) && now < p->exit_deadline) {
		gp_ptylink_flush(p->link);
		if (gp_ptylink_pending(p->link))
			return next < now + 50 ? next : now + 50;
	}
	/* closed with the client's last bytes (its EOF, a window size) unread, the connection
	 * would be reset, and a reset can drop what the client has not read yet, EXIT included:
	 * shut our side and wait for the client, which closes once it has EXIT */
	if (p->link && now < p->exit_deadline) {
		if (!p->closing)
			shutdown(gp_ptylink_fd(p->link), SHUT_WR);
		p->closing = true;
		return next < p->exit_deadline ? next : p->exit_deadline;
	}
	gp_ptylink_destroy(&p->link);
	hangup(p);
	p->finished = true;
	return INT64_MAX;
}

bool gp_ptyserv_done(const gp_ptyserv_t *p)
{
	return !p || p->finished;
}
