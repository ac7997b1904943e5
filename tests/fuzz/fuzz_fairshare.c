/* fuzz_fairshare: the fair-share settings as an administrator types them (scheduler/fairshare.h):
 * the input split at its first newline into fairshare_shares and user_limits, given to
 * fairshare_configure. Properties checked: a refused pair leaves a message and the previous
 * settings (an earlier good pair) in force; an accepted one gives every user a share >= 0 and
 * factors in [0, 1] whatever the usage charged. */
#include <math.h>
#include <string.h>

#include "scheduler/core/fairshare.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strdup(data, size);
	char *nl = strchr(s, '\n');
	const char *limits = "";
	if (nl) {
		*nl = '\0';
		limits = nl + 1;
	}
	fairshare_t *f = fairshare_create();
	if (!f) {
		free(s);
		return 0;
	}
	gp_error_t err = {{0}};
	FUZZ_CHECK(fairshare_configure(f, 3600, 1, "keep:3", "*:jobs=7", &err) == 0);
	err.text[0] = '\0';
	if (fairshare_configure(f, 3600, 2, s, limits, &err) < 0) {
		FUZZ_CHECK(err.text[0]);
		FUZZ_CHECK(fairshare_limits(f, "nobody").jobs == 7);
	}
	fairshare_charge(f, "keep", 100, 1, 1000);
	fairshare_charge(f, "other", 50, 0, 2000);
	fairshare_pass_begin(f, 3000);
	size_t n = 0;
	const struct fs_user_view *v = fairshare_users(f, 3000, &n);
	for (size_t i = 0; v && i < n; i++) {
		FUZZ_CHECK(v[i].share >= 0 && !isnan(v[i].share));
		FUZZ_CHECK(v[i].factor >= 0 && v[i].factor <= 1);
		FUZZ_CHECK(fairshare_factor(f, v[i].name) >= 0);
	}
	fairshare_destroy(&f);
	free(s);
	return 0;
}
