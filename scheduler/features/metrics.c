/* metrics.c: gschedd's /metrics (see metrics.h). */
#include "scheduler/features/metrics.h"
#include "scheduler/core/events.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/card_memory.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "common/log.h"
#include "common/names.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"
#include "common/util.h"
#include "scheduler/features/retention.h"

/* scheduling latency buckets, seconds */
static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
				1,     2.5,  5,	    10,	  30,  60,   300};
#define NB	      (sizeof(bounds) / sizeof(bounds[0]))
#define MAX_USERS     4096
#define HIST_N	      360
#define HIST_EVERY_MS 10000
/* a rendering walks every job and node: it is reused for this long, whoever asks (the REST
 * API's /metrics and any user's OpsMetricsQuery), so a flood of requests costs no more */
#define RENDER_REUSE_MS 1000

struct user_energy {
	uint32_t uid;
	char name[33];
	double joules;
	uint64_t jobs;
};

struct metrics {
	uint64_t lat_count[NB + 1];
	double lat_sum;
	uint64_t lat_n;
	struct user_energy *users;
	size_t nusers, capusers;
	Gpool__OpsSample hist[HIST_N]; /* a ring */
	size_t hist_next, hist_n;
	int64_t hist_due_ms;
	char *last;	 /* the last rendering, reused for RENDER_REUSE_MS */
	int64_t last_ms; /* when it was made */
	uint64_t renders;
};

struct metrics *metrics_create(void)
{
	return calloc(1, sizeof(struct metrics));
}

void metrics_destroy(struct metrics **m)
{
	if (!m || !*m)
		return;
	free((*m)->users);
	free((*m)->last);
	free(*m);
	*m = NULL;
}

void metrics_job_started(struct gsched *s, const struct job *j)
{
	struct metrics *m = s->metrics;
	if (!m || j->attempt != 1 || j->submit_time <= 0)
		return;
	double d = j->start_time - j->submit_time;
	if (d < 0)
		d = 0;
	size_t b = 0;
	while (b < NB && d > bounds[b])
		b++;
	m->lat_count[b]++;
	m->lat_sum += d;
	m->lat_n++;
}

void metrics_job_ended(struct gsched *s, const struct job *j)
{
	struct metrics *m = s->metrics;
	if (!m)
		return;
	struct user_energy *u = NULL;
	for (size_t i = 0; i < m->nusers; i++)
		if (m->users[i].uid == j->uid)
			u = &m->users[i];
	if (!u) {
		if (m->nusers == MAX_USERS)
			return;
		if (m->nusers == m->capusers) {
			size_t nc = m->capusers ? m->capusers * 2 : 16;
			struct user_energy *nu = realloc(m->users, nc * sizeof(*nu));
			if (!nu)
				return;
			m->users = nu;
			m->capusers = nc;
		}
		u = &m->users[m->nusers++];
		memset(u, 0, sizeof(*u));
		u->uid = j->uid;
		snprintf(u->name, sizeof(u->name), "%s", j->user ? j->user : "");
	}
	u->joules += j->energy_j;
	u->jobs++;
}

/* ---- rendering ---- */

struct out {
	gp_buf_t b;
	int failed;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (gp_buf_append(&o->b, line, (size_t)n) < 0)
		o->failed = 1;
}

static void head(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: \ " and newline escaped. */
static const char *esc(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; s && *s && o + 3 < len; s++) {
		if (*s == '\\' || *s == '"') {
			buf[o++] = '\\';
			buf[o++] = *s;
		} else if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *s;
		}
	}
	buf[o] = '\0';
	return buf;
}

static double conf_double(const gp_config_t *c, const char *key)
{
	return strtod(gp_config_str(c, key), NULL);
}

