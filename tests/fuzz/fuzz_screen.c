/* fuzz_screen: the reader of screening results (cards/screen.h), which the agent runs on a
 * file a job wrote and gcheck --cluster on a job's output. Properties checked: a refusal sets
 * errno (EINVAL, or EFBIG past the size limit) and leaves no card behind; an accepted result
 * is within its bounds: at most 64 cards, each index below 64 and listed once, a grade of
 * good, warn or fail, a throughput gschedd accepts, strings terminated and without control
 * characters. */
#include <errno.h>

#include "tests/fuzz/fuzz.h"
#include "cards/screen.h"

static void printable(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	FUZZ_CHECK(n < cap);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gp_screen_result r;
	gp_error_t err;
	errno = 0;
	if (gp_screen_parse((const char *)data, size, &r, &err) < 0) {
		FUZZ_CHECK(errno == EINVAL || errno == EFBIG);
		FUZZ_CHECK(r.n == 0);
		FUZZ_CHECK(strnlen(err.text, sizeof(err.text)) < sizeof(err.text));
		return 0;
	}
	FUZZ_CHECK(size <= GP_SCREEN_MAX);
	FUZZ_CHECK(r.n <= GP_SCREEN_MAX_CARDS);
	printable(r.node, sizeof(r.node));
	for (size_t i = 0; i < r.n; i++) {
		const struct gp_screen_card *c = &r.cards[i];
		FUZZ_CHECK(c->card < GP_SCREEN_MAX_CARDS);
		FUZZ_CHECK(gp_screen_find(&r, c->card) == c);
		FUZZ_CHECK(!strcmp(c->grade, "good") || !strcmp(c->grade, "warn") ||
			   !strcmp(c->grade, "fail"));
		FUZZ_CHECK(c->bw_mean_gbps >= 0 && c->bw_mean_gbps <= 1e7);
		printable(c->reason, sizeof(c->reason));
		printable(c->backend, sizeof(c->backend));
		printable(c->device, sizeof(c->device));
	}
	return 0;
}
