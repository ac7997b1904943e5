/* ggated: the gateway of gpool's services. One HTTP address for every service
 * (/svc/<name or id>/... with the prefix stripped) and, optionally, a port of its own per
 * service (--service-port NAME=PORT, the path kept); requests go to the service's healthy
 * replicas, learnt from gschedd (see gateway.h). */
#include <errno.h>
#include <fcntl.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/proxy.h"
#include "gateway/pool.h"
#include "gateway/front.h"
#include "gateway/discovery.h"
#include "gateway/report.h"
#include "common/log.h"
#include "common/opt.h"
#include "common/parse.h"

#define MAX_PORTMAPS 64

static void usage(FILE *f)
{
	fputs("usage: ggated [OPTIONS]\n"
	      "  --listen ADDR:PORT        the gateway's address (default 0.0.0.0:8000): "
	      "/svc/NAME/... and /metrics\n"
	      "  --service-port NAME=PORT  also serve service NAME (or id) on PORT, path kept "
	      "(repeatable)\n"
	      "  --timeout MS              per request, at the replica (default 30000)\n"
	      "  --stream-timeout MS       an event stream's silence at the replica (default "
	      "600000)\n"
	      "  --keepalive MS            an event stream's keep-alive comment after this "
	      "silence (default 10000, 0: none)\n"
	      "  --connect-timeout MS      connect and health check timeout (default 500)\n"
	      "  --health-interval MS      active health checks (default 500)\n"
	      "  --poll-interval MS        asking gschedd for the replicas (default 500)\n"
	      "  --eject MS                passive ejection without a health path (default 2000)\n"
	      "  --tries N                 replicas one request may try (default 3, at most 3)\n"
	      "  --max-body SIZE           largest request body (default 8MiB)\n"
	      "  --max-header SIZE         largest request header block (default 16KiB)\n"
	      "  --client-timeout MS       a client silent this long is closed (default 10000)\n"
	      "  --ws-idle-timeout MS      a WebSocket with no bytes either way this long is "
	      "closed (default 3600000)\n"
	      "  --max-conns N             connections per replica (default 64)\n"
	      "  --max-clients N           client connections open at most (default 1024, 0: no "
	      "cap)\n"
	      "  --max-clients-per-addr N  client connections from one address at most (default "
	      "64, 0: no cap)\n"
	      "  --tls-cert PATH           PEM certificate chain: with --tls-key, clients speak "
	      "HTTPS only (TLS 1.2+)\n"
	      "  --tls-key PATH            PEM private key of --tls-cert\n"
	      "  --trust-forwarded ADDR[/BITS],...  front proxies whose X-Forwarded-For is kept "
	      "(default: none, a client's is replaced)\n"
	      "  --config PATH             gpool.conf (scheduler, sched_uid)\n"
	      "  --scheduler ENDPOINT      gschedd (default $GPOOL_SCHEDULER, then gpool.conf)\n"
	      "  --log-level LEVEL         err, warn, info, debug\n",
	      f);
}