static void render_nodes(struct gsched *s, struct out *o)
{
	static const Gpool__NodeState nstates[] = {
	    GPOOL__NODE_STATE__NODE_UP, GPOOL__NODE_STATE__NODE_DOWN,
	    GPOOL__NODE_STATE__NODE_DRAINED, GPOOL__NODE_STATE__NODE_UNREACHABLE};
	int n = nodes_count(s->nodes);
	head(o, "gpool_nodes", "gauge", "Nodes by state.");
	for (size_t k = 0; k < sizeof(nstates) / sizeof(nstates[0]); k++) {
		int c = 0;
		for (int i = 0; i < n; i++)
			c += nodes_get(s->nodes, i)->state == nstates[k];
		put(o, "gpool_nodes{state=\"%s\"} %d\n", gp_node_state_name(nstates[k]), c);
	}
	head(o, "gpool_node_cpus", "gauge", "CPUs a node offers.");
	for (int i = 0; i < n; i++)
		put(o, "gpool_node_cpus{node=\"%s\"} %u\n", nodes_get(s->nodes, i)->name,
		    nodes_get(s->nodes, i)->cpus);
	head(o, "gpool_node_cpus_used", "gauge", "CPUs held by running tasks.");
	for (int i = 0; i < n; i++)
		put(o, "gpool_node_cpus_used{node=\"%s\"} %u\n", nodes_get(s->nodes, i)->name,
		    nodes_get(s->nodes, i)->cpus_used);

	/* cards by state and grade */
	static const char *grades[] = {"", "good", "warn", "fail"};
	static const Gpool__CardState cstates[] = {GPOOL__CARD_STATE__CARD_UP,
						   GPOOL__CARD_STATE__CARD_DRAINED,
						   GPOOL__CARD_STATE__CARD_FAILED};
	head(o, "gpool_cards", "gauge",
	     "Cards by state and screening grade (grade=\"\": not screened).");
	for (size_t a = 0; a < sizeof(cstates) / sizeof(cstates[0]); a++)
		for (size_t g = 0; g < sizeof(grades) / sizeof(grades[0]); g++) {
			int c = 0;
			for (int i = 0; i < n; i++) {
				struct node *nd = nodes_get(s->nodes, i);
				for (size_t k = 0; k < nd->n_cards; k++)
					c += nd->cards[k]->state == cstates[a] &&
					     !strcmp(nd->cards[k]->grade ? nd->cards[k]->grade : "",
						     grades[g]);
			}
			put(o, "gpool_cards{state=\"%s\",grade=\"%s\"} %d\n",
			    gp_card_state_name(cstates[a]), grades[g], c);
		}
	struct {
		const char *name, *help;
		int what;
	} per_card[] = {
	    {"gpool_card_utilization_ratio", "A card's utilization (0-1), from the last heartbeat.",
	     0},
	    {"gpool_card_temperature_celsius", "A card's temperature, from the last heartbeat.", 1},
	    {"gpool_card_power_watts", "A card's power draw, from the last heartbeat.", 2},
	    {"gpool_card_power_limit_watts", "A card's power limit.", 3},
	    {"gpool_card_vram_bytes", "A card's memory.", 4},
	    {"gpool_card_busy", "1 while a task holds the card.", 5},
	    {"gpool_card_shared_slices",
	     "Slices of --gpu-share jobs on the card (0: whole; docs/gpu-share.md).", 6},
	    {"gpool_card_shared_budget_bytes", "The VRAM budgets of the card's slices, summed.", 7},
	    {"gpool_card_shared_uid", "The user whose slices the card holds (-1: not shared).", 8},
	};
	for (size_t w = 0; w < sizeof(per_card) / sizeof(per_card[0]); w++) {
		head(o, per_card[w].name, "gauge", per_card[w].help);
		for (int i = 0; i < n; i++) {
			struct node *nd = nodes_get(s->nodes, i);
			for (size_t k = 0; k < nd->n_cards && k < 64; k++) {
				const Gpool__Card *c = nd->cards[k];
				char m[300];
				double v = 0;
				switch (per_card[w].what) {
				case 0:
					v = c->utilization_pct / 100.0;
					break;
				case 1:
					v = c->temperature_c;
					break;
				case 2:
					v = nd->watts[k];
					break;
				case 3:
					v = c->power_limit_w;
					break;
				case 4:
					v = (double)c->vram_total;
					break;
				case 5:
					v = (nd->card_busy >> k) & 1;
					break;
				case 6:
					v = nd->share.tasks[k];
					break;
				case 7:
					v = (double)nd->share.used[k];
					break;
				default:
					v = nd->share.tasks[k] ? (double)nd->share.uid[k] : -1;
					break;
				}
				put(o, "%s{node=\"%s\",card=\"%u\",model=\"%s\"} %.17g\n",
				    per_card[w].name, nd->name, c->index,
				    esc(c->name, m, sizeof(m)), v);
			}
		}
	}
}

