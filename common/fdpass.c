/* fdpass.c: a message with a descriptor over a Unix socket (fdpass.h). */
#include "common/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

ssize_t gp_fd_send(int sock, const void *buf, size_t len, int fd, int flags)
{
	struct iovec iov = {(void *)buf, len};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		mh.msg_control = u.b;
		mh.msg_controllen = sizeof(u.b);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	while ((n = sendmsg(sock, &mh, flags)) < 0 && errno == EINTR)
		;
	return n;
}

ssize_t gp_fd_recv(int sock, void *buf, size_t len, int *fd, bool *trunc)
{
	struct iovec iov = {buf, len};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n;
	while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	*fd = -1;
	struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (trunc)
		*trunc = n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	return n;
}
