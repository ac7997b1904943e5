/* ptylink.c: a pty stream's buffers on a non-blocking socket (ptylink.h). */
#include "common/ptylink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct gp_ptylink {
	int fd;
	uint8_t in[2 * GP_PTY_FRAME_MAX];
	size_t inlen, inoff; /* bytes held; bytes of them already taken as frames */
	uint8_t *out;
	size_t outlen, outoff, outcap;
};

gp_ptylink_t *gp_ptylink_create(int fd)
{
	gp_ptylink_t *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	l->fd = fd;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return l;
}

void gp_ptylink_destroy(gp_ptylink_t **p)
{
	if (!p || !*p)
		return;
	if ((*p)->fd >= 0)
		close((*p)->fd);
	free((*p)->out);
	free(*p);
	*p = NULL;
}

int gp_ptylink_fd(const gp_ptylink_t *l)
{
	return l->fd;
}

int gp_ptylink_read(gp_ptylink_t *l)
{
	if (l->inoff) {
		memmove(l->in, l->in + l->inoff, l->inlen - l->inoff);
		l->inlen -= l->inoff;
		l->inoff = 0;
	}
	if (l->inlen == sizeof(l->in))
		return 0; /* full: the caller takes frames first */
	ssize_t n;
	do
		n = read(l->fd, l->in + l->inlen, sizeof(l->in) - l->inlen);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	if (n == 0) {
		errno = 0;
		return -1;
	}
	l->inlen += (size_t)n;
	return 1;
}

int gp_ptylink_next(gp_ptylink_t *l, struct gp_pty_frame *f)
{
	ssize_t used = gp_pty_frame_parse(l->in + l->inoff, l->inlen - l->inoff, f);
	if (used <= 0)
		return (int)used;
	l->inoff += (size_t)used;
	return 1;
}

int gp_ptylink_send(gp_ptylink_t *l, uint8_t type, const void *data, size_t len)
{
	if (l->outlen - l->outoff + GP_PTY_HDR + len > GP_PTYLINK_OUT_MAX) {
		errno = ENOBUFS;
		return -1;
	}
	if (l->outoff && l->outoff == l->outlen)
		l->outoff = l->outlen = 0;
	if (l->outlen + GP_PTY_HDR + len > l->outcap) {
		if (l->outoff) {
			memmove(l->out, l->out + l->outoff, l->outlen - l->outoff);
			l->outlen -= l->outoff;
			l->outoff = 0;
		}
		size_t cap = l->outcap ? l->outcap : 4096;
		while (cap < l->outlen + GP_PTY_HDR + len)
			cap *= 2;
		if (cap != l->outcap) {
			uint8_t *o = realloc(l->out, cap);
			if (!o) {
				errno = ENOMEM;
				return -1;
			}
			l->out = o;
			l->outcap = cap;
		}
	}
	ssize_t n = gp_pty_frame_put(l->out + l->outlen, l->outcap - l->outlen, type, data, len);
	if (n < 0)
		return -1;
	l->outlen += (size_t)n;
	return 0;
}

int gp_ptylink_flush(gp_ptylink_t *l)
{
	while (l->outoff < l->outlen) {
		ssize_t n = send(l->fd, l->out + l->outoff, l->outlen - l->outoff, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -1;
		}
		l->outoff += (size_t)n;
	}
	l->outoff = l->outlen = 0;
	return 0;
}

size_t gp_ptylink_pending(const gp_ptylink_t *l)
{
	return l->outlen - l->outoff;
}
