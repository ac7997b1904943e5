/* stepd.c: gstepd, the supervisor of one job attempt's tasks on one node.
 *
 * gworkerd starts it (detached, in its own session) with the launch file it wrote. gstepd
 * prepares the account, working directory, files and cgroup, starts the tasks, streams their
 * output and exit statuses to the agent over ipc://<state_dir>/worker.sock, and exits once
 * every task has ended and the agent has acknowledged every event (StepAck), so an agent
 * restart loses nothing: the supervisor says StepHello every 2 s and sends again whatever is
 * unacknowledged.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/endpoint.h"
#include "worker/env.h"
#include "worker/launchfile.h"
#include "common/log.h"
#include "common/opt.h"
#include "worker/staging.h"
#include "worker/step.h"
#include "common/util.h"
#include "common/wire.h"
#include "common/xfer.h"
#include "common/sigfd.h"

#define HELLO_MS     2000
#define ENVELOPE_MAX (4u << 20)

struct stepd {
	struct step s;
	const char *agent;
	const char *scratch;
	const char *cgroups;
	const char *state_dir; /* the node's chunk cache is <state_dir>/cache */
	const char *scheduler; /* the chunk store's endpoint */
	const char *sched_uid;
	bool allow_root;
	uint32_t kill_grace_ms;
	void *zctx, *sock;
	gp_endpoint_t *ep; /* the agent, over sock (local: unsealed) */
	int sigfd;
	bool hello_due;
	int64_t next_hello_ms;
	uint64_t acked_at_last_hello;
	bool quit;
};

int step_send(struct step *s, Gpool__Msg *m)
{
	return gp_outbox_push(s->out, m);
}

static int send_batch(struct stepd *d, gp_batch_t *b)
{
	gp_error_t err;
	return gp_endpoint_send(d->ep, NULL, 0, b, &err);
}

static void send_hello(struct stepd *d)
{
	struct step *s = &d->s;
	Gpool__StepHello h = GPOOL__STEP_HELLO__INIT;
	Gpool__HeldTask *ht = calloc(s->ntasks ? s->ntasks : 1, sizeof(*ht));
	Gpool__HeldTask **hp = calloc(s->ntasks ? s->ntasks : 1, sizeof(*hp));
	if (!ht || !hp)
		goto out;
	h.job_id = s->launch->job_id;
	h.attempt = s->launch->attempt;
	h.pid = getpid();
	for (size_t i = 0; i < s->ntasks; i++) {
		struct task *t = &s->tasks[i];
		gpool__held_task__init(&ht[i]);
		ht[i].job_id = h.job_id;
		ht[i].attempt = h.attempt;
		ht[i].rank = t->tp->rank;
		ht[i].pid = t->pid;
		ht[i].exited = t->state == TASK_DONE || t->state == TASK_REAPED;
		ht[i].status = t->failed ? (1 << 8) : t->status;
		ht[i].requeueable = !s->launch->spec->no_requeue && !s->launch->spec->service;
		ht[i].port = s->launch->spec->service ? s->launch->spec->service_port : 0;
		hp[i] = &ht[i];
	}
	h.tasks = hp;
	h.n_tasks = s->ntasks;
	Gpool__Msg m = GPOOL__MSG__INIT;
	/* local convention: a hello's id is what the agent has acknowledged, so a restarted
	 * agent knows where our sequence resumes */
	m.id = gp_outbox_acked(s->out);
	m.m_case = GPOOL__MSG__M_STEP_HELLO;
	m.step_hello = &h;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) == 0 && send_batch(d, &b) == 0) {
		d->hello_due = false;
		d->next_hello_ms = gp_mono_ms() + HELLO_MS;
	}
	gp_batch_release(&b);
out:
	free(ht);
	free(hp);
}

/* Send what the agent has not seen yet, one envelope per ENVELOPE_MAX. */
static void flush(struct stepd *d)
{
	gp_batch_t b = {0};
	while (gp_outbox_unsent(d->s.out)) {
		gp_batch_reset(&b);
		int n = gp_outbox_fill(d->s.out, &b, ENVELOPE_MAX);
		if (n <= 0 || send_batch(d, &b) < 0)
			break;
		gp_outbox_sent(d->s.out, n);
	}
	gp_batch_release(&b);
}

/* ---- messages from the agent ---- */

static void on_ack(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	gp_outbox_ack(d->s.out, m->step_ack->upto);
}

