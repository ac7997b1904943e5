/* repl.h: a standby scheduler's replication (repl.c), part of the shell. With sched_peers set,
 * two or three gschedd keep one state with Raft (the dqlite project's libraft, its libuv
 * transport and on-disk log, in a thread of its own). Each of the leader's group commits
 * (store.c) becomes one Raft entry, a SQLite changeset; every replica applies the committed
 * entries to its own jobs.db, and a snapshot is the jobs.db file. docs/standby.md.
 *
 * gschedd's thread calls everything here; the Raft thread never calls gschedd. The process
 * must ignore SIGPIPE (a member's socket may close under Raft's writes).
 */
#ifndef GPOOL_SCHED_REPL_H
#define GPOOL_SCHED_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

struct repl;

/* One scheduler of sched_peers ("1@198.18.0.2:7830, 2@198.18.0.3:7830, 3@host:7830"). */
struct repl_peer {
	uint64_t id;
	char address[128]; /* HOST:PORT of its Raft transport */
	char host[112];	   /* HOST alone: its client endpoint is tcp://HOST:<listen's port> */
};

/* Parse sched_peers into peers (at most max). Returns how many, or -1 with err filled (an
 * empty list, a bad id, a duplicate id, an address without a port). */
int repl_parse_peers(const char *spec, struct repl_peer *peers, int max, gp_error_t *err);

/* Start this scheduler's Raft member `id` of `peers`, its log in STATE_DIR/raft. jobs.db is
 * made empty first (the schema alone): the log and its snapshot rebuild it. client_port: the
 * port of gschedd's listen endpoint, for the leader's client endpoint. Raft connections carry
 * a MUNGE credential of sched_uid (or root), checked on arrival (repl_auth.h). NULL with err
 * filled. */
struct repl *repl_create(const char *state_dir, uint64_t id, const char *peers,
			 const char *client_port, uid_t sched_uid, gp_error_t *err);
/* Stop the Raft thread (what it has acknowledged is on disk) and free. */
void repl_destroy(struct repl **r);

/* True while this scheduler leads and has applied every entry committed before its term:
 * it may load jobs.db and serve. */
bool repl_leading(struct repl *r);
/* True once this scheduler was leading and no longer is (or its Raft thread failed): its
 * memory may differ from what the majority holds, and it must start again as a standby. */
bool repl_deposed(struct repl *r);
/* The leader's client endpoint (tcp://HOST:PORT) into buf, "" when no leader is known. */
void repl_leader_endpoint(struct repl *r, char *buf, size_t len);
/* A line for the log and gstat: role, term-less leader id, last index applied. */
void repl_describe(struct repl *r, char *buf, size_t len);

/* Replicate one group commit (a changeset of len bytes): returns 0 once a majority holds it
 * and it is this replica's turn to apply it; the caller then commits its open transaction and
 * calls repl_applied() (the Raft thread waits for that, so that a snapshot holds it). -1 with
 * err filled: not leading, or leadership lost before the entry was known committed (the
 * caller rolls back; repl_deposed() then says so). */
int repl_replicate(struct repl *r, const void *changeset, size_t len, gp_error_t *err);
void repl_applied(struct repl *r);

#endif
