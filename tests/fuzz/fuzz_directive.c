/* fuzz_directive: a job script's `#GPOOL` lines (cli/lib/directive.h). Properties: every
 * directive starts with the program name, its argv is NULL-terminated, line numbers rise. */
#include "cli/lib/directive.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gp_directive *dirs = NULL;
	int n = -1, last = 0;
	gp_error_t err;
	err.text[0] = '\0';
	if (gp_directives_parse((const char *)data, size, "gsub", &dirs, &n, &err) < 0) {
		FUZZ_CHECK(err.text[0] != '\0');
		return 0;
	}
	FUZZ_CHECK(n >= 0 && (n == 0 || dirs != NULL));
	for (int i = 0; i < n; i++) {
		const struct gp_directive *d = &dirs[i];
		FUZZ_CHECK(d->lineno > last);
		last = d->lineno;
		FUZZ_CHECK(d->argc >= 1 && strcmp(d->argv[0], "gsub") == 0);
		FUZZ_CHECK(d->argv[d->argc] == NULL);
		for (int k = 1; k < d->argc; k++)
			FUZZ_CHECK(strlen(d->argv[k]) <= size);
	}
	gp_directives_free(dirs, n);
	return 0;
}
