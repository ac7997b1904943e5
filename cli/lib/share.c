/* share.c: gpool share and gpool limits (see share.h). */
#include "cli/lib/share.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/lib/json.h"
#include "common/table.h"

static void limit_text(uint32_t v, char *buf, size_t len)
{
	if (v)
		snprintf(buf, len, "%u", v);
	else
		snprintf(buf, len, "-");
}

static int print_usage(const Gpool__ShareQueryReply *r, FILE *f)
{
	static const char *const hdr[] = {"USER",	"CPU_SEC", "CARD_SEC",	 "USAGE",
					  "NORM_USAGE", "SHARE",   "NORM_SHARE", "FAIRSHARE",
					  "RUNNING",	"PENDING", NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return -1;
	for (size_t i = 0; i < r->n_users; i++) {
		const Gpool__ShareUser *u = r->users[i];
		char c[32], k[32], us[32], un[32], sh[32], sn[32], fa[32], ru[16], pe[16];
		snprintf(c, sizeof(c), "%.0f", u->cpu_sec);
		snprintf(k, sizeof(k), "%.0f", u->card_sec);
		snprintf(us, sizeof(us), "%.0f", u->usage);
		snprintf(un, sizeof(un), "%.4f", u->usage_norm);
		snprintf(sh, sizeof(sh), "%g%s", u->share, u->admin_share ? "*" : "");
		snprintf(sn, sizeof(sn), "%.4f", u->share_norm);
		snprintf(fa, sizeof(fa), "%.4f", u->factor);
		snprintf(ru, sizeof(ru), "%u", u->running_jobs);
		snprintf(pe, sizeof(pe), "%u", u->pending_jobs);
		const char *cells[] = {u->user, c, k, us, un, sh, sn, fa, ru, pe, NULL};
		gp_table_add(t, cells);
	}
	int rc = gp_table_print(t, f);
	gp_table_destroy(&t);
	if (rc == 0)
		fprintf(f,
			"half-life %.0f s, a card-second weighs %g CPU-seconds; a share marked * "
			"was set by an administrator (gpool share set)\n",
			r->half_life_sec, r->card_weight);
	return rc;
}

static int print_limits(const Gpool__ShareQueryReply *r, FILE *f)
{
	static const char *const hdr[] = {"USER", "MAX_JOBS", "MAX_CPUS", "MAX_CARDS", "JOBS",
					  "CPUS", "CARDS",    "SET_BY",	  NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return -1;
	char mj[16], mc[16], mk[16];
	limit_text(r->max_jobs, mj, sizeof(mj));
	limit_text(r->max_cpus, mc, sizeof(mc));
	limit_text(r->max_cards, mk, sizeof(mk));
	const char *any[] = {"*", mj, mc, mk, "-", "-", "-", r->admin_any_limits ? "admin" : "",
			     NULL};
	gp_table_add(t, any);
	for (size_t i = 0; i < r->n_users; i++) {
		const Gpool__ShareUser *u = r->users[i];
		char j[16], c[16], k[16];
		limit_text(u->max_jobs, mj, sizeof(mj));
		limit_text(u->max_cpus, mc, sizeof(mc));
		limit_text(u->max_cards, mk, sizeof(mk));
		snprintf(j, sizeof(j), "%u", u->running_jobs);
		snprintf(c, sizeof(c), "%u", u->running_cpus);
		snprintf(k, sizeof(k), "%u", u->running_cards);
		const char *cells[] = {u->user, mj, mc, mk, j, c, k, u->admin_limits ? "admin" : "",
				       NULL};
		gp_table_add(t, cells);
	}
	int rc = gp_table_print(t, f);
	gp_table_destroy(&t);
	return rc;
}

static int print_json(const Gpool__ShareQueryReply *r, FILE *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < r->n_users; i++) {
		const Gpool__ShareUser *u = r->users[i];
		json_t *o = json_pack(
		    "{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "user",
		    u->user, "cpu_sec", u->cpu_sec, "card_sec", u->card_sec, "usage", u->usage,
		    "usage_norm", u->usage_norm, "share", u->share, "share_norm", u->share_norm,
		    "factor", u->factor, "max_jobs", (json_int_t)u->max_jobs, "max_cpus",
		    (json_int_t)u->max_cpus, "max_cards", (json_int_t)u->max_cards, "running_jobs",
		    (json_int_t)u->running_jobs, "running_cpus", (json_int_t)u->running_cpus,
		    "running_cards", (json_int_t)u->running_cards, "pending_jobs",
		    (json_int_t)u->pending_jobs);
		/* whether an administrator set the share / limits (gpool share set) */
		if (o) {
			json_object_set_new(o, "admin_share", json_boolean(u->admin_share));
			json_object_set_new(o, "admin_limits", json_boolean(u->admin_limits));
		}
		json_array_append_new(arr, o);
	}
	json_t *o =
	    json_pack("{s:o,s:f,s:f,s:{s:I,s:I,s:I,s:b}}", "users", arr, "half_life_sec",
		      r->half_life_sec, "card_weight", r->card_weight, "default_limits", "max_jobs",
		      (json_int_t)r->max_jobs, "max_cpus", (json_int_t)r->max_cpus, "max_cards",
		      (json_int_t)r->max_cards, "admin", r->admin_any_limits);
	return o ? gp_json_print(o, f) : -1;
}

int gp_share_print(const Gpool__ShareQueryReply *r, enum gp_share_view view, bool json, FILE *f)
{
	if (json)
		return print_json(r, f);
	return view == GP_SHARE_LIMITS ? print_limits(r, f) : print_usage(r, f);
}

int gp_share_show(gp_session_t *s, enum gp_share_view view, bool json, gp_error_t *err)
{
	Gpool__ShareQuery q = GPOOL__SHARE_QUERY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SHARE_QUERY;
	m.share_query = &q;
	Gpool__Msg *rep =
	    gp_session_call(s, &m, GPOOL__MSG__M_SHARE_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	if (!rep)
		return -1;
	if (gp_share_print(rep->share_query_reply, view, json, stdout) < 0)
		return gp_errprintf(err, "cannot print the shares");
	return 0;
}

int gp_share_set(gp_session_t *s, Gpool__ShareSet *c, bool json, gp_error_t *err)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SHARE_SET;
	m.share_set = c;
	Gpool__Msg *rep =
	    gp_session_call(s, &m, GPOOL__MSG__M_SHARE_SET_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	if (!rep)
		return -1;
	const Gpool__ShareUser *u = rep->share_set_reply->user;
	if (!u)
		return gp_errprintf(err, "the scheduler's reply has no user");
	char mj[16], mc[16], mk[16];
	limit_text(u->max_jobs, mj, sizeof(mj));
	limit_text(u->max_cpus, mc, sizeof(mc));
	limit_text(u->max_cards, mk, sizeof(mk));
	if (json) {
		json_t *o = json_pack(
		    "{s:s,s:f,s:f,s:f,s:b,s:I,s:I,s:I,s:b}", "user", u->user, "share", u->share,
		    "share_norm", u->share_norm, "factor", u->factor, "admin_share", u->admin_share,
		    "max_jobs", (json_int_t)u->max_jobs, "max_cpus", (json_int_t)u->max_cpus,
		    "max_cards", (json_int_t)u->max_cards, "admin_limits", u->admin_limits);
		return o && gp_json_print(o, stdout) == 0
			   ? 0
			   : gp_errprintf(err, "cannot print the reply");
	}
	if (!strcmp(u->user, "*"))
		printf("*: max_jobs %s, max_cpus %s, max_cards %s (%s)\n", mj, mc, mk,
		       u->admin_limits ? "set by an administrator" : "gpool.conf");
	else
		printf("%s: share %g (%s, normalised %.4f, fair-share factor %.4f); max_jobs %s, "
		       "max_cpus %s, max_cards %s (%s)\n",
		       u->user, u->share, u->admin_share ? "set by an administrator" : "gpool.conf",
		       u->share_norm, u->factor, mj, mc, mk,
		       u->admin_limits ? "set by an administrator" : "gpool.conf");
	return 0;
}
