/* test_opt.c - the typed option setters (common/opt.c): each value stored, each bad value
 * refused with errno EINVAL and the "invalid WHAT 'ARG'" message, the destination untouched */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "common/opt.h"

static void string(void **state)
{
	(void)state;
	gp_error_t err;
	char *f = NULL;
	assert_int_equal(gp_opt_string(&f, "a.out", "output pattern", &err), 0);
	assert_string_equal(f, "a.out");
	assert_int_equal(gp_opt_string(&f, "b.out", "output pattern", &err), 0);
	assert_string_equal(f, "b.out"); /* replaced; the old copy freed (the sanitizer pass) */
	errno = 0;
	assert_int_equal(gp_opt_string(&f, "", "output pattern", &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.text, "invalid output pattern ''");
	assert_string_equal(f, "b.out");
	assert_int_equal(gp_opt_string(&f, "", NULL, &err), 0); /* no what: empty is a value */
	assert_string_equal(f, "");
	free(f);
}

static void onoff(void **state)
{
	(void)state;
	gp_error_t err;
	int v = 7;
	assert_int_equal(gp_opt_onoff(&v, "on", "overlap", &err), 0);
	assert_int_equal(v, 1);
	assert_int_equal(gp_opt_onoff(&v, "off", "overlap", &err), 0);
	assert_int_equal(v, 0);
	assert_int_equal(gp_opt_onoff(&v, "auto", "overlap", &err), 0);
	assert_int_equal(v, -1);
	const char *bad[] = {"", "ON", "yes", "1", "onn", "auto "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 5;
		errno = 0;
		assert_int_equal(gp_opt_onoff(&v, bad[i], "overlap", &err), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(v, 5);
	}
	assert_int_equal(gp_opt_onoff(&v, "yes", "optimizer overlap", &err), -1);
	assert_string_equal(err.text, "invalid optimizer overlap 'yes' (auto, on, off)");
	assert_int_equal(gp_opt_onoff(&v, "maybe", "overlap", NULL), -1); /* err may be NULL */
}

static void count(void **state)
{
	(void)state;
	gp_error_t err;
	uint32_t v = 9;
	assert_int_equal(gp_opt_count(&v, "8", 1, 100000, "cpus per task", &err), 0);
	assert_int_equal(v, 8);
	assert_int_equal(gp_opt_count(&v, "65535", 1, 65535, "service port", &err), 0);
	assert_int_equal(v, 65535); /* the bounds are inclusive */
	const char *bad[] = {"0", "65536", "", "-1", "8x", "0x10", " 8"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 5;
		errno = 0;
		assert_int_equal(gp_opt_count(&v, bad[i], 1, 65535, "service port", &err), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(v, 5);
	}
	assert_int_equal(gp_opt_count(&v, "70000", 1, 65535, "service port", &err), -1);
	assert_string_equal(err.text, "invalid service port '70000'");
}

static void size(void **state)
{
	(void)state;
	gp_error_t err;
	uint64_t b = 1;
	assert_int_equal(gp_opt_size(&b, "4096", 1 << 20, "memory size", &err), 0);
	assert_true(b == 4096ULL << 20);
	assert_int_equal(gp_opt_size(&b, "6GiB", 1 << 20, "memory size", &err), 0);
	assert_true(b == 6ULL << 30);
	assert_int_equal(gp_opt_size(&b, "512K", 1, "memory size", &err), 0);
	assert_true(b == 512 * 1024);
	errno = 0;
	assert_int_equal(gp_opt_size(&b, "12Q", 1 << 20, "card memory size", &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.text, "invalid card memory size '12Q'");
	assert_true(b == 512 * 1024);
	assert_int_equal(gp_opt_size(&b, "", 1, "memory size", &err), -1);
}

static void duration(void **state)
{
	(void)state;
	gp_error_t err;
	uint32_t s = 3;
	assert_int_equal(gp_opt_duration(&s, "90", 0, UINT32_MAX, "time limit", &err), 0);
	assert_int_equal(s, 90 * 60); /* a bare number is minutes, as sbatch --time */
	assert_int_equal(gp_opt_duration(&s, "1-00:00:00", 0, UINT32_MAX, "time limit", &err), 0);
	assert_int_equal(s, 86400);
	assert_int_equal(gp_opt_duration(&s, "0", 0, 86400, "retry time", &err), 0);
	assert_int_equal(s, 0);
	/* the bounds are inclusive */
	assert_int_equal(gp_opt_duration(&s, "1-00:00:00", 1, 86400, "retry time", &err), 0);
	assert_int_equal(s, 86400);
	errno = 0;
	assert_int_equal(gp_opt_duration(&s, "1-00:00:01", 1, 86400, "retry time", &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(err.text, "invalid retry time '1-00:00:01'");
	assert_int_equal(gp_opt_duration(&s, "0", 1, 86400, "--ttl", &err), -1);
	assert_string_equal(err.text, "invalid --ttl '0'");
	assert_int_equal(gp_opt_duration(&s, "ten", 0, UINT32_MAX, "time limit", &err), -1);
	assert_int_equal(s, 86400);
}

static void list(void **state)
{
	(void)state;
	gp_error_t err;
	char **v = NULL;
	size_t n = 0;
	assert_int_equal(gp_opt_list(&v, &n, "*.log", &err), 0);
	assert_int_equal(gp_opt_list(&v, &n, "out/", &err), 0);
	assert_int_equal(gp_opt_list(&v, &n, "*.log", &err), 0); /* kept as given, repeats too */
	assert_int_equal(n, 3);
	assert_string_equal(v[0], "*.log");
	assert_string_equal(v[1], "out/");
	assert_string_equal(v[2], "*.log");
	gp_opt_list_clear(&v, &n);
	assert_null(v);
	assert_int_equal(n, 0);
	gp_opt_list_clear(&v, &n); /* an empty list clears again */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(string), cmocka_unit_test(onoff),	  cmocka_unit_test(count),
	    cmocka_unit_test(size),   cmocka_unit_test(duration), cmocka_unit_test(list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
