/* ptylink.h: one end of a pty stream (ptyframe.h) on a non-blocking socket: what was read,
 * taken apart into frames, and what is queued to go out. gsub --pty and gstepd's pty server
 * both use it. The input buffer holds at most one largest frame beyond what was taken.
 */
#ifndef GPOOL_PTYLINK_H
#define GPOOL_PTYLINK_H

#include <stddef.h>
#include <stdint.h>

#include "common/ptyframe.h"

#define GP_PTYLINK_OUT_MAX (4u << 20) /* queued beyond this: gp_ptylink_send fails */

typedef struct gp_ptylink gp_ptylink_t;

/* A link over fd, which it owns from now on (closed by destroy) and makes non-blocking.
 * NULL with errno ENOMEM (fd is closed then too). */
gp_ptylink_t *gp_ptylink_create(int fd);
void gp_ptylink_destroy(gp_ptylink_t **l);
int gp_ptylink_fd(const gp_ptylink_t *l);

/* Read what the socket has, as much as the input buffer takes. 1: read something, 0: nothing
 * there yet, -1: the peer closed (errno 0) or an error (errno). */
int gp_ptylink_read(gp_ptylink_t *l);
/* The next whole frame read: 1 and *f (its data valid until the next read), 0 when there is
 * none yet, -1 with errno EPROTO for a bad header (the link is then useless). */
int gp_ptylink_next(gp_ptylink_t *l, struct gp_pty_frame *f);
/* Queue a frame: 0, or -1 with errno EINVAL (bounds) or ENOBUFS (GP_PTYLINK_OUT_MAX queued). */
int gp_ptylink_send(gp_ptylink_t *l, uint8_t type, const void *data, size_t len);
/* Write what the socket takes now: 0, or -1 with errno when the link failed. */
int gp_ptylink_flush(gp_ptylink_t *l);
/* Bytes queued and not yet written. */
size_t gp_ptylink_pending(const gp_ptylink_t *l);

#endif
