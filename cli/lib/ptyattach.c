/* ptyattach.c: gsub --pty's client (ptyattach.h). */
#include "cli/lib/ptyattach.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli/lib/jobctl.h"
#include "common/auth.h"
#include "common/names.h"
#include "common/ptylink.h"
#include "common/sha256.h"
#include "common/util.h"

#define POLL_MS	    500	  /* how often a pending job's state is asked */
#define PLACE_MS    3000  /* how often its place in the queue is */
#define RDV_WAIT_MS 2000  /* one held rendezvous read */
#define ACCEPT_MS   10000 /* the node's answer to our credential */

static int sigpipe_fd[2] = {-1, -1};
static struct termios saved_tio;
static bool raw_on;

static void on_signal(int sig)
{
	int e = errno;
	uint8_t b = (uint8_t)sig;
	if (write(sigpipe_fd[1], &b, 1) < 0) {
	}
	errno = e;
}

static void raw_off(void)
{
	if (raw_on)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
	raw_on = false;
}

static int raw_enter(void)
{
	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -1;
	struct termios t = saved_tio;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
		return -1;
	raw_on = true;
	atexit(raw_off);
	return 0;
}

int gp_pty_key_make(uint8_t key[GP_PTY_KEY_LEN], uint8_t sha[32])
{
	if (getrandom(key, GP_PTY_KEY_LEN, 0) != GP_PTY_KEY_LEN)
		return -1;
	const void *parts[1] = {key};
	size_t lens[1] = {GP_PTY_KEY_LEN};
	gp_sha256(parts, lens, 1, sha);
	return 0;
}

Gpool__JobInfo *gp_job_info(gp_session_t *s, uint64_t id)
{
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	q.ids = &id;
	q.n_ids = 1;
	q.all = 1;
	gp_error_t err;
	Gpool__JobQueryReply *r = gp_session_job_query(s, &q, &err);
	if (!r) {
		fprintf(stderr, "gsub: job %" PRIu64 ": %s\n", id, err.text);
		return NULL;
	}
	if (r->n_jobs != 1) {
		fprintf(stderr, "gsub: job %" PRIu64 " is not known\n", id);
		return NULL;
	}
	return r->jobs[0];
}

/* A pending job's place in the queue: 1 + the pending jobs that run before it (higher
 * priority, or the same and submitted earlier: gschedd's order), and how many are pending. */
static int queue_place(gp_session_t *s, uint64_t id, int32_t prio, uint32_t *place, uint32_t *total)
{
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	Gpool__JobState st = GPOOL__JOB_STATE__PENDING;
	q.states = &st;
	q.n_states = 1;
	gp_error_t err;
	Gpool__JobQueryReply *r = gp_session_job_query(s, &q, &err);
	if (!r)
		return -1;
	*place = 1;
	*total = 0;
	for (size_t i = 0; i < r->n_jobs; i++) {
		const Gpool__JobInfo *j = r->jobs[i];
		if (j->state != GPOOL__JOB_STATE__PENDING)
			continue;
		(*total)++;
		int32_t p = j->spec ? j->spec->priority : 0;
		if (j->id != id && (p > prio || (p == prio && j->id < id)))
			(*place)++;
	}
	return 0;
}

static int job_end_status(const Gpool__JobInfo *ji)
{
	fprintf(stderr, "gsub: job %" PRIu64 " ended %s%s%s before its terminal was attached\n",
		ji->id, gp_job_state_name(ji->state), ji->reason && *ji->reason ? ": " : "",
		ji->reason ? ji->reason : "");
	return ji->exit_code > 0 && ji->exit_code <= 255 ? ji->exit_code : 1;
}

