/* gpool-launch: what every task of a `gsub --mpi=mpirun` job runs; gstepd puts it before the
 * job's command, as `gpool-launch mpirun -- COMMAND [ARGS...]`.
 *
 * As in a Slurm allocation, the job's command (a script that calls mpirun) runs once, on rank
 * 0, and mpirun finds the job's nodes and slots in its environment. The task that comes first
 * on each other node (local rank 0) becomes that node's exec-proxy (launch/proxy.h), through
 * which gpool-rsh, mpirun's remote shell, starts Open MPI's daemons there: inside the job's
 * cgroup, as its user. The job's other tasks have nothing to do and end at once.
 *
 *   proxy (local rank 0, rank > 0): listens on the node's address toward rank 0, publishes
 *       "NODE ADDR PORT SLOTS" as the rendezvous key gpool.mpi.proxy.NODE (gschedd serves it
 *       to the job's owner only); clients prove with a MUNGE credential that they are the job's
 *       owner (launch/proxyauth.h), so no secret is published; it serves until
 *       rank 0's hold connection closes; then it kills what it started and exits 0.
 *   leader (rank 0): reads every other node's key, writes a hostfile and the proxies' file in
 *       a private directory, holds each proxy open, and runs COMMAND with
 *         OMPI_MCA_plm_rsh_agent=<this directory>/gpool-rsh
 *         OMPI_MCA_orte_default_hostfile=<private dir>/hostfile   (NODE slots=N per node)
 *         OMPI_MCA_plm_rsh_no_tree_spawn=1                        (daemons start from rank 0)
 *         GPOOL_MPI_PROXIES=<private dir>/proxies
 *       and exits with COMMAND's status; its end closes the holds, so the job ends with it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/peers.h"
#include "launch/proxy.h"
#include "gpool/gcomm_rdv.h"
#include "launch/rsh.h"
#include "common/util.h"

#define RDV_TIMEOUT_MS	60000  /* the leader waits this long for every proxy's key */
#define HOLD_TIMEOUT_MS 120000 /* a proxy waits this long for rank 0's hold */
#define KEY_PREFIX	"gpool.mpi.proxy."

static const char *prog = "gpool-launch";

static long env_num(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v)
		return dflt;
	long x = strtol(v, &end, 10);
	return *end ? dflt : x;
}

/* The job this task belongs to (GPOOL_JOB_ID): the proxy serves its owner's credentials for it. */
static uint64_t job_id(void)
{
	const char *v = getenv("GPOOL_JOB_ID");
	return v ? strtoull(v, NULL, 10) : 0;
}

/* The address of this host's interface toward addr (no packet is sent); "" if unknown. */
static void route_to(const char *addr, char *out, size_t len)
{
	out[0] = '\0';
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;
	if (!addr || !*addr || getaddrinfo(addr, "9", &hints, &ai) != 0 || !ai)
		return;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == 0)
		inet_ntop(AF_INET, &sin.sin_addr, out, (socklen_t)len);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
}

static gc_rdv_t *rdv_join(gc_error_t *err)
{
	long rank = env_num("GPOOL_RANK", -1), size = env_num("GPOOL_SIZE", 0);
	return gc_rdv_gpool.open(NULL, (int)rank, (int)size, NULL, RDV_TIMEOUT_MS, err);
}

/* ---- a node's proxy ---------------------------------------------------------------------- */

