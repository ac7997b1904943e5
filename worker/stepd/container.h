/* container.h: a job's tasks in an OCI container (gsub --container, docs/containers.md).
 *
 * The image is the job's staged entry named by JobSpec.container: an OCI image archive whose
 * chunks the node's cache holds once stage_manifest has run; or a registry's image, pulled as
 * an OCI archive into <state_dir>/images/pulled once per node (pull.h). step_container_prepare
 * unpacks it, once per node and account, into <state_dir>/images/u<uid>/<key> (key: the SHA-256 of
 * the archive's chunk hashes, so the same bytes are the same entry), running gpool-image as the
 * account; entries no running job holds are removed, least recently used first, while the
 * cache is above its bound. Each task then runs as `crun run` on a bundle gstepd writes
 * (root's, under <state_dir>/containers), started where any task starts: in the job's cgroup
 * (crun with --cgroup-manager=disabled stays there), so the job's limits and card rules hold.
 */
#ifndef GPOOL_WORKER_STEPD_CONTAINER_H
#define GPOOL_WORKER_STEPD_CONTAINER_H

#include <stdint.h>

#include "common/error.h"

struct step;
struct task;

/* The node's settings for images (gpool.conf). */
struct step_ctr_opts {
	uint64_t cache_max;		 /* image_cache: bytes of unpacked images (0: no bound) */
	uint64_t pull_max;		 /* container_pull_max: the largest pull (0: no bound) */
	const char *insecure_registries; /* container_insecure_registries: plain HTTP to these */
	const char *skopeo;		 /* NULL: skopeo on PATH */
};

/* Unpack (or find) the step's image and hold it (a shared lock on its cache entry) until
 * step_container_release. The image is the staged archive JobSpec.container names, or, when
 * that is a registry's image name (HOST:PORT/NAME:TAG), the image pulled from there once per
 * node (pull.h). state_dir is the agent's. 0 / -1 with err (what is wrong with the image, for
 * the job's failure reason). */
int step_container_prepare(struct step *s, const char *state_dir, const struct step_ctr_opts *o,
			   gp_error_t *err);

/* Write task t's bundle (config.json: its argv, environment, user, working directory, mounts
 * and its cards' devices) and return the argv that runs it: crun ... run --bundle DIR ID
 * (malloc'd, free with step_container_argv_free). NULL with err. */
char **step_container_argv(struct step *s, struct task *t, gp_error_t *err);
void step_container_argv_free(char **argv);

/* In task t's child, in the mount namespace of its own it made (MS_SLAVE), before it runs
 * crun: put the image's tree at t->croot, the bundle's root path, as an overlay whose upper
 * layer is a tmpfs of the task's (so what crun makes there stays out of the node's cached
 * copy), or bound as it is where overlayfs cannot be used. crun sets the container up inside
 * the user namespace, whose root cannot search the cache entry (root's, 0700): the mount,
 * under /run/gpool/ctr (0711), is a path it can, and exists in that namespace only.
 * Async-signal-safe. 0 / -1 with errno. */
int step_container_bind(const struct step *s, const struct task *t);

/* Remove the step's bundles and let go of its image. NULL-safe, idempotent. */
void step_container_release(struct step *s);

#endif
