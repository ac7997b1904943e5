/* fdpass.h: one message and at most one open descriptor over a Unix socket (SCM_RIGHTS): a
 * task's lazily staged file to gstepd (common/lazy.c, worker/stepd/lazy.c), a collected file
 * from gstepd's reading child (worker/stepd/collect.c). */
#ifndef GP_COMMON_FDPASS_H
#define GP_COMMON_FDPASS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Send len bytes of buf and, when fd >= 0, the descriptor fd with them (sendmsg with flags,
 * again after EINTR). The bytes sent, or -1 with errno set. */
ssize_t gp_fd_send(int sock, const void *buf, size_t len, int fd, int flags);

/* Receive one message of at most len bytes into buf (recvmsg, again after EINTR) and the one
 * descriptor it may carry, close-on-exec: *fd, or -1 when it carries none. *trunc (may be NULL):
 * the message or its descriptors did not fit. The bytes received (0: the other end closed, no
 * descriptor), or -1 with errno set. */
ssize_t gp_fd_recv(int sock, void *buf, size_t len, int *fd, bool *trunc);

#endif
