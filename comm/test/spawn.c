/* spawn.c - run N ranks of a function as forked processes on this host. */
#include "comm/test/spawn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int gc_free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return ntohs(sa.sin_port);
}

int gc_spawn(int size, gc_rank_fn fn, void *arg, int timeout_s)
{
	char rdv[64];
	snprintf(rdv, sizeof(rdv), "tcp://127.0.0.1:%d", gc_free_port());
	pid_t *pids = calloc((size_t)size, sizeof(pid_t));
	if (!pids)
		return 1;
	fflush(NULL);
	for (int r = 0; r < size; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			alarm((unsigned)timeout_s);
			int rc = fn(r, size, rdv, arg);
			fflush(NULL);
			_exit(rc);
		}
	}
	int bad = 0;
	for (int r = 0; r < size; r++) {
		int st;
		while (waitpid(pids[r], &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		bad = 1;
		if (WIFSIGNALED(st))
			fprintf(stderr, "rank %d: killed by signal %d%s\n", r, WTERMSIG(st),
				WTERMSIG(st) == SIGALRM ? " (timed out: a hang)" : "");
		else
			fprintf(stderr, "rank %d: exit %d\n", r, WEXITSTATUS(st));
	}
	free(pids);
	return bad;
}
