/* gschedd: the gpool scheduler. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "scheduler/shell/budget.h"
#include "scheduler/shell/commit.h"
#include "scheduler/core/core.h"
#include "scheduler/shell/plug.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/events.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/store/store_fairshare.h"
#include "scheduler/features/files.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/join.h"
#include "scheduler/http/http.h"
#include "scheduler/core/lifecycle.h"
#include "scheduler/features/metrics.h"
#include "common/log.h"
#include "common/names.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/features/rdv.h"
#include "scheduler/store/repl.h"
#include "scheduler/shell/standby.h"
#include "scheduler/core/running.h"
#include "scheduler/shell/loop.h"
#include "scheduler/shell/settings.h"
#include "scheduler/features/service.h"
#include "scheduler/store/store.h"
#include "scheduler/features/svcreport.h"
#include "common/u64map.h"
#include "common/util.h"
#include "scheduler/features/retention.h"

static struct gsched *the_sched; /* for the signal handler only */

static void on_signal(int sig)
{
	if (the_sched)
		the_sched->stop = 1;
}

static void on_hup(int sig)
{
	(void)sig;
	if (the_sched)
		the_sched->reload = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static const char *node_namer(int idx)
{
	return the_sched ? nodes_name(the_sched->nodes, idx) : "?";
}

/* Jobs found in the store at start-up. */
static int load_job(void *arg, struct job *j)
{
	struct gsched *s = arg;
	j->durable = true;
	if (j->state == GPOOL__JOB_STATE__REQUEUED)
		j->state = GPOOL__JOB_STATE__PENDING;
	if (j->service || j->svc_of) {
		Gpool__JobSpec *sp = store_job_spec(s->store, j->id);
		bool handled = service_loaded(s, j, sp);
		if (sp)
			gpool__job_spec__free_unpacked(sp, NULL);
		if (handled)
			return jobs_add(s->jobs, j);
	}
	if (jobs_add(s->jobs, j) < 0)
		return -1;
	if (j->state == GPOOL__JOB_STATE__RUNNING || j->state == GPOOL__JOB_STATE__COMPLETING) {
		/* its agents re-adopt it when they register again (or it is requeued when they do
		 * not come back within node_timeout) */
		if (job_restore(s, j) < 0) {
			gp_err("job %llu: its stored placement is unreadable: it ends NODE_FAIL",
			       (unsigned long long)j->id);
			j->state = GPOOL__JOB_STATE__NODE_FAIL;
			j->end_time = gp_now();
			commit_save_job(s, j);
		}
	}
	return 0;
}

/* Cards' state found in the store at start-up, for their nodes' first registrations. */
static int restore_card(void *arg, const char *node, Gpool__Card *card)
{
	struct gsched *s = arg;
	return nodes_restore_card(s->nodes, node, card);
}

/* A node that registered with an earlier scheduler process. */
static int expect_node(void *arg, const char *name, bool drain, const char *reason, bool member)
{
	struct gsched *s = arg;
	return nodes_expect(s->nodes, name, drain, reason, member);
}

/* STATE_DIR/role: "leader" or "standby", for an operator and gpool-cluster (docs/standby.md). */
static void write_role(const struct gsched *s, const char *role)
{
	char path[sizeof(s->state_dir) + 16], tmp[sizeof(path) + 8];
	snprintf(path, sizeof(path), "%s/role", s->state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	bool bad = !f;
	if (f) {
		bad = fprintf(f, "%s\n", role) < 0;
		bad = fclose(f) != 0 || bad;
	}
	if (bad || rename(tmp, path) < 0)
		gp_warn("cannot write '%s': %s", path, strerror(errno));
}

static void usage(const gp_config_t *cfg)
{
	printf("usage: gschedd [OPTIONS]\n"
	       "The gpool scheduler: takes jobs from gsub, places them on the agents' nodes,\n"
	       "keeps every accepted job in SQLite under state_dir.\n\n");
	gp_config_usage(cfg, stdout);
}

/* gschedd between its start and its stop: the context, gpool join's bundles, how it exits. */
struct daemon {
	struct gsched s;
	struct join *join;
	int exit; /* the status a step that stops the start exits with */
};

/* The command line and gpool.conf; --help and --check-config end here. */
static int start_options(struct daemon *d)
{
	struct gsched *s = &d->s;
	gp_error_t err = {{0}};
	int help;
	s->cfg = gp_config_create(GP_SCHED);
	if (!s->cfg || gp_config_parse_args(s->cfg, s->argc, s->argv, &help, &err) < 0) {
		fprintf(stderr, "gschedd: %s\n", err.text);
		fprintf(stderr, "Try 'gschedd --help' for more information.\n");
		d->exit = 2;
		return -1;
	}
	if (help) {
		usage(s->cfg);
		d->exit = 0;
		return -1;
	}
	if (gp_config_check_only(s->cfg)) {
		printf("gschedd: configuration ok\n");
		d->exit = 0;
		return -1;
	}
	return 0;
}

static int start_log(struct daemon *d)
{
	struct gsched *s = &d->s;
	int level = gp_log_level_parse(gp_config_str(s->cfg, "log_level"));
	gp_log_init("gschedd", level < 0 ? GP_LOG_INFO : level);
	const char *lf = gp_config_str(s->cfg, "log_file");
	if (*lf && gp_log_file(lf) < 0) {
		fprintf(stderr, "gschedd: cannot open log file '%s': %s\n", lf, strerror(errno));
		return -1;
	}
	return 0;
}

/* The accounts, the listing budgets, retention, fair share and the other settings. */
static int start_settings(struct daemon *d)
{
	struct gsched *s = &d->s;
	s->sched_uid = (uid_t)gp_config_int(s->cfg, "sched_uid");
	s->agent_uid = (uid_t)gp_config_int(s->cfg, "agent_uid");
	int64_t gw_uid = gp_config_int(s->cfg, "gateway_uid");
	s->gateway_uid = gw_uid < 0 ? s->agent_uid : (uid_t)gw_uid;
	gp_error_t uerr;
	if (gp_uid_policy_init(&s->uids, NULL, gp_config_int(s->cfg, "uid_min"),
			       gp_config_int(s->cfg, "uid_max"),
			       gp_config_str(s->cfg, "deny_users"), &uerr) < 0) {
		fprintf(stderr, "gschedd: %s\n", uerr.text);
		return -1;
	}
	gp_info("jobs may run as uids %u-%u (%zu accounts denied)", (unsigned)s->uids.min,
		(unsigned)s->uids.max, s->uids.ndeny);
	if (!(s->lists = budget_create((double)gp_config_int(s->cfg, "list_records_per_user"))) ||
	    !(s->retention = retention_create()) || !(s->fairshare = fairshare_create())) {
		fprintf(stderr, "gschedd: out of memory\n");
		return -1;
	}
	gp_error_t fserr = {{0}};
	if (settings_fairshare(s, &fserr) < 0) {
		fprintf(stderr, "gschedd: %s\n", fserr.text);
		return -1;
	}
	settings_apply(s);
	snprintf(s->state_dir, sizeof(s->state_dir), "%s", gp_config_str(s->cfg, "state_dir"));
	if (getuid() != s->sched_uid)
		gp_warn("running as uid %u but sched_uid is %u: commands will refuse the replies",
			(unsigned)getuid(), (unsigned)s->sched_uid);
	return 0;
}

static int start_signals(struct daemon *d)
{
	the_sched = &d->s;
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	store_set_node_namer(node_namer);
	return 0;
}

/* With sched_peers, a standby scheduler (docs/standby.md): follow the leader until this one
 * leads; a standby that stops ends here. */
static int start_standby(struct daemon *d)
{
	struct gsched *s = &d->s;
	gp_error_t err = {{0}};
	const char *peers = gp_config_str(s->cfg, "sched_peers");
	if (!*peers)
		return 0;
	const char *listen = gp_config_str(s->cfg, "listen");
	const char *port = strrchr(listen, ':');
	if (!(s->auth = gp_auth_create(NULL, &err)) ||
	    !(s->repl = repl_create(s->state_dir, (uint64_t)gp_config_int(s->cfg, "sched_id"),
				    peers, port ? port + 1 : "7820", s->sched_uid, &err)) ||
	    !(s->net = net_create(listen, s->auth, (size_t)gp_config_int(s->cfg, "max_request"),
				  (int)gp_config_int(s->cfg, "rate_per_addr"), &err))) {
		gp_err("%s", err.text[0] ? err.text : "out of memory");
		return -1;
	}
	write_role(s, "standby");
	gp_info("standby on %s until this scheduler leads", listen);
	int rc = standby_serve(s);
	if (rc != 0) {
		net_destroy(&s->net);
		repl_destroy(&s->repl);
		gp_auth_destroy(&s->auth);
		gp_config_destroy(&s->cfg);
		d->exit = rc < 0 ? 1 : 0;
		return -1;
	}
	write_role(s, "leader");
	gp_info("leading: loading the replicated state");
	return 0;
}

/* The store, the output store, the rendezvous, the metrics and the core. */
static int start_state(struct daemon *d)
{
	struct gsched *s = &d->s;
	gp_error_t err = {{0}};
	if ((!s->auth && !(s->auth = gp_auth_create(NULL, &err))) ||
	    !(s->store = store_create(s->state_dir, gp_config_str(s->cfg, "sync"),
				      s->commit_delay_ms, &err)) ||
	    (s->repl &&
	     store_set_replication(s->store, standby_replicate, standby_replicated, s->repl) < 0) ||
	    !(s->output = output_create(s->state_dir,
					(uint64_t)gp_config_int(s->cfg, "output_limit"), &err)) ||
	    !(s->rdv = rdv_create()) || !(s->metrics = metrics_create()) ||
	    sched_core_init(s, store_max_job_id(s->store) + 1) < 0) {
		gp_err("%s", err.text[0] ? err.text : "out of memory");
		return -1;
	}
	s->dep_target = effects_dep_target; /* dependencies read the store */
	if (fairshare_attach_store(s->fairshare, store_db(s->store)) < 0) {
		gp_err("cannot read the fair-share usage from '%s/jobs.db'", s->state_dir);
		return -1;
	}
	return 0;
}

/* The features' admission checks and event subscriptions (core.h). */
static int start_features(struct daemon *d)
{
	if (sched_core_subscribe(&d->s) < 0) {
		gp_err("out of memory");
		return -1;
	}
	return 0;
}

/* munged must answer before we take requests */
static int start_munge(struct daemon *d)
{
	gp_error_t err = {{0}};
	char *cred = NULL;
	if (gp_auth_encode(d->s.auth, "", 0, &cred, &err) < 0) {
		gp_err("%s (is munged running?)", err.text);
		return -1;
	}
	free(cred);
	return 0;
}

/* What jobs.db holds: the cards' state, the nodes, the jobs. */
static int start_load(struct daemon *d)
{
	struct gsched *s = &d->s;
	if (store_cards_load(s->store, restore_card, s) < 0) {
		gp_err("cannot load the cards' state from '%s/jobs.db': %s", s->state_dir,
		       strerror(errno));
		return -1;
	}
	if (store_nodes_load(s->store, expect_node, s) < 0) {
		gp_err("cannot load the node list from '%s/jobs.db': %s", s->state_dir,
		       strerror(errno));
		return -1;
	}
	if (store_load(s->store, true, load_job, s) < 0) {
		gp_err("cannot load the jobs from '%s/jobs.db'", s->state_dir);
		return -1;
	}
	return 0;
}

/* With the state replicated: file sets, output and rendezvous back from jobs.db. */
static int start_restore(struct daemon *d)
{
	struct gsched *s = &d->s;
	if (!s->repl)
		return 0;
	if (files_restore(s) < 0) {
		gp_err("cannot restore the replicated file sets into '%s'", s->state_dir);
		return -1;
	}
	if (output_restore(s) < 0) {
		gp_err("cannot restore the replicated output into '%s/output': %s", s->state_dir,
		       strerror(errno));
		return -1;
	}
	if (rdv_restore(s) < 0) {
		gp_err("cannot restore the replicated rendezvous: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The ROUTER socket (a standby made it already), its rate bounds, gpool join's bundles. */
static int start_net(struct daemon *d)
{
	struct gsched *s = &d->s;
	gp_error_t err = {{0}};
	if (!s->net && !(s->net = net_create(gp_config_str(s->cfg, "listen"), s->auth,
					     (size_t)gp_config_int(s->cfg, "max_request"),
					     (int)gp_config_int(s->cfg, "rate_per_addr"), &err))) {
		gp_err("%s", err.text);
		return -1;
	}
	net_set_rate(s->net, (int)gp_config_int(s->cfg, "rate_per_addr"),
		     (double)gp_config_int(s->cfg, "bytes_per_addr"));
	if (!(d->join = join_create(s->state_dir))) {
		gp_err("out of memory");
		return -1;
	}
	net_set_join(s->net, d->join); /* gpool join's bundles in STATE_DIR/join */
	return 0;
}

/* The HTTP server thread, where http_listen names an address. */
static int start_http(struct daemon *d)
{
	struct gsched *s = &d->s;
	gp_error_t err = {{0}};
	const char *hl = gp_config_str(s->cfg, "http_listen");
	if (gp_config_int(s->cfg, "http_max_conns") < 0 ||
	    gp_config_int(s->cfg, "http_max_conns_per_addr") < 0) {
		gp_err("http_max_conns and http_max_conns_per_addr cannot be negative");
		return -1;
	}
	if (!*hl)
		return 0;
	struct http_opts ho = {.listen = hl,
			       .web_dir = gp_config_str(s->cfg, "web_dir"),
			       .token_ttl_ms = gp_config_int(s->cfg, "api_token_ttl"),
			       .max_body = (size_t)gp_config_int(s->cfg, "max_request"),
			       .tls_cert = gp_config_str(s->cfg, "http_tls_cert"),
			       .tls_key = gp_config_str(s->cfg, "http_tls_key"),
			       .max_conns = (size_t)gp_config_int(s->cfg, "http_max_conns"),
			       .max_conns_per_addr =
				   (size_t)gp_config_int(s->cfg, "http_max_conns_per_addr")};
	if (!(s->http = http_create(&ho, net_context(s->net), &err))) {
		gp_err("%s", err.text);
		return -1;
	}
	net_set_local(s->net, http_socket(s->http), HTTP_RID_PREFIX, HTTP_RID_PREFIX_LEN);
	gp_info("HTTP%s server on %s (REST API, /metrics, dashboard from %s)",
		*gp_config_str(s->cfg, "http_tls_cert") ? "S" : "", hl,
		gp_config_str(s->cfg, "web_dir"));
	return 0;
}

/* gschedd's start, in order: a step that fails has said why and stops it (d->exit). */
static const struct {
	const char *name;
	int (*run)(struct daemon *d);
} start_steps[] = {
    {"options", start_options},	  {"log", start_log},	      {"settings", start_settings},
    {"signals", start_signals},	  {"standby", start_standby}, {"state", start_state},
    {"features", start_features}, {"munge", start_munge},     {"load", start_load},
    {"restore", start_restore},	  {"net", start_net},	      {"http", start_http},
};

static void stop_report(struct daemon *d)
{
	struct gsched *s = &d->s;
	struct net_stats ns;
	net_stats(s->net, &ns);
	uint64_t commits, rows;
	store_stats(s->store, &commits, &rows);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	gp_info("stopping: %llu submitted, %llu ended, %llu messages in (%llu refused, %llu over "
		"rate), %llu commits of %llu rows, %.3f s in munge, %.3f s cpu, peak rss %ld kB",
		(unsigned long long)s->submitted, (unsigned long long)s->completed,
		(unsigned long long)ns.received, (unsigned long long)ns.refused,
		(unsigned long long)ns.rate_dropped, (unsigned long long)commits,
		(unsigned long long)rows, ns.munge_sec,
		ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
		ru.ru_maxrss);
}

static void stop_doors(struct daemon *d)
{
	http_destroy(&d->s.http); /* its pair lives in net's context: first */
	net_destroy(&d->s.net);
	join_destroy(&d->join);
}

static void stop_features(struct daemon *d)
{
	metrics_destroy(&d->s.metrics);
	retention_destroy(&d->s.retention);
	budget_destroy(&d->s.lists);
}

static void stop_state(struct daemon *d)
{
	struct gsched *s = &d->s;
	store_destroy(&s->store);
	output_destroy(&s->output);
	rdv_destroy(&s->rdv);
	svcrep_destroy(&s->svcrep);
	sched_features_release(s);
	sched_core_release(s);
	gp_auth_destroy(&s->auth);
	repl_destroy(&s->repl); /* after the store: its last commit is refused, not replicated */
}

static void stop_settings(struct daemon *d)
{
	gp_config_destroy(&d->s.cfg);
	free(d->s.touched);
	free(d->s.subs);
}

/* gschedd's stop, in order, after a start that went through. */
static const struct {
	const char *name;
	void (*run)(struct daemon *d);
} stop_steps[] = {
    {"report", stop_report}, {"doors", stop_doors},	  {"features", stop_features},
    {"state", stop_state},   {"settings", stop_settings},
};

int main(int argc, char **argv)
{
	static struct daemon d;
	d.s.argc = argc;
	d.s.argv = argv;
	d.exit = 1;
	for (size_t i = 0; i < sizeof(start_steps) / sizeof(start_steps[0]); i++)
		if (start_steps[i].run(&d) < 0)
			return d.exit;
	gp_info("listening on %s, state in %s, %zu jobs loaded", gp_config_str(d.s.cfg, "listen"),
		d.s.state_dir, jobs_count(d.s.jobs));
	d.s.plan_dirty = true;
	int rc = gsched_run(&d.s);
	for (size_t i = 0; i < sizeof(stop_steps) / sizeof(stop_steps[0]); i++)
		stop_steps[i].run(&d);
	if (d.s.restart && rc == 0) {
		/* a fresh process: it rebuilds jobs.db from the log and follows the new leader */
		execv("/proc/self/exe", argv);
		gp_err("cannot start again as a standby: %s", strerror(errno));
		return 1;
	}
	return rc < 0 ? 1 : 0;
}
