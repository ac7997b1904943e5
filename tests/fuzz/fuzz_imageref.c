/* fuzz_imageref.c: registry image names (common/imageref.c), the user's text that reaches
 * skopeo's command line on every node: whatever parses must be made of the characters the
 * grammar allows, and its transport name must fit. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/imageref.h"

static void only(const char *s, const char *allowed)
{
	if (s[strspn(s, allowed)])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[1100], t[1200];
	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct gp_imageref r;
	gp_error_t err;
	bool like = gp_imageref_like(s);
	if (gp_imageref_parse(s, &r, &err) == 0) {
		if (!like)
			abort();
		only(r.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:");
		only(r.path, "abcdefghijklmnopqrstuvwxyz0123456789._-/");
		only(r.tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
		only(r.digest, "sha256:0123456789abcdef");
		if (r.host[0] == '-' || r.path[0] == '-' || r.tag[0] == '-' || r.tag[0] == '.')
			abort();
		if (gp_imageref_transport(&r, NULL, t, sizeof(t)) < 0)
			abort();
	}
	gp_imageref_host_listed(s, "198.18.0.1:5000, registry.lan");
	return 0;
}
