/* fairshare.h: fair share and per-user limits (docs/fairshare.md). Each user's recent use of
 * the pool (CPU-seconds plus card-seconds times fairshare_card_weight, decayed with the
 * half-life fairshare_half_life) is set against the share gpool.conf gives them
 * (fairshare_shares, 1 for anyone not listed), as Slurm's classic fair-share factor:
 *   F = 2^(-U/S), U = the user's usage / everyone's usage, S = the user's share / every known
 *   user's shares.
 * Placement (plan.c) orders the queue by gsub --priority, then F (high first), then submission.
 * The per-user limits (user_limits: running jobs, CPUs, cards) keep a job PENDING (UserLimit).
 * An administrator may change a user's share and limits while the pool runs (gpool share set,
 * gpool limits set: fairshare_admin_set); those values win over gpool.conf's until cleared.
 * The usage and the administrator's values are kept in jobs.db (store_fairshare.c): a restart
 * keeps them. Pure apart from that store, with the time passed in: the unit tests give
 * made-up usage and clocks.
 */
#ifndef GPOOL_SCHED_FAIRSHARE_H
#define GPOOL_SCHED_FAIRSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Per-user limits; 0: none. */
struct fs_limits {
	uint32_t jobs, cpus, cards;
};

/* An administrator's values for one user (gpool share set, gpool limits set): each has_* says
 * whether the value beside it is set (it then wins over gpool.conf's). */
struct fs_admin {
	bool has_share, has_jobs, has_cpus, has_cards;
	double share;
	struct fs_limits limits;
};

/* One user's figures at a time (fairshare_users). */
struct fs_user_view {
	const char *name;
	double cpu_sec, card_sec; /* decayed, of ended attempts */
	double usage;		  /* decayed billing seconds, ended attempts and running ones */
	double usage_norm;	  /* U */
	double share;		  /* as configured */
	double share_norm;	  /* S */
	double factor;		  /* 2^(-U/S) */
	struct fs_limits limits;
	bool admin_share, admin_limits; /* share / some limit from fairshare_admin_set */
};

typedef struct fairshare fairshare_t;

fairshare_t *fairshare_create(void);
void fairshare_destroy(fairshare_t **f);

/* The decay of usage over dt seconds with this half-life (0: none): usage * 2^(-dt/half). */
double fairshare_decay(double usage, double dt, double half_life);
/* Slurm's classic factor 2^(-usage_norm/share_norm); 0 where share_norm is 0 and usage is
 * not, 1 where neither is. */
double fairshare_factor_of(double usage_norm, double share_norm);

/* Apply the configuration: half-life (s), card weight, shares ("alice:2,bob:1"), limits
 * ("*:jobs=4:cpus=8:cards=2,alice:jobs=10": * for everyone not listed). On a parse error
 * nothing changes: -1 with err filled. */
int fairshare_configure(fairshare_t *f, double half_life, double card_weight, const char *shares,
			const char *limits, gp_error_t *err);

/* Change a user's administrator values: clear_share / clear_limits forget the share / limits
 * set before, then the values change sets (has_*) are set. user "*": the limits of every user
 * gpool.conf's user_limits does not list (no share). The row is written into db (the caller's
 * open transaction) before anything changes in memory: on failure (EINVAL: a bad user or
 * value; EIO: the store) nothing changes, -1 with err filled. The next pass sees it. */
int fairshare_admin_set(fairshare_t *f, const char *user, const struct fs_admin *change,
			bool clear_share, bool clear_limits, gp_error_t *err);
/* A user's administrator values (all has_* false when none). */
struct fs_admin fairshare_admin_get(const fairshare_t *f, const char *user);
/* A user's figures now, as fairshare_users gives them; false when the user is not known. */
bool fairshare_user(fairshare_t *f, const char *user, double now, struct fs_user_view *out);

/* Where the figures are kept, as they change: an ended attempt's use charged, an
 * administrator's values set (the store: fairshare_attach_store, store_fairshare.h). A member
 * NULL: not kept. 0 / -1. */
struct fs_keeper {
	int (*save_usage)(void *arg, const char *user, double cpu_sec, double card_sec, double at);
	int (*save_admin)(void *arg, const char *user, const struct fs_admin *a);
	void *arg;
};
void fairshare_set_keeper(fairshare_t *f, const struct fs_keeper *k);
/* The figures kept before, loaded at start-up: a user's usage decayed to at; an administrator's
 * values (-1: ENOMEM); then fairshare_loaded once. */
void fairshare_load_usage(fairshare_t *f, const char *user, double cpu_sec, double card_sec,
			  double at);
int fairshare_load_admin(fairshare_t *f, const char *user, const struct fs_admin *a);
void fairshare_loaded(fairshare_t *f);

/* Charge a user an ended attempt's use at time now (and save it). 0 / -1 (ENOMEM). */
int fairshare_charge(fairshare_t *f, const char *user, double cpu_sec, double card_sec, double now);
/* Make a user known (a share counted in S) without usage. 0 / -1 (ENOMEM). */
int fairshare_touch(fairshare_t *f, const char *user);

/* One placement pass: running use is added for this pass only. */
void fairshare_pass_begin(fairshare_t *f, double now);
/* A running job's use so far (billing as for fairshare_charge), counted in this pass. */
void fairshare_pass_running(fairshare_t *f, const char *user, double cpu_sec, double card_sec);
/* A user's factor in this pass (after fairshare_pass_begin and the running jobs). */
double fairshare_factor(fairshare_t *f, const char *user);
/* A user's limits. */
struct fs_limits fairshare_limits(const fairshare_t *f, const char *user);

/* Every known user, in name order, as of the last pass; *n their number. The views point
 * into f until the next call that changes it. */
const struct fs_user_view *fairshare_users(fairshare_t *f, double now, size_t *n);
double fairshare_half_life(const fairshare_t *f);
double fairshare_card_weight(const fairshare_t *f);
/* The limits as configured for anyone not listed. */
struct fs_limits fairshare_default_limits(const fairshare_t *f);

#endif