static int ms_opt(const char *a, long lo, long hi, const char *what, int *out)
{
	long v;
	if (gp_parse_long(a, lo, hi, &v) < 0) {
		fprintf(stderr, "ggated: invalid %s '%s'\n", what, a);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int size_opt(const char *a, const char *what, size_t *out)
{
	uint64_t v;
	if (gp_parse_size(a, 1, &v) < 0 || v == 0 || v > (1ULL << 32)) {
		fprintf(stderr, "ggated: invalid %s '%s'\n", what, a);
		return -1;
	}
	*out = (size_t)v;
	return 0;
}

/* What the command line sets beside the gateway's context. */
struct args {
	int level, max_conns, max_clients, max_per_addr;
	const char *tls_cert, *tls_key, *config;
	char listen_addr[128];
	int listen_port;
	struct gw_portmap pm[MAX_PORTMAPS];
	int npm;
};

static int portmap_opt(const char *arg, struct args *a)
{
	const char *eq = strrchr(arg, '=');
	int port;
	if (!eq || eq == arg || (size_t)(eq - arg) > 256 || a->npm >= MAX_PORTMAPS ||
	    ms_opt(eq + 1, 1, 65535, "service port", &port) < 0) {
		fprintf(stderr, "ggated: invalid service port '%s'\n", arg);
		return -1;
	}
	memcpy(a->pm[a->npm].name, arg, (size_t)(eq - arg));
	a->pm[a->npm].name[eq - arg] = '\0';
	a->pm[a->npm++].port = (uint16_t)port;
	return 0;
}

/* One option of getopt_long's table: 0, -1 when its value is bad (said on stderr), 1 when it
 * is none of the table's (--help, an unknown option). */
static int set_opt(int o, const char *arg, struct gw_ctx *c, struct args *a)
{
	switch (o) {
	case 'l': {
		long lp;
		if (gp_parse_listen(arg, a->listen_addr, sizeof(a->listen_addr), &lp) < 0) {
			fprintf(stderr, "ggated: invalid listen address '%s'\n", arg);
			return -1;
		}
		a->listen_port = (int)lp;
		return 0;
	}
	case 'p':
		return portmap_opt(arg, a);
	case 't':
		return ms_opt(arg, 1, 3600000, "timeout", &c->timeout_ms);
	case 'S':
		return ms_opt(arg, 1, 86400000, "stream timeout", &c->stream_timeout_ms);
	case 'a':
		return ms_opt(arg, 0, 3600000, "keep-alive interval", &c->keepalive_ms);
	case 'C':
		return ms_opt(arg, 1, 600000, "connect timeout", &c->connect_timeout_ms);
	case 'H':
		return ms_opt(arg, 10, 600000, "health interval", &c->health_ms);
	case 'P':
		return ms_opt(arg, 10, 600000, "poll interval", &c->poll_ms);
	case 'E':
		return ms_opt(arg, 0, 600000, "ejection time", &c->eject_ms);
	case 'r':
		return ms_opt(arg, 1, GW_MAX_TRIES, "tries", &c->tries);
	case 'b':
		return size_opt(arg, "body size", &c->max_body);
	case 'h':
		return size_opt(arg, "header size", &c->max_headers);
	case 'T':
		return ms_opt(arg, 1, 3600000, "client timeout", &c->client_timeout_ms);
	case 'W':
		return ms_opt(arg, 1, 86400000, "websocket idle timeout", &c->ws_idle_ms);
	case 'm':
		return ms_opt(arg, 1, 100000, "connection count", &a->max_conns);
	case 'M':
		return ms_opt(arg, 0, 1000000, "client connection count", &a->max_clients);
	case 'A':
		return ms_opt(arg, 0, 1000000, "client connection count per address",
			      &a->max_per_addr);
	case 'k':
		a->tls_cert = arg;
		return 0;
	case 'K':
		a->tls_key = arg;
		return 0;
	case 'F': {
		gp_error_t terr = {{0}};
		if (gw_trust_parse(&c->trust, arg, &terr) < 0) {
			fprintf(stderr, "ggated: %s\n", terr.text);
			return -1;
		}
		return 0;
	}
	case 'c':
		a->config = arg;
		return 0;
	case 's':
		setenv("GPOOL_SCHEDULER", arg, 1);
		return 0;
	case 'L':
		a->level = gp_log_level_parse(arg);
		if (a->level < 0) {
			fprintf(stderr, "ggated: invalid log level '%s'\n", arg);
			return -1;
		}
		return 0;
	default:
		return 1;
	}
}

/* The defaults, then the command line: 0 to go on, or -1 with the exit status in *status. */
static int parse_args(int argc, char **argv, struct gw_ctx *c, struct args *a, int *status)
{
	static const struct option lo[] = {
	    {"listen", required_argument, 0, 'l'},
	    {"service-port", required_argument, 0, 'p'},
	    {"timeout", required_argument, 0, 't'},
	    {"connect-timeout", required_argument, 0, 'C'},
	    {"stream-timeout", required_argument, 0, 'S'},
	    {"keepalive", required_argument, 0, 'a'},
	    {"health-interval", required_argument, 0, 'H'},
	    {"poll-interval", required_argument, 0, 'P'},
	    {"eject", required_argument, 0, 'E'},
	    {"tries", required_argument, 0, 'r'},
	    {"max-body", required_argument, 0, 'b'},
	    {"max-header", required_argument, 0, 'h'},
	    {"client-timeout", required_argument, 0, 'T'},
	    {"ws-idle-timeout", required_argument, 0, 'W'},
	    {"max-conns", required_argument, 0, 'm'},
	    {"max-clients", required_argument, 0, 'M'},
	    {"max-clients-per-addr", required_argument, 0, 'A'},
	    {"tls-cert", required_argument, 0, 'k'},
	    {"tls-key", required_argument, 0, 'K'},
	    {"trust-forwarded", required_argument, 0, 'F'},
	    {"config", required_argument, 0, 'c'},
	    {"scheduler", required_argument, 0, 's'},
	    {"log-level", required_argument, 0, 'L'},
	    {"help", no_argument, 0, '?' + 256},
	    {0, 0, 0, 0},
	};
	c->timeout_ms = 30000;
	c->connect_timeout_ms = 500;
	c->stream_timeout_ms = 600000;
	c->keepalive_ms = 10000;
	c->health_ms = 500;
	c->poll_ms = 500;
	c->eject_ms = 2000;
	c->tries = GW_MAX_TRIES;
	c->max_body = 8u << 20;
	c->max_headers = 16u << 10;
	c->max_conns = 64;
	c->client_timeout_ms = 10000;
	c->ws_idle_ms = 3600000;
	*a = (struct args){.level = GP_LOG_INFO,
			   .max_conns = 64,
			   .max_clients = 1024,
			   .max_per_addr = 64,
			   .listen_addr = "0.0.0.0",
			   .listen_port = 8000};
	int o;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		int r = set_opt(o, optarg, c, a);
		if (r != 0) {
			*status = r > 0 ? gp_opt_usage_status(usage, o == '?' + 256, 2) : 2;
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ggated: unexpected argument '%s'\n", argv[optind]);
		*status = 2;
		return -1;
	}
	c->max_conns = (uint32_t)a->max_conns;
	c->max_clients = (size_t)a->max_clients;
	c->max_clients_per_addr = (size_t)a->max_per_addr;
	return 0;
}

/* The steps of ggated's start, in order (start_steps): each returns 0, or the exit status. */

static int start_log_tls(struct gw_ctx *c, struct args *a)
{
	gp_log_init("ggated", a->level);
	if (!a->tls_cert != !a->tls_key) {
		gp_err("--tls-cert and --tls-key go together");
		return 2;
	}
	gp_error_t terr = {{0}};
	if (a->tls_cert && !(c->tls = gh_tls_create(a->tls_cert, a->tls_key, &terr))) {
		gp_err("%s", terr.text);
		return 1;
	}
	return 0;
}

static int start_process(struct gw_ctx *c, struct args *a)
{
	(void)c, (void)a;
	signal(SIGPIPE, SIG_IGN);
	/* A session of its own, as a daemon's: with the kernel's scheduler autogroups (one per
	 * session, on by default) ggated started from a shell or script shared its CPU weight
	 * with everything else there (wrk, in the benchmark), split across the CPUs by load, and
	 * on a CPU where replicas were pinned, each an autogroup of its own at full weight, its
	 * loop waited 0.1-1 s at a time (docs/benchmarks.md). EPERM (a process group leader, as
	 * in an interactive shell's foreground) leaves it where it is. */
	if (setsid() < 0 && errno != EPERM)
		gp_warn("cannot start a session of its own: %s", strerror(errno));
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max; /* thousands of idle clients are not an outage */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return 0;
}

/* Every health period: what the last period saw, for gschedd (report.c), then the replicas'
 * health checks and lingering removals (pool.c). */
static void tick(evutil_socket_t fd, short what, void *arg)
{
	gw_report_publish(arg);
	gw_health_tick(fd, what, arg);
}

static int start_loop(struct gw_ctx *c, struct args *a)
{
	(void)a;
	/* the changelist folds the epoll_ctl calls of one loop pass per socket (a write that
	 * waits, then does not). No evthread_use_pthreads: the loop is libevent's only user, the
	 * discovery thread hands it snapshots through a pipe. With libevent's locks, every event
	 * and buffer operation took a mutex, and the loop waited for the discovery thread whenever
	 * that thread, preempted on a loaded machine, held the base's lock (event_active). */
	struct event_config *ecfg = event_config_new();
	if (ecfg)
		event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST |
						EVENT_BASE_FLAG_NOLOCK);
	if (!ecfg || !(c->base = event_base_new_with_config(ecfg))) {
		gp_err("cannot make the event loop");
		return 1;
	}
	event_config_free(ecfg);
	if (pipe2(c->snap_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		gp_err("cannot make a pipe: %s", strerror(errno));
		return 1;
	}
	c->ev_snap =
	    event_new(c->base, c->snap_pipe[0], EV_READ | EV_PERSIST, gw_discovery_read, c);
	struct timeval hv = {c->health_ms / 1000, (c->health_ms % 1000) * 1000};
	c->ev_health = event_new(c->base, -1, EV_PERSIST, tick, c);
	if (!c->ev_snap || !c->ev_health || event_add(c->ev_health, &hv) < 0 ||
	    event_add(c->ev_snap, NULL) < 0)
		return 1;
	return 0;
}

static int start_listen(struct gw_ctx *c, struct args *a)
{
	if (gw_front_listen(c, a->listen_addr, (uint16_t)a->listen_port, NULL) < 0)
		return 1;
	for (int i = 0; i < a->npm; i++)
		if (gw_front_listen(c, a->listen_addr, a->pm[i].port, a->pm[i].name) < 0)
			return 1;
	return 0;
}

static int start_discovery(struct gw_ctx *c, struct args *a)
{
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	snprintf(c->gateway_name, sizeof(c->gateway_name), "%s:%d", host, a->listen_port);
	gp_error_t err = {{0}};
	if (gw_discovery_start(c, a->config, &err) < 0) {
		gp_err("%s", err.text);
		return 1;
	}
	return 0;
}

static const struct start_step {
	const char *what;
	int (*run)(struct gw_ctx *c, struct args *a);
} start_steps[] = {
    {"the log, TLS", start_log_tls},
    {"SIGPIPE, a session, the open-file limit", start_process},
    {"the event loop, the snapshots' pipe, the health checks' timer", start_loop},
    {"the listening sockets", start_listen},
    {"the discovery thread (ServiceQuery to gschedd)", start_discovery},
};

int main(int argc, char **argv)
{
	static struct gw_ctx c;
	struct args a;
	int status;
	if (parse_args(argc, argv, &c, &a, &status) < 0)
		return status;
	for (size_t i = 0; i < sizeof(start_steps) / sizeof(start_steps[0]); i++)
		if ((status = start_steps[i].run(&c, &a)) != 0)
			return status;
	event_base_dispatch(c.base);
	return 0;
}