static void render_jobs(struct gsched *s, struct out *o)
{
	static const Gpool__JobState states[] = {
	    GPOOL__JOB_STATE__PENDING,	  GPOOL__JOB_STATE__RUNNING,
	    GPOOL__JOB_STATE__COMPLETING, GPOOL__JOB_STATE__COMPLETED,
	    GPOOL__JOB_STATE__FAILED,	  GPOOL__JOB_STATE__CANCELLED,
	    GPOOL__JOB_STATE__TIMEOUT,	  GPOOL__JOB_STATE__OUT_OF_MEMORY,
	    GPOOL__JOB_STATE__NODE_FAIL,
	};
	uint64_t count[sizeof(states) / sizeof(states[0])] = {0};
	size_t pos = 0;
	struct job *j;
	while ((j = jobs_iter(s->jobs, &pos)))
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
			count[k] += j->state == states[k];
	head(o, "gpool_jobs", "gauge",
	     "Jobs in memory by state (finished jobs stay in memory for 5 minutes).");
	for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
		put(o, "gpool_jobs{state=\"%s\"} %llu\n", gp_job_state_name(states[k]),
		    (unsigned long long)count[k]);
	head(o, "gpool_queue_length", "gauge", "Jobs waiting in the pending queue.");
	put(o, "gpool_queue_length %zu\n", jobs_queue_len(s->jobs));
	head(o, "gpool_jobs_submitted_total", "counter", "Jobs accepted since gschedd started.");
	put(o, "gpool_jobs_submitted_total %llu\n", (unsigned long long)s->submitted);
	head(o, "gpool_jobs_ended_total", "counter",
	     "Jobs that reached a final state since gschedd started.");
	put(o, "gpool_jobs_ended_total %llu\n", (unsigned long long)s->completed);
	head(o, "gpool_jobs_purged_total", "counter",
	     "Finished jobs purged by job_retention since gschedd started.");
	put(o, "gpool_jobs_purged_total %llu\n",
	    (unsigned long long)retention_purged(s->retention));

	struct metrics *m = s->metrics;
	head(o, "gpool_scheduling_latency_seconds", "histogram",
	     "From submission to the start of a job's first attempt.");
	uint64_t cum = 0;
	for (size_t b = 0; b < NB; b++) {
		cum += m->lat_count[b];
		put(o, "gpool_scheduling_latency_seconds_bucket{le=\"%g\"} %llu\n", bounds[b],
		    (unsigned long long)cum);
	}
	cum += m->lat_count[NB];
	put(o, "gpool_scheduling_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
	    (unsigned long long)cum);
	put(o, "gpool_scheduling_latency_seconds_sum %.9g\n", m->lat_sum);
	put(o, "gpool_scheduling_latency_seconds_count %llu\n", (unsigned long long)m->lat_n);

	/* energy and cost: price_kwh x (1 + cooling_share) per kWh */
	double per_j =
	    conf_double(s->cfg, "price_kwh") * (1 + conf_double(s->cfg, "cooling_share")) / 3.6e6;
	head(o, "gpool_user_energy_joules_total", "counter",
	     "Energy of the cards of a user's finished jobs, since gschedd started.");
	for (size_t i = 0; i < m->nusers; i++)
		put(o, "gpool_user_energy_joules_total{user=\"%s\"} %.17g\n", m->users[i].name,
		    m->users[i].joules);
	head(o, "gpool_user_energy_cost_total", "counter",
	     "Electricity and cooling cost of that energy (price_kwh, cooling_share).");
	for (size_t i = 0; i < m->nusers; i++)
		put(o, "gpool_user_energy_cost_total{user=\"%s\"} %.17g\n", m->users[i].name,
		    m->users[i].joules * per_j);
	head(o, "gpool_user_jobs_ended_total", "counter",
	     "A user's jobs that reached a final state.");
	for (size_t i = 0; i < m->nusers; i++)
		put(o, "gpool_user_jobs_ended_total{user=\"%s\"} %llu\n", m->users[i].name,
		    (unsigned long long)m->users[i].jobs);
	const char *jn[2] = {"gpool_job_energy_joules", "gpool_job_energy_cost"};
	const char *jh[2] = {
	    "Energy of a job's cards so far (jobs in memory that hold or held cards).",
	    "Electricity and cooling cost of a job's energy."};
	for (int w = 0; w < 2; w++) {
		head(o, jn[w], "gauge", jh[w]);
		pos = 0;
		while ((j = jobs_iter(s->jobs, &pos))) {
			if (j->energy_j <= 0)
				continue;
			put(o, "%s{job=\"%llu\",user=\"%s\"} %.17g\n", jn[w],
			    (unsigned long long)j->id, j->user ? j->user : "",
			    w ? j->energy_j * per_j : j->energy_j);
		}
	}
}

