/* pull.h: a container image from a registry on the LAN (gsub --container HOST:PORT/NAME:TAG,
 * docs/containers.md), pulled once per node with skopeo into <state_dir>/images/pulled as an
 * OCI archive named by its manifest's digest, which container.c then unpacks as it unpacks a
 * staged archive.
 *
 * The tag is resolved on every use (one manifest request: a tag may move), the blobs are
 * fetched only when the node has no archive of that manifest digest; concurrent pulls of one
 * image on one node wait for the first (a lock per digest). skopeo checks every blob against
 * its digest, the manifest is pulled by the digest gstepd computed from the bytes it resolved,
 * and the sizes the manifest declares and every file skopeo writes are bounded. The archives
 * kept are bounded too (keep_bytes): after a pull the least recently used go first, each
 * removed under its digest's lock (a job that opened one keeps reading it).
 *
 * A private registry: the tag is resolved with the job owner's own login (regauth.h), for every
 * job, so a node's archive of an image serves only jobs whose owners the registry lets read it;
 * the blobs are fetched, by digest, with the login of the job that resolved them.
 */
#ifndef GPOOL_WORKER_STEPD_PULL_H
#define GPOOL_WORKER_STEPD_PULL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "worker/node/account.h"

struct gp_pull_opts {
	const char *images_dir; /* <state_dir>/images (root's) */
	const char *insecure;	/* container_insecure_registries: hosts spoken to over HTTP */
	uint64_t max_bytes;	/* container_pull_max: the largest image pulled (0: no bound) */
	/* the archives kept: after a pull, the least recently used go while they hold more
	 * (the unpacked trees have their own bound, container.c); 0: no bound */
	uint64_t keep_bytes;
	const char *skopeo; /* the program (NULL: "skopeo" on PATH) */
	/* the job's owner, whose login for the registry (regauth.h) the tag is resolved with
	 * (NULL: anonymously) */
	const struct gp_account *owner;
};

struct gp_pull_result {
	int fd;		 /* the archive, read-only, at offset 0 */
	char key[65];	 /* the unpacked image's cache key (from the manifest digest) */
	char digest[72]; /* the manifest's "sha256:..." */
	bool pulled;	 /* its blobs were fetched now (false: the node had them) */
	uint64_t bytes;	 /* the archive's size */
	double seconds;	 /* resolve and pull */
};

/* Resolve ref, pull it unless the node has it, open the archive. 0 / -1 with err (what the
 * job's failure reason says: no such image, an unreachable registry, a digest mismatch, too
 * large). */
int gp_pull_image(const char *ref, const struct gp_pull_opts *o, struct gp_pull_result *res,
		  gp_error_t *err);

#endif
