/* ctrmounts.h: the mounts of a container task's OCI config (docs/containers.md, "How a task
 * runs"): the host's /proc and /sys bound, a /dev, /dev/pts, /dev/shm and /tmp of its own (the
 * host's /dev/shm for a slice of a shared card), the host's name files, the job's working
 * directory, the PMIx server's directory, the card's MPS pipe directory and the driver's files.
 * Every bind of a host path comes after the container's own tmpfs mounts that could hide it.
 */
#ifndef GPOOL_WORKER_STEPD_CTRMOUNTS_H
#define GPOOL_WORKER_STEPD_CTRMOUNTS_H

#include <jansson.h>
#include <stddef.h>

#include "worker/stepd/ctrdev.h"

struct gp_ctr_mounts_in {
	const char *workdir;  /* the job's working directory (bound read-write) */
	const char *pmixdir;  /* --mpi=pmix: the node's PMIx server's directory; NULL: none */
	const char *mps_pipe; /* a shared card's MPS pipe directory; NULL: not a slice */
	const struct gp_ctrdev_file *driver; /* the driver's files (host path, container path) */
	size_t ndriver;
	const char *const *etc; /* host name files present (/etc/hosts, /etc/resolv.conf) */
	size_t netc;
};

/* One mount of an OCI config: {destination, type, source, options: [opts split at ',']}. */
json_t *gp_ctr_mount(const char *dst, const char *type, const char *src, const char *opts);

/* The container's mounts, in order. NULL when out of memory. */
json_t *gp_ctr_mounts(const struct gp_ctr_mounts_in *in);

/* 0 when no mount's destination lies at or under the destination of a mount made after it
 * (which would hide it: a working directory or pipe directory under /tmp bound before the
 * container's own /tmp tmpfs, /etc/hosts before a working directory of /etc); -1 with the
 * first such pair in why. Destinations are compared as written (gstepd's are absolute and
 * normalised). */
int gp_ctr_mounts_check(const json_t *mounts, char *why, size_t len);

#endif