/* Each known user's fair share (fairshare.h), as gpool share shows it. */
static void render_fairshare(struct gsched *s, struct out *o)
{
	if (!s->fairshare)
		return;
	size_t n = 0;
	const struct fs_user_view *v = fairshare_users(s->fairshare, gp_now(), &n);
	if (!v)
		return;
	char u[256];
	head(o, "gpool_user_fairshare_factor", "gauge",
	     "A user's fair-share factor 2^(-usage/share) as of the last placement pass.");
	for (size_t i = 0; i < n; i++)
		put(o, "gpool_user_fairshare_factor{user=\"%s\"} %.6f\n",
		    esc(v[i].name, u, sizeof(u)), v[i].factor);
	head(o, "gpool_user_fairshare_usage_seconds", "gauge",
	     "A user's decayed usage: CPU-seconds plus weighted card-seconds (running jobs as of "
	     "the last placement pass).");
	for (size_t i = 0; i < n; i++)
		put(o, "gpool_user_fairshare_usage_seconds{user=\"%s\"} %.3f\n",
		    esc(v[i].name, u, sizeof(u)), v[i].usage);
	head(o, "gpool_user_fairshare_share", "gauge", "A user's share (fairshare_shares).");
	for (size_t i = 0; i < n; i++)
		put(o, "gpool_user_fairshare_share{user=\"%s\"} %g\n", esc(v[i].name, u, sizeof(u)),
		    v[i].share);
}

/* Each slice of a shared card: the card memory its processes hold (card_memory.h). */
static void render_card_memory(struct gsched *s, struct out *o)
{
	size_t n;
	const struct card_mem_entry *e = card_mem_entries(s, &n);
	static const struct {
		const char *name, *help;
	} m[] = {
	    {"gpool_job_card_memory_bytes",
	     "Card memory a --gpu-share job's processes hold on a card, as its agent last sampled "
	     "(docs/gpu-share.md)."},
	    {"gpool_job_card_memory_peak_bytes", "The most of it seen this attempt."},
	    {"gpool_job_card_memory_budget_bytes", "The job's --gpu-mem budget on that card."},
	};
	char nb[256];
	for (size_t w = 0; w < sizeof(m) / sizeof(m[0]); w++) {
		head(o, m[w].name, "gauge", m[w].help);
		for (size_t i = 0; i < n; i++) {
			const char *node = nodes_name(s->nodes, e[i].node);
			uint64_t v = w == 0 ? e[i].bytes : w == 1 ? e[i].peak : e[i].budget;
			put(o, "%s{job=\"%llu\",node=\"%s\",card=\"%u\"} %llu\n", m[w].name,
			    (unsigned long long)e[i].job, esc(node ? node : "", nb, sizeof(nb)),
			    e[i].card, (unsigned long long)v);
		}
	}
}

static void render_net(struct gsched *s, struct out *o)
{
	struct net_stats ns;
	net_stats(s->net, &ns);
	head(o, "gpool_messages_received_total", "counter",
	     "Envelopes received on the scheduler's socket.");
	put(o, "gpool_messages_received_total %llu\n", (unsigned long long)ns.received);
	head(o, "gpool_messages_refused_total", "counter",
	     "Envelopes refused (credential, version, size, malformed).");
	put(o, "gpool_messages_refused_total %llu\n", (unsigned long long)ns.refused);
	head(o, "gpool_messages_rate_dropped_total", "counter",
	     "Envelopes dropped over a source's rate.");
	put(o, "gpool_messages_rate_dropped_total %llu\n", (unsigned long long)ns.rate_dropped);
	head(o, "gpool_messages_sent_total", "counter", "Envelopes sent.");
	put(o, "gpool_messages_sent_total %llu\n", (unsigned long long)ns.sent);
	head(o, "gpool_munge_seconds_total", "counter",
	     "Time spent encoding and decoding credentials.");
	put(o, "gpool_munge_seconds_total %.9g\n", ns.munge_sec);
	uint64_t commits, rows;
	store_stats(s->store, &commits, &rows);
	head(o, "gpool_store_commits_total", "counter", "SQLite transactions committed.");
	put(o, "gpool_store_commits_total %llu\n", (unsigned long long)commits);
	head(o, "gpool_store_rows_total", "counter", "Rows written in them.");
	put(o, "gpool_store_rows_total %llu\n", (unsigned long long)rows);
	if (s->metrics) {
		head(o, "gpool_metrics_renders_total", "counter",
		     "Times this text was made (requests in between get the last one).");
		put(o, "gpool_metrics_renders_total %llu\n",
		    (unsigned long long)s->metrics->renders);
	}
}

