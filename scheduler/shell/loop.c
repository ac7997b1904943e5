/* loop.c: gschedd's event loop. One pass: take in what arrived (bounded), place jobs, tick
 * timers, then commit the open transaction when its window has passed (commit.c) and only
 * then release the replies and orders that depend on it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "scheduler/core/agent.h"
#include "scheduler/shell/commit.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/core.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/http/http.h"
#include "scheduler/core/lifecycle.h"
#include "common/log.h"
#include "scheduler/features/metrics.h"
#include "common/names.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/store/repl.h"
#include "scheduler/core/plan.h"
#include "scheduler/core/priority.h"
#include "scheduler/features/rdv.h"
#include "scheduler/features/retention.h"
#include "scheduler/core/running.h"
#include "scheduler/shell/loop.h"
#include "scheduler/shell/settings.h"
#include "scheduler/features/service.h"
#include "scheduler/store/store.h"
#include "common/util.h"

#define RECV_PER_PASS  512
#define MIN_JOB_AGE_MS 300000 /* final jobs stay in memory this long (Slurm: MinJobAge) */

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
		sched_forget(s, old[i]);
	free(old);
}

int gsched_run(struct gsched *s)
{
	void *sock = net_socket(s->net);
	int64_t next_tick = 0, next_sweep = gp_mono_ms() + 10000;
	plan_run(s);
	effects_carry_out(s);
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
		zmq_pollitem_t pi[2] = {{sock, 0, ZMQ_POLLIN, 0},
					{s->http ? http_socket(s->http) : NULL, 0, ZMQ_POLLIN, 0}};
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
		/* drained: everything waiting was read (the group commit need not wait longer) */
		bool drained = false;
		for (int i = 0; i < RECV_PER_PASS; i++)
			if ((drained = gsched_recv(s, 1) == 0) || gsched_txn_full(s))
				break;
		for (int i = 0; s->http && i < RECV_PER_PASS; i++) {
			struct http_msg hm;
			if (http_recv(s->http, &hm) <= 0)
				break;
			drained = false;
			handle_batch(s, hm.rid, sizeof(hm.rid), "http", &hm.from, hm.batch);
			gpool__batch__free_unpacked(hm.batch, NULL);
		}
		if (s->plan_dirty)
			plan_run(s);
		effects_carry_out(s);
		now = gp_mono_ms();
		if (now >= next_tick) {
			agents_tick(s);
			jobs_tick(s);
			priority_tick(s);
			if (s->plan_wake && gp_now() >= s->plan_wake) {
				s->plan_wake = 0; /* a --begin time came */
				s->plan_dirty = true;
			}
			output_tick(s);
			rdv_tick(s);
			metrics_tick(s);
			service_tick(s);
			net_tick(s->net, now);
			next_tick = now + 100;
			effects_carry_out(s);
		}
		if (now >= next_sweep) {
			sweep(s);
			next_sweep = now + 10000;
		}
		retention_step(s, now);
		effects_carry_out(s);
		if (gsched_commit_due(s, now, drained))
			gsched_commit(s);
		net_flush(s->net, !s->txn_first_ms);
		if (s->repl && repl_deposed(s->repl)) {
			/* another scheduler leads: what this one holds in memory may differ from
			 * what the majority committed */
			gp_warn("no longer the leader: starting again as a standby");
			s->restart = true;
			return 0;
		}
	}
	if (s->txn_first_ms)
		gsched_commit(s);
	net_flush(s->net, !s->txn_first_ms);
	return 0;
}
