/* store_output.h: jobs' output (output.h) kept in jobs.db as well, when the state is replicated
 * (docs/standby.md, "What is replicated"). The files under STATE_DIR/output are the leader's own
 * disk; each chunk an agent sends, as appended to them, is also a row of the open transaction,
 * so it travels in the commit's Raft entry, and a scheduler that takes the lead writes the
 * files again from the rows, in the order they were appended (output_restore), before it
 * serves: glogs shows the same output before and after a failover. What a file keeps is bounded
 * by output_limit, and so are the rows (a service replica's rotating output is not kept here:
 * a replica runs for weeks, and its newest output is on the node). The rows of a job go when it
 * is purged. With one scheduler nothing is written twice. */
#ifndef GPOOL_SCHED_STORE_OUTPUT_H
#define GPOOL_SCHED_STORE_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct store;

/* Make the table when missing. 0 / -1. */
int store_output_init(struct sqlite3 *db);
/* A chunk of rank's stream (1 stdout, 2 stderr) at offset, as appended. 0 / -1 with errno. */
int store_output_put(struct store *st, uint64_t job, uint32_t rank, int stream, uint64_t offset,
		     const void *data, size_t len);
/* Forget every row of job. 0 / -1 with errno set. */
int store_output_forget(struct store *st, uint64_t job);

struct store_output_row {
	uint64_t job, offset;
	uint32_t rank;
	int stream;
	const void *data;
	size_t len;
};
/* Called for each row in the order they were written; a non-zero return stops the walk and is
 * returned. */
typedef int (*store_output_f)(void *arg, const struct store_output_row *row);
int store_output_each(struct store *st, store_output_f fn, void *arg);

#endif
