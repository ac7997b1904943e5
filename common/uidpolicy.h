/* uidpolicy.h: which accounts a job may run as.
 *
 * A job runs as the uid its owner's MUNGE credential carries. System accounts are never
 * submitted to: a uid outside UID_MIN..UID_MAX (as /etc/login.defs of the PC that checks says,
 * or the configured uid_min/uid_max) or an account on the deny list (deny_users: names or uids)
 * is refused. gschedd applies its PC's policy at submission, every agent its own again at
 * launch. Root is not decided here: gschedd takes root's jobs and agents run them only with
 * allow_root (as before). docs/security.md.
 */
#ifndef GPOOL_UIDPOLICY_H
#define GPOOL_UIDPOLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

#define GP_UID_DENY_MAX 64

struct gp_uid_policy {
	uid_t min, max;
	size_t ndeny;
	struct gp_uid_deny {
		bool by_uid;
		uid_t uid;
		char name[33];
	} deny[GP_UID_DENY_MAX];
};

/* UID_MIN and UID_MAX from a login.defs file (path NULL: /etc/login.defs); what the file lacks
 * (or a missing file) is Debian's default, 1000 and 60000. */
void gp_uid_range_from_login_defs(const char *path, uid_t *min, uid_t *max);

/* Fill p: cfg_min / cfg_max > 0 override login_defs' values; deny is a list of names or uids
 * separated by commas or blanks. 0 / -1 with err (EINVAL: a bad entry, a range min > max, more
 * than GP_UID_DENY_MAX entries). */
int gp_uid_policy_init(struct gp_uid_policy *p, const char *login_defs, long long cfg_min,
		       long long cfg_max, const char *deny, gp_error_t *err);

/* May a job run as (uid, name)? uid 0 always passes (allow_root decides on the nodes). name may
 * be NULL (then only uid entries of the deny list apply). 0, or -1 with why ("uid 998 is a
 * system account (outside 1000-60000)") and errno EPERM. */
int gp_uid_policy_check(const struct gp_uid_policy *p, uid_t uid, const char *name, char *why,
			size_t len);

/* The name this PC's passwd database (NSS) gives uid, copied to name: 0, or -1 with errno
 * ENOENT (no such account, or the lookup failed) or ENAMETOOLONG (longer than len - 1). */
int gp_uid_name(uid_t uid, char *name, size_t len);

#endif