int gp_job_wait_running(gp_session_t *s, uint64_t id, uint32_t *attempt, char *nodes,
			size_t nodes_len)
{
	static char said[160];
	int64_t next_place = 0;
	int delay = 25; /* ms; doubles up to POLL_MS: a job placed at once is seen at once */
	while (1) {
		uint8_t sig;
		if (read(sigpipe_fd[0], &sig, 1) == 1 && sig != SIGWINCH) {
			/* interrupted while waiting: the job goes too, as srun's does */
			fprintf(stderr, "gsub: job %" PRIu64 ": interrupted, cancelling it\n", id);
			int failed = 0;
			gp_error_t e;
			if (gp_jobctl(s, GPOOL__JOB_ACTION__JOB_CANCEL, &id, 1, 0, "gsub", stderr,
				      &failed, &e) < 0)
				fprintf(stderr, "gsub: job %" PRIu64 ": %s\n", id, e.text);
			return 128 + sig;
		}
		Gpool__JobInfo *ji = gp_job_info(s, id);
		if (!ji)
			return 1;
		if (gp_job_state_final(ji->state))
			return job_end_status(ji);
		if (ji->state == GPOOL__JOB_STATE__PENDING) {
			char reason[96];
			snprintf(reason, sizeof(reason), "%s",
				 ji->reason && *ji->reason && strcmp(ji->reason, "None")
				     ? ji->reason
				     : "");
			int32_t prio = ji->spec ? ji->spec->priority : 0;
			uint32_t place, total;
			char line[160];
			/* the whole pending queue is a larger answer: asked for every PLACE_MS */
			int64_t now = gp_mono_ms();
			if (now >= next_place && queue_place(s, id, prio, &place, &total) == 0) {
				next_place = now + PLACE_MS;
				snprintf(line, sizeof(line),
					 "gsub: job %" PRIu64 " queued: place %u of %u%s%s", id,
					 place, total, *reason ? ", " : "", reason);
				if (strcmp(line, said)) {
					fprintf(stderr, "%s\n", line);
					snprintf(said, sizeof(said), "%s", line);
				}
			}
			usleep((useconds_t)delay * 1000);
			delay = delay * 2 < POLL_MS ? delay * 2 : POLL_MS;
			continue;
		}
		*attempt = ji->attempt;
		if (nodes)
			snprintf(nodes, nodes_len, "%s", ji->nodelist ? ji->nodelist : "");
		return 0;
	}
}

/* Wait until the job runs and its terminal is published: "ADDR:PORT" into ep, the attempt
 * into *attempt. 0, or an exit status (>0) when it never will be. */
static int wait_terminal(gp_session_t *s, uint64_t id, char *ep, size_t eplen, uint32_t *attempt)
{
	while (1) {
		int rc = gp_job_wait_running(s, id, attempt, NULL, 0);
		if (rc)
			return rc;
		Gpool__RdvGet g = GPOOL__RDV_GET__INIT;
		g.job_id = id;
		g.attempt = *attempt;
		g.key = "gpool.pty";
		g.wait_ms = RDV_WAIT_MS;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_RDV_GET;
		m.rdv_get = &g;
		gp_error_t err;
		Gpool__ErrorCode code;
		Gpool__Msg *r = gp_session_call(s, &m, GPOOL__MSG__M_RDV_GET_REPLY,
						RDV_WAIT_MS + GP_CLI_TIMEOUT_MS, &code, &err);
		if (!r && code == GPOOL__ERROR_CODE__ERROR_PERMISSION) {
			fprintf(stderr, "gsub: job %" PRIu64 ": %s\n", id, err.text);
			return 1;
		}
		if (r && r->rdv_get_reply->found) {
			size_t n = r->rdv_get_reply->value.len;
			if (n >= eplen)
				n = eplen - 1;
			memcpy(ep, r->rdv_get_reply->value.data, n);
			ep[n] = '\0';
			return 0;
		}
		if (!r) /* the attempt ended between the two questions, most likely */
			usleep(POLL_MS * 1000);
	}
}

