/* zmtp.c: a ZMTP 3.0 DEALER on one blocking socket (zmtp.h). */
#include "common/zmtp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/util.h"

#define GREETING  64
#define F_MORE	  0x01
#define F_LONG	  0x02
#define F_COMMAND 0x04

struct gp_zmtp {
	char host[256]; /* tcp: the host; ipc: the path */
	char port[16];	/* tcp only */
	bool ipc;
	size_t max_message;
	int fd;	     /* -1: not connected */
	uint8_t *in; /* received bytes: [keep, pos) the message being taken, [pos, end) the rest */
	size_t cap, keep, pos, end;
};

gp_zmtp_t *gp_zmtp_create(const char *ep, size_t max_message, gp_error_t *err)
{
	gp_zmtp_t *z = calloc(1, sizeof(*z));
	if (!z) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	z->fd = -1;
	z->max_message = max_message;
	const char *rest;
	if (!strncmp(ep, "ipc://", 6)) {
		z->ipc = true;
		rest = ep + 6;
		if (!*rest || strlen(rest) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			goto bad;
		snprintf(z->host, sizeof(z->host), "%s", rest);
		return z;
	}
	if (strncmp(ep, "tcp://", 6))
		goto bad;
	rest = ep + 6;
	const char *colon = strrchr(rest, ':');
	const char *h = rest, *hend = colon;
	if (*rest == '[') { /* [IPv6]:port */
		const char *close = strchr(rest, ']');
		if (!close || close + 1 != colon)
			goto bad;
		h = rest + 1;
		hend = close;
	}
	if (!colon || hend == h || (size_t)(hend - h) >= sizeof(z->host) || !colon[1] ||
	    strlen(colon + 1) >= sizeof(z->port) ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		goto bad;
	memcpy(z->host, h, (size_t)(hend - h));
	snprintf(z->port, sizeof(z->port), "%s", colon + 1);
	return z;
bad:
	free(z);
	errno = EINVAL;
	gp_errprintf(err, "cannot connect to '%s': not tcp://HOST:PORT or ipc://PATH", ep);
	return NULL;
}

void gp_zmtp_close(gp_zmtp_t *z)
{
	if (z->fd >= 0)
		close(z->fd);
	z->fd = -1;
	z->keep = z->pos = z->end = 0;
}

void gp_zmtp_destroy(gp_zmtp_t **p)
{
	if (!p || !*p)
		return;
	gp_zmtp_close(*p);
	free((*p)->in);
	free(*p);
	*p = NULL;
}

bool gp_zmtp_connected(const gp_zmtp_t *z)
{
	return z->fd >= 0;
}

/* ms left before deadline (-1: none), 0 when it passed */
static int left_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t l = deadline - gp_mono_ms();
	return l > 0 ? (int)l : 0;
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : gp_mono_ms() + timeout_ms;
}

/* wait until fd is ready for events: 0, or -1 with errno ETIMEDOUT */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {fd, events, 0};
		int rc = poll(&p, 1, left_ms(deadline));
		if (rc > 0)
			return 0;
		if (rc == 0)
			return errno = ETIMEDOUT, -1;
		if (errno != EINTR)
			return -1;
	}
}

