/* commit.c: gschedd's group commit. Every change to a job goes into the one open SQLite
 * transaction (store.c); the submissions it carries wait here for their replies, and the
 * transaction commits as soon as the loop has read everything that was waiting, or once its
 * window (commit_delay) has passed while messages keep coming, or when it holds MAX_TXN_ROWS
 * jobs. What arrives during one commit's fsync shares the next: under load the batches grow
 * by themselves, and a lone job waits for no window. Only then are the held replies and
 * orders released (net_flush with durable). */
#include "scheduler/shell/commit.h"
#include "scheduler/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/store/store.h"
#include "scheduler/features/retention.h"

#define MAX_TXN_ROWS 4096

bool gsched_txn_full(const struct gsched *s)
{
	return s->ntouched >= MAX_TXN_ROWS;
}

bool gsched_commit_due(const struct gsched *s, int64_t now, bool drained)
{
	return s->txn_first_ms &&
	       (drained || now - s->txn_first_ms >= s->commit_delay_ms || gsched_txn_full(s));
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

void commit_save_job(struct gsched *s, struct job *j)
{
	if (!j->durable && !j->in_txn)
		return; /* its insert is still to come: the insert carries the state */
	if (store_job_update(s->store, j) < 0)
		gp_err("job %llu: cannot write its state: %s", (unsigned long long)j->id,
		       strerror(errno));
	touch(s, j);
}

void commit_save_node(struct gsched *s, int node)
{
	struct node *n = nodes_get(s->nodes, node);
	if (!n)
		return;
	if (store_cards_save(s->store, n->name, n->cards, n->n_cards) < 0)
		gp_err("node %s: cannot write its cards' state: %s", n->name, strerror(errno));
	if (store_node_drain(s->store, n->name, n->drain, n->drain_reason) < 0)
		gp_err("node %s: cannot write its drain: %s", n->name, strerror(errno));
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	n->state_in_txn = true;
}

int commit_save_new(struct gsched *s, struct job *j, const uint8_t *spec, size_t len,
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

int commit_insert(struct gsched *s, struct job *j, const uint8_t *spec, size_t len)
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
void gsched_commit(struct gsched *s)
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
			nodes_get(s->nodes, i)->state_in_txn = false;
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
			sched_forget(s, j);
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
		commit_save_job(s, again[i]);
	}
	free(again);
	for (int i = 0; i < nodes_count(s->nodes); i++) {
		if (nodes_get(s->nodes, i)->state_in_txn)
			commit_save_node(s, i);
	}
}
