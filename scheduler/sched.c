/* sched.c: gschedd's event loop. One pass: take in what arrived (bounded), place jobs, tick
 * timers, then commit the open transaction when its window has passed and only then release
 * the replies and orders that depend on it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "agent.h"
#include "gschedd.h"
#include "http.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "names.h"
#include "net.h"
#include "nodes.h"
#include "output.h"
#include "plan.h"
#include "rdv.h"
#include "retention.h"
#include "running.h"
#include "sched.h"
#include "settings.h"
#include "service.h"
#include "store.h"
#include "util.h"

#define RECV_PER_PASS 512
#define MAX_TXN_ROWS 4096
#define MIN_JOB_AGE_MS 300000 /* final jobs stay in memory this long (Slurm: MinJobAge) */

int gsched_reply(struct req *r, Gpool__Msg *m, bool durable)
{
	return net_queue(r->s->net, r->rid, r->rid_len, m, durable);
}

int gsched_reply_error(struct req *r, Gpool__ErrorCode code, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	Gpool__Msg m;
	Gpool__Error e;
	gp_msg_error(&m, &e, r->msg ? r->msg->id : 0, code, text);
	return gsched_reply(r, &m, false);
}

int gsched_send_node(struct gsched *s, int node, Gpool__Msg *m)
{
	struct node *n = nodes_get(s->nodes, node);
	if (!n)
		return -1;
	return net_queue(s->net, n->rid, n->rid_len, m, true);
}

static void touch(struct gsched *s, struct job *j)
{
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	if (j->in_txn)
		return;
	if (s->ntouched == s->captouched) {
		size_t nc = s->captouched ? s->captouched * 2 : 256;
		struct job **nt = realloc(s->touched, nc * sizeof(*nt));
		if (!nt)
			return;
		s->touched = nt;
		s->captouched = nc;
	}
	j->in_txn = true;
	s->touched[s->ntouched++] = j;
}

void gsched_save(struct gsched *s, struct job *j)
{
	if (!j->durable && !j->in_txn)
		return; /* its insert is still to come: the insert carries the state */
	s->dep_epoch++;
	if (store_job_update(s->store, j) < 0)
		gp_err("job %llu: cannot write its state: %s", (unsigned long long)j->id,
		       strerror(errno));
	touch(s, j);
}

void gsched_save_cards(struct gsched *s, int node)
{
	struct node *n = nodes_get(s->nodes, node);
	if (!n)
		return;
	if (store_cards_save(s->store, n->name, n->cards, n->n_cards) < 0)
		gp_err("node %s: cannot write its cards' state: %s", n->name, strerror(errno));
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	n->cards_in_txn = true;
}

int gsched_save_new(struct gsched *s, struct job *j, const uint8_t *spec, size_t len,
		    const char *token, struct req *r)
{
	if (!r) { /* an array's later task: the first task's reply answers for it */
		if (store_job_insert(s->store, j, NULL, 0, NULL) < 0)
			return -1;
		touch(s, j);
		return 0;
	}
	if (s->nsubs == s->capsubs) {
		size_t nc = s->capsubs ? s->capsubs * 2 : 256;
		struct pending_submit *ns = realloc(s->subs, nc * sizeof(*ns));
		if (!ns)
			return -1;
		s->subs = ns;
		s->capsubs = nc;
	}
	if (store_job_insert(s->store, j, spec, len, token) < 0)
		return -1;
	touch(s, j);
	struct pending_submit *p = &s->subs[s->nsubs++];
	p->job = j;
	p->array_count = 0;
	memcpy(p->rid, r->rid, r->rid_len);
	p->rid_len = r->rid_len;
	p->msg_id = r->msg->id;
	return 0;
}

int gsched_insert(struct gsched *s, struct job *j, const uint8_t *spec, size_t len)
{
	if (store_job_insert(s->store, j, spec, len, NULL) < 0)
		return -1;
	touch(s, j);
	return 0;
}

static void submit_reply(struct gsched *s, struct pending_submit *p, bool ok, const char *why)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__SubmitReply rep = GPOOL__SUBMIT_REPLY__INIT;
	Gpool__Error e;
	if (ok) {
		rep.job_id = p->job->id;
		rep.array_task_count = p->array_count;
		m.id = p->msg_id;
		m.m_case = GPOOL__MSG__M_SUBMIT_REPLY;
		m.submit_reply = &rep;
	} else {
		gp_msg_error(&m, &e, p->msg_id, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, why);
	}
	net_queue(s->net, p->rid, p->rid_len, &m, ok);
}

/* Commit the open transaction. On success the held replies and orders may go; on failure the
 * new submissions are refused and forgotten, and the other changes are written again in the
 * next transaction. */
