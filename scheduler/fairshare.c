/* fairshare.c: the users' decayed usage, shares, factors and limits (see fairshare.h). */
#include "scheduler/fairshare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "scheduler/store_fairshare.h"

struct fs_user {
	char *name;
	double cpu_sec, card_sec; /* decayed to `at` */
	double at;		  /* when the figures above were last decayed (unix s) */
	double run_billing;	  /* this pass: its running jobs' use */
	double share;
	struct fs_limits limits;
	bool listed_limits;
};

struct fs_entry { /* a configured share or limit line */
	char *name;
	double share;
	struct fs_limits limits;
};

struct fairshare {
	struct fs_user *u;
	size_t n, cap;
	double half_life, card_weight;
	struct fs_entry *shares, *limits;
	size_t nshares, nlimits;
	struct fs_limits any_limits;
	struct sqlite3 *db;
	double pass_now, total_usage, total_share;
	bool pass_done;
	struct fs_user_view *views;
};

fairshare_t *fairshare_create(void)
{
	fairshare_t *f = calloc(1, sizeof(*f));
	if (f) {
		f->half_life = 7 * 24 * 3600.0;
		f->card_weight = 1.0;
	}
	return f;
}

static void entries_free(struct fs_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

void fairshare_destroy(fairshare_t **p)
{
	if (!p || !*p)
		return;
	fairshare_t *f = *p;
	for (size_t i = 0; i < f->n; i++)
		free(f->u[i].name);
	free(f->u);
	entries_free(f->shares, f->nshares);
	entries_free(f->limits, f->nlimits);
	free(f->views);
	free(f);
	*p = NULL;
}

double fairshare_decay(double usage, double dt, double half_life)
{
	if (half_life <= 0 || dt <= 0)
		return usage;
	return usage * exp2(-dt / half_life);
}

double fairshare_factor_of(double usage_norm, double share_norm)
{
	if (share_norm <= 0)
		return usage_norm > 0 ? 0.0 : 1.0;
	return exp2(-usage_norm / share_norm);
}

/* "name:value" items separated by commas; value parsed by item(). */
static int parse_list(const char *text, const char *what, struct fs_entry **out, size_t *nout,
		      int (*item)(struct fs_entry *e, char *val, gp_error_t *err), gp_error_t *err)
{
	*out = NULL;
	*nout = 0;
	char *copy = strdup(text ? text : "");
	if (!copy)
		return gp_errprintf(err, "out of memory");
	struct fs_entry *v = NULL;
	size_t n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		char *colon = strchr(tok, ':');
		if (!colon || colon == tok || !colon[1]) {
			gp_errprintf(err, "%s: invalid item '%s' (USER:VALUE)", what, tok);
			goto fail;
		}
		*colon = 0;
		struct fs_entry *nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			gp_errprintf(err, "out of memory");
			goto fail;
		}
		v = nv;
		memset(&v[n], 0, sizeof(v[n]));
		if (!(v[n].name = strdup(tok))) {
			gp_errprintf(err, "out of memory");
			goto fail;
		}
		n++;
		if (item(&v[n - 1], colon + 1, err) < 0)
			goto fail;
	}
	free(copy);
	*out = v;
	*nout = n;
	return 0;
fail:
	entries_free(v, n);
	free(copy);
	return -1;
}

static int share_item(struct fs_entry *e, char *val, gp_error_t *err)
{
	char *end;
	errno = 0;
	double d = strtod(val, &end);
	if (errno || *end || !(d >= 0) || d > 1e9)
		return gp_errprintf(err, "fairshare_shares: invalid share '%s' for '%s'", val,
				    e->name);
	e->share = d;
	return 0;
}

