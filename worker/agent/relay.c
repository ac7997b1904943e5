/* relay.c: the agent's half of gcheck --cluster. A screening job's tasks run as their
 * submitter, and gschedd takes grades only from root or the agents' account, so when a task
 * of a screening job ends the agent reads the result its gcheck wrote (screen.h) and reports
 * each card that task was given as a CardReport carrying the job, with the agent's own
 * credential. It reports for this node and for the task's cards only: what the file says of
 * another node or of a card the task was not given is ignored. A missing or bad file is
 * logged and nothing is reported.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/agent/agent.h"
#include "common/log.h"
#include "cards/screen.h"
#include "worker/node/staging.h"

static void report(struct agent *a, uint64_t job, int card, const struct gp_screen_card *c)
{
	Gpool__CardReport r = GPOOL__CARD_REPORT__INIT;
	r.node = a->node;
	r.card = (uint32_t)card;
	r.grade = (char *)c->grade;
	r.throughput = c->bw_mean_gbps;
	r.reason = (char *)c->reason;
	r.job_id = job;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CARD_REPORT;
	m.card_report = &r;
	sched_link_queue(a, &m);
	gp_info("job %" PRIu64 ": card %d graded %s (%.1f GB/s%s%s): reported", job, card, c->grade,
		c->bw_mean_gbps, *c->reason ? ", " : "", c->reason);
}

void screen_relay(struct agent *a, uint64_t job, uint32_t attempt, uint32_t rank, uint64_t cards,
		  uid_t owner)
{
	char dir[4096], path[4300];
	gp_error_t err;
	if (gp_stage_scratch_path(gp_config_str(a->cfg, "scratch_dir"), job, attempt, dir,
				  sizeof(dir)) < 0 ||
	    gp_screen_path(dir, attempt, rank, path, sizeof(path)) < 0) {
		gp_warn("job %" PRIu64 ".%u rank %u: screening result path too long: not reported",
			job, attempt, rank);
		return;
	}
	struct gp_screen_result *res = malloc(sizeof(*res));
	if (!res) {
		gp_err("job %" PRIu64 ".%u rank %u: out of memory: screening result not reported",
		       job, attempt, rank);
		return;
	}
	if (gp_screen_read(path, owner, res, &err) < 0) {
		gp_warn("job %" PRIu64 ".%u rank %u: screening result not reported: %s", job,
			attempt, rank, errno == ENOENT ? "the task wrote none" : err.text);
		free(res);
		return;
	}
	for (int i = 0; i < 64; i++) {
		if (!(cards >> i & 1))
			continue;
		const struct gp_screen_card *c = gp_screen_find(res, (uint32_t)i);
		if (c)
			report(a, job, i, c);
		else
			gp_warn("job %" PRIu64
				".%u rank %u: no result for its card %d: not reported",
				job, attempt, rank, i);
	}
	for (size_t k = 0; k < res->n; k++)
		if (res->cards[k].card >= 64 || !(cards >> res->cards[k].card & 1))
			gp_warn("job %" PRIu64
				".%u rank %u: result for card %u, which the task was "
				"not given: ignored",
				job, attempt, rank, res->cards[k].card);
	free(res);
}