static void commit(struct gsched *s)
{
	gp_error_t err;
	int rc = store_commit(s->store, &err);
	if (rc == 0) {
		for (size_t i = 0; i < s->nsubs; i++)
			submit_reply(s, &s->subs[i], true, NULL);
		for (size_t i = 0; i < s->ntouched; i++) {
			s->touched[i]->in_txn = false;
			if (!s->touched[i]->durable) {
				s->touched[i]->durable = true;
				s->plan_dirty = true;
			}
		}
		s->nsubs = s->ntouched = 0;
		s->txn_first_ms = 0;
		retention_committed(s, true);
		for (int i = 0; i < nodes_count(s->nodes); i++)
			nodes_get(s->nodes, i)->cards_in_txn = false;
		return;
	}
	gp_err("%s: refusing %zu new submissions", err.text, s->nsubs);
	retention_committed(s, false);
	char why[600];
	snprintf(why, sizeof(why), "the scheduler cannot save jobs now (%s)", err.text);
	for (size_t i = 0; i < s->nsubs; i++) {
		struct job *j = s->subs[i].job;
		submit_reply(s, &s->subs[i], false, why);
		/* an array's tasks have the ids after its first */
		uint64_t first = j->id, n = s->subs[i].array_count ? s->subs[i].array_count : 1;
		for (uint64_t id = first; id < first + n; id++) {
			if (!(j = jobs_get(s->jobs, id)))
				continue;
			j->in_txn = false;
			j->durable =
			    true; /* so that forget is allowed; it is gone from memory below */
			for (size_t k = 0; k < s->ntouched; k++)
				if (s->touched[k] == j)
					s->touched[k] = NULL;
			jobs_forget(s->jobs, j);
		}
	}
	s->nsubs = 0;
	/* write the surviving changes again */
	size_t n = s->ntouched;
	struct job **again = s->touched;
	s->touched = NULL;
	s->ntouched = s->captouched = 0;
	s->txn_first_ms = 0;
	for (size_t i = 0; i < n; i++) {
		if (!again[i])
			continue;
		again[i]->in_txn = false;
		gsched_save(s, again[i]);
	}
	free(again);
	for (int i = 0; i < nodes_count(s->nodes); i++) {
		if (nodes_get(s->nodes, i)->cards_in_txn)
			gsched_save_cards(s, i);
	}
}

/* Forget final jobs that have been final for a while (the store keeps them). */
static void sweep(struct gsched *s)
{
	double cutoff = gp_now() - MIN_JOB_AGE_MS / 1000.0;
	size_t pos = 0;
	struct job *j;
	struct job **old = NULL;
	size_t n = 0, cap = 0;
	while ((j = jobs_iter(s->jobs, &pos))) {
		if (!gp_job_state_final(j->state) || j->in_txn || j->end_time > cutoff)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct job **no = realloc(old, cap * sizeof(*no));
			if (!no)
				break;
			old = no;
		}
		old[n++] = j;
	}
	for (size_t i = 0; i < n; i++)
		jobs_forget(s->jobs, old[i]);
	free(old);
}

int gsched_run(struct gsched *s)
{
	void *sock = net_socket(s->net);
	int64_t next_tick = 0, next_sweep = gp_mono_ms() + 10000;
	plan_run(s);
	while (!s->stop) {
		int64_t now = gp_mono_ms();
		long timeout = (long)(next_tick > now ? next_tick - now : 0);
		if (s->txn_first_ms) {
			int64_t left = s->txn_first_ms + s->commit_delay_ms - now;
			if (left < timeout)
				timeout = left > 0 ? (long)left : 0;
		}
		if (s->plan_dirty)
			timeout = 0;
		zmq_pollitem_t pi[2] = { { sock, 0, ZMQ_POLLIN, 0 },
					 { s->http ? http_socket(s->http) : NULL, 0, ZMQ_POLLIN, 0 } };
		int rc = zmq_poll(pi, s->http ? 2 : 1, timeout);
		if (rc < 0 && errno != EINTR) {
			gp_err("poll: %s", zmq_strerror(errno));
			return -1;
		}
		if (s->reload) {
			s->reload = 0;
			settings_reload(s);
			s->plan_dirty = true; /* a new power cap or limit may let jobs start */
		}
		for (int i = 0; i < RECV_PER_PASS; i++) {
			struct net_msg m;
			int got = net_recv(s->net, &m);
			if (got == 0)
				break;
			if (got < 0)
				continue;
			handle_batch(s, m.rid, m.rid_len, m.addr, &m.from, m.batch);
			gpool__batch__free_unpacked(m.batch, NULL);
			if (s->ntouched >= MAX_TXN_ROWS)
				break;
		}
		for (int i = 0; s->http && i < RECV_PER_PASS; i++) {
			struct http_msg hm;
			if (http_recv(s->http, &hm) <= 0)
				break;
			handle_batch(s, hm.rid, sizeof(hm.rid), "http", &hm.from, hm.batch);
			gpool__batch__free_unpacked(hm.batch, NULL);
		}
		if (s->plan_dirty)
			plan_run(s);
		now = gp_mono_ms();
		if (now >= next_tick) {
			agents_tick(s);
			jobs_tick(s);
			output_tick(s);
			rdv_tick(s);
			metrics_tick(s);
			service_tick(s);
			next_tick = now + 100;
		}
		if (now >= next_sweep) {
			sweep(s);
			next_sweep = now + 10000;
		}
		retention_step(s, now);
		bool due = s->txn_first_ms && (now - s->txn_first_ms >= s->commit_delay_ms ||
					       s->ntouched >= MAX_TXN_ROWS);
		if (due)
			commit(s);
		net_flush(s->net, !s->txn_first_ms);
	}
	if (s->txn_first_ms)
		commit(s);
	net_flush(s->net, !s->txn_first_ms);
	return 0;
}
