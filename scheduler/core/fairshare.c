/* fairshare.c: the users' decayed usage, shares, factors and limits (see fairshare.h). */
#include "scheduler/core/fairshare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct fs_user {
	char *name;
	double cpu_sec, card_sec; /* decayed to `at` */
	double at;		  /* when the figures above were last decayed (unix s) */
	double run_billing;	  /* this pass: its running jobs' use */
	double share;
	struct fs_limits limits;
	bool listed_limits;
	bool admin_share, admin_limits;
};

struct fs_entry { /* a configured share or limit line */
	char *name;
	double share;
	struct fs_limits limits;
};

struct fs_admin_entry { /* an administrator's values (fairshare_admin_set) */
	char *name;
	struct fs_admin a;
};

struct fairshare {
	struct fs_user *u;
	size_t n, cap;
	double half_life, card_weight;
	struct fs_entry *shares, *limits;
	size_t nshares, nlimits;
	struct fs_limits any_limits; /* gpool.conf's "*" with the administrator's over it */
	struct fs_limits conf_any;   /* gpool.conf's "*" */
	struct fs_admin_entry *admin;
	size_t nadmin;
	struct fs_keeper keeper; /* where the figures are kept (the store); none: not kept */
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
	for (size_t i = 0; i < f->nadmin; i++)
		free(f->admin[i].name);
	free(f->admin);
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

static const struct fs_admin *admin_find(const fairshare_t *f, const char *name)
{
	for (size_t i = 0; i < f->nadmin; i++)
		if (!strcmp(f->admin[i].name, name))
			return &f->admin[i].a;
	return NULL;
}

static bool admin_has_limits(const struct fs_admin *a)
{
	return a && (a->has_jobs || a->has_cpus || a->has_cards);
}

/* The administrator's limits over base, each where set. */
static struct fs_limits admin_over(const struct fs_admin *a, struct fs_limits base)
{
	if (a && a->has_jobs)
		base.jobs = a->limits.jobs;
	if (a && a->has_cpus)
		base.cpus = a->limits.cpus;
	if (a && a->has_cards)
		base.cards = a->limits.cards;
	return base;
}

/* A user's limits: gpool.conf's line for them (else its "*", with the administrator's "*"
 * over it), then the administrator's for them over that. */
static struct fs_limits limits_of(const fairshare_t *f, const char *name, bool *listed)
{
	const struct fs_entry *l = entry_find(f->limits, f->nlimits, name);
	if (listed)
		*listed = l != NULL;
	return admin_over(admin_find(f, name), l ? l->limits : f->any_limits);
}

static void user_config(fairshare_t *f, struct fs_user *u)
{
	const struct fs_admin *a = admin_find(f, u->name);
	const struct fs_entry *s = entry_find(f->shares, f->nshares, u->name);
	u->share = a && a->has_share ? a->share : s ? s->share : 1.0;
	u->admin_share = a && a->has_share;
	u->limits = limits_of(f, u->name, &u->listed_limits);
	u->admin_limits = admin_has_limits(a);
}

/* Work out the limits of "*" and every user's values again (after a change of either). */
static void config_all(fairshare_t *f)
{
	f->any_limits = admin_over(admin_find(f, "*"), f->conf_any);
	for (size_t i = 0; i < f->n; i++)
		user_config(f, &f->u[i]);
	f->pass_done = false;
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
	f->conf_any = any ? any->limits : (struct fs_limits){0};
	f->half_life = half_life;
	f->card_weight = card_weight;
	/* a user the shares name counts in S from the start */
	for (size_t i = 0; i < nsh; i++)
		if (strcmp(sh[i].name, "*") != 0 && !user_get(f, sh[i].name, true))
			return gp_errprintf(err, "out of memory");
	config_all(f);
	return 0;
}

/* A user name as a share or limit may name: printable, no separator of the gpool.conf lists. */
static bool admin_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c <= ' ' || c >= 0x7f || c == ',' || c == ':' || c == '=')
			return false;
	}
	return true;
}

