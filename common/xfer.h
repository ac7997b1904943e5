/* xfer.h: moving files through the scheduler's chunk store (docs/staging.md).
 *
 * A set of files is described by a manifest (StageEntry: path, mode, size, chunk hashes).
 * Uploading asks the store which chunks it lacks (ChunkHave) and sends only those (ChunkPut);
 * fetching asks for chunks (ChunkGet) and checks each hash before using it. Requests are
 * pipelined: a few are in flight at once over the one authenticated connection, so the link
 * stays busy while MUNGE and SHA-256 run on either side.
 */
#ifndef GPOOL_XFER_H
#define GPOOL_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/sched_client.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* Counters of one transfer. */
struct gp_xfer_stats {
	uint64_t files, dirs, bytes;	  /* what the manifest holds */
	uint64_t chunks;		  /* distinct chunks in it */
	uint64_t sent_chunks, sent_bytes; /* uploaded */
	uint64_t got_chunks, got_bytes;	  /* fetched from the scheduler */
	uint64_t cached_chunks;		  /* found (hash checked) in the local cache */
	uint64_t peer_chunks, peer_bytes; /* of got_*: fetched from peers, not the scheduler */
	uint64_t refused_chunks;	  /* cached or received bytes whose hash did not match */
};

/* A manifest: entries in the order of the paths given, directories before what they hold. */
struct gp_manifest {
	Gpool__StageEntry **e;
	size_t n, cap;
	char **src; /* local path of each entry (NULL: none) */
};

void gp_manifest_release(struct gp_manifest *m);
/* Add path (a file, or a directory taken recursively) under the name `as` (a relative path).
 * Hashes every file's chunks. Symbolic links inside a directory are skipped (not followed).
 * 0 / -1 with err. */
int gp_manifest_add(struct gp_manifest *m, const char *path, const char *as, gp_error_t *err);
/* Add one open regular file (fd is read, not closed) as `as`. 0 / -1 with err. */
int gp_manifest_add_fd(struct gp_manifest *m, int fd, const char *as, uint32_t mode,
		       gp_error_t *err);

/* Add a directory entry (nothing under it). 0 / -1 with err. */
int gp_manifest_add_dir(struct gp_manifest *m, const char *as, uint32_t mode, gp_error_t *err);

/* Reads len bytes at off of entry i's file into buf: 0 / -1. */
typedef int (*gp_xfer_read_f)(void *arg, size_t i, uint64_t off, void *buf, size_t len);

/* Upload the chunks of e[0..n) that the store lacks. read NULL: from m->src paths (then
 * arg is the manifest). 0 / -1 with err. */
int gp_xfer_upload(gp_client_t *c, Gpool__StageEntry *const *e, size_t n, gp_xfer_read_f read,
		   void *arg, struct gp_xfer_stats *st, gp_error_t *err);
int gp_xfer_upload_manifest(gp_client_t *c, const struct gp_manifest *m, struct gp_xfer_stats *st,
			    gp_error_t *err);

/* The nodes of a job that fetch the same manifest together, as a chain: node 0 fetches from
 * the scheduler, node i from node i-1's agent (worker/agent/peer.c), in the same order, while node
 * i-1 is still receiving (the agent holds a request for a chunk not there yet). What a peer
 * does not give (dead, stalled, a chunk whose hash does not match) comes from the scheduler. */
struct gp_xfer_peers {
	char *const *eps; /* each node's peer endpoint */
	size_t n;
	size_t self;		     /* this node's index */
	const struct gp_config *cfg; /* for the connections */
	uid_t uid;		     /* the agents' uid: peers' replies must carry it */
	bool any;		     /* lazy staging: no chain; every other node is asked,
				      * nearest first, for what it has now (no holding) */
};

/* Make sure every chunk of e[0..n) is in cache_dir, hash checked: chunks there are checked,
 * missing or damaged ones fetched (as an agent: any chunk); peers NULL: all from c.
 * 0 / -1 with err. */
int gp_xfer_fetch_cache(gp_client_t *c, Gpool__StageEntry *const *e, size_t n,
			const char *cache_dir, const struct gp_xfer_peers *peers,
			struct gp_xfer_stats *st, gp_error_t *err);

/* Make sure chunks [k0, k1) of file e are in cache_dir, as gp_xfer_fetch_cache (the ranged
 * reads of a lazily staged file: docs/staging.md). 0 / -1 with err (EINVAL: out of range). */
int gp_xfer_fetch_chunks(gp_client_t *c, Gpool__StageEntry *e, uint64_t k0, uint64_t k1,
			 const char *cache_dir, const struct gp_xfer_peers *peers,
			 struct gp_xfer_stats *st, gp_error_t *err);

/* Download a file set's files into dest (a directory, made if absent), as the caller: each
 * chunk is asked for with job/kind/name (the store checks the caller owns the job). A file
 * there already is replaced. 0 / -1 with err. */
int gp_xfer_download(gp_client_t *c, uint64_t job_id, const char *kind, const char *name,
		     Gpool__StageEntry *const *e, size_t n, const char *dest,
		     struct gp_xfer_stats *st, gp_error_t *err);

/* Store a file set with the job (FileSetPut). 0 / -1 with err. */
int gp_xfer_set_put(gp_client_t *c, uint64_t job_id, const char *kind, const char *name,
		    Gpool__StageEntry *const *e, size_t n, gp_error_t *err);
/* Read file sets (FileSetGet; name "" for every set of the kind). The reply lives until the
 * client's next call. NULL with err (errno ENOENT when the store has none). */
Gpool__FileSetGetReply *gp_xfer_set_get(gp_client_t *c, uint64_t job_id, const char *kind,
					const char *name, gp_error_t *err);

/* "3 files, 1 directory, 200.0 MiB" */
void gp_xfer_describe(const struct gp_xfer_stats *st, char *buf, size_t len);

#endif