static int connect_to(const char *ep)
{
	char host[128];
	snprintf(host, sizeof(host), "%s", ep);
	char *colon = strrchr(host, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	int fd = -1;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static void send_winsize(gp_ptylink_t *l)
{
	struct winsize ws;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
		return;
	uint8_t b[4] = {(uint8_t)(ws.ws_row >> 8), (uint8_t)ws.ws_row, (uint8_t)(ws.ws_col >> 8),
			(uint8_t)ws.ws_col};
	gp_ptylink_send(l, GP_PTY_WINSIZE, b, sizeof(b));
}

/* Send HELLO and wait for ACCEPT: 0, or -1 (said). */
static int hello(gp_ptylink_t *l, uint64_t id, uint32_t attempt, const uint8_t *key)
{
	gp_error_t err;
	gp_auth_t *auth = gp_auth_create(NULL, &err);
	struct gp_pty_hello h = {.job_id = id, .attempt = attempt};
	if (key) /* else all zero: a reattach, which the owner's credential alone allows */
		memcpy(h.key, key, GP_PTY_KEY_LEN);
	uint8_t payload[GP_PTY_HELLO_LEN];
	gp_pty_hello_pack(&h, payload);
	char *cred = NULL;
	if (!auth || gp_auth_encode(auth, payload, sizeof(payload), &cred, &err) < 0) {
		fprintf(stderr, "gsub: %s\n", err.text);
		gp_auth_destroy(&auth);
		return -1;
	}
	gp_auth_destroy(&auth);
	int rc = gp_ptylink_send(l, GP_PTY_HELLO, cred, strlen(cred));
	free(cred);
	if (rc < 0 || gp_ptylink_flush(l) < 0) {
		fprintf(stderr, "gsub: job %" PRIu64 ": cannot reach its terminal: %s\n", id,
			strerror(errno));
		return -1;
	}
	int64_t deadline = gp_mono_ms() + ACCEPT_MS;
	while (1) {
		struct gp_pty_frame f;
		int r = gp_ptylink_next(l, &f);
		if (r > 0 && f.type == GP_PTY_ACCEPT)
			return 0;
		if (r > 0 && f.type == GP_PTY_REFUSE) {
			fprintf(stderr, "gsub: job %" PRIu64 ": the terminal refused us: %.*s\n",
				id, (int)f.len, (const char *)f.data);
			return -1;
		}
		if (r != 0) {
			fprintf(stderr, "gsub: job %" PRIu64 ": the terminal's answer is garbled\n",
				id);
			return -1;
		}
		int left = (int)(deadline - gp_mono_ms());
		struct pollfd p = {.fd = gp_ptylink_fd(l), .events = POLLIN};
		if (left <= 0 || poll(&p, 1, left) <= 0 || gp_ptylink_read(l) < 0) {
			fprintf(stderr, "gsub: job %" PRIu64 ": no answer from its terminal\n", id);
			return -1;
		}
	}
}

static int status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 1;
}

/* The frames the link holds: output to stdout; 1 with the exit status in *code at EXIT, 0
 * when none is left, -1 on a garbled stream or a failed write (said). */
static int take_frames(gp_ptylink_t *l, uint64_t id, bool tty, int *code)
{
	struct gp_pty_frame f;
	int r;
	while ((r = gp_ptylink_next(l, &f)) > 0) {
		if (f.type == GP_PTY_DATA) {
			if (gp_write_all(STDOUT_FILENO, f.data, f.len) < 0)
				return -1;
		} else if (f.type == GP_PTY_EXIT) {
			uint32_t st = (uint32_t)f.data[0] << 24 | (uint32_t)f.data[1] << 16 |
				      (uint32_t)f.data[2] << 8 | f.data[3];
			*code = status_code((int)st);
			return 1;
		} else {
			r = -1;
			break;
		}
	}
	if (r < 0)
		fprintf(stderr, "%sgsub: job %" PRIu64 ": garbled terminal stream\n",
			tty ? "\r\n" : "", id);
	return r;
}

#define DETACHED (-2) /* relay's answer when this gsub let go of a terminal that waits */

/* ssh's escapes at the start of a line, on a terminal of a job that can be detached: "~."
 * detaches, "~~" is one '~'. in[0..n) becomes out (up to 2n bytes); 1 when "~." was typed. */
struct escape {
	bool bol;   /* at the start of a line */
	bool tilde; /* a '~' held back */
};

static int escapes(struct escape *e, const uint8_t *in, size_t n, uint8_t *out, size_t *olen)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = in[i];
		if (e->tilde) {
			e->tilde = false;
			if (b == '.') {
				*olen = k;
				return 1;
			}
			out[k++] = '~';
			if (b == '~') {
				e->bol = false;
				continue;
			}
		} else if (e->bol && b == '~') {
			e->tilde = true;
			continue;
		}
		out[k++] = b;
		e->bol = b == '\r' || b == '\n';
	}
	*olen = k;
	return 0;
}

/* Carry bytes until EXIT: the exit status, -1 when the link broke (said), DETACHED when this
 * gsub let go of a terminal that waits for gsub --attach (detachable: "~." on a terminal, or
 * SIGHUP: the terminal gsub ran in went away). */
