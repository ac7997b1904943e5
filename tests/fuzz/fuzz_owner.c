/* fuzz_owner: the owner's settings as an administrator types them (worker/node/owner_sources.h):
 * the windows of owner_never / owner_always, owner_sources, owner_policy, and a fake card's
 * pids file. Properties checked: a window list that parses has at most the room given, every
 * window a day and from != to within a day; its answer for every hour of the week is defined
 * (no read past what was parsed); a failure leaves a message. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "worker/node/owner_sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strdup(data, size);
	struct gp_owner_window w[16];
	size_t n = 99;
	gp_error_t err = {{0}};
	if (gp_owner_windows_parse(s, w, 16, &n, &err) == 0) {
		FUZZ_CHECK(n <= 16);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(w[i].days && w[i].days < 0x80);
			FUZZ_CHECK(w[i].from != w[i].to && w[i].from <= 1440 && w[i].to <= 1440);
		}
		for (int d = 0; d < 7; d++)
			for (int h = 0; h < 24; h++) {
				struct tm t = {.tm_wday = d, .tm_hour = h, .tm_min = 30};
				(void)gp_owner_windows_on(w, n, &t);
			}
	} else {
		FUZZ_CHECK(err.text[0]);
	}
	unsigned mask = 0;
	err.text[0] = '\0';
	if (gp_owner_sources_parse(s, &mask, &err) == 0)
		FUZZ_CHECK(mask < 16);
	else
		FUZZ_CHECK(err.text[0]);
	int p = gp_owner_policy_parse(s);
	FUZZ_CHECK(p == -1 || (p >= 1 && p <= 3));
	/* a fake card's pids file with these bytes */
	char path[64];
	snprintf(path, sizeof(path), "/tmp/fuzz-owner-pids.%d", (int)getpid());
	FILE *f = fopen(path, "w");
	if (f) {
		fwrite(data, 1, size, f);
		fclose(f);
		pid_t pids[8];
		int k = gp_owner_fake_card_pids(path, pids, 8);
		FUZZ_CHECK(k >= 0 && k <= 8);
		for (int i = 0; i < k; i++)
			FUZZ_CHECK(pids[i] > 0);
		unlink(path);
	}
	free(s);
	return 0;
}