static void on_kill(void *arg, void *peer, const Gpool__Msg *m)
{
	struct stepd *d = arg;
	const Gpool__Kill *k = m->kill;
	if (k->job_id != d->s.launch->job_id ||
	    (k->attempt && k->attempt != d->s.launch->attempt)) {
		gp_warn("kill for job %llu.%u is not for this step: ignored",
			(unsigned long long)k->job_id, k->attempt);
		return;
	}
	int sig = k->signal > 0 && k->signal < 65 ? k->signal : SIGTERM;
	gp_info("job %llu.%u: kill with signal %d (grace %u ms)",
		(unsigned long long)d->s.launch->job_id, d->s.launch->attempt, sig, k->grace_ms);
	tasks_kill(&d->s, sig, k->grace_ms);
}

static const struct gp_ep_handler agent_msgs[] = {
    {GPOOL__MSG__M_STEP_ACK, GP_EP_ANYONE, on_ack, "step_ack"},
    {GPOOL__MSG__M_KILL, GP_EP_ANYONE, on_kill, "kill"},
};

/* ---- setup ---- */

/* The chunk store's client settings, when the agent gave them. */
static int setup_xfer(struct stepd *d, gp_error_t *err)
{
	static char cache[4200];
	if (!d->scheduler || !d->state_dir)
		return 0;
	gp_config_t *c = gp_config_create(GP_WORKER);
	if (!c)
		return gp_errprintf(err, "out of memory");
	if (gp_config_set(c, "scheduler", d->scheduler, err) < 0 ||
	    (d->sched_uid && gp_config_set(c, "sched_uid", d->sched_uid, err) < 0)) {
		gp_config_destroy(&c);
		return -1;
	}
	snprintf(cache, sizeof(cache), "%s/cache", d->state_dir);
	d->s.xfer_cfg = c;
	d->s.cache_dir = cache;
	return 0;
}

/* Fetch what the node's cache lacks of the staged manifest, then write it into the working
 * directory. */
static int stage_manifest(struct stepd *d, gp_error_t *err)
{
	struct step *s = &d->s;
	const Gpool__Launch *l = s->launch;
	if (!s->xfer_cfg)
		return gp_errprintf(err, "staged files, but this agent knows no chunk store");
	double t0 = gp_now();
	struct gp_xfer_stats st = {0};
	gp_client_t *c = gp_client_create(s->xfer_cfg, err);
	if (!c)
		return -1;
	struct gp_xfer_peers peers = {.eps = l->stage_peers,
				      .n = l->n_stage_peers,
				      .self = l->stage_index,
				      .cfg = s->xfer_cfg,
				      .uid = geteuid()};
	int rc = gp_xfer_fetch_cache(c, l->spec->stage, l->spec->n_stage, s->cache_dir,
				     l->n_stage_peers > 1 ? &peers : NULL, &st, err);
	gp_client_destroy(&c);
	if (rc < 0)
		return -1;
	double t1 = gp_now();
	if (gp_stage_manifest(l->spec, s->workdir, &s->account, s->cache_dir, err) < 0)
		return -1;
	char what[128];
	gp_xfer_describe(&st, what, sizeof(what));
	gp_info("job %llu.%u: staged %s: %llu chunks, %llu cached, %llu fetched (%llu bytes), "
		"%llu refused, %llu from peers (%zu nodes); fetch %.3f s, write %.3f s",
		(unsigned long long)l->job_id, l->attempt, what, (unsigned long long)st.chunks,
		(unsigned long long)st.cached_chunks, (unsigned long long)st.got_chunks,
		(unsigned long long)st.got_bytes, (unsigned long long)st.refused_chunks,
		(unsigned long long)st.peer_chunks, l->n_stage_peers, t1 - t0, gp_now() - t1);
	return 0;
}

