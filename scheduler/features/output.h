/* output.h: each job's stdout and stderr, streamed by the agents and kept in files under
 * <state_dir>/output/<job>/, named by the job's -o/-e patterns (%j job id, %t rank, %u user,
 * %x job name; stderr goes with stdout unless -e is given). Log queries read them; a query with
 * `wait` is held up to about a second until there is news (output or a state change).
 */
#ifndef GPOOL_OUTPUT_H
#define GPOOL_OUTPUT_H

#include "scheduler/core/gschedd.h"

struct output *output_create(const char *state_dir, uint64_t limit, gp_error_t *err);
/* Output kept per job and stream from now on (what is over it already stays). */
void output_set_limit(struct output *o, uint64_t limit);
void output_destroy(struct output **o);

/* Append a chunk from an agent (duplicates and overlaps are dropped by offset). */
void output_write(struct gsched *s, struct job *j, const Gpool__Output *chunk);
/* Answer a LogQuery now or hold it. */
void output_query(struct gsched *s, struct req *r, struct job *j, const Gpool__LogQuery *q);
/* Wake the queries and watches waiting on j. */
/* Watch the core's job events (events.h): a changed job wakes its long polls. 0 / -1. */
int output_subscribe(struct gsched *s);
void output_job_changed(struct gsched *s, struct job *j);
/* Answer held queries whose time is up. */
void output_tick(struct gsched *s);
/* A scheduler that takes the lead: the jobs' output files written again from the replicated
 * rows (store_output.h), the tasks' offsets with them. 0 / -1 with errno set. */
int output_restore(struct gsched *s);
/* Remove a job's output directory (retention). 0 / -1 with errno set (ENOENT: it had none). */
int output_remove(struct output *o, uint64_t job_id);
/* Expand a pattern for one rank into buf (a file name, never a path). */
void output_name(const struct job *j, const char *pattern, uint32_t rank, char *buf, size_t len);

#endif
