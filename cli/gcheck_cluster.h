/* gcheck_cluster.h: gcheck --cluster: screen every card of the cluster, one job per card.
 *
 * Each job is a screening job (JobSpec.screen, so only root or the agents' account may
 * submit them) pinned to its node (nodelist) and card (gpu_index) that runs `gcheck --json`
 * on that card. When the job's task ends, the node's agent reads the result gcheck wrote and
 * reports the card's grade to gschedd itself (worker/agent/relay.c): a failed card is drained as
 * with `gcheck --report`. gcheck --cluster waits for the jobs, reads each one's JSON output
 * and what gschedd now holds for the card, and prints one table (or --json) for the cluster.
 */
#ifndef GPOOL_CLI_GCHECK_CLUSTER_H
#define GPOOL_CLI_GCHECK_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "cards/check.h"
#include "common/error.h"
#include "cli/lib/session.h"

#define GCHECK_CLUSTER_MAX_PROFILES 64

struct gcheck_cluster {
	bool on;
	bool no_wait;	     /* submit, print the job ids, do not wait */
	const char *nodes;   /* host list; NULL: every node */
	uint32_t time_limit; /* of each job, seconds; 0: from the duration */
	const char *gcheck;  /* the gcheck the jobs run; NULL: this one */
	/* test only: a measurement profile for one card (NODE:CARD=NAME) */
	struct {
		char node[64];
		int card;
		const char *profile;
	} profiles[GCHECK_CLUSTER_MAX_PROFILES];
	int nprofiles;
};

/* Add one "NODE:CARD=NAME" profile. 0 / -1 (errno EINVAL, err filled). */
int gcheck_cluster_add_profile(struct gcheck_cluster *c, const char *arg, gp_error_t *err);

/* Submit the jobs and, unless no_wait, wait and print the results. gcheck's exit status: 0
 * every screened card good or warn, 1 a card failed, 3 a card could not be screened or its
 * grade did not reach gschedd (or nothing could be submitted). */
int gcheck_cluster_run(const struct gcheck_cluster *c, const struct gp_check_opts *o,
		       const struct gp_cli_common *common);

#endif
