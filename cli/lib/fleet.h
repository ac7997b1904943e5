/* fleet.h: every node's cards (power limits, models), copied out of a NodeQueryReply so they
 * outlive the next call on the session; for power and cost reports. */
#ifndef GP_CLI_FLEET_H
#define GP_CLI_FLEET_H

#include <stddef.h>

#include "cli/lib/cost.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "cli/lib/session.h"

struct fleet {
	size_t n;
	char **name; /* node names */
	size_t *ncards;
	double **watts; /* per card */
	char ***model;	/* per card */
	double *psu;
};

int gp_fleet_load(gp_session_t *s, struct fleet *f, gp_error_t *err);
void gp_fleet_free(struct fleet *f);

/* The cost of one job's cards over its run (or until now when still running); energy from
 * the job's record when it has one. Returns the number of cards it held. */
int gp_job_cost(const struct fleet *f, const struct gp_prices *p, const Gpool__JobInfo *j,
		double now, struct gp_cost *c);

/* Where gp_job_cost's energy comes from, in words: the job's record's sources ("counter",
 * "sampled", "upper bound", joined with '+'); "accounted" for a record kept before the
 * sources were; "upper bound" without a record (power limits over the run time). */
void gp_job_energy_from(const Gpool__JobInfo *j, char *buf, size_t len);

#endif
