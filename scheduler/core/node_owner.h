/* node_owner.h: what the core knows of a PC's owner (docs/owner.md): what its agent last said
 * and the histogram of the owner's activity by hour of the week, from which placement prefers
 * the PC most likely to stay free for a job's time limit. The owner feature
 * (scheduler/features/owner.h) fills it from the agents' reports and keeps it in the store. */
#ifndef GPOOL_SCHED_NODE_OWNER_H
#define GPOOL_SCHED_NODE_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

struct gsched;

#define OWNER_HOURS 168
/* the weight a new week's observation of an hour gets against the history: 0.25 (about a
 * quarter of the history goes each week; an hour's history halves in about 2.4 weeks) */
#define OWNER_DECAY_NEW 0.25

/* A node's owner: what its agent last said, and the histogram. */
struct node_owner {
	bool known;  /* its agent reports an owner */
	bool active; /* no new job here */
	double since;
	char source[16];
	int policy; /* Gpool__OwnerPolicy */
	bool hist_loaded;
	bool hist_any;		  /* some hour has been observed */
	double hist[OWNER_HOURS]; /* the fraction of each hour of the week the owner was active */
	uint16_t weeks[OWNER_HOURS]; /* observations of it (capped) */
	double last_end;	     /* the end of the last hour counted (each counted once) */
	Gpool__OwnerState msg;	     /* for NodeInfo (source points into source) */
};

/* Fold one hour's observation (fraction active, 0..1) into a histogram. */
void owner_hist_add(struct node_owner *o, int hour_of_week, double fraction);
/* The chance that a PC with this history stays free from `start` (unix s) for `secs` (0: an
 * hour): the product over the hours of the week the span covers of (1 - fraction active),
 * each to the part of it covered. 1 with no history. */
double owner_free_chance(const struct node_owner *o, double start, uint32_t secs);
/* The hour of the week (Monday 00:00 local time = 0) of unix time t. */
int owner_hour_of_week(double t);
/* Node n's owner, NULL when n is not known. */
struct node_owner *owner_of(struct gsched *s, int node);

#endif
