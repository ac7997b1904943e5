/* store.h: gschedd's durable state in SQLite (WAL, synchronous=FULL by default).
 *
 * Writes go into one open transaction; store_commit_due() says when the group-commit window
 * (commit_delay) has passed, and store_commit() makes everything durable at once. Nothing that
 * depends on a write (a reply, a launch order) leaves the scheduler before that commit.
 */
#ifndef GPOOL_STORE_H
#define GPOOL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

struct store;
struct sqlite3;

/* The store's database, for the tables of the features' own (store_*.h). */
struct sqlite3 *store_db(struct store *st);
struct job;

struct store *store_create(const char *dir, const char *sync_mode, int64_t commit_delay_ms,
			   gp_error_t *err);
void store_destroy(struct store **st);

/* Replication (repl.h): from now on each commit first hands its changes (a SQLite changeset,
 * every table) to fn, and rolls back instead when fn returns -1 (err filled: store_commit's
 * error says why); after a commit that fn accepted, done(arg) is called. Call it with no
 * transaction open. 0 / -1 with errno set. */
typedef int (*store_replicate_f)(void *arg, const void *changeset, size_t len, gp_error_t *err);
typedef void (*store_replicated_f)(void *arg);
int store_set_replication(struct store *st, store_replicate_f fn, store_replicated_f done,
			  void *arg);

/* Save a new job with its full spec (NULL for an array's later tasks: they share the first
 * task's) and the client's submission token (NULL: none). */
int store_job_insert(struct store *st, const struct job *j, const uint8_t *spec, size_t len,
		     const char *token);
/* The tasks of array array_id (job ids and task indices, by id; malloc'd). 0 / -1. */
int store_array_tasks(struct store *st, uint64_t array_id, uint64_t **ids, uint32_t **tasks,
		      size_t *n);
/* The job a (uid, token) submission made, 0 when none. */
uint64_t store_job_by_token(struct store *st, uint32_t uid, const char *token);
/* How far a dependency's target got: job `id` (every task, when it is an array's id), or task
 * `task` of array `id` when has_task. t->exists false when there is no such job. 0 / -1. */
struct gp_dep_target;
int store_dep_target(struct store *st, uint64_t id, bool has_task, uint32_t task,
		     struct gp_dep_target *t);
/* Save the job's changing fields (state, attempt, times, exit code, placement, ...). */
int store_job_update(struct store *st, const struct job *j);
/* Replace a job's stored spec (a service's replica count), in the open transaction. */
int store_job_spec_update(struct store *st, uint64_t id, const uint8_t *spec, size_t len);
/* Load the full spec of a job (free with gpool__job_spec__free_unpacked). */
Gpool__JobSpec *store_job_spec(struct store *st, uint64_t id);

/* Load jobs at start-up: calls fn for every job (not final ones only when active_only). */
typedef int (*store_load_f)(void *arg, struct job *j);
int store_load(struct store *st, bool active_only, store_load_f fn, void *arg);
uint64_t store_max_job_id(struct store *st);

/* Finished jobs for history queries; calls fn for each match (newest first). */
typedef int (*store_hist_f)(void *arg, struct job *j);
int store_history(struct store *st, uint32_t uid_filter, bool any_uid, double since, double until,
		  uint32_t limit, store_hist_f fn, void *arg);

/* The same over the summary rows of jobs retention purged (gacct shows them). */
int store_summary_history(struct store *st, uint32_t uid_filter, bool any_uid, double since,
			  double until, uint32_t limit, store_hist_f fn, void *arg);

/* Retention (retention.c). Finished jobs that ended before cutoff (wall-clock seconds), oldest
 * first, at most max, into ids (*n of them); an array's first task, whose spec its other tasks
 * share, only once no other task of its array is left. 0 / -1 with errno set. */
int store_purge_candidates(struct store *st, double cutoff, uint64_t *ids, size_t max, size_t *n);
/* In the open transaction: keep job id's accounting fields as a summary row (job_summary) and
 * delete its row (spec, token, placement). 0 / -1 with errno set. */
int store_purge_job(struct store *st, uint64_t id, double now);

/* The state gschedd owns of a node's cards (state, reason, grade, throughput, screen_job) and
 * what identifies each card (uuid, index, PCI bus id, model, fake): replaces the node's rows,
 * in the open transaction. 0 / -1 with errno set. */
int store_cards_save(struct store *st, const char *node, Gpool__Card *const *cards, size_t n);
/* At start-up: calls fn for every stored card, with a Gpool__Card holding those fields only,
 * which fn owns (free with gpool__card__free_unpacked). 0 / -1 with errno set (fn's -1: ENOMEM). */
typedef int (*store_card_f)(void *arg, const char *node, Gpool__Card *card);
int store_cards_load(struct store *st, store_card_f fn, void *arg);

/* A node registered: remember its name (in the open transaction; a name seen before is kept
 * as it is). 0 / -1 with errno set. */
int store_node_known(struct store *st, const char *node);
/* A whole node drained (gnodes drain NODE, with its reason) or resumed: kept in the open
 * transaction. 0 / -1 with errno set. */
int store_node_drain(struct store *st, const char *node, bool drain, const char *reason);
/* At start-up: calls fn with the name of every node that ever registered, whether it is
 * drained and why ("" when not). 0 / -1 with errno set (fn's -1: ENOMEM). */
typedef int (*store_node_f)(void *arg, const char *node, bool drain, const char *reason,
			    bool member);
/* A node left the pool's members (declared DOWN: false) or joined them again (it registered:
 * true), kept in the open transaction (docs/reliability.md, "Scheduler outages"). */
int store_node_member(struct store *st, const char *node, bool member);
int store_nodes_load(struct store *st, store_node_f fn, void *arg);

/* The chunk store's users (docs/security.md, Files): uid may use chunk hash (len bytes) from
 * now on, because it sent the chunk's bytes or owns a job whose file set holds it. In the open
 * transaction; a uid granted twice is kept once. 0 / -1 with errno set. */
int store_chunk_grant(struct store *st, const uint8_t *hash, size_t len, uint32_t uid);
/* May uid use chunk hash (uncommitted grants included)? 1 / 0, -1 with errno set. */
int store_chunk_may(struct store *st, const uint8_t *hash, size_t len, uint32_t uid);

bool store_in_txn(const struct store *st);
/* Are the commits replicated (store_set_replication)? */
bool store_replicated(const struct store *st);
/* Open the group-commit transaction unless one is open (a write of another file, such as
 * store_reqid.c, goes into it). 0 / -1. */
int store_txn_begin(struct store *st);
/* Make the open transaction roll back at its commit (what it carries is refused). */
void store_fail_txn(struct store *st);
int store_commit(struct store *st, gp_error_t *err);
/* Node names for the placement column. */
void store_set_node_namer(const char *(*fn)(int idx));
/* Statistics for the benchmark. */
void store_stats(const struct store *st, uint64_t *commits, uint64_t *rows);

/* Load one job (any state) from the store; NULL with ENOENT when unknown. */
struct job *store_job_load(struct store *st, uint64_t id);
/* Load a purged job's summary row; NULL with ENOENT when there is none. */
struct job *store_summary_load(struct store *st, uint64_t id);
#endif
