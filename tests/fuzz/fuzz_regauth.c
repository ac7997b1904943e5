/* fuzz_regauth.c: a registry auth file (worker/stepd/regauth.c), the user's bytes that gstepd,
 * as root, reads for the login of an image's registry: whatever it picks is base64 only and
 * fits the bound, for a few registries and paths. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/stepd/regauth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[][2] = {
	    {"reg:5000", "team/x"}, {"reg:5000", "x"}, {"registry.lan", "a/b/c"}, {"h", ""}};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char out[GP_REGAUTH_MAX];
		gp_error_t err;
		int rc = gp_regauth_pick((const char *)data, size, names[i][0], names[i][1], out,
					 sizeof(out), &err);
		if (rc == 1 && (!*out || strlen(out) >= GP_REGAUTH_MAX ||
				strspn(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					    "0123456789+/=") != strlen(out)))
			abort();
		if (rc < -1 || rc > 1)
			abort();
	}
	return 0;
}
