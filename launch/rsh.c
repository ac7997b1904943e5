/* rsh.c: the exec-proxy's client (see rsh.h). */
#include "launch/rsh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launch/frame.h"
#include "launch/proxyauth.h"

#define CHALLENGE_TIMEOUT_MS 10000
#include "common/util.h"

static int next_frame(int fd, gp_buf_t *in, size_t *consumed, struct gp_frame *f);
static int refused(const struct gp_frame *f, gp_error_t *err);

/* The proxy's challenge, answered with this uid's credential for it (proxyauth.h). */
static int authenticate(int fd, const char *addr, uint16_t port, uint64_t job, gp_error_t *err)
{
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	if (poll(&pf, 1, CHALLENGE_TIMEOUT_MS) <= 0) {
		errno = ETIMEDOUT;
		return gp_errprintf(err, "no challenge from %s:%u", addr, port);
	}
	gp_buf_t in = {0}, b = {0};
	size_t used = 0;
	struct gp_frame f;
	int k = next_frame(fd, &in, &used, &f);
	if (k != 1 || f.type != GP_FRAME_CHALLENGE || f.len != GP_PROXY_NONCE || in.len != used) {
		if (k == 1 && f.type == GP_FRAME_FAIL)
			refused(&f, err);
		else
			gp_errprintf(err, "%s:%u is no gpool exec-proxy (no challenge)", addr,
				     port);
		gp_buf_release(&in);
		errno = EPROTO;
		return -1;
	}
	uint8_t nonce[GP_PROXY_NONCE];
	memcpy(nonce, f.data, sizeof(nonce));
	gp_buf_release(&in);
	char *cred = NULL;
	gp_auth_t *a = gp_auth_create(NULL, err);
	int rc = a && gp_proxy_cred(a, job, nonce, &cred, err) == 0 ? 0 : -1;
	gp_auth_destroy(&a);
	if (rc < 0)
		return -1;
	if (gp_frame_put(&b, GP_FRAME_AUTH, cred, strlen(cred)) < 0 || gp_frame_flush(fd, &b) < 0)
		rc = gp_errprintf(err, "cannot talk to %s:%u: %s", addr, port, strerror(errno));
	free(cred);
	gp_buf_release(&b);
	return rc;
}

