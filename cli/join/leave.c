/* leave.c: `gpool leave`, root on a PC of the pool: drain the node through gschedd (running
 * jobs finish; when some still run after --timeout it stops there, the node drained, and says
 * so: stopping the agent would leave their supervisors running while gschedd requeued the
 * jobs elsewhere), stop gworkerd and munged, and remove the MUNGE key and gpool.conf. gschedd keeps
 * the node's record, drained with the reason "left the pool (gpool leave)", DOWN once its
 * heartbeats stop: never offered again unless the PC joins again and root resumes it
 * (docs/commands/gpool-join.md). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/join/join.h"
#include "common/config.h"
#include "common/util.h"

#define LEAVE_REASON "left the pool (gpool leave)"

/* Whether jobs run on the node: the CPUs they hold there (every task holds one at least;
 * NodeInfo.jobs is not filled by gschedd), or -1 with err filled. */
static int node_jobs(gp_session_t *s, const char *node, gp_error_t *err)
{
	Gpool__NodeQuery q = GPOOL__NODE_QUERY__INIT;
	char *names[1] = {(char *)node};
	q.names = names;
	q.n_names = 1;
	Gpool__NodeQueryReply *r = gp_session_node_query(s, &q, err);
	if (!r)
		return -1;
	for (size_t i = 0; i < r->n_nodes; i++)
		if (!strcmp(r->nodes[i]->name, node))
			return (int)r->nodes[i]->cpus_used;
	gp_errprintf(err, "the scheduler does not know node '%s' (--node)", node);
	return -1;
}

/* The process listening on the agent's local socket (the kernel says who: SO_PEERCRED), when
 * it is a gworkerd: its pid, else 0. */
static pid_t agent_pid(const char *state_dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/worker.sock", state_dir) >=
	    (int)sizeof(sa.sun_path))
		return 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct ucred cr = {0};
	socklen_t len = sizeof(cr);
	pid_t pid = 0;
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
		pid = cr.pid;
	if (fd >= 0)
		close(fd);
	char path[64], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = pid > 0 ? fopen(path, "re") : NULL;
	if (f) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	return strncmp(comm, "gworkerd", 8) == 0 ? pid : 0;
}

static bool stop_agent(const char *state_dir)
{
	if (gpj_systemd()) {
		char *argv[] = {"systemctl", "disable", "--now", "gworkerd.service", NULL};
		if (gpj_run(argv) == 0) {
			printf("stopped and disabled gworkerd.service\n");
			return true;
		}
	}
	pid_t pid = agent_pid(state_dir);
	if (!pid) {
		printf("no gworkerd answers on %s/worker.sock: not stopped (was it running?)\n",
		       state_dir);
		return true;
	}
	kill(pid, SIGTERM);
	for (int i = 0; i < 300 && kill(pid, 0) == 0; i++)
		usleep(100000);
	if (kill(pid, 0) == 0) {
		printf("gworkerd (pid %d) did not stop within 30 s\n", (int)pid);
		return false;
	}
	printf("stopped gworkerd (pid %d)\n", (int)pid);
	return true;
}

static void stop_munged(void)
{
	if (gpj_systemd()) {
		char *argv[] = {"systemctl", "disable", "--now", "munge.service", NULL};
		if (gpj_run(argv) == 0) {
			printf("stopped and disabled munge.service\n");
			return;
		}
	}
	char *argv[] = {"munged", "--stop", NULL};
	if (gpj_run(argv) == 0)
		printf("stopped munged\n");
	else
		printf("munged was not stopped (munged --stop failed): it holds the key until it "
		       "stops\n");
}

static void remove_file(const char *what, const char *path)
{
	if (unlink(path) == 0)
		printf("removed %s %s\n", what, path);
	else if (errno != ENOENT)
		printf("could not remove %s %s: %s\n", what, path, strerror(errno));
}

int gpj_leave(void *ctx, char **args, int nargs, gp_error_t *err)
{
	struct gpj *g = ctx;
	(void)args;
	if (nargs) {
		gp_errprintf(err, "leave takes no arguments");
		return 2;
	}
	if (g->given & (GPJ_OPT_TTL | GPJ_OPT_ADDRESS)) {
		gp_errprintf(err, "leave takes --config, --scheduler, --node, --state-dir, "
				  "--munge-key and --timeout only");
		return 2;
	}
	if (geteuid() != 0) {
		gp_errprintf(err, "only root may take this pc out of the pool");
		return 1;
	}
	/* the file it removes: --config or the default, never what $GPOOL_CONF happens to name */
	struct gp_cli_common common = g->common;
	if (!common.config)
		common.config = GPJ_DEFAULT_CONF;
	const char *confpath = common.config;
	gp_session_t *s = gp_session_create(&common, err);
	if (!s)
		return 1;
	gp_session_set_retry(s, 0);
	const gp_config_t *cfg = gp_session_config(s);
	char node[256];
	const char *nn = g->node ? g->node : gp_config_str(cfg, "node_name");
	if (nn && *nn)
		snprintf(node, sizeof(node), "%s", nn);
	else if (gethostname(node, sizeof(node)) < 0)
		snprintf(node, sizeof(node), "localhost");
	const char *state_dir = g->state_dir ? g->state_dir : gp_config_str(cfg, "state_dir");
	const char *keypath = g->munge_key ? g->munge_key : GPJ_DEFAULT_KEY;
	uint32_t timeout = g->given & GPJ_OPT_TIMEOUT ? g->timeout : 600;
	int rc = 1;

	Gpool__NodeControl nc = GPOOL__NODE_CONTROL__INIT;
	nc.action = GPOOL__NODE_ACTION__NODE_DRAIN;
	nc.name = node;
	nc.card = -1;
	nc.reason = LEAVE_REASON;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_CONTROL;
	m.node_control = &nc;
	if (!gp_session_call(s, &m, GPOOL__MSG__M_NODE_CONTROL_REPLY, GP_CLI_TIMEOUT_MS, NULL, err))
		goto out;
	printf("drained node %s: no new jobs go there\n", node);
	time_t deadline = time(NULL) + timeout;
	int n;
	while ((n = node_jobs(s, node, err)) > 0 && time(NULL) < deadline)
		sleep(1);
	if (n < 0)
		goto out;
	if (n > 0) {
		gp_errprintf(err,
			     "jobs still run on %s after %u s (%d cpu%s in use): it stays drained, "
			     "and in the pool; run gpool leave again once they end (a longer "
			     "--timeout), or cancel them (gcancel)",
			     node, (unsigned)timeout, n, n == 1 ? "" : "s");
		goto out;
	}
	printf("no job runs on %s\n", node);
	if (!stop_agent(state_dir)) {
		gp_errprintf(err, "gworkerd did not stop: the key and gpool.conf stay");
		goto out;
	}
	stop_munged();
	remove_file("the munge key", keypath);
	remove_file("the gpool configuration", confpath);
	printf("%s has left the pool. the scheduler keeps its record, drained (\"%s\"), and "
	       "places nothing there\n",
	       node, LEAVE_REASON);
	rc = 0;
out:
	gp_session_destroy(&s);
	return rc;
}
