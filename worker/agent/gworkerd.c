/* gworkerd.c: the gpool agent on every PC: discovers what the node offers, registers with
 * gschedd, starts a gstepd per job attempt it is given, and forwards their reports. */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "worker/agent/agent.h"
#include "common/log.h"
#include "common/schedlist.h"
#include "worker/node/staging.h"
#include "worker/node/sysinfo.h"
#include "common/util.h"
#include "worker/node/account.h"
#include "worker/node/cgroup.h"
#include "worker/node/cgroup_dynmods.h"
#include "common/sigfd.h"

static int discover(struct agent *a, gp_error_t *err)
{
	const gp_config_t *cfg = a->cfg;
	const char *name = gp_config_str(cfg, "node_name");
	if (*name)
		snprintf(a->node, sizeof(a->node), "%s", name);
	else if (gp_sys_hostname(a->node, sizeof(a->node)) < 0)
		return gp_errprintf(err, "cannot find the host name: %s", strerror(errno));
	int64_t cpus = gp_config_int(cfg, "cpus");
	if (cpus < 0 || cpus > 65536)
		return gp_errprintf(err, "invalid cpus %lld", (long long)cpus);
	a->cpus = cpus ? (uint32_t)cpus : gp_sys_cpus();
	int64_t mem = gp_config_int(cfg, "memory");
	if (mem < 0)
		return gp_errprintf(err, "invalid memory");
	a->mem_mb = mem ? (uint64_t)mem >> 20 : gp_sys_mem_total_mb() * 95 / 100;
	const char *addr = gp_config_str(cfg, "node_addr");
	if (*addr) {
		snprintf(a->addr, sizeof(a->addr), "%s", addr);
	} else {
		gp_error_t e2 = {{0}};
		/* the address the first scheduler of the list that has a route sees us by */
		struct gp_schedlist l;
		bool found = false;
		if (gp_schedlist_parse(&l, gp_config_str(cfg, "scheduler"), &e2) == 0)
			for (size_t i = 0; !found && i < l.n; i++)
				found =
				    gp_sys_route_addr(l.ep[i], a->addr, sizeof(a->addr), &e2) == 0;
		if (!found) {
			gp_warn("cannot find this node's address (%s): set node_addr", e2.text);
			a->addr[0] = '\0';
		}
	}
	a->iface[0] = a->subnet[0] = '\0';
	if (a->addr[0]) {
		gp_error_t e3;
		if (gp_sys_iface_of(a->addr, a->iface, sizeof(a->iface), a->subnet,
				    sizeof(a->subnet), &e3) < 0)
			gp_warn("%s: tasks get no GLOO_SOCKET_IFNAME and friends", e3.text);
	}
	uint32_t lo, hi;
	int64_t pool = gp_config_int(cfg, "master_port_pool");
	if (gp_ports_parse_range(gp_config_str(cfg, "master_ports"), &lo, &hi, err) < 0)
		return -1;
	if (pool < 1 || pool > 4096)
		return gp_errprintf(err, "invalid master_port_pool %lld (1 to 4096)",
				    (long long)pool);
	if (gp_ports_overlap_ephemeral(lo, hi))
		gp_warn("master_ports %u-%u overlap the ephemeral port range "
			"(net.ipv4.ip_local_port_range): a job's MASTER_PORT may be taken by an "
			"outgoing connection",
			lo, hi);
	if (!(a->ports = gp_ports_create(lo, hi, (size_t)pool)))
		return gp_errprintf(err, "cannot make the master port pool: %s", strerror(errno));
	if (gp_cards_discover(gp_config_str(cfg, "fake_cards"), &a->cards, err) < 0)
		return -1;
	snprintf(a->state_dir, sizeof(a->state_dir), "%s", gp_config_str(cfg, "state_dir"));
	const char *stepd = gp_config_str(cfg, "stepd");
	if (*stepd) {
		snprintf(a->stepd, sizeof(a->stepd), "%s", stepd);
	} else {
		char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0)
			return gp_errprintf(err, "cannot find gstepd: set the stepd key");
		self[n] = '\0';
		snprintf(a->stepd, sizeof(a->stepd), "%s/gstepd", dirname(self));
	}
	if (access(a->stepd, X_OK) < 0)
		return gp_errprintf(err, "gstepd '%s' is not executable: %s", a->stepd,
				    strerror(errno));
	/* root makes and hands over job directories in it: a root a user could swap or write
	 * into stops the agent here, not a job later */
	if (gp_stage_scratch_check(gp_config_str(cfg, "scratch_dir"), err) < 0)
		return -1;
	const char *cg = gp_config_str(cfg, "cgroups");
	if (strcmp(cg, "auto") && strcmp(cg, "v1") && strcmp(cg, "v2") && strcmp(cg, "off"))
		return gp_errprintf(err, "invalid cgroups '%s' (auto, v1, v2 or off)", cg);
	if (geteuid() != 0 && *gp_config_str(cfg, "run_as"))
		gp_warn("run_as is set but gworkerd is not root: tasks run as uid %u",
			(unsigned)geteuid());
	return 0;
}

