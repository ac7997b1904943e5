/* oci.h: the JSON documents of an OCI image archive (index.json, an image manifest, an image
 * config) read into what gpool-image needs (docs/containers.md). Their bytes are the user's:
 * every field is checked, sizes are bounded, and a bad document is an error, never a crash
 * (tests/fuzz/fuzz_oci.c).
 */
#ifndef GPOOL_WORKER_STEPD_OCI_H
#define GPOOL_WORKER_STEPD_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GP_OCI_LAYERS_MAX 256
#define GP_OCI_DIGEST	  72 /* "sha256:" + 64 hex + NUL, rounded */

struct gp_oci_layer {
	char digest[GP_OCI_DIGEST];
	int64_t size; /* -1: not given */
	bool zstd;
};

struct gp_oci_manifest {
	char config[GP_OCI_DIGEST];
	size_t nlayers;
	struct gp_oci_layer layers[GP_OCI_LAYERS_MAX];
};

/* d is "sha256:" and 64 lowercase hex digits. */
bool gp_oci_digest_ok(const char *d);

/* index.json: the digest of its first manifest. 0 / -1 with err. */
int gp_oci_index(const char *json, size_t len, char digest[GP_OCI_DIGEST], gp_error_t *err);

/* An image manifest: its config's digest and its layers. 0 / -1 with err. */
int gp_oci_manifest(const char *json, size_t len, struct gp_oci_manifest *m, gp_error_t *err);

/* An image config: refused when its os is not linux; the PATH of its Env into path ("" when
 * it names none). 0 / -1 with err. */
int gp_oci_config(const char *json, size_t len, char *path, size_t pathlen, gp_error_t *err);

#endif