char *metrics_render(struct gsched *s)
{
	struct out o = {{0}, 0};
	if (s->metrics)
		s->metrics->renders++;
	render_nodes(s, &o);
	render_jobs(s, &o);
	render_fairshare(s, &o);
	render_card_memory(s, &o);
	render_net(s, &o);
	if (o.failed || gp_buf_append(&o.b, "", 1) < 0) {
		gp_buf_release(&o.b);
		return NULL;
	}
	return (char *)o.b.data;
}

void metrics_query(struct req *r)
{
	struct metrics *mt = r->s->metrics;
	int64_t now = gp_mono_ms();
	if (mt && (!mt->last || now - mt->last_ms >= RENDER_REUSE_MS)) {
		char *t = metrics_render(r->s);
		if (t) {
			free(mt->last);
			mt->last = t;
			mt->last_ms = now;
		}
	}
	char *text = mt && mt->last ? strdup(mt->last) : NULL;
	if (!text) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__OpsMetricsReply rep = GPOOL__OPS_METRICS_REPLY__INIT;
	rep.text = text;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_OPS_METRICS_REPLY;
	m.ops_metrics_reply = &rep;
	req_reply(r, &m, false);
	free(text);
}

void metrics_tick(struct gsched *s)
{
	struct metrics *m = s->metrics;
	int64_t now = gp_mono_ms();
	if (!m || now < m->hist_due_ms)
		return;
	m->hist_due_ms = now + HIST_EVERY_MS;
	Gpool__OpsSample *x = &m->hist[m->hist_next];
	gpool__ops_sample__init(x);
	x->time = gp_now();
	double util = 0;
	int nutil = 0;
	for (int i = 0; i < nodes_count(s->nodes); i++) {
		struct node *nd = nodes_get(s->nodes, i);
		if (nd->state == GPOOL__NODE_STATE__NODE_DOWN)
			continue;
		for (size_t k = 0; k < nd->n_cards && k < 64; k++) {
			x->cards++;
			x->cards_busy += (nd->card_busy >> k) & 1;
			x->watts += nd->watts[k];
			util += nd->cards[k]->utilization_pct / 100.0;
			nutil++;
		}
	}
	x->utilization = nutil ? util / nutil : 0;
	size_t pos = 0;
	struct job *j;
	while ((j = jobs_iter(s->jobs, &pos)))
		x->jobs_running += j->state == GPOOL__JOB_STATE__RUNNING;
	x->jobs_pending = (uint32_t)jobs_queue_len(s->jobs);
	m->hist_next = (m->hist_next + 1) % HIST_N;
	if (m->hist_n < HIST_N)
		m->hist_n++;
}

void metrics_history(struct req *r)
{
	struct metrics *m = r->s->metrics;
	if (!m) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "no metrics kept");
		return;
	}
	Gpool__OpsSample *pp[HIST_N];
	size_t first = (m->hist_next + HIST_N - m->hist_n) % HIST_N;
	for (size_t i = 0; i < m->hist_n; i++)
		pp[i] = &m->hist[(first + i) % HIST_N];
	Gpool__Msg msg = GPOOL__MSG__INIT;
	Gpool__OpsHistoryReply rep = GPOOL__OPS_HISTORY_REPLY__INIT;
	rep.samples = pp;
	rep.n_samples = m->hist_n;
	msg.id = r->msg->id;
	msg.m_case = GPOOL__MSG__M_OPS_HISTORY_REPLY;
	msg.ops_history_reply = &rep;
	req_reply(r, &msg, false);
}

static int metrics_on_job(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	if (ev->kind == SEV_JOB_STARTED)
		metrics_job_started(s, ev->job);
	else if (ev->kind == SEV_JOB_ENDED)
		metrics_job_ended(s, ev->job);
	return 0;
}

int metrics_subscribe(struct gsched *s)
{
	return sched_events_subscribe(s->events, 1u << SEV_JOB_STARTED | 1u << SEV_JOB_ENDED,
				      metrics_on_job, NULL);
}