static int dial(const char *addr, uint16_t port, uint64_t job, gp_error_t *err)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid proxy address '%s'", addr);
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return gp_errprintf(err, "socket: %s", strerror(errno));
	while (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(fd);
		errno = e;
		return gp_errprintf(err, "cannot connect to %s:%u: %s", addr, port, strerror(e));
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	if (authenticate(fd, addr, port, job, err) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Read the next frame from fd into *in (which keeps what follows it). 1: a frame in *f
 * (valid until the next call), 0: the connection ended, -1: malformed or read error. */
static int next_frame(int fd, gp_buf_t *in, size_t *consumed, struct gp_frame *f)
{
	/* drop the frame handed out last time (none before the first: in->data may be NULL,
	 * which memmove must not get even for 0 bytes) */
	if (*consumed) {
		memmove(in->data, in->data + *consumed, in->len - *consumed);
		in->len -= *consumed;
		*consumed = 0;
	}
	while (1) {
		int k = in->len ? gp_frame_parse(in->data, in->len, f) : 0;
		if (k < 0)
			return -1;
		if (k > 0) {
			*consumed = (size_t)k;
			return 1;
		}
		if (gp_buf_reserve(in, 65536) < 0)
			return -1;
		ssize_t n = read(fd, in->data + in->len, in->cap - in->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		in->len += (size_t)n;
	}
}

static int refused(const struct gp_frame *f, gp_error_t *err)
{
	errno = EACCES;
	return gp_errprintf(err, "%.*s", (int)(f->len < 200 ? f->len : 200), (const char *)f->data);
}

int gp_rsh_hold(const char *addr, uint16_t port, uint64_t job, int timeout_ms, gp_error_t *err)
{
	int fd = dial(addr, port, job, err);
	if (fd < 0)
		return -1;
	gp_buf_t b = {0}, in = {0};
	size_t used = 0;
	struct gp_frame f;
	int rc = -1;
	if (gp_frame_put(&b, GP_FRAME_HOLD, NULL, 0) < 0 || gp_frame_flush(fd, &b) < 0) {
		gp_errprintf(err, "cannot talk to %s:%u: %s", addr, port, strerror(errno));
		goto out;
	}
	struct pollfd pf = {.fd = fd, .events = POLLIN};
	if (poll(&pf, 1, timeout_ms) <= 0) {
		errno = ETIMEDOUT;
		gp_errprintf(err, "no answer from %s:%u", addr, port);
		goto out;
	}
	int k = next_frame(fd, &in, &used, &f);
	if (k == 1 && f.type == GP_FRAME_OK)
		rc = fd;
	else if (k == 1 && f.type == GP_FRAME_FAIL)
		refused(&f, err);
	else {
		errno = EPROTO;
		gp_errprintf(err, "%s:%u ended the connection", addr, port);
	}
out:
	gp_buf_release(&b);
	gp_buf_release(&in);
	if (rc < 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return rc;
}

/* One frame of a running command: 0 go on, 1 it ended (*status set), -1 refused. */
static int on_frame(const struct gp_frame *f, int outfd, int errfd, int *status, gp_error_t *err)
{
	uint32_t st;
	switch (f->type) {
	case GP_FRAME_OUT:
		gp_write_all(outfd, f->data, f->len);
		return 0;
	case GP_FRAME_ERR:
		gp_write_all(errfd, f->data, f->len);
		return 0;
	case GP_FRAME_FAIL:
		return refused(f, err);
	case GP_FRAME_EXIT:
		if (gp_frame_u32(f, &st) < 0) {
			errno = EPROTO;
			return gp_errprintf(err, "malformed exit status");
		}
		*status = (int)st;
		return 1;
	default:
		return 0; /* OK, and what a newer proxy may add */
	}
}

int gp_rsh_exec(const char *addr, uint16_t port, uint64_t job, char *const *argv, int outfd,
		int errfd, int sigfd, int *status, gp_error_t *err)
{
	int fd = dial(addr, port, job, err);
	if (fd < 0)
		return -1;
	gp_buf_t b = {0}, in = {0};
	size_t used = 0;
	int rc = -1;
	if (gp_frame_put_argv(&b, argv) < 0 || gp_frame_flush(fd, &b) < 0) {
		gp_errprintf(err, "cannot talk to %s:%u: %s", addr, port, strerror(errno));
		goto out;
	}
	while (1) {
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN},
				       {.fd = sigfd, .events = POLLIN}};
		if (poll(pf, sigfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			gp_errprintf(err, "poll: %s", strerror(errno));
			goto out;
		}
		if (sigfd >= 0 && pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (gp_frame_put_u32(&b, GP_FRAME_SIGNAL, si.ssi_signo) < 0 ||
				    gp_frame_flush(fd, &b) < 0)
					break;
			}
		}
		if (!pf[0].revents)
			continue;
		/* every whole frame already read is handled before polling again */
		do {
			struct gp_frame f;
			int k = next_frame(fd, &in, &used, &f);
			if (k <= 0) {
				errno = EPIPE;
				gp_errprintf(err,
					     "%s:%u ended the connection before the command ended",
					     addr, port);
				goto out;
			}
			int h = on_frame(&f, outfd, errfd, status, err);
			if (h != 0) {
				rc = h > 0 ? 0 : -1;
				goto out;
			}
		} while (in.len > used);
	}
out:;
	int e = errno;
	gp_buf_release(&b);
	gp_buf_release(&in);
	close(fd);
	errno = e;
	return rc;
}