static int relay(gp_ptylink_t *l, uint64_t id, bool tty, bool detachable)
{
	bool in_open = true;
	uint8_t buf[GP_PTY_DATA_MAX], ebuf[2 * GP_PTY_DATA_MAX];
	struct escape esc = {.bol = true};
	int code, r;
	/* what came with ACCEPT (a short task's output and EXIT, the link closed behind them) */
	if ((r = take_frames(l, id, tty, &code)) != 0)
		return r > 0 ? code : -1;
	while (1) {
		struct pollfd p[3] = {
		    {.fd = gp_ptylink_fd(l),
		     .events = (short)(POLLIN | (gp_ptylink_pending(l) ? POLLOUT : 0))},
		    {.fd = sigpipe_fd[0], .events = POLLIN},
		    {.fd = in_open && gp_ptylink_pending(l) < (1u << 20) ? STDIN_FILENO : -1,
		     .events = POLLIN},
		};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents) {
			uint8_t sig;
			while (read(sigpipe_fd[0], &sig, 1) == 1) {
				if (sig == SIGWINCH) {
					send_winsize(l);
				} else if (sig == SIGHUP && detachable) {
					gp_ptylink_flush(l);
					return DETACHED;
				} else {
					gp_ptylink_send(l, GP_PTY_SIGNAL, &sig, 1);
				}
			}
		}
		if (p[2].revents) {
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			size_t m = (size_t)(n > 0 ? n : 0);
			if (n > 0 && tty && detachable) {
				int detach = escapes(&esc, buf, m, ebuf, &m);
				for (size_t o = 0; o < m; o += GP_PTY_DATA_MAX)
					gp_ptylink_send(l, GP_PTY_DATA, ebuf + o,
							m - o < GP_PTY_DATA_MAX ? m - o
										: GP_PTY_DATA_MAX);
				if (detach) {
					gp_ptylink_flush(l);
					return DETACHED;
				}
			} else if (n > 0) {
				gp_ptylink_send(l, GP_PTY_DATA, buf, m);
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				in_open = false;
				if (tty && detachable) { /* the terminal went away (hung up) */
					gp_ptylink_flush(l);
					return DETACHED;
				}
				if (!tty)
					gp_ptylink_send(l, GP_PTY_EOF, NULL, 0);
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			/* the frames read before an end or error are taken first: EXIT may be there
			 */
			bool broke = gp_ptylink_read(l) < 0;
			if ((r = take_frames(l, id, tty, &code)) != 0)
				return r > 0 ? code : -1;
			if (broke) {
				fprintf(stderr,
					"%sgsub: job %" PRIu64
					": connection to its terminal lost\n",
					tty ? "\r\n" : "", id);
				return -1;
			}
		}
		if (gp_ptylink_flush(l) < 0) {
			fprintf(stderr,
				"%sgsub: job %" PRIu64 ": connection to its terminal lost\n",
				tty ? "\r\n" : "", id);
			return -1;
		}
	}
	return -1;
}

int gp_job_wait_signals(void)
{
	if (sigpipe_fd[0] < 0 && pipe2(sigpipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	/* until attached, Ctrl-C ends gsub and cancels the job (as srun does while it waits);
	 * once attached, on a terminal, Ctrl-C is a byte for the remote terminal, and these come
	 * from elsewhere (kill): they go to the task's foreground group as to a local one */
	int fwd[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa, NULL);
	return 0;
}

int gp_pty_attach(gp_session_t *s, uint64_t id, const uint8_t key[GP_PTY_KEY_LEN])
{
	if (!key) { /* a reattach: to a job that runs, never one we would cancel while waiting */
		Gpool__JobInfo *ji = gp_job_info(s, id);
		if (!ji)
			return 1;
		if (!ji->spec || !ji->spec->pty) {
			fprintf(stderr, "gsub: job %" PRIu64 " has no terminal (not a --pty job)\n",
				id);
			return 1;
		}
		if (ji->state != GPOOL__JOB_STATE__RUNNING) {
			fprintf(stderr, "gsub: job %" PRIu64 " is %s: no terminal to attach to\n",
				id, gp_job_state_name(ji->state));
			return 1;
		}
	}
	if (gp_job_wait_signals() < 0) {
		fprintf(stderr, "gsub: pipe: %s\n", strerror(errno));
		return 1;
	}
	bool tty = isatty(STDIN_FILENO);
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	char ep[128];
	uint32_t attempt = 0;
	int rc = wait_terminal(s, id, ep, sizeof(ep), &attempt);
	if (rc)
		return rc;
	int fd = connect_to(ep);
	if (fd < 0) {
		fprintf(stderr, "gsub: job %" PRIu64 ": cannot connect to its terminal at %s: %s\n",
			id, ep, strerror(errno));
		return 1;
	}
	gp_ptylink_t *l = gp_ptylink_create(fd);
	if (!l || hello(l, id, attempt, key) < 0) {
		gp_ptylink_destroy(&l);
		return 1;
	}
	Gpool__JobInfo *ji = gp_job_info(s, id);
	uint32_t keep = ji && ji->spec ? ji->spec->pty_keep_sec : 0;
	sigaction(SIGWINCH, &sa, NULL);
	if (tty && raw_enter() < 0)
		fprintf(stderr, "gsub: cannot put the terminal in raw mode: %s\n", strerror(errno));
	if (!key)
		fprintf(stderr, "gsub: job %" PRIu64 ": attached%s\n", id, tty ? "\r" : "");
	send_winsize(l);
	rc = relay(l, id, tty, keep > 0);
	raw_off();
	gp_ptylink_destroy(&l);
	if (rc == DETACHED) {
		fprintf(stderr,
			"%sgsub: job %" PRIu64 " detached: its terminal waits %u s for "
			"'gsub --attach %" PRIu64 "'\n",
			tty ? "\r\n" : "", id, keep, id);
		return 0;
	}
	if (rc < 0) {
		ji = gp_job_info(s, id);
		if (ji)
			fprintf(stderr, "gsub: job %" PRIu64 " is %s\n", id,
				gp_job_state_name(ji->state));
		return 1;
	}
	return rc;
}
