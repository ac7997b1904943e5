/* admit.h: the checks a submission passes before its jobs are made, as a chain. A feature
 * with a word on what may be submitted (staged files, services, steps, screening jobs, the
 * owner's identity) registers its check once at start-up (sched_core_subscribe, core.c), as
 * the features that watch jobs subscribe to events; client_submit runs the chain, and the
 * first check that refuses gives the answer. Checks run in the order they were added.
 */
#ifndef GPOOL_SCHED_ADMIT_H
#define GPOOL_SCHED_ADMIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/array.h"
#include "proto/gpool.pb-c.h"

struct gsched;
struct gpu_req;

/* One submission on its way through the chain: what was sent, what the checks found. */
struct admission {
	Gpool__JobSpec *sp; /* the submitted spec (a check may fill in its defaults) */
	uid_t uid;	    /* the credential's */
	gid_t gid;
	/* found by the checks, for making the jobs (client_submit frees them) */
	gp_array_t *arr;     /* an array's indices; NULL: one job */
	uint32_t ntasks;     /* jobs to make: an array's tasks, else 1 */
	struct gpu_req *gpu; /* the card request of the first job; NULL: no cards */
	uid_t owner_uid;     /* whose the jobs are (identity.h) */
	gid_t owner_gid;
	char owner[64];
	uint8_t *packed; /* the spec as it is stored */
	size_t packed_len;
	/* the refusal */
	Gpool__ErrorCode code;
	char why[256];
};

/* A check: 0 to let the submission on, -1 to refuse it (admit_refuse). */
typedef int (*admit_check_f)(struct gsched *s, struct admission *a);

struct admit_chain;
struct admit_chain *admit_chain_create(void);
void admit_chain_destroy(struct admit_chain **c);
/* Add check (called name in logs and tests) at the end of c. 0 / -1 (ENOMEM). */
int admit_chain_add(struct admit_chain *c, const char *name, admit_check_f check);
/* Run c's checks on a in order: 0 when all let it on, -1 at the first refusal (a->code and
 * a->why say why). A NULL chain lets everything on. */
int admit_run(struct gsched *s, const struct admit_chain *c, struct admission *a);
/* Refuse a with code and a message: returns -1, for `return admit_refuse(...)`. */
int admit_refuse(struct admission *a, Gpool__ErrorCode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
