/* share_set.c: the ShareSet handler (gpool share set, gpool limits set; docs/fairshare.md): an
 * administrator changes a user's share or limits while the pool runs. Who is an administrator
 * comes from the request's MUNGE credential alone: root, sched_uid, or a user share_admins
 * names. The change is written into the open transaction (the one that records the request's
 * id, reqids.h, and that the standby replicates) and the reply waits for its commit; the next
 * placement pass orders the queue with it. */
#include "scheduler/features/share_set.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/core/fairshare.h"
#include "scheduler/core/orders.h"
#include "scheduler/store/store.h"

/* Does share_admins (names or uids separated by commas or spaces) name uid? */
static bool listed_admin(const char *list, uid_t uid)
{
	char *copy = strdup(list ? list : "");
	bool found = false;
	char *save = NULL;
	for (char *tok = copy ? strtok_r(copy, ", \t", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, ", \t", &save)) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(tok, &end, 10);
		if (!errno && !*end && *tok >= '0' && *tok <= '9') {
			found = v == (unsigned long)uid;
			continue;
		}
		struct passwd pw, *res = NULL;
		char buf[1024];
		if (getpwnam_r(tok, &pw, buf, sizeof(buf), &res) == 0 && res)
			found = res->pw_uid == uid;
	}
	free(copy);
	return found;
}

bool share_set_is_admin(const struct gsched *s, uid_t uid)
{
	return uid == 0 || uid == s->sched_uid ||
	       listed_admin(gp_config_str(s->cfg, "share_admins"), uid);
}

/* What the request changes, as the log says it. */
static void describe(const Gpool__ShareSet *c, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
#define PUT(...)                                                                                   \
	do {                                                                                       \
		if (o < len)                                                                       \
			o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__);                      \
	} while (0)
	if (c->clear_share)
		PUT(" share cleared");
	if (c->clear_limits)
		PUT(" limits cleared");
	if (c->set_share)
		PUT(" share=%g", c->share);
	if (c->set_max_jobs)
		PUT(" max_jobs=%u", c->max_jobs);
	if (c->set_max_cpus)
		PUT(" max_cpus=%u", c->max_cpus);
	if (c->set_max_cards)
		PUT(" max_cards=%u", c->max_cards);
#undef PUT
}

void client_share_set(struct req *r)
{
	struct gsched *s = r->s;
	const Gpool__ShareSet *c = r->msg->share_set;
	if (!s->fairshare) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "no fair share here");
		return;
	}
	if (!share_set_is_admin(s, r->from.uid)) {
		gp_warn("share set for '%.64s' from uid %u refused: not an administrator",
			c->user ? c->user : "", (unsigned)r->from.uid);
		req_reply_error(
		    r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
		    "only root, the scheduler's account (uid %u) or a user share_admins "
		    "names may change shares and limits: permission denied",
		    (unsigned)s->sched_uid);
		return;
	}
	if (!c->set_share && !c->set_max_jobs && !c->set_max_cpus && !c->set_max_cards &&
	    !c->clear_share && !c->clear_limits) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "nothing to change");
		return;
	}
	struct fs_admin ch = {.has_share = c->set_share,
			      .share = c->share,
			      .has_jobs = c->set_max_jobs,
			      .has_cpus = c->set_max_cpus,
			      .has_cards = c->set_max_cards,
			      .limits = {c->max_jobs, c->max_cpus, c->max_cards}};
	if (store_txn_begin(s->store) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"the scheduler cannot save changes now");
		return;
	}
	gp_error_t err = {{0}};
	const char *user = c->user ? c->user : "";
	if (fairshare_admin_set(s->fairshare, user, &ch, c->clear_share, c->clear_limits, &err) <
	    0) {
		req_reply_error(r,
				errno == EINVAL ? GPOOL__ERROR_CODE__ERROR_INVALID
						: GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"%s", err.text);
		return;
	}
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	s->plan_dirty = true; /* the next pass orders the queue with the new values */
	char what[160];
	describe(c, what, sizeof(what));
	gp_info("fair share of '%s' changed by uid %u:%s", user, (unsigned)r->from.uid, what);

	Gpool__ShareUser u = GPOOL__SHARE_USER__INIT;
	struct fs_user_view v;
	if (strcmp(user, "*") != 0 && fairshare_user(s->fairshare, user, gp_now(), &v)) {
		u.cpu_sec = v.cpu_sec;
		u.card_sec = v.card_sec;
		u.usage = v.usage;
		u.usage_norm = v.usage_norm;
		u.share = v.share;
		u.share_norm = v.share_norm;
		u.factor = v.factor;
		u.max_jobs = v.limits.jobs;
		u.max_cpus = v.limits.cpus;
		u.max_cards = v.limits.cards;
		u.admin_share = v.admin_share;
		u.admin_limits = v.admin_limits;
	} else {
		struct fs_limits d = fairshare_default_limits(s->fairshare);
		struct fs_admin a = fairshare_admin_get(s->fairshare, "*");
		u.max_jobs = d.jobs;
		u.max_cpus = d.cpus;
		u.max_cards = d.cards;
		u.admin_limits = a.has_jobs || a.has_cpus || a.has_cards;
	}
	u.user = (char *)user;
	Gpool__ShareSetReply rep = GPOOL__SHARE_SET_REPLY__INIT;
	rep.user = &u;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_SHARE_SET_REPLY;
	m.share_set_reply = &rep;
	req_reply(r, &m, true); /* answered once the change is in the store */
}
