/* fuzz_oci.c: the JSON documents of a container image archive (worker/stepd/oci.c), the
 * user's bytes that gpool-image reads: index.json, an image manifest, an image config. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/stepd/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err;
	char digest[GP_OCI_DIGEST], path[256];
	static struct gp_oci_manifest m;
	if (gp_oci_index((const char *)data, size, digest, &err) == 0 && !gp_oci_digest_ok(digest))
		abort();
	if (gp_oci_manifest((const char *)data, size, &m, &err) == 0) {
		if (!gp_oci_digest_ok(m.config) || m.nlayers > GP_OCI_LAYERS_MAX)
			abort();
		for (size_t i = 0; i < m.nlayers; i++)
			if (!gp_oci_digest_ok(m.layers[i].digest))
				abort();
	}
	if (gp_oci_config((const char *)data, size, path, sizeof(path), &err) == 0 &&
	    strlen(path) >= sizeof(path))
		abort();
	return 0;
}
