/* account.h: which local account runs a job's tasks on this node.
 *
 * Rules, in order: the `run_as` account when set, else the local account with the owner's user
 * name (uids may differ between PCs); no such account: refused. uid 0 is refused unless
 * allow_root. An agent that is not root can run tasks only as itself. The lookup is a function
 * so tests can supply their own passwd.
 */
#ifndef GPOOL_WORKER_ACCOUNT_H
#define GPOOL_WORKER_ACCOUNT_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"

struct gp_account {
	uid_t uid;
	gid_t gid;
	char name[64];
	char home[256];
	char shell[256];
};

/* 0 and *a filled when the account exists, -1 otherwise. */
typedef int (*gp_account_lookup_f)(const char *name, struct gp_account *a, void *arg);

/* The system's passwd database (getpwnam_r). */
int gp_account_lookup_passwd(const char *name, struct gp_account *a, void *arg);

struct gp_account_rules {
	const char *run_as; /* "" or NULL: the owner's name */
	bool allow_root;
	uid_t self;	  /* the uid the agent runs as */
	const char *node; /* for messages */
	gp_account_lookup_f lookup;
	void *arg;
};

/* Load the passwd and group NSS modules into this process (a lookup of root and its groups),
 * so that every supervisor it forks finds them loaded instead of loading them again per job
 * (getgrouplist asks every group service: with "files systemd" each supervisor dlopened
 * libnss_systemd). Failures are ignored: the lookups are only done for their side effect. */
void gp_account_preload_nss(void);

/* Resolve the account for a job owned by `owner`. 0 / -1 with err holding the reason a user
 * reads (it becomes the TASK_FAILED_TO_START reason) and errno = EPERM or ENOENT. */
int gp_account_resolve(const struct gp_account_rules *r, const char *owner, struct gp_account *a,
		       gp_error_t *err);

#endif
