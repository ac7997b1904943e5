/* client.h: handlers for the messages user commands send (gsub, gstat, gcancel, gnodes,
 * glogs, gpool). Identity is the credential's uid; only the owner or root may act on a job. */
#ifndef GPOOL_SCHED_CLIENT_H
#define GPOOL_SCHED_CLIENT_H

#include "scheduler/admit.h"
#include "scheduler/gschedd.h"

void client_submit(struct req *r);
void client_job_query(struct req *r);
void client_job_control(struct req *r);
void client_node_query(struct req *r);
void client_node_control(struct req *r);
void client_log_query(struct req *r);
void client_watch(struct req *r);
void client_card_report(struct req *r);

/* Whether gschedd takes a submitted spec, whatever the client checked (a peer's word is not
 * trusted): the reason of the first refusal in why, defaults filled. 0 / -1. */
int client_check_spec(struct gsched *s, Gpool__JobSpec *sp, char *why, size_t len);

/* The submission's own links of the admission chain (admit.h), in the order core.c adds them
 * among the features' checks: the spec (client_check_spec); the shape (an array's indices,
 * the card request); a screening job's submitter; the owner (identity.h); room in the queue
 * (max_jobs); a spec that reads back as it is stored. */
int client_admit_spec(struct gsched *s, struct admission *a);
int client_admit_shape(struct gsched *s, struct admission *a);
int client_admit_screen(struct gsched *s, struct admission *a);
int client_admit_owner(struct gsched *s, struct admission *a);
int client_admit_room(struct gsched *s, struct admission *a);
int client_admit_storable(struct gsched *s, struct admission *a);

#endif
