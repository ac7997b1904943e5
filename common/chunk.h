/* chunk.h: content-addressed chunks of staged and collected files (docs/staging.md).
 *
 * A file is cut into GP_CHUNK_SIZE pieces, each named by its SHA-256. A chunk directory (the
 * scheduler's <state_dir>/chunks, a node's <state_dir>/cache) holds one file per chunk, named
 * by the hash in hex, written to a temporary name and renamed, so a reader never sees half a
 * chunk. Every read checks the hash again: a chunk whose bytes no longer match is removed and
 * reported as EBADMSG, so the caller fetches it again.
 */
#ifndef GPOOL_CHUNK_H
#define GPOOL_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

#define GP_CHUNK_SIZE (4u << 20)
#define GP_HASH_LEN   32

void gp_chunk_hash(const void *data, size_t len, uint8_t out[GP_HASH_LEN]);
/* 64 hex digits and a NUL. */
void gp_chunk_hex(const uint8_t h[GP_HASH_LEN], char out[2 * GP_HASH_LEN + 1]);

/* dir/<hex>. 0 / -1 (ENAMETOOLONG). */
int gp_chunk_path(const char *dir, const uint8_t h[GP_HASH_LEN], char *buf, size_t len);
/* Is a chunk file there (its bytes unchecked)? */
bool gp_chunk_has(const char *dir, const uint8_t h[GP_HASH_LEN]);
/* Store data as chunk h: -1 with EBADMSG when sha256(data) != h, EFBIG over GP_CHUNK_SIZE,
 * else errno of the file system. Storing a chunk that is there already is a success. */
int gp_chunk_put(const char *dir, const uint8_t h[GP_HASH_LEN], const void *data, size_t len);
/* Store data as chunk h when the caller has checked the hash already. 0 / -1. */
int gp_chunk_write(const char *dir, const uint8_t h[GP_HASH_LEN], const void *data, size_t len);
/* Read chunk h into *data (malloc'd) / *len, hash checked: -1 with ENOENT (absent) or EBADMSG
 * (its bytes do not match: the file is removed). */
int gp_chunk_read(const char *dir, const uint8_t h[GP_HASH_LEN], uint8_t **data, size_t *len);
/* Read chunk h into *data (malloc'd) / *len without hashing it, for a sender whose receiver
 * checks every chunk by its hash: -1 with ENOENT (absent) or EBADMSG (longer than any chunk:
 * the file is removed). */
int gp_chunk_read_unchecked(const char *dir, const uint8_t h[GP_HASH_LEN], uint8_t **data,
			    size_t *len);
/* Check chunk h in place: 0, or -1 with ENOENT / EBADMSG (removed) as gp_chunk_read. */
int gp_chunk_verify(const char *dir, const uint8_t h[GP_HASH_LEN]);

/* The permission bits a manifest entry may carry and a file written from one gets: the rwx
 * bits only. Setuid, setgid and sticky never travel, whoever writes the file (a job must not
 * hand root a setuid copy of a shell through gpool fetch). */
#define GP_MODE_BITS 0777u
/* mode's rwx bits (GP_MODE_BITS); mode 0: dflt's. */
uint32_t gp_mode_plain(uint32_t mode, uint32_t dflt);

/* A manifest entry is sound: a relative path without '..' (gp_stage_name_ok rules), a file's
 * chunk count matching its size and every hash GP_HASH_LEN bytes, a directory with none. */
bool gp_entry_ok(const Gpool__StageEntry *e);
/* How many chunks a file of size bytes has. */
uint64_t gp_chunk_count(uint64_t size);

/* A relative path without '..' components, not empty, not absolute, no trailing slash;
 * plain: no '.' or empty component either. */
bool gp_path_relative_ok(const char *name, bool plain);
/* gp_path_relative_ok(name, true): a staged entry's path. */
bool gp_path_ok(const char *name);

#endif