static int proxy(void)
{
	struct gp_peer me = {0};
	const char *node = getenv("GPOOL_NODENAME");
	if (!node || !*node || strlen(node) >= sizeof(me.node) || strchr(node, ' ')) {
		fprintf(stderr, "%s: GPOOL_NODENAME is not set or not usable\n", prog);
		return 1;
	}
	snprintf(me.node, sizeof(me.node), "%s", node);
	route_to(getenv("MASTER_ADDR"), me.addr, sizeof(me.addr));
	if (!*me.addr) {
		fprintf(stderr, "%s: no route from %s to rank 0 (MASTER_ADDR '%s')\n", prog, node,
			getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "");
		return 1;
	}
	long slots = env_num("GPOOL_LOCAL_SIZE", 1);
	me.slots = slots > 0 ? (uint32_t)slots : 1;
	gp_error_t err = {{0}};
	gp_proxy_t *p = gp_proxy_create(me.addr, job_id(), &err);
	if (!p) {
		fprintf(stderr, "%s: %s\n", prog, err.text);
		return 1;
	}
	me.port = gp_proxy_port(p);
	char line[512], key[sizeof(KEY_PREFIX) + GP_PEER_NAME_MAX];
	int n = gp_peer_format(&me, line, sizeof(line));
	snprintf(key, sizeof(key), KEY_PREFIX "%s", node);
	gc_error_t ge = {{0}};
	gc_rdv_t *r = n > 0 ? rdv_join(&ge) : NULL;
	if (!r || gc_rdv_gpool.put(r, key, line, (size_t)n) < 0) {
		fprintf(stderr, "%s: cannot publish this node's proxy: %s\n", prog,
			r ? gc_rdv_gpool.error(r) : ge.text);
		if (r)
			gc_rdv_gpool.close(r);
		gp_proxy_destroy(&p);
		return 1;
	}
	gc_rdv_gpool.close(r);
	int rc = gp_proxy_run(p, HOLD_TIMEOUT_MS);
	int e = errno;
	gp_proxy_destroy(&p);
	if (rc < 0 && e == ETIMEDOUT) {
		fprintf(stderr, "%s: rank 0 never came to %s's proxy\n", prog, node);
		return 1;
	}
	if (rc < 0 && e == EINTR)
		return 128 + SIGTERM;
	return rc < 0 ? 1 : 0;
}

/* ---- rank 0 ------------------------------------------------------------------------------ */

struct leader {
	char dir[PATH_MAX];
	char hostfile[PATH_MAX + 16];
	char proxies[PATH_MAX + 16];
	struct gp_peer *peers;
	size_t npeers;
	int *holds;
};

/* The other nodes' proxies, in GPOOL_NODELIST's order. */
static int find_peers(struct leader *L)
{
	const char *list = getenv("GPOOL_NODELIST"), *self = getenv("GPOOL_NODENAME");
	if (!list || !*list || !self) {
		fprintf(stderr, "%s: GPOOL_NODELIST or GPOOL_NODENAME is not set\n", prog);
		return -1;
	}
	char *copy = strdup(list), *save = NULL;
	size_t cap = 1;
	for (const char *c = list; *c; c++)
		cap += *c == ',';
	L->peers = calloc(cap, sizeof(*L->peers));
	if (!copy || !L->peers) {
		free(copy);
		return -1;
	}
	gc_error_t ge = {{0}};
	gc_rdv_t *r = rdv_join(&ge);
	if (!r) {
		fprintf(stderr, "%s: %s\n", prog, ge.text);
		free(copy);
		return -1;
	}
	int rc = 0;
	for (char *node = strtok_r(copy, ",", &save); node && rc == 0;
	     node = strtok_r(NULL, ",", &save)) {
		struct gp_peer *p = &L->peers[L->npeers];
		if (!strcmp(node, self)) {
			long slots = env_num("GPOOL_LOCAL_SIZE", 1);
			snprintf(p->node, sizeof(p->node), "%s", node);
			p->slots = slots > 0 ? (uint32_t)slots : 1;
			L->npeers++;
			continue;
		}
		char key[sizeof(KEY_PREFIX) + GP_PEER_NAME_MAX + 8];
		snprintf(key, sizeof(key), KEY_PREFIX "%s", node);
		void *val = NULL;
		size_t len = 0;
		if (gc_rdv_gpool.get(r, key, &val, &len) < 0) {
			fprintf(stderr, "%s: no proxy on node '%s': %s\n", prog, node,
				gc_rdv_gpool.error(r));
			rc = -1;
		} else if (gp_peer_parse(val, len, p) < 0 || strcmp(p->node, node) != 0) {
			fprintf(stderr, "%s: node '%s' published a malformed proxy line\n", prog,
				node);
			rc = -1;
		} else {
			L->npeers++;
		}
		free(val);
	}
	gc_rdv_gpool.close(r);
	free(copy);
	return rc;
}

