/* account.c: local account resolution for a job's tasks. */
#include "worker/account.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gp_account_lookup_passwd(const char *name, struct gp_account *a, void *arg)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	(void)arg;
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
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

int gp_account_resolve(const struct gp_account_rules *r, const char *owner, struct gp_account *a,
		       gp_error_t *err)
{
	const char *node = r->node ? r->node : "?";
	const char *name = r->run_as && *r->run_as ? r->run_as : owner;
	gp_account_lookup_f lookup = r->lookup ? r->lookup : gp_account_lookup_passwd;
	memset(a, 0, sizeof(*a));
	if (!name || !*name) {
		errno = ENOENT;
		return gp_errprintf(err, "job has no owner name to find a local account on node %s",
				    node);
	}
	if (strlen(name) >= sizeof(a->name) || lookup(name, a, r->arg) < 0) {
		errno = ENOENT;
		return gp_errprintf(err, "no local account '%s' on node %s", name, node);
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
