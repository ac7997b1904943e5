/* account.c: local account resolution for a job's tasks (account.h). */
#include "worker/node/account.h"

#include <errno.h>
#include <stdint.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gp_account_lookup_passwd(const char *name, uid_t uid, struct gp_account *a, void *arg)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	(void)arg;
	int rc = name ? getpwnam_r(name, &pw, buf, sizeof(buf), &res)
		      : getpwuid_r(uid, &pw, buf, sizeof(buf), &res);
	if (rc != 0 || !res)
		return -1;
	a->uid = pw.pw_uid;
	a->gid = pw.pw_gid;
	snprintf(a->name, sizeof(a->name), "%s", pw.pw_name);
	snprintf(a->home, sizeof(a->home), "%s", pw.pw_dir ? pw.pw_dir : "/");
	snprintf(a->shell, sizeof(a->shell), "%s",
		 pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
	return 0;
}

void gp_account_preload_nss(void)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	gid_t groups[64];
	int n = 64;
	if (getpwnam_r("root", &pw, buf, sizeof(buf), &res) == 0 && res)
		(void)getgrouplist(res->pw_name, res->pw_gid, groups, &n);
}

/* The owner's account by uid, and the same name the pool knows it by. */
static int by_owner(const struct gp_account_rules *r, gp_account_lookup_f lookup,
		    const struct gp_owner *o, struct gp_account *a, gp_error_t *err)
{
	const char *node = r->node ? r->node : "?";
	const char *pool = o->name && *o->name ? o->name : NULL;
	if (lookup(NULL, o->uid, a, r->arg) < 0) {
		errno = ENOENT;
		return gp_errprintf(err, "no local account with uid %u%s%s%s on node %s",
				    (unsigned)o->uid, pool ? " ('" : "", pool ? pool : "",
				    pool ? "' in the pool)" : "", node);
	}
	if (pool && strcmp(a->name, pool) != 0) {
		errno = EPERM;
		return gp_errprintf(
		    err,
		    "uid %u is '%s' on node %s but '%s' in the pool: the pool needs "
		    "one uid space",
		    (unsigned)o->uid, a->name, node, pool);
	}
	return 0;
}

int gp_account_resolve(const struct gp_account_rules *r, const struct gp_owner *o,
		       struct gp_account *a, gp_error_t *err)
{
	const char *node = r->node ? r->node : "?";
	gp_account_lookup_f lookup = r->lookup ? r->lookup : gp_account_lookup_passwd;
	memset(a, 0, sizeof(*a));
	if (r->run_as && *r->run_as) {
		if (strlen(r->run_as) >= sizeof(a->name) || lookup(r->run_as, 0, a, r->arg) < 0) {
			errno = ENOENT;
			return gp_errprintf(err, "no local account '%s' on node %s", r->run_as,
					    node);
		}
	} else if (by_owner(r, lookup, o, a, err) < 0) {
		return -1;
	}
	char why[200];
	if (r->policy && !(r->run_as && *r->run_as) &&
	    gp_uid_policy_check(r->policy, a->uid, a->name, why, sizeof(why)) < 0) {
		errno = EPERM;
		return gp_errprintf(err, "node %s refuses: %s", node, why);
	}
	if (a->uid == 0 && !r->allow_root) {
		errno = EPERM;
		return gp_errprintf(err, "refusing to run as root on node %s (allow_root is off)",
				    node);
	}
	if (r->self != 0 && a->uid != r->self) {
		errno = EPERM;
		return gp_errprintf(
		    err, "gworkerd on node %s runs as uid %u and cannot run tasks as '%s'", node,
		    (unsigned)r->self, a->name);
	}
	return 0;
}

size_t gp_account_list(const struct gp_uid_policy *policy, uid_t *uids, char (*names)[33],
		       size_t max, bool *truncated)
{
	size_t n = 0;
	*truncated = false;
	struct passwd pw, *res;
	char buf[4096];
	char why[8];
	/* the uids listed so far, open addressing (uid + 1; 0 is empty): each entry is looked at
	 * once, whatever the size of the passwd database */
	size_t cap = 16;
	while (cap < 2 * max)
		cap *= 2;
	uint64_t *seen = calloc(cap, sizeof(*seen));
	if (!seen)
		return 0;
	setpwent();
	while (getpwent_r(&pw, buf, sizeof(buf), &res) == 0 && res) {
		if (pw.pw_uid == 0 || strlen(pw.pw_name) >= sizeof(names[0]) ||
		    gp_uid_policy_check(policy, pw.pw_uid, pw.pw_name, why, sizeof(why)) < 0)
			continue;
		size_t h = ((uint64_t)pw.pw_uid * 0x9e3779b97f4a7c15ull) >> 32 & (cap - 1);
		while (seen[h] && seen[h] != (uint64_t)pw.pw_uid + 1)
			h = (h + 1) & (cap - 1);
		if (seen[h]) /* the first entry for a uid is the one getpwuid finds */
			continue;
		if (n == max) {
			*truncated = true;
			break;
		}
		seen[h] = (uint64_t)pw.pw_uid + 1;
		uids[n] = pw.pw_uid;
		memcpy(names[n], pw.pw_name, strlen(pw.pw_name) + 1);
		n++;
	}
	endpwent();
	free(seen);
	return n;
}
