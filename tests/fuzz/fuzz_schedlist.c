/* fuzz_schedlist: the list of schedulers (common/schedlist.c) from gpool.conf, --scheduler or
 * $GPOOL_SCHEDULER, and a leader named by a standby's Error.leader, which arrives from the
 * network. The input's first line is the list, each further line a leader followed. Properties
 * checked: a parsed list has 1..GP_SCHEDLIST_MAX valid, distinct entries; a failure leaves the
 * list untouched with errno EINVAL; following never leaves the current entry invalid or the
 * count out of its bound. */
#include <errno.h>

#include "common/schedlist.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char *rest = strchr(text, '\n');
	if (rest)
		*rest++ = '\0';
	struct gp_schedlist l = {.n = 77};
	errno = 0;
	if (gp_schedlist_parse(&l, text, NULL) < 0) {
		FUZZ_CHECK(errno == EINVAL && l.n == 77);
		free(text);
		return 0;
	}
	FUZZ_CHECK(l.n >= 1 && l.n <= GP_SCHEDLIST_MAX && l.cur == 0);
	for (size_t i = 0; i < l.n; i++) {
		FUZZ_CHECK(gp_schedlist_valid(l.ep[i]));
		for (size_t k = 0; k < i; k++)
			FUZZ_CHECK(strcmp(l.ep[i], l.ep[k]) != 0);
	}
	while (rest) {
		char *line = rest;
		rest = strchr(line, '\n');
		if (rest)
			*rest++ = '\0';
		gp_schedlist_follow(&l, *line == '-' ? NULL : line);
		FUZZ_CHECK(l.n >= 1 && l.n <= GP_SCHEDLIST_MAX && l.cur < l.n);
		FUZZ_CHECK(gp_schedlist_valid(gp_schedlist_current(&l)));
		gp_schedlist_next(&l);
		FUZZ_CHECK(l.cur < l.n);
	}
	free(text);
	return 0;
}