/* a connected socket to one address, within the deadline */
static int connect_addr(const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, sa, len) < 0) {
		int e = errno;
		if (e == EINPROGRESS || e == EAGAIN) { /* its outcome, or the deadline */
			int so = 0;
			socklen_t sl = sizeof(so);
			if (wait_fd(fd, POLLOUT, deadline) < 0 ||
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
				e = errno;
			else
				e = so;
		}
		if (e) {
			close(fd);
			return errno = e, -1;
		}
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	if (sa->sa_family != AF_UNIX) {
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
}

static int open_socket(gp_zmtp_t *z, int64_t deadline)
{
	if (z->ipc) {
		struct sockaddr_un un = {.sun_family = AF_UNIX};
		size_t pl = strlen(z->host); /* shorter than sun_path: gp_zmtp_create */
		memcpy(un.sun_path, z->host, pl);
		socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + pl);
		if (z->host[0] == '@') /* the abstract namespace, as libzmq reads it */
			un.sun_path[0] = '\0';
		else
			len++;
		return connect_addr((struct sockaddr *)&un, len, deadline);
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	if (getaddrinfo(z->host, z->port, &hints, &ai) != 0) {
		hints.ai_flags = AI_NUMERICSERV;
		if (getaddrinfo(z->host, z->port, &hints, &ai) != 0)
			return errno = EHOSTUNREACH, -1;
	}
	int fd = -1, e = ECONNREFUSED;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next)
		if ((fd = connect_addr(a->ai_addr, a->ai_addrlen, deadline)) < 0)
			e = errno;
	freeaddrinfo(ai);
	return fd >= 0 ? fd : (errno = e, -1);
}

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* at least n bytes at z->in + z->pos, reading within the deadline; bytes before z->keep may
 * go, the rest may move: 0, or -1 with errno (ETIMEDOUT, ECONNRESET when the peer closed,
 * ENOMEM) */
static int need(gp_zmtp_t *z, size_t n, int64_t deadline)
{
	while (z->end - z->pos < n) {
		if (z->pos + n > z->cap && z->keep) {
			memmove(z->in, z->in + z->keep, z->end - z->keep);
			z->end -= z->keep;
			z->pos -= z->keep;
			z->keep = 0;
		}
		if (z->pos + n > z->cap) {
			size_t cap = z->cap ? z->cap : 65536;
			while (cap < z->pos + n)
				cap *= 2;
			uint8_t *in = realloc(z->in, cap);
			if (!in)
				return errno = ENOMEM, -1;
			z->in = in;
			z->cap = cap;
		}
		if (wait_fd(z->fd, POLLIN, deadline) < 0)
			return -1;
		ssize_t r = read(z->fd, z->in + z->end, z->cap - z->end);
		if (r == 0)
			return errno = ECONNRESET, -1;
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			return -1;
		if (r > 0)
			z->end += (size_t)r;
	}
	return 0;
}

/* one frame's header at z->pos: flags and size; the frame's bytes then follow */
static int frame(gp_zmtp_t *z, uint8_t *flags, uint64_t *size, int64_t deadline)
{
	if (need(z, 2, deadline) < 0)
		return -1;
	*flags = z->in[z->pos];
	if (*flags & ~(F_MORE | F_LONG | F_COMMAND))
		return errno = EPROTO, -1;
	size_t hl = *flags & F_LONG ? 9 : 2;
	if (need(z, hl, deadline) < 0)
		return -1;
	*size = 0;
	for (size_t i = 1; i < hl; i++)
		*size = *size << 8 | z->in[z->pos + i];
	if (*size > z->max_message)
		return errno = EMSGSIZE, -1;
	if (need(z, hl + (size_t)*size, deadline) < 0)
		return -1;
	z->pos += hl;
	return 0;
}

static void header(uint8_t *h, size_t *hl, uint8_t flags, size_t size)
{
	if (size <= 255) {
		h[0] = flags;
		h[1] = (uint8_t)size;
		*hl = 2;
		return;
	}
	h[0] = flags | F_LONG;
	for (int i = 0; i < 8; i++)
		h[1 + i] = (uint8_t)((uint64_t)size >> (8 * (7 - i)));
	*hl = 9;
}

/* the greeting and READY, both ways */
static int handshake(gp_zmtp_t *z, int64_t deadline, gp_error_t *err)
{
	static const char ready[] = "\x05READY\x0bSocket-Type\x00\x00\x00\x06"
				    "DEALER";
	uint8_t g[GREETING] = {0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0, 'N', 'U', 'L', 'L'};
	uint8_t h[9];
	size_t hl;
	header(h, &hl, F_COMMAND, sizeof(ready) - 1);
	struct iovec iov[] = {{g, sizeof(g)}, {h, hl}, {(void *)ready, sizeof(ready) - 1}};
	if (write_all(z->fd, iov, 3) < 0)
		return gp_errprintf(err, "cannot greet the scheduler: %s", strerror(errno));
	if (need(z, GREETING, deadline) < 0)
		return gp_errprintf(err, "no greeting from the scheduler: %s", strerror(errno));
	const uint8_t *pg = z->in + z->pos;
	if (pg[0] != 0xff || !(pg[9] & 1) || pg[10] < 3 || memcmp(pg + 12, "NULL\0", 5)) {
		errno = EPROTO;
		return gp_errprintf(err,
				    "the peer is not a ZMTP 3 endpoint with the NULL mechanism");
	}
	z->pos += GREETING;
	uint8_t flags;
	uint64_t size;
	if (frame(z, &flags, &size, deadline) < 0)
		return gp_errprintf(err, "no READY from the scheduler: %s", strerror(errno));
	const uint8_t *c = z->in + z->pos;
	z->pos += size;
	if (!(flags & F_COMMAND) || size < 6 || c[0] != 5 || memcmp(c + 1, "READY", 5)) {
		errno = EPROTO;
		return gp_errprintf(err, "the scheduler refused the connection (%.*s)",
				    size > 1 && c[0] < size ? (int)c[0] : 0, (const char *)c + 1);
	}
	return 0;
}

/* fd, connected, becomes z's once the handshake is done; closed if it fails */
static int greet(gp_zmtp_t *z, int fd, int64_t deadline, gp_error_t *err)
{
	gp_zmtp_close(z);
	z->fd = fd;
	if (handshake(z, deadline, err) < 0) {
		int e = errno;
		gp_zmtp_close(z);
		return errno = e, -1;
	}
	return 0;
}

int gp_zmtp_connect(gp_zmtp_t *z, int timeout_ms, gp_error_t *err)
{
	if (z->fd >= 0)
		return 0;
	int64_t deadline = deadline_of(timeout_ms);
	int fd = open_socket(z, deadline);
	if (fd < 0) {
		int e = errno;
		gp_errprintf(err, "cannot connect to %s%s%s: %s", z->host, z->ipc ? "" : ":",
			     z->port, strerror(e));
		return errno = e, -1;
	}
	return greet(z, fd, deadline, err);
}

int gp_zmtp_attach(gp_zmtp_t *z, int fd, int timeout_ms, gp_error_t *err)
{
	return greet(z, fd, deadline_of(timeout_ms), err);
}

int gp_zmtp_send(gp_zmtp_t *z, const void *const *frames, const size_t *lens, size_t nframes,
		 int timeout_ms, gp_error_t *err)
{
	if (nframes == 0 || nframes > 8)
		return errno = EINVAL, gp_errprintf(err, "a message of %zu frames", nframes);
	if (gp_zmtp_connect(z, timeout_ms, err) < 0)
		return -1;
	uint8_t h[8][9];
	struct iovec iov[16];
	for (size_t i = 0; i < nframes; i++) {
		size_t hl;
		header(h[i], &hl, i + 1 < nframes ? F_MORE : 0, lens[i]);
		iov[2 * i] = (struct iovec){h[i], hl};
		iov[2 * i + 1] = (struct iovec){(void *)frames[i], lens[i]};
	}
	if (write_all(z->fd, iov, (int)(2 * nframes)) < 0) {
		int e = errno;
		gp_zmtp_close(z);
		gp_errprintf(err, "send to the scheduler: %s", strerror(e));
		return errno = e, -1;
	}
	return 0;
}

int gp_zmtp_recv(gp_zmtp_t *z, const void **frames, size_t *lens, size_t max, size_t *nframes,
		 int timeout_ms, gp_error_t *err)
{
	if (z->fd < 0)
		return errno = ENOTCONN, gp_errprintf(err, "not connected to the scheduler");
	int64_t deadline = deadline_of(timeout_ms);
	size_t offs[8], n = 0; /* from z->keep */
	if (max > 8)
		max = 8;
	z->keep = z->pos; /* the last message's bytes may go */
	for (;;) {
		uint8_t flags;
		uint64_t size;
		if (frame(z, &flags, &size, deadline) < 0) {
			int e = errno;
			if (e != ETIMEDOUT || n) /* mid-message or broken: the stream is lost */
				gp_zmtp_close(z);
			gp_errprintf(err, "%s",
				     e == ETIMEDOUT    ? "no answer from the scheduler"
				     : e == ECONNRESET ? "the scheduler closed the connection"
				     : e == EMSGSIZE   ? "message over the size limit"
						       : strerror(e));
			return errno = e, -1;
		}
		if (flags & F_COMMAND) { /* PING, or anything else a peer may say: not a message */
			z->pos += size;
			continue;
		}
		if (n == max) {
			gp_zmtp_close(z);
			errno = EPROTO;
			return gp_errprintf(err, "message of more than %zu frames refused", max);
		}
		offs[n] = z->pos - z->keep;
		lens[n++] = (size_t)size;
		z->pos += size;
		if (!(flags & F_MORE))
			break;
	}
	/* need() may have moved the message's first frames while reading the later ones: they
	 * are pointed at only now, and stay until the next receive */
	for (size_t i = 0; i < n; i++)
		frames[i] = z->in + z->keep + offs[i];
	*nframes = n;
	return 0;
}