/* cgroup_dynmods.h: without it the first cgroup join of every job waits an RCU grace period.
 * Not fatal: jobs still run, each start is only slower. */
static void favor_dynmods(const gp_config_t *cfg)
{
	if (!gp_config_bool(cfg, "cgroup_favordynmods") ||
	    !strcmp(gp_config_str(cfg, "cgroups"), "off") || geteuid() != 0)
		return;
	char what[128];
	gp_error_t err = {{0}};
	if (gp_cgroup_favor_dynmods(what, sizeof(what), &err) < 0)
		gp_warn(
		    "cgroups: favordynmods not turned on (%s): every job's processes wait an RCU "
		    "grace period to join their cgroup",
		    err.text);
	else
		gp_info("cgroups: favordynmods %s", what);
}

/* A startup failure goes to the log and, when the log is a file, to stderr as well. */
static void fail_startup(const struct agent *a, const char *text)
{
	gp_err("%s", text);
	if (*gp_config_str(a->cfg, "log_file"))
		fprintf(stderr, "gworkerd: %s\n", text);
}

static void reload_changed(const char *key, int applied, void *arg)
{
	const gp_config_t *c = arg;
	if (applied)
		gp_info("reload: %s = '%s'", key, gp_config_str(c, key));
	else
		gp_warn("reload: %s changed: it takes effect at the next restart", key);
}

/* SIGHUP: reopen the log (logrotate), then apply what may change live: log_level, log_file,
 * kill_grace (for supervisors started from now on), power_sample_interval, the owner_* keys
 * (docs/owner.md). A configuration
 * that does not parse changes nothing. */
static void reload(struct agent *a)
{
	char lf[1024];
	snprintf(lf, sizeof(lf), "%s", gp_config_str(a->cfg, "log_file"));
	if (*lf && gp_log_file(lf) < 0)
		gp_err("reload: cannot reopen log file '%s': %s", lf, strerror(errno));
	gp_error_t err = {{0}};
	int n = gp_config_reload(a->cfg, a->argc, a->argv, reload_changed, a->cfg, &err);
	if (n < 0) {
		gp_err("reload: %s: keeping the running configuration", err.text);
		return;
	}
	const char *nlf = gp_config_str(a->cfg, "log_file");
	if (strcmp(lf, nlf) != 0 && gp_log_file(nlf) < 0)
		gp_err("reload: cannot open log file '%s': %s", nlf, strerror(errno));
	int level = gp_log_level_parse(gp_config_str(a->cfg, "log_level"));
	if (level >= 0)
		gp_log_set_level(level);
	if (steps_reconfigure(a) < 0)
		gp_err("reload: supervisors keep the old settings: out of memory");
	if (a->power &&
	    power_set_interval(a->power, gp_config_int(a->cfg, "power_sample_interval")) < 0)
		gp_err("reload: invalid power_sample_interval: the old one stays");
	gp_error_t oerr = {{0}};
	if (owner_reconfigure(a, &oerr) < 0)
		gp_err("reload: %s: the owner settings stay as they were", oerr.text);
	gp_info("reload: done, %d setting(s) changed", n);
}

static void run(struct agent *a, int sigfd)
{
	while (!a->quit) {
		int64_t now = gp_mono_ms();
		/* before the link's tick: a registration reports the ports found free */
		gp_ports_refill(a->ports, steps_port_busy, a, now);
		int64_t wake = sched_link_tick(a, now);
		int64_t w2 = steps_tick(a, now);
		if (w2 < wake)
			wake = w2;
		w2 = power_tick(a, now);
		if (w2 < wake)
			wake = w2;
		w2 = owner_tick(a, now);
		if (w2 < wake)
			wake = w2;
		w2 = share_tick(a, now);
		if (w2 < wake)
			wake = w2;
		sched_link_flush(a);
		steps_flush(a);
		zmq_pollitem_t items[3] = {
		    {.socket = sched_link_socket(a->link), .events = ZMQ_POLLIN},
		    {.socket = steps_socket(a->steps), .events = ZMQ_POLLIN},
		    {.fd = sigfd, .events = ZMQ_POLLIN},
		};
		int nitems = 3;
		now = gp_mono_ms();
		long timeout = wake > now ? (long)(wake - now) : 0;
		if (zmq_poll(items, nitems, timeout) < 0) {
			if (errno == EINTR)
				continue;
			gp_err("poll: %s", zmq_strerror(errno));
			break;
		}
		if (items[2].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					reload(a);
					continue;
				}
				if (si.ssi_signo == SIGCHLD) {
					/* what a supervisor said before it ended comes first */
					steps_recv(a);
					int st;
					pid_t pid;
					/* supervisors (and orphans while we are their reaper) */
					while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
						steps_reaped(a, pid, st);
					continue;
				}
				gp_info("signal %u: exiting (job supervisors keep running)",
					si.ssi_signo);
				a->quit = true;
			}
		}
		if (items[0].revents)
			sched_link_recv(a);
		if (items[1].revents)
			steps_recv(a);
	}
	/* hand over what this pass collected */
	sched_link_flush(a);
	steps_flush(a);
}

