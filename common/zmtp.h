/* zmtp.h: a DEALER peer of ZMTP 3.0 (rfc.zeromq.org/spec/23, NULL mechanism) on one blocking
 * socket, for the user commands.
 *
 * A command asks one question and exits; with libzmq each one paid a context (an I/O thread and
 * a reaper thread, their eventfds and epoll sets, libpgm's start-up) and about 440 system calls
 * for one request (docs/benchmarks.md, 2026-12-04). This speaks the same wire to gschedd's
 * ROUTER from the command's own thread: connect, the greeting and READY, then whole messages.
 * Like a DEALER it reconnects (gp_zmtp_send when the last connection is gone), and what was
 * never delivered is the caller's to retry; unlike one it holds a single connection and never
 * queues. tcp://HOST:PORT (a name, an IPv4 address, or [an IPv6 one]) and ipc://PATH.
 */
#ifndef GPOOL_ZMTP_H
#define GPOOL_ZMTP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct gp_zmtp gp_zmtp_t;

/* A peer of endpoint ep; nothing is connected yet. NULL with errno EINVAL (an endpoint of
 * another kind, or malformed) and err filled, or ENOMEM. */
gp_zmtp_t *gp_zmtp_create(const char *ep, size_t max_message, gp_error_t *err);
void gp_zmtp_destroy(gp_zmtp_t **z);

/* Connect and greet, unless connected; at most timeout_ms (-1: no bound). 0 / -1 with errno
 * (ECONNREFUSED, ENOENT: nobody listens; ETIMEDOUT; EPROTO: the peer is not a ZMTP 3 ROUTER
 * with the NULL mechanism) and err filled. */
int gp_zmtp_connect(gp_zmtp_t *z, int timeout_ms, gp_error_t *err);

/* Greet over fd, a stream the caller connected (a socketpair: the fuzz harness), and own it
 * from then on. 0 / -1 as gp_zmtp_connect (fd closed). */
int gp_zmtp_attach(gp_zmtp_t *z, int fd, int timeout_ms, gp_error_t *err);

bool gp_zmtp_connected(const gp_zmtp_t *z);

/* Send one message of nframes frames, connecting first if needed (timeout_ms as there). A
 * failure drops the connection: 0 / -1 with errno and err filled. */
int gp_zmtp_send(gp_zmtp_t *z, const void *const *frames, const size_t *lens, size_t nframes,
		 int timeout_ms, gp_error_t *err);

/* Receive one message, waiting at most timeout_ms (-1: no bound). Its frames are valid until
 * the next receive: *nframes of them (at most max) in frames/lens; a message of more frames is
 * refused (EPROTO). 0 / -1 with errno (ETIMEDOUT; ECONNRESET: the peer closed, the connection
 * is dropped; EMSGSIZE: over max_message; EPROTO) and err filled. */
int gp_zmtp_recv(gp_zmtp_t *z, const void **frames, size_t *lens, size_t max, size_t *nframes,
		 int timeout_ms, gp_error_t *err);

/* Close the connection (the next send connects again). */
void gp_zmtp_close(gp_zmtp_t *z);

#endif