static int limit_item(struct fs_entry *e, char *val, gp_error_t *err)
{
	char *save = NULL;
	for (char *kv = strtok_r(val, ":", &save); kv; kv = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(kv, '=');
		char *end;
		errno = 0;
		unsigned long x = eq ? strtoul(eq + 1, &end, 10) : 0;
		if (!eq || errno || *end || eq[1] == 0 || eq[1] == '-' || x > UINT32_MAX)
			return gp_errprintf(err, "user_limits: invalid limit '%s' for '%s'", kv,
					    e->name);
		*eq = 0;
		if (!strcmp(kv, "jobs"))
			e->limits.jobs = (uint32_t)x;
		else if (!strcmp(kv, "cpus"))
			e->limits.cpus = (uint32_t)x;
		else if (!strcmp(kv, "cards"))
			e->limits.cards = (uint32_t)x;
		else
			return gp_errprintf(
			    err, "user_limits: unknown limit '%s' for '%s' (jobs, cpus, cards)", kv,
			    e->name);
	}
	return 0;
}

static const struct fs_entry *entry_find(const struct fs_entry *e, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].name, name))
			return &e[i];
	return NULL;
}

static void user_config(fairshare_t *f, struct fs_user *u)
{
	const struct fs_entry *s = entry_find(f->shares, f->nshares, u->name);
	u->share = s ? s->share : 1.0;
	const struct fs_entry *l = entry_find(f->limits, f->nlimits, u->name);
	u->limits = l ? l->limits : f->any_limits;
	u->listed_limits = l != NULL;
}

static struct fs_user *user_get(fairshare_t *f, const char *name, bool make)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->u[i].name, name))
			return &f->u[i];
	if (!make)
		return NULL;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct fs_user *nu = realloc(f->u, cap * sizeof(*nu));
		if (!nu)
			return NULL;
		f->u = nu;
		f->cap = cap;
	}
	struct fs_user *u = &f->u[f->n];
	memset(u, 0, sizeof(*u));
	if (!(u->name = strdup(name)))
		return NULL;
	u->at = f->pass_now;
	user_config(f, u);
	f->n++;
	f->pass_done = false;
	return u;
}

int fairshare_configure(fairshare_t *f, double half_life, double card_weight, const char *shares,
			const char *limits, gp_error_t *err)
{
	struct fs_entry *sh, *li;
	size_t nsh, nli;
	if (half_life < 0 || card_weight < 0)
		return gp_errprintf(err, "fairshare: negative half-life or card weight");
	if (parse_list(shares, "fairshare_shares", &sh, &nsh, share_item, err) < 0)
		return -1;
	if (parse_list(limits, "user_limits", &li, &nli, limit_item, err) < 0) {
		entries_free(sh, nsh);
		return -1;
	}
	entries_free(f->shares, f->nshares);
	entries_free(f->limits, f->nlimits);
	f->shares = sh;
	f->nshares = nsh;
	f->limits = li;
	f->nlimits = nli;
	const struct fs_entry *any = entry_find(li, nli, "*");
	f->any_limits = any ? any->limits : (struct fs_limits){0};
	f->half_life = half_life;
	f->card_weight = card_weight;
	/* a user the shares name counts in S from the start */
	for (size_t i = 0; i < nsh; i++)
		if (strcmp(sh[i].name, "*") != 0 && !user_get(f, sh[i].name, true))
			return gp_errprintf(err, "out of memory");
	for (size_t i = 0; i < f->n; i++)
		user_config(f, &f->u[i]);
	f->pass_done = false;
	return 0;
}

/* Decay u's figures to now. */
static void user_decay(const fairshare_t *f, struct fs_user *u, double now)
{
	if (now <= u->at)
		return;
	u->cpu_sec = fairshare_decay(u->cpu_sec, now - u->at, f->half_life);
	u->card_sec = fairshare_decay(u->card_sec, now - u->at, f->half_life);
	u->at = now;
}

static double billing(const fairshare_t *f, double cpu_sec, double card_sec)
{
	return cpu_sec + f->card_weight * card_sec;
}

