/* gpool-rsh: Open MPI's remote shell inside a gpool job (plm_rsh_agent), so that mpirun starts
 * its daemons on the job's other nodes through gpool, never ssh.
 *
 *     gpool-rsh HOST COMMAND [ARGS...]
 *
 * runs COMMAND on HOST as ssh would (the words joined, through /bin/sh -c), by HOST's
 * exec-proxy: a task of the same job, so the command runs in the job's cgroup, as its user,
 * and dies with it. The proxies are found in the file $GPOOL_MPI_PROXIES that rank 0's
 * gpool-launch wrote (launch/peers.h). HOST being this very node runs COMMAND here. Output
 * and the exit status come back; SIGTERM, SIGINT and SIGHUP are passed on. Exit status: the
 * command's (128 + signal when killed), 255 when gpool-rsh itself fails, as ssh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/peers.h"
#include "launch/rsh.h"

static int here(const char *host)
{
	char name[256];
	const char *node = getenv("GPOOL_NODENAME");
	if (!strcmp(host, "localhost") || (node && !strcmp(host, node)))
		return 1;
	return gethostname(name, sizeof(name)) == 0 && !strncmp(host, name, sizeof(name));
}

/* COMMAND on this node, as the proxy would run it. */
static int run_here(char **argv)
{
	size_t n = 1;
	for (char **p = argv; *p; p++)
		n += strlen(*p) + 1;
	char *cmd = calloc(1, n);
	if (!cmd)
		return 255;
	for (char **p = argv; *p; p++) {
		if (p != argv)
			strcat(cmd, " ");
		strcat(cmd, *p);
	}
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	fprintf(stderr, "gpool-rsh: cannot run /bin/sh: %s\n", strerror(errno));
	return 255;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argv[1][0] == '-') {
		fprintf(stderr, "usage: gpool-rsh HOST COMMAND [ARGS...]\n"
				"Run COMMAND on HOST, a node of this gpool job (Open MPI's "
				"plm_rsh_agent under gsub --mpi=mpirun).\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 255;
	}
	const char *host = argv[1];
	const char *path = getenv("GPOOL_MPI_PROXIES");
	struct gp_peer peer;
	if (!path || !*path || gp_peers_find(path, host, &peer) < 0) {
		if (here(host))
			return run_here(argv + 2);
		if (!path || !*path)
			fprintf(stderr, "gpool-rsh: GPOOL_MPI_PROXIES is not set (not in a gsub "
					"--mpi=mpirun job?)\n");
		else if (errno == ENOENT)
			fprintf(stderr, "gpool-rsh: host '%s' is not a node of this job\n", host);
		else
			fprintf(stderr, "gpool-rsh: cannot read '%s': %s\n", path, strerror(errno));
		return 255;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	gp_error_t err = {{0}};
	int status;
	const char *job = getenv("GPOOL_JOB_ID");
	if (gp_rsh_exec(peer.addr, peer.port, job ? strtoull(job, NULL, 10) : 0, argv + 2, 1, 2,
			sigfd, &status, &err) < 0) {
		fprintf(stderr, "gpool-rsh: %s: %s\n", host, err.text);
		return 255;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}