static int write_files(struct leader *L)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(L->dir, sizeof(L->dir), "%s/gpool-mpi.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(L->dir)) {
		fprintf(stderr, "%s: cannot make a directory in '%s': %s\n", prog,
			tmp && *tmp ? tmp : "/tmp", strerror(errno));
		L->dir[0] = '\0';
		return -1;
	}
	snprintf(L->hostfile, sizeof(L->hostfile), "%s/hostfile", L->dir);
	snprintf(L->proxies, sizeof(L->proxies), "%s/proxies", L->dir);
	gp_buf_t h = {0}, x = {0};
	char line[512];
	int rc = 0;
	for (size_t i = 0; i < L->npeers && rc == 0; i++) {
		const struct gp_peer *p = &L->peers[i];
		int n = snprintf(line, sizeof(line), "%s slots=%u\n", p->node, p->slots);
		rc |= gp_buf_append(&h, line, (size_t)n);
		if (p->port && (n = gp_peer_format(p, line, sizeof(line))) > 0)
			rc |= gp_buf_append(&x, line, (size_t)n);
	}
	if (rc == 0)
		rc = gp_write_file(L->hostfile, h.data, h.len, 0600);
	if (rc == 0)
		rc = gp_write_file(L->proxies, x.data ? x.data : (uint8_t *)"", x.len, 0600);
	if (rc < 0)
		fprintf(stderr, "%s: cannot write in '%s': %s\n", prog, L->dir, strerror(errno));
	gp_buf_release(&h);
	gp_buf_release(&x);
	return rc;
}

static int hold_all(struct leader *L)
{
	L->holds = calloc(L->npeers ? L->npeers : 1, sizeof(int));
	if (!L->holds)
		return -1;
	for (size_t i = 0; i < L->npeers; i++) {
		L->holds[i] = -1;
		const struct gp_peer *p = &L->peers[i];
		if (!p->port)
			continue;
		gp_error_t err = {{0}};
		if ((L->holds[i] = gp_rsh_hold(p->addr, p->port, job_id(), 30000, &err)) < 0) {
			fprintf(stderr, "%s: node '%s': %s\n", prog, p->node, err.text);
			return -1;
		}
	}
	return 0;
}

/* The path of gpool-rsh: beside this program. */
static int rsh_path(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return snprintf(out, len, "%s/gpool-rsh", self) < (int)len ? 0 : -1;
}

static int run_command(struct leader *L, char **cmd)
{
	char rsh[PATH_MAX];
	if (rsh_path(rsh, sizeof(rsh)) < 0 || access(rsh, X_OK) < 0) {
		fprintf(stderr, "%s: cannot find gpool-rsh beside this program\n", prog);
		return 1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setenv("OMPI_MCA_plm_rsh_agent", rsh, 1);
		setenv("OMPI_MCA_orte_default_hostfile", L->hostfile, 1);
		setenv("OMPI_MCA_plm_rsh_no_tree_spawn", "1", 1);
		setenv("GPOOL_MPI_PROXIES", L->proxies, 1);
		for (size_t i = 0; i < L->npeers; i++)
			if (L->holds[i] >= 0)
				close(L->holds[i]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "%s: cannot execute '%s': %s\n", prog, cmd[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

static int leader(char **cmd)
{
	struct leader L = {0};
	int rc = 1;
	if (find_peers(&L) == 0 && write_files(&L) == 0 && hold_all(&L) == 0)
		rc = run_command(&L, cmd);
	/* the proxies see their holds close and end, and with them the job */
	for (size_t i = 0; L.holds && i < L.npeers; i++)
		if (L.holds[i] >= 0)
			close(L.holds[i]);
	if (L.dir[0] && gp_rm_rf(L.dir) < 0)
		fprintf(stderr, "%s: cannot remove '%s': %s\n", prog, L.dir, strerror(errno));
	free(L.holds);
	free(L.peers);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpool-launch mpirun [--] COMMAND [ARGS...]\n"
		   "Run as a task of a gsub --mpi=mpirun job (gstepd starts it): rank 0 runs "
		   "COMMAND with mpirun set up\nfor the job's nodes, the first task on each other "
		   "node serves as its exec-proxy.\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 3 || strcmp(argv[1], "mpirun") != 0) {
		usage(stderr);
		return 2;
	}
	char **cmd = argv + 2;
	if (!strcmp(cmd[0], "--"))
		cmd++;
	if (!cmd[0]) {
		usage(stderr);
		return 2;
	}
	long rank = env_num("GPOOL_RANK", -1), local = env_num("GPOOL_LOCAL_RANK", -1);
	if (rank < 0 || local < 0) {
		fprintf(stderr,
			"%s: GPOOL_RANK and GPOOL_LOCAL_RANK are not set (not a gpool "
			"task?)\n",
			prog);
		return 2;
	}
	if (rank == 0)
		return leader(cmd);
	if (local == 0)
		return proxy();
	return 0; /* a slot of the hostfile: mpirun starts its rank through the proxy */
}
