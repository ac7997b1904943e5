/* ptyserv.h: gstepd's side of gsub --pty (docs/interactive.md): the task's pseudo-terminal
 * and the one connection that may drive it.
 *
 * When rank 0 of a JobSpec.pty job starts here, its stdin, stdout and stderr are the slave of
 * a pseudo-terminal (its controlling terminal, in a session of its own) and gstepd keeps the
 * master. The server listens on a TCP port of its own (any free one), publishes
 * "ADDR:PORT" in the attempt's rendezvous store under "gpool.pty" (ADDR: the node's address as
 * gschedd knows it), and takes connections: each must send, within PTY_HELLO_MS, a HELLO
 * frame holding a MUNGE credential of the job's owner that binds this job, this attempt and
 * the key whose SHA-256 the spec carries; anything else is refused with a reason and closed.
 * The first that passes is attached and the listener closes (the key is used once; but see
 * pty_keep_sec below). Then
 * terminal bytes go both ways, WINSIZE sets the terminal's size (the kernel sends SIGWINCH to
 * its foreground group), SIGNAL signals the foreground group, EOF types the terminal's EOF
 * character. When the task ends, what the terminal still holds is sent (up to STEP_DRAIN_MS),
 * then EXIT with its wait status; a task that ended before its client attached keeps its
 * output and status for it until PTY_ATTACH_MS, and the task's end is reported to the
 * scheduler only once the terminal is done (task.c): the client, which polls the job until it
 * can attach, would otherwise find it ended and have its status without its output. A client that
 * goes away hangs the terminal up (SIGHUP to the session, as a closed ssh does); so does nobody
 * attaching within PTY_ATTACH_MS.
 *
 * A job with JobSpec.pty_keep_sec (gsub --pty-keep) keeps its listener: a client that goes away
 * detaches, the task runs on (its output waits in the terminal, which holds the task up once
 * full, as a slow terminal does) and the terminal waits pty_keep_sec for a reattach: a HELLO of
 * the owner's whose key is all zero (gsub --attach), accepted only while detached; while a
 * client is attached every other connection is refused. A task that ends while detached keeps
 * its output and status for the reattach, until the same deadline.
 */
#ifndef GPOOL_WORKER_PTYSERV_H
#define GPOOL_WORKER_PTYSERV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zmq.h>

#include "common/error.h"

#define PTY_HELLO_MS	 10000	     /* a connection's time to say HELLO */
#define PTY_ATTACH_MS	 120000	     /* the task's terminal waits this long for its client */
#define PTY_PENDING	 8	     /* connections not yet authenticated, at once */
#define PTY_KEEP_MAX_SEC (7 * 86400) /* gsub --pty-keep's bound (gschedd refuses more) */
#define PTY_POLL_MAX	 (3 + PTY_PENDING)

struct step;
struct task;
typedef struct gp_ptyserv gp_ptyserv_t;

/* Open a pseudo-terminal for a task of uid/gid: *master and *slave (both CLOEXEC; the slave
 * is the user's, mode 0620). 0 / -1 with why. */
int gp_pty_open(uid_t uid, gid_t gid, int *master, int *slave, char *why, size_t len);

/* Serve task t's terminal (master, owned from now on) for step s: listen and publish the
 * endpoint. NULL with err (master is closed then). */
gp_ptyserv_t *gp_ptyserv_create(struct step *s, const struct task *t, int master, gp_error_t *err);
void gp_ptyserv_destroy(gp_ptyserv_t **p);

/* Put the sockets and the terminal to watch into items[at..] (at most PTY_POLL_MAX): how
 * many; gp_ptyserv_ready then reads their revents. */
size_t gp_ptyserv_poll(gp_ptyserv_t *p, zmq_pollitem_t *items, size_t at);
void gp_ptyserv_ready(gp_ptyserv_t *p, const zmq_pollitem_t *items);
/* Timeouts and the end of the task; the next time this must run, or INT64_MAX. */
int64_t gp_ptyserv_tick(gp_ptyserv_t *p, int64_t now);
/* Nothing left to do: the task ended, its terminal drained, its client told (or gone). */
bool gp_ptyserv_done(const gp_ptyserv_t *p);

#endif
