/* fuzz_parse: the parsers for values users type, each on the same string: sizes,
 * durations, numbers, host lists (common/parse.h), job ids, signals and --export lists
 * (cli/lib/args.h, env.h). Properties checked: a parsed duration formats and parses back to
 * itself; a host list expands to non-empty names within its bound; a failure sets errno. */
#include <errno.h>
#include <limits.h>
#include <signal.h>

#include "cli/lib/args.h"
#include "common/array.h"
#include "common/depend.h"
#include "cli/lib/env.h"
#include "tests/fuzz/fuzz.h"
#include "common/names.h"
#include "common/parse.h"

static char *const fake_env[] = {
    "PATH=/usr/bin:/bin", "HOME=/home/u", "OMP_NUM_THREADS=4", "EMPTY=", "NOEQUALS", NULL};

static void sizes(const char *s)
{
	static const uint64_t units[] = {1, 1ULL << 10, 1ULL << 20, 1ULL << 30};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t b = 0;
		errno = 0;
		if (gp_parse_size(s, units[i], &b) == 0) {
			char buf[32];
			gp_format_size(b, buf, sizeof(buf));
			FUZZ_CHECK(strlen(buf) < sizeof(buf) - 1);
		} else {
			FUZZ_CHECK(errno == EINVAL || errno == ERANGE);
		}
	}
}

static void durations(const char *s)
{
	uint32_t secs = 0, again = 1;
	errno = 0;
	if (gp_parse_duration(s, &secs) < 0) {
		FUZZ_CHECK(errno == EINVAL || errno == ERANGE);
		return;
	}
	char buf[32];
	gp_format_duration(secs, buf, sizeof(buf));
	FUZZ_CHECK(gp_parse_duration(buf, &again) == 0);
	FUZZ_CHECK(again == secs);
}

static void numbers(const char *s)
{
	static const long ranges[][2] = {
	    {0, 1}, {1, 100000}, {-1, 2000000000L}, {LONG_MIN, LONG_MAX}};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		long v = 0;
		errno = 0;
		if (gp_parse_long(s, ranges[i][0], ranges[i][1], &v) == 0)
			FUZZ_CHECK(v >= ranges[i][0] && v <= ranges[i][1]);
		else
			FUZZ_CHECK(errno == EINVAL || errno == ERANGE);
	}
}

static void hostlists(const char *s)
{
	char **names = NULL;
	int n = -1;
	errno = 0;
	if (gp_hostlist_expand(s, &names, &n) < 0) {
		FUZZ_CHECK(errno == EINVAL || errno == ERANGE || errno == ENOMEM);
		return;
	}
	FUZZ_CHECK(n >= 1 && n <= 65536 && names != NULL);
	for (int i = 0; i < n; i++)
		FUZZ_CHECK(names[i] && names[i][0] && strlen(names[i]) <= strlen(s));
	gp_strv_free(names, n);
}

static void cli_args(const char *s)
{
	gp_error_t err;
	uint64_t *ids = NULL;
	size_t n = 0;
	if (gp_args_jobids(s, &ids, &n, &err) == 0) {
		FUZZ_CHECK(n >= 1);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(ids[i] != 0);
	}
	free(ids);
	int sig = 0;
	if (gp_args_signal(s, &sig, &err) == 0)
		FUZZ_CHECK(sig > 0 && sig < SIGRTMIN);
	(void)gp_job_state_parse(s);
	(void)gp_vendor_parse(s);
}

static void exports(const char *s)
{
	gp_error_t err;
	int ok = gp_export_check(s, &err) == 0;
	Gpool__EnvVar **vars = NULL;
	size_t n = 0;
	int built = gp_export_build(s, fake_env, &vars, &n, &err) == 0;
	FUZZ_CHECK(ok == built);
	if (built) {
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(vars[i] && vars[i]->name && vars[i]->name[0] && vars[i]->value);
		gp_export_free(vars, n);
	}
}

/* --array values and gcancel's selectors: a parsed set counts its indices, each index it
 * yields is in it and within min..max, and it formats back into a bounded string */
static void arrays(const char *s)
{
	static gp_array_t a;
	errno = 0;
	if (gp_array_parse(s, &a) == 0) {
		FUZZ_CHECK(a.count >= 1 && a.count <= GP_ARRAY_MAX_TASKS);
		FUZZ_CHECK(a.n >= 1 && a.n <= GP_ARRAY_MAX_RANGES && a.min <= a.max);
		FUZZ_CHECK(a.max <= GP_ARRAY_MAX_INDEX);
		uint32_t probe[] = {0, a.count / 2, a.count - 1};
		uint32_t v[3];
		for (size_t i = 0; i < 3; i++) {
			v[i] = gp_array_index(&a, probe[i]);
			FUZZ_CHECK(v[i] >= a.min && v[i] <= a.max && gp_array_has(&a, v[i]));
		}
		char buf[64];
		gp_array_format(v, 1, buf, sizeof(buf));
		FUZZ_CHECK(strlen(buf) < sizeof(buf));
	} else {
		FUZZ_CHECK(errno == EINVAL || errno == E2BIG);
	}
	uint64_t job = 0;
	bool has = false;
	if (gp_array_selector(s, &job, &has, &a) == 0)
		FUZZ_CHECK(job != 0 && (!has || a.count >= 1));
}

/* --dependency values: every job reference is non-zero, singleton has none */
static void dependencies(const char *s)
{
	static gp_depend_t d;
	errno = 0;
	if (gp_depend_parse(s, &d) < 0) {
		FUZZ_CHECK(errno == EINVAL || errno == E2BIG);
		return;
	}
	FUZZ_CHECK(d.n >= 1 && d.n <= GP_DEP_MAX);
	for (size_t i = 0; i < d.n; i++)
		FUZZ_CHECK((d.d[i].type == GP_DEP_SINGLETON) == (d.d[i].job == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strdup(data, size);
	sizes(s);
	durations(s);
	numbers(s);
	hostlists(s);
	cli_args(s);
	exports(s);
	arrays(s);
	dependencies(s);
	free(s);
	return 0;
}
