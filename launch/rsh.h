/* rsh.h: the client side of the exec-proxy (frame.h): run a command on another node of the
 * job, as ssh would, or hold that node's proxy open. */
#ifndef GPOOL_LAUNCH_RSH_H
#define GPOOL_LAUNCH_RSH_H

#include <stdint.h>

#include "common/error.h"

/* Connect to the proxy at addr:port, authenticate as job's owner (this uid's MUNGE credential
 * answering its challenge: launch/proxyauth.h) and hold it open: returns the connection (the
 * proxy lives while it is open), or -1 with err filled. */
int gp_rsh_hold(const char *addr, uint16_t port, uint64_t job, int timeout_ms, gp_error_t *err);

/* Run argv (joined by spaces, through /bin/sh -c) on job's proxy at addr:port. Its output goes
 * to outfd and errfd; a signal read from sigfd (a signalfd, or -1) is passed on to it. On
 * return 0, *status is the command's wait status. -1 with err filled when the proxy cannot
 * be reached, refuses, or the connection ends before the command does. */
int gp_rsh_exec(const char *addr, uint16_t port, uint64_t job, char *const *argv, int outfd,
		int errfd, int sigfd, int *status, gp_error_t *err);

#endif
