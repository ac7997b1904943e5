/* staging.h: a job's working directory on this node and the files shipped into it.
 *
 * The scratch directory <scratch_dir>/job<id>.<attempt> is made by root and handed to the task
 * account (mode 0700); the script and staged files are then written by a child running as that
 * account, so no path a user controls is ever followed with root's rights. It is one per
 * attempt: a requeued job's next attempt may start on a node while the gstepd of its previous
 * attempt there is still ending, and that gstepd removes its own directory, not the new one's.
 */
#ifndef GPOOL_WORKER_STAGING_H
#define GPOOL_WORKER_STAGING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/node/account.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* A staged file name is a relative path without '..' components (and not empty). */
bool gp_stage_name_ok(const char *name);

/* The scratch directory of a job attempt: "<scratch_root>/job<id>.<attempt>". 0 / -1
 * (ENAMETOOLONG). */
int gp_stage_scratch_path(const char *scratch_root, uint64_t job_id, uint32_t attempt, char *buf,
			  size_t len);

/* Check the scratch root (made, mode 0755, when absent), opened without following a link: a
 * real directory owned by root (by this process's uid, for an unprivileged agent), not
 * writable by group or other unless sticky. gworkerd refuses to start on a bad one, and every
 * job directory is checked again. 0 / -1 with err. */
int gp_stage_scratch_check(const char *scratch_root, gp_error_t *err);

/* Make (or check) the working directory. With spec.chdir it must exist; else
 * <scratch_root>/job<id>.<attempt> is created under the checked scratch root
 * (gp_stage_scratch_check), given to the account and set to mode 0700 through a descriptor
 * opened without following links. *dir is malloc'd;
 * *owned says whether gpool made it (and removes it at the end). 0 / -1 with err. */
int gp_stage_workdir(const Gpool__Launch *l, const char *scratch_root, const struct gp_account *a,
		     char **dir, bool *owned, gp_error_t *err);

/* Write spec.script (as argv[0] names it, mode 0700) and spec.files into dir as the account.
 * 0 / -1 with err. */
int gp_stage_files(const Gpool__JobSpec *spec, const char *dir, const struct gp_account *a,
		   gp_error_t *err);

/* Materialize a staged manifest (spec.stage) in dir as the account, copying every file's
 * chunks from cache_dir (where gp_xfer_fetch_cache put them, hash checked). The chunk files
 * are opened as root first, then the writing runs as the account. 0 / -1 with err. */
int gp_stage_manifest(const Gpool__JobSpec *spec, const char *dir, const struct gp_account *a,
		      const char *cache_dir, gp_error_t *err);

/* Write chunks [k0, k1) of the lazily staged file e into fd (at their offsets), each read from
 * cache_dir with its hash checked: 0 / -1 with errno and err (EBADMSG: a chunk does not match
 * its hash or its length: it is removed from the cache and not written; ENOENT: not in the
 * cache; EINVAL: out of range). */
int gp_stage_lazy_fill(int fd, const Gpool__StageEntry *e, uint64_t k0, uint64_t k1,
		       const char *cache_dir, gp_error_t *err);

#endif
