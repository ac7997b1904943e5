/* store_files.h: a job's file sets (checkpoints, collected files) and the bytes of their chunks
 * kept in jobs.db as well, when the state is replicated (docs/standby.md, "What is replicated").
 * The chunk store and the set files under STATE_DIR are the leader's own disk: a standby that
 * takes over has neither. Written in the open transaction, these rows travel in the commit's
 * Raft entry, so a checkpoint put is acknowledged only once a majority holds its bytes; a new
 * leader writes them back into its chunk store and STATE_DIR/files (files_restore) before it
 * serves. One row per set, one per distinct chunk of it; a put replaces the set's rows.
 * A chunk's bytes are kept once, in the first row of its hash: the others are references
 * (empty), and bytes whose row goes move to a row that still refers to them. A submission's
 * staged input is kept the same way (kind "stage"), so that a job still waiting when the
 * leader is lost stages from the new one. */
#ifndef GPOOL_SCHED_STORE_FILES_H
#define GPOOL_SCHED_STORE_FILES_H

#include <stddef.h>
#include <stdint.h>

struct sqlite3;
struct store;

/* Make the tables when missing. 0 / -1. */
int store_files_init(struct sqlite3 *db);

/* One chunk of a set: its hash (GP_HASH_LEN bytes) and bytes. */
struct store_chunk {
	const uint8_t *hash;
	const void *data;
	size_t len;
};

/* Keep set (packed Gpool__FileSet, len bytes) of job's kind/name, owned by uid, with the bytes
 * of its n distinct chunks, replacing what was kept under that name, in the open transaction;
 * set NULL: forget what was kept under that name. A chunk whose data is NULL must be held by
 * another row already (a reference). 0 / -1 with errno set. */
int store_files_put(struct store *st, uint64_t job, const char *kind, const char *name,
		    uint32_t uid, const void *set, size_t len, const struct store_chunk *c,
		    size_t n);

/* Forget every set of job (the job purged). 0 / -1 with errno set. */
int store_files_forget(struct store *st, uint64_t job);

/* Called for each kept set, then for each kept chunk (set NULL, chunk c). A non-zero return
 * stops the walk and is returned. */
typedef int (*store_files_f)(void *arg, uint64_t job, const char *kind, const char *name,
			     uint32_t uid, const void *set, size_t len,
			     const struct store_chunk *c);
int store_files_each(struct store *st, store_files_f fn, void *arg);

#endif
