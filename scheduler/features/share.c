/* share.c: the ShareQuery handler (gpool share, gpool limits): every known user's usage,
 * share, fair-share factor and limits, and what their jobs hold and wait for now. */
#include "scheduler/features/share.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/orders.h"
#include "scheduler/core/priority.h"
#include "scheduler/core/running.h"

void client_share_query(struct req *r)
{
	struct gsched *s = r->s;
	if (!s->fairshare) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "no fair share here");
		return;
	}
	double now = gp_now();
	/* the same view a placement pass has: running jobs' use so far counted */
	struct prio_pass *pp = priority_pass_create(s, now);
	size_t qlen = jobs_queue_len(s->jobs);
	for (size_t i = 0; i < qlen; i++) {
		const struct job *j = jobs_queue_at(s->jobs, i);
		if (j->user)
			fairshare_touch(s->fairshare, j->user);
	}
	size_t n = 0;
	const struct fs_user_view *v = fairshare_users(s->fairshare, now, &n);
	Gpool__ShareUser *su = calloc(n ? n : 1, sizeof(*su));
	Gpool__ShareUser **sup = calloc(n ? n : 1, sizeof(*sup));
	if (!v || !su || !sup) {
		free(su);
		free(sup);
		priority_pass_destroy(&pp);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		Gpool__ShareUser *u = &su[i];
		gpool__share_user__init(u);
		u->user = (char *)v[i].name;
		u->cpu_sec = v[i].cpu_sec;
		u->card_sec = v[i].card_sec;
		u->usage = v[i].usage;
		u->usage_norm = v[i].usage_norm;
		u->share = v[i].share;
		u->share_norm = v[i].share_norm;
		u->factor = v[i].factor;
		u->max_jobs = v[i].limits.jobs;
		u->max_cpus = v[i].limits.cpus;
		u->max_cards = v[i].limits.cards;
		u->admin_share = v[i].admin_share;
		u->admin_limits = v[i].admin_limits;
		sup[i] = u;
	}
	size_t pos = 0;
	struct job *j;
	while ((j = running_iter(s, &pos))) {
		if (j->step_of || !j->user)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(su[i].user, j->user) != 0)
				continue;
			uint32_t cpus, cards;
			priority_job_holds(s, j, &cpus, &cards);
			su[i].running_jobs++;
			su[i].running_cpus += cpus;
			su[i].running_cards += cards;
		}
	}
	for (size_t q = 0; q < qlen; q++) {
		const struct job *pj = jobs_queue_at(s->jobs, q);
		for (size_t i = 0; pj->user && i < n; i++)
			if (!strcmp(su[i].user, pj->user))
				su[i].pending_jobs++;
	}
	Gpool__ShareQueryReply rep = GPOOL__SHARE_QUERY_REPLY__INIT;
	rep.users = sup;
	rep.n_users = n;
	rep.half_life_sec = fairshare_half_life(s->fairshare);
	struct fs_limits d = fairshare_default_limits(s->fairshare);
	rep.max_jobs = d.jobs;
	rep.max_cpus = d.cpus;
	rep.max_cards = d.cards;
	struct fs_admin a = fairshare_admin_get(s->fairshare, "*");
	rep.admin_any_limits = a.has_jobs || a.has_cpus || a.has_cards;
	rep.card_weight = fairshare_card_weight(s->fairshare);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_SHARE_QUERY_REPLY;
	m.share_query_reply = &rep;
	req_reply(r, &m, false);
	free(su);
	free(sup);
	priority_pass_destroy(&pp);
}
