/* sigfd.h: the signals a gpool daemon handles in its poll loop, as a signalfd. */
#ifndef GPOOL_SIGFD_H
#define GPOOL_SIGFD_H

#include <signal.h>

/* Block SIGCHLD, SIGTERM, SIGINT and SIGHUP (the mask before in *old, unless old is NULL),
 * ignore SIGPIPE, and return a non-blocking, close-on-exec signalfd for the four; -1 with
 * errno. */
int gp_sigfd_open(sigset_t *old);

#endif
