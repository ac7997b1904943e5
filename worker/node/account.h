/* account.h: which local account runs a job's tasks on this node.
 *
 * Rules, in order: the `run_as` account when set (an administrator's choice: every job runs as
 * it); else the local account with the owner's uid, the uid of the owner's MUNGE credential.
 * The pool needs one uid space: a uid this PC lacks, or has under another name than the pool
 * knows the owner by, is refused, never run as someone else. An account outside this PC's
 * policy (system accounts, the deny list: common/uidpolicy.h) is refused; uid 0 unless
 * allow_root. An agent that is not root can run tasks only as itself. The lookup is a function
 * so tests can supply their own passwd.
 */
#ifndef GPOOL_WORKER_ACCOUNT_H
#define GPOOL_WORKER_ACCOUNT_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/uidpolicy.h"

struct gp_account {
	uid_t uid;
	gid_t gid;
	char name[64];
	char home[256];
	char shell[256];
};

/* 0 and *a filled when the account exists, -1 otherwise: by name, or by uid when name is NULL. */
typedef int (*gp_account_lookup_f)(const char *name, uid_t uid, struct gp_account *a, void *arg);

/* The system's passwd database (getpwnam_r, getpwuid_r). */
int gp_account_lookup_passwd(const char *name, uid_t uid, struct gp_account *a, void *arg);

struct gp_account_rules {
	const char *run_as; /* "" or NULL: the owner's uid */
	bool allow_root;
	uid_t self;			    /* the uid the agent runs as */
	const char *node;		    /* for messages */
	const struct gp_uid_policy *policy; /* NULL: no system-account check (supervisors,
					       which run what their agent checked) */
	gp_account_lookup_f lookup;
	void *arg;
};

/* A job's owner as the scheduler names it: the credential's uid and the pool's name for it
 * ("" or NULL: not known, only the uid is checked). */
struct gp_owner {
	uid_t uid;
	const char *name;
};

/* Load the passwd and group NSS modules into this process (a lookup of root and its groups),
 * so that every supervisor it forks finds them loaded instead of loading them again per job
 * (getgrouplist asks every group service: with "files systemd" each supervisor dlopened
 * libnss_systemd). Failures are ignored: the lookups are only done for their side effect. */
void gp_account_preload_nss(void);

/* Resolve the account for a job of owner o. 0 / -1 with err holding the reason a user reads (it
 * becomes the TASK_FAILED_TO_START reason) and errno = EPERM or ENOENT. */
int gp_account_resolve(const struct gp_account_rules *r, const struct gp_owner *o,
		       struct gp_account *a, gp_error_t *err);

/* This PC's accounts jobs may run as (policy's range, not denied), at most max:
 * the count, with *truncated set when there were more. */
size_t gp_account_list(const struct gp_uid_policy *policy, uid_t *uids, char (*names)[33],
		       size_t max, bool *truncated);

#endif
