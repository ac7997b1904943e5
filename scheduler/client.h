/* client.h: handlers for the messages user commands send (gsub, gstat, gcancel, gnodes,
 * glogs, gpool). Identity is the credential's uid; only the owner or root may act on a job. */
#ifndef GPOOL_SCHED_CLIENT_H
#define GPOOL_SCHED_CLIENT_H

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

#endif