static int setup_step(struct stepd *d, gp_error_t *err)
{
	struct step *s = &d->s;
	const Gpool__Launch *l = s->launch;
	struct gp_account_rules r = {
	    .run_as = NULL, .allow_root = d->allow_root, .self = geteuid(), .node = s->node};
	if (gp_account_resolve(&r, l->user, &s->account, err) < 0)
		return -1;
	if (gp_stage_workdir(l, d->scratch, &s->account, &s->workdir, &s->workdir_owned, err) < 0)
		return -1;
	if (gp_stage_files(l->spec, s->workdir, &s->account, err) < 0)
		return -1;
	if (l->spec->n_stage && stage_manifest(d, err) < 0)
		return -1;
	/* the job's cpus: every task's placement, the cgroup holds them all */
	size_t ncpus = 0;
	for (size_t i = 0; i < l->n_tasks; i++)
		ncpus += l->tasks[i]->n_cpus;
	uint32_t *cpus = calloc(ncpus ? ncpus : 1, sizeof(*cpus));
	if (!cpus)
		return gp_errprintf(err, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cpus; c++)
			cpus[k++] = l->tasks[i]->cpus[c];
	/* the node's name in it: agents that share one cgroup hierarchy (hosts simulated on one
	 * machine) must not share a job's group */
	char name[160];
	snprintf(name, sizeof(name), "job%llu.%u.%s", (unsigned long long)l->job_id, l->attempt,
		 s->node ? s->node : "");
	/* the node's cards that none of this job's tasks here was given */
	uint32_t given[64];
	size_t ngiven = 0;
	int vendor[64];
	bool fake[64];
	size_t ncards = l->n_cards < 64 ? l->n_cards : 64;
	for (size_t i = 0; i < l->n_tasks; i++)
		for (size_t c = 0; c < l->tasks[i]->n_cards && ngiven < 64; c++)
			given[ngiven++] = l->tasks[i]->cards[c];
	for (size_t i = 0; i < ncards; i++) {
		vendor[i] = l->cards[i]->vendor;
		fake[i] = l->cards[i]->fake;
	}
	char rulebuf[64][32];
	const char *rules[64];
	size_t nrules =
	    gp_cgroup_card_rules(given, ngiven, vendor, fake, ncards, rulebuf, rules, 64);
	struct gp_cgroup_limits lim = {.mem_bytes = l->mem_limit_mb << 20,
				       .cpus = cpus,
				       .ncpus = ncpus,
				       .pids_max = 0,
				       .deny = rules,
				       .ndeny = nrules};
	s->cg = gp_cgroup_create(d->cgroups, name, &lim, err);
	free(cpus);
	if (!s->cg)
		return -1;
	gp_debug("%s: cgroups %s", name, gp_cgroup_version(s->cg));
	return 0;
}

static int setup_link(struct stepd *d, gp_error_t *err)
{
	char rid[64];
	int n = snprintf(rid, sizeof(rid), "%llu.%u", (unsigned long long)d->s.launch->job_id,
			 d->s.launch->attempt);
	int one = 1, zero = 0;
	if (!(d->zctx = zmq_ctx_new()) || !(d->sock = zmq_socket(d->zctx, ZMQ_DEALER)))
		return gp_errprintf(err, "zmq: %s", zmq_strerror(errno));
	zmq_setsockopt(d->sock, ZMQ_ROUTING_ID, rid, (size_t)n);
	/* hold messages here (and retry) rather than queue them for an absent agent */
	zmq_setsockopt(d->sock, ZMQ_IMMEDIATE, &one, sizeof(one));
	zmq_setsockopt(d->sock, ZMQ_LINGER, &zero, sizeof(zero));
	int ivl = 100;
	zmq_setsockopt(d->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
	if (zmq_connect(d->sock, d->agent) < 0)
		return gp_errprintf(err, "cannot connect to the agent at '%s': %s", d->agent,
				    zmq_strerror(errno));
	/* the agent's socket is root's (its folder is 0700): local, unsealed envelopes */
	struct gp_ep_config ec = {.sock = d->sock,
				  .max_message = 256u << 20,
				  .handlers = agent_msgs,
				  .nhandlers = sizeof(agent_msgs) / sizeof(agent_msgs[0]),
				  .peer_name = "the agent",
				  .arg = d};
	if (!(d->ep = gp_endpoint_create(&ec)))
		return gp_errprintf(err, "out of memory");
	return 0;
}

static int setup_signals(struct stepd *d)
{
	d->sigfd = gp_sigfd_open(NULL);
	return d->sigfd < 0 ? -1 : 0;
}

static void on_signals(struct stepd *d)
{
	struct signalfd_siginfo si;
	bool chld = false;
	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			chld = true;
		} else {
			/* someone stops the supervisor: stop the job, then report as usual */
			gp_info("signal %u: killing the tasks", si.ssi_signo);
			tasks_kill(&d->s, SIGTERM, d->kill_grace_ms ? d->kill_grace_ms : 1);
		}
	}
	if (chld)
		tasks_reap(&d->s);
}

/* ---- the loop ---- */