int main(int argc, char **argv)
{
	struct agent a = {0};
	gp_error_t err = {{0}};
	int help = 0;
	if (!(a.cfg = gp_config_create(GP_WORKER)) ||
	    gp_config_parse_args(a.cfg, argc, argv, &help, &err) < 0) {
		fprintf(stderr, "gworkerd: %s\n", err.text[0] ? err.text : strerror(errno));
		gp_config_destroy(&a.cfg);
		return 1;
	}
	if (help) {
		printf("usage: gworkerd [--config FILE] [--KEY=VALUE...]\n\n");
		gp_config_usage(a.cfg, stdout);
		gp_config_destroy(&a.cfg);
		return 0;
	}
	if (gp_config_check_only(a.cfg)) {
		printf("gworkerd: configuration ok\n");
		gp_config_destroy(&a.cfg);
		return 0;
	}
	a.argc = argc;
	a.argv = argv;
	int level = gp_log_level_parse(gp_config_str(a.cfg, "log_level"));
	if (level < 0) {
		fprintf(stderr, "gworkerd: invalid log_level '%s'\n",
			gp_config_str(a.cfg, "log_level"));
		return 1;
	}
	gp_log_init("gworkerd", level);
	const char *lf = gp_config_str(a.cfg, "log_file");
	if (*lf && gp_log_file(lf) < 0) {
		fprintf(stderr, "gworkerd: cannot open log file '%s': %s\n", lf, strerror(errno));
		return 1;
	}
	int rc = 1;
	int sigfd = -1;
	if (gp_uid_policy_init(&a.uids, NULL, gp_config_int(a.cfg, "uid_min"),
			       gp_config_int(a.cfg, "uid_max"), gp_config_str(a.cfg, "deny_users"),
			       &err) < 0) {
		fprintf(stderr, "gworkerd: %s\n", err.text);
		return 1;
	}
	if (discover(&a, &err) < 0) {
		fail_startup(&a, err.text);
		goto out;
	}
	/* gstepd runs detached (it must outlive us), but while we live we reap it, so a PID 1
	 * that does not reap leaves no zombies behind */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	gp_account_preload_nss(); /* once here, not once per supervisor */
	favor_dynmods(a.cfg);
	if (strcmp(gp_config_str(a.cfg, "cgroups"), "off") && geteuid() == 0) {
		/* task shells killed while the agent was away leave their idle groups */
		int n = gp_cgroup_sweep_idle(a.node, 0);
		if (n > 0)
			gp_info("cgroups: removed %d idle group(s) of task shells that are gone",
				n);
	}
	if ((sigfd = gp_sigfd_open(NULL)) < 0) {
		gp_err("signals: %s", strerror(errno));
		goto out;
	}
	if (!(a.zctx = zmq_ctx_new()) || !(a.steps = steps_create(&a, &err)) ||
	    !(a.power = power_create(&a, &err)) || !(a.owner = owner_create(&a, &err)) ||
	    !(a.share = share_create(&a)) || !(a.peer = peer_create(&a)) ||
	    !(a.link = sched_link_create(&a, &err))) {
		fail_startup(&a, err.text[0] ? err.text : "cannot start zeromq");
		goto out;
	}
	gp_info("node %s: %u cpus, %llu MiB, %zu card(s), address %s (interface %s), scheduler %s",
		a.node, a.cpus, (unsigned long long)a.mem_mb, a.cards.n, a.addr[0] ? a.addr : "?",
		a.iface[0] ? a.iface : "?", gp_config_str(a.cfg, "scheduler"));
	run(&a, sigfd);
	rc = 0;
out:
	sched_link_destroy(&a.link);
	peer_destroy(&a.peer);
	power_destroy(&a.power);
	share_destroy(&a.share);
	owner_destroy(&a.owner);
	steps_destroy(&a.steps);
	if (a.zctx)
		zmq_ctx_term(a.zctx);
	if (sigfd >= 0)
		close(sigfd);
	gp_cards_release(&a.cards);
	gp_ports_destroy(&a.ports);
	gp_config_destroy(&a.cfg);
	return rc;
}