int fairshare_attach_store(fairshare_t *f, struct sqlite3 *db)
{
	f->db = db;
	if (!db)
		return 0;
	if (store_fairshare_init(db) < 0)
		return -1;
	struct store_fs_row *rows;
	size_t n;
	if (store_fairshare_load(db, &rows, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct fs_user *u = user_get(f, rows[i].user, true);
		if (u) {
			u->cpu_sec = rows[i].cpu_sec;
			u->card_sec = rows[i].card_sec;
			u->at = rows[i].at;
		}
	}
	store_fairshare_rows_free(rows, n);
	return 0;
}

int fairshare_touch(fairshare_t *f, const char *user)
{
	return user_get(f, user, true) ? 0 : -1;
}

int fairshare_charge(fairshare_t *f, const char *user, double cpu_sec, double card_sec, double now)
{
	struct fs_user *u = user_get(f, user, true);
	if (!u)
		return -1;
	if (u->at == 0)
		u->at = now;
	user_decay(f, u, now);
	u->cpu_sec += cpu_sec > 0 ? cpu_sec : 0;
	u->card_sec += card_sec > 0 ? card_sec : 0;
	f->pass_done = false;
	if (f->db && store_fairshare_save(f->db, u->name, u->cpu_sec, u->card_sec, u->at) < 0)
		gp_warn("fair share: cannot save the usage of '%s'", u->name);
	return 0;
}

void fairshare_pass_begin(fairshare_t *f, double now)
{
	f->pass_now = now;
	for (size_t i = 0; i < f->n; i++) {
		if (f->u[i].at == 0)
			f->u[i].at = now;
		user_decay(f, &f->u[i], now);
		f->u[i].run_billing = 0;
	}
	f->pass_done = false;
}

void fairshare_pass_running(fairshare_t *f, const char *user, double cpu_sec, double card_sec)
{
	struct fs_user *u = user_get(f, user, true);
	if (u)
		u->run_billing += billing(f, cpu_sec, card_sec);
	f->pass_done = false;
}

static double user_usage(const fairshare_t *f, const struct fs_user *u)
{
	return billing(f, u->cpu_sec, u->card_sec) + u->run_billing;
}

static void pass_totals(fairshare_t *f)
{
	if (f->pass_done)
		return;
	f->total_usage = f->total_share = 0;
	for (size_t i = 0; i < f->n; i++) {
		f->total_usage += user_usage(f, &f->u[i]);
		f->total_share += f->u[i].share;
	}
	f->pass_done = true;
}

static double user_factor(fairshare_t *f, const struct fs_user *u, double *un, double *sn)
{
	pass_totals(f);
	*un = f->total_usage > 0 ? user_usage(f, u) / f->total_usage : 0;
	*sn = f->total_share > 0 ? u->share / f->total_share : 0;
	return fairshare_factor_of(*un, *sn);
}

double fairshare_factor(fairshare_t *f, const char *user)
{
	struct fs_user *u = user_get(f, user, true);
	double un, sn;
	return u ? user_factor(f, u, &un, &sn) : 1.0;
}

struct fs_limits fairshare_limits(const fairshare_t *f, const char *user)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->u[i].name, user))
			return f->u[i].limits;
	const struct fs_entry *l = entry_find(f->limits, f->nlimits, user);
	return l ? l->limits : f->any_limits;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct fs_user_view *)a)->name,
		      ((const struct fs_user_view *)b)->name);
}

const struct fs_user_view *fairshare_users(fairshare_t *f, double now, size_t *n)
{
	*n = 0;
	struct fs_user_view *v = realloc(f->views, (f->n ? f->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	f->views = v;
	for (size_t i = 0; i < f->n; i++) {
		struct fs_user *u = &f->u[i];
		if (u->at == 0)
			u->at = now;
		user_decay(f, u, now);
	}
	f->pass_done = false;
	for (size_t i = 0; i < f->n; i++) {
		struct fs_user *u = &f->u[i];
		v[i].name = u->name;
		v[i].cpu_sec = u->cpu_sec;
		v[i].card_sec = u->card_sec;
		v[i].usage = user_usage(f, u);
		v[i].share = u->share;
		v[i].factor = user_factor(f, u, &v[i].usage_norm, &v[i].share_norm);
		v[i].limits = u->limits;
	}
	qsort(v, f->n, sizeof(*v), by_name);
	*n = f->n;
	return v;
}

double fairshare_half_life(const fairshare_t *f)
{
	return f->half_life;
}

double fairshare_card_weight(const fairshare_t *f)
{
	return f->card_weight;
}

struct fs_limits fairshare_default_limits(const fairshare_t *f)
{
	return f->any_limits;
}