static void run(struct stepd *d)
{
	struct step *s = &d->s;
	size_t cap = 2 + 2 * s->ntasks;
	zmq_pollitem_t *items = calloc(cap, sizeof(*items));
	struct task **owner = calloc(cap, sizeof(*owner));
	int *which = calloc(cap, sizeof(*which));
	if (!items || !owner || !which) {
		gp_err("out of memory");
		exit(1);
	}
	while (1) {
		int64_t now = gp_mono_ms();
		if (s->kill_deadline_ms && now >= s->kill_deadline_ms) {
			gp_info("job %llu.%u: grace period over, SIGKILL",
				(unsigned long long)s->launch->job_id, s->launch->attempt);
			tasks_kill_hard(s);
		}
		tasks_finish(s, now);
		if (d->hello_due || now >= d->next_hello_ms) {
			/* no acknowledgement since the last hello: the agent may have restarted */
			if (!d->hello_due && gp_outbox_count(s->out) &&
			    gp_outbox_acked(s->out) == d->acked_at_last_hello)
				gp_outbox_rewind(s->out);
			d->acked_at_last_hello = gp_outbox_acked(s->out);
			d->hello_due = true;
			send_hello(d);
		}
		flush(d);
		if (tasks_all_done(s) && gp_outbox_count(s->out) == 0)
			break;
		int n = 0;
		items[n++] = (zmq_pollitem_t){.socket = d->sock, .events = ZMQ_POLLIN};
		items[n++] = (zmq_pollitem_t){.fd = d->sigfd, .events = ZMQ_POLLIN};
		bool room = gp_outbox_bytes(s->out) < STEP_OUTBOX_MAX;
		for (size_t i = 0; room && i < s->ntasks; i++) {
			for (int k = 1; k <= 2; k++) {
				if (s->tasks[i].fd[k] < 0)
					continue;
				owner[n] = &s->tasks[i];
				which[n] = k;
				items[n++] =
				    (zmq_pollitem_t){.fd = s->tasks[i].fd[k], .events = ZMQ_POLLIN};
			}
		}
		int64_t wake = d->hello_due ? now + 100 : d->next_hello_ms;
		int64_t td = tasks_next_deadline(s);
		if (td < wake)
			wake = td;
		long timeout = wake > now ? (long)(wake - now) : 0;
		if (zmq_poll(items, n, timeout) < 0 && errno != EINTR) {
			gp_err("poll: %s", zmq_strerror(errno));
			break;
		}
		if (items[1].revents)
			on_signals(d);
		for (int i = 2; i < n; i++)
			if (items[i].revents)
				output_read(s, owner[i], which[i]);
		if (items[0].revents)
			gp_endpoint_dispatch(d->ep, 256);
		/* a SIGCHLD may have raced with the pipes' EOF: reap now so the order holds */
		tasks_reap(s);
	}
	free(items);
	free(owner);
	free(which);
}

static void cleanup(struct stepd *d)
{
	struct step *s = &d->s;
	gp_cgroup_destroy(&s->cg);
	if (s->workdir && s->workdir_owned && gp_rm_rf(s->workdir) < 0)
		gp_warn("cannot remove '%s': %s", s->workdir, strerror(errno));
	if (s->launch_path && unlink(s->launch_path) < 0 && errno != ENOENT)
		gp_warn("cannot remove '%s': %s", s->launch_path, strerror(errno));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gstepd --launch FILE --agent ENDPOINT [options]\n"
		"  --launch FILE       the packed Launch to run (removed at the end)\n"
		"  --agent ENDPOINT    gworkerd's local socket (ipc://STATE_DIR/worker.sock)\n"
		"  --node-name NAME    this node's name (default: the host name)\n"
		"  --scratch-dir DIR   per-job scratch directories are made under DIR\n"
		"  --cgroups MODE      auto, v1, v2 or off (default auto)\n"
		"  --allow-root        run jobs owned by root as root\n"
		"  --state-dir DIR     the node's chunk cache is DIR/cache (staged files)\n"
		"  --scheduler EP      the scheduler's chunk store (staged and collected files)\n"
		"  --sched-uid UID     the uid the scheduler's replies must carry\n"
		"  --kill-grace MS     SIGKILL this long after SIGTERM when gstepd is stopped\n"
		"  --log-level LEVEL   err, warn, info or debug\n"
		"  --log-file FILE     append log lines here\n"
		"  --net-iface NAME    the network interface joining the nodes "
		"(GLOO_SOCKET_IFNAME...)\n"
		"  --net-subnet CIDR   its subnet (OMPI_MCA_btl_tcp_if_include...)\n");
}

