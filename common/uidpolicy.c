/* uidpolicy.c: system accounts and the deny list (uidpolicy.h). */
#include "common/uidpolicy.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"

void gp_uid_range_from_login_defs(const char *path, uid_t *min, uid_t *max)
{
	*min = 1000;
	*max = 60000;
	FILE *f = fopen(path ? path : "/etc/login.defs", "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char key[32];
		unsigned long v;
		if (sscanf(line, " %31s %lu", key, &v) != 2 || key[0] == '#' || v > 0x7fffffffUL)
			continue;
		if (!strcmp(key, "UID_MIN"))
			*min = (uid_t)v;
		else if (!strcmp(key, "UID_MAX"))
			*max = (uid_t)v;
	}
	fclose(f);
}

static int add_deny(struct gp_uid_policy *p, const char *tok, size_t n, gp_error_t *err)
{
	if (p->ndeny == GP_UID_DENY_MAX) {
		errno = EINVAL;
		return gp_errprintf(err, "deny_users: more than %d entries", GP_UID_DENY_MAX);
	}
	struct gp_uid_deny *d = &p->deny[p->ndeny];
	if (n == 0 || n >= sizeof(d->name)) {
		errno = EINVAL;
		return gp_errprintf(err, "deny_users: invalid entry '%.*s'", (int)(n > 40 ? 40 : n),
				    tok);
	}
	memcpy(d->name, tok, n);
	d->name[n] = '\0';
	long v;
	d->by_uid = isdigit((unsigned char)d->name[0]);
	if (d->by_uid) {
		if (gp_parse_long(d->name, 0, 0x7fffffffL, &v) < 0) {
			errno = EINVAL;
			return gp_errprintf(err, "deny_users: invalid uid '%s'", d->name);
		}
		d->uid = (uid_t)v;
	} else {
		for (const char *c = d->name; *c; c++)
			if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.' &&
			    *c != '$') {
				errno = EINVAL;
				return gp_errprintf(err, "deny_users: invalid name '%s'", d->name);
			}
	}
	p->ndeny++;
	return 0;
}

int gp_uid_policy_init(struct gp_uid_policy *p, const char *login_defs, long long cfg_min,
		       long long cfg_max, const char *deny, gp_error_t *err)
{
	struct gp_uid_policy np;
	memset(&np, 0, sizeof(np));
	gp_uid_range_from_login_defs(login_defs, &np.min, &np.max);
	if (cfg_min > 0)
		np.min = (uid_t)cfg_min;
	if (cfg_max > 0)
		np.max = (uid_t)cfg_max;
	if (np.min > np.max) {
		errno = EINVAL;
		return gp_errprintf(err, "uid range %u-%u is empty", (unsigned)np.min,
				    (unsigned)np.max);
	}
	for (const char *s = deny ? deny : ""; *s;) {
		size_t skip = strspn(s, ", \t");
		s += skip;
		size_t n = strcspn(s, ", \t");
		if (n && add_deny(&np, s, n, err) < 0)
			return -1;
		s += n;
	}
	*p = np;
	return 0;
}

int gp_uid_policy_check(const struct gp_uid_policy *p, uid_t uid, const char *name, char *why,
			size_t len)
{
	if (uid == 0)
		return 0;
	for (size_t i = 0; i < p->ndeny; i++) {
		const struct gp_uid_deny *d = &p->deny[i];
		if ((d->by_uid && d->uid == uid) ||
		    (!d->by_uid && name && !strcmp(d->name, name))) {
			snprintf(why, len, "account '%s' (uid %u) is on the deny list (deny_users)",
				 name ? name : "?", (unsigned)uid);
			errno = EPERM;
			return -1;
		}
	}
	if (uid < p->min || uid > p->max) {
		snprintf(why, len, "uid %u%s%s%s is a system account (outside %u-%u)",
			 (unsigned)uid, name ? " ('" : "", name ? name : "", name ? "')" : "",
			 (unsigned)p->min, (unsigned)p->max);
		errno = EPERM;
		return -1;
	}
	return 0;
}

int gp_uid_name(uid_t uid, char *name, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		errno = ENOENT;
		return -1;
	}
	size_t n = strlen(pw.pw_name);
	if (n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(name, pw.pw_name, n + 1);
	return 0;
}