/* Keep a (name's entry, made when missing) = a in memory; an empty a removes the entry. */
static int admin_put(fairshare_t *f, const char *name, const struct fs_admin *a)
{
	bool empty = !a->has_share && !admin_has_limits(a);
	for (size_t i = 0; i < f->nadmin; i++) {
		if (strcmp(f->admin[i].name, name) != 0)
			continue;
		if (empty) {
			free(f->admin[i].name);
			f->admin[i] = f->admin[--f->nadmin];
		} else {
			f->admin[i].a = *a;
		}
		return 0;
	}
	if (empty)
		return 0;
	struct fs_admin_entry *na = realloc(f->admin, (f->nadmin + 1) * sizeof(*na));
	if (!na)
		return -1;
	f->admin = na;
	if (!(na[f->nadmin].name = strdup(name)))
		return -1;
	na[f->nadmin].a = *a;
	f->nadmin++;
	return 0;
}

int fairshare_admin_set(fairshare_t *f, const char *user, const struct fs_admin *change,
			bool clear_share, bool clear_limits, gp_error_t *err)
{
	bool any = !strcmp(user, "*");
	if (!any && !admin_name_ok(user)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid user name '%.64s'", user);
	}
	if (any && (change->has_share || clear_share)) {
		errno = EINVAL;
		return gp_errprintf(err, "'*' has no share: a user not listed has 1");
	}
	if (change->has_share && !(change->share >= 0 && change->share <= 1e9)) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid share %g (0 to 1e9)", change->share);
	}
	struct fs_admin a = fairshare_admin_get(f, user);
	if (clear_share) {
		a.has_share = false;
		a.share = 0;
	}
	if (clear_limits) {
		a.has_jobs = a.has_cpus = a.has_cards = false;
		a.limits = (struct fs_limits){0};
	}
	if (change->has_share) {
		a.has_share = true;
		a.share = change->share;
	}
	if (change->has_jobs) {
		a.has_jobs = true;
		a.limits.jobs = change->limits.jobs;
	}
	if (change->has_cpus) {
		a.has_cpus = true;
		a.limits.cpus = change->limits.cpus;
	}
	if (change->has_cards) {
		a.has_cards = true;
		a.limits.cards = change->limits.cards;
	}
	if (f->keeper.save_admin && f->keeper.save_admin(f->keeper.arg, user, &a) < 0) {
		errno = EIO;
		return gp_errprintf(err, "cannot save the change for '%s'", user);
	}
	/* a failure below leaves the store ahead of memory: the restart reads the store */
	if (admin_put(f, user, &a) < 0 || (!any && !user_get(f, user, true))) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	config_all(f);
	return 0;
}

struct fs_admin fairshare_admin_get(const fairshare_t *f, const char *user)
{
	const struct fs_admin *a = admin_find(f, user);
	return a ? *a : (struct fs_admin){0};
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

void fairshare_set_keeper(fairshare_t *f, const struct fs_keeper *k)
{
	f->keeper = k ? *k : (struct fs_keeper){0};
}

void fairshare_load_usage(fairshare_t *f, const char *user, double cpu_sec, double card_sec,
			  double at)
{
	struct fs_user *u = user_get(f, user, true);
	if (u) {
		u->cpu_sec = cpu_sec;
		u->card_sec = card_sec;
		u->at = at;
	}
}

int fairshare_load_admin(fairshare_t *f, const char *user, const struct fs_admin *a)
{
	if (admin_put(f, user, a) < 0 || (strcmp(user, "*") != 0 && !user_get(f, user, true)))
		return -1;
	return 0;
}

void fairshare_loaded(fairshare_t *f)
{
	config_all(f);
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
	if (f->keeper.save_usage &&
	    f->keeper.save_usage(f->keeper.arg, u->name, u->cpu_sec, u->card_sec, u->at) < 0)
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
	return limits_of(f, user, NULL);
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
		v[i].admin_share = u->admin_share;
		v[i].admin_limits = u->admin_limits;
	}
	qsort(v, f->n, sizeof(*v), by_name);
	*n = f->n;
	return v;
}

bool fairshare_user(fairshare_t *f, const char *user, double now, struct fs_user_view *out)
{
	size_t n;
	const struct fs_user_view *v = fairshare_users(f, now, &n);
	for (size_t i = 0; v && i < n; i++)
		if (!strcmp(v[i].name, user)) {
			*out = v[i];
			return true;
		}
	return false;
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