int gp_stepd_main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"launch", required_argument, NULL, 'l'},
	    {"agent", required_argument, NULL, 'a'},
	    {"node-name", required_argument, NULL, 'n'},
	    {"scratch-dir", required_argument, NULL, 's'},
	    {"cgroups", required_argument, NULL, 'c'},
	    {"allow-root", no_argument, NULL, 'r'},
	    {"state-dir", required_argument, NULL, 'S'},
	    {"scheduler", required_argument, NULL, 'C'},
	    {"sched-uid", required_argument, NULL, 'U'},
	    {"kill-grace", required_argument, NULL, 'k'},
	    {"log-level", required_argument, NULL, 'v'},
	    {"log-file", required_argument, NULL, 'f'},
	    {"net-iface", required_argument, NULL, 'i'},
	    {"net-subnet", required_argument, NULL, 'N'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct stepd d = {.scratch = "/var/tmp/gpool", .cgroups = "auto", .sigfd = -1};
	const char *level = "info", *logfile = NULL, *launch = NULL, *node = NULL;
	char host[256];
	int c;
	long v;
	optind = 0; /* also when forked from gworkerd, which may have used getopt */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			launch = optarg;
			break;
		case 'a':
			d.agent = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 's':
			d.scratch = optarg;
			break;
		case 'c':
			d.cgroups = optarg;
			break;
		case 'r':
			d.allow_root = true;
			break;
		case 'S':
			d.state_dir = optarg;
			break;
		case 'C':
			d.scheduler = optarg;
			break;
		case 'U':
			d.sched_uid = optarg;
			break;
		case 'k':
			v = strtol(optarg, NULL, 10);
			d.kill_grace_ms = v > 0 ? (uint32_t)v : 0;
			break;
		case 'v':
			level = optarg;
			break;
		case 'f':
			logfile = optarg;
			break;
		case 'i':
			d.s.iface = optarg;
			break;
		case 'N':
			d.s.subnet = optarg;
			break;
		case 'h':
		default:
			return gp_opt_usage_status(usage, c == 'h', 1);
		}
	}
	int lv = gp_log_level_parse(level);
	gp_log_init("gstepd", lv < 0 ? GP_LOG_INFO : lv);
	if (logfile && *logfile && gp_log_file(logfile) < 0)
		fprintf(stderr, "gstepd: cannot open log file '%s': %s\n", logfile,
			strerror(errno));
	if (!launch || !d.agent) {
		usage(stderr);
		return 1;
	}
	if (!node || !*node) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = '\0';
		node = host;
	}
	gp_error_t err = {{0}};
	struct step *s = &d.s;
	s->node = node;
	s->launch_path = launch;
	if (!(s->launch = gp_launch_read(launch, &err))) {
		gp_err("%s", err.text);
		return 1;
	}
	if (!s->launch->spec || !s->launch->spec->n_argv || !s->launch->n_tasks) {
		gp_err("launch file '%s' has no command or no tasks", launch);
		unlink(launch);
		return 1;
	}
	/* orphans of the tasks become ours, so nothing escapes the count */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (!(s->out = gp_outbox_create()) || setup_signals(&d) < 0) {
		gp_err("cannot set up: %s", strerror(errno));
		return 1;
	}
	s->ntasks = s->launch->n_tasks;
	s->tasks = calloc(s->ntasks, sizeof(*s->tasks));
	if (!s->tasks) {
		gp_err("out of memory");
		return 1;
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		s->tasks[i].tp = s->launch->tasks[i];
		s->tasks[i].fd[0] = s->tasks[i].fd[1] = s->tasks[i].fd[2] = -1;
	}
	/* prepare before the link exists, so the forks there have no threads to worry about */
	int ok = setup_xfer(&d, &err);
	if (ok == 0)
		ok = setup_step(&d, &err);
	if (setup_link(&d, &err) < 0) {
		gp_err("%s", err.text);
		cleanup(&d);
		return 1;
	}
	d.hello_due = true;
	send_hello(&d);
	if (ok < 0)
		tasks_fail_all(s, err.text);
	else
		tasks_start(s);
	run(&d);
	gp_pmixsrv_destroy(&s->pmix);
	cleanup(&d);
	for (size_t i = 0; i < s->ntasks; i++)
		gp_env_free(s->tasks[i].env);
	zmq_close(d.sock);
	zmq_ctx_term(d.zctx);
	gp_endpoint_destroy(&d.ep);
	gp_outbox_destroy(&s->out);
	gp_config_destroy(&s->xfer_cfg);
	free(s->workdir);
	free(s->tasks);
	gpool__launch__free_unpacked(s->launch, NULL);
	return 0;
}
