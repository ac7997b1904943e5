/* test_parse.c - the value parsers (common/parse.c): sizes, durations, host lists, numbers
 * and listen addresses, each with the inputs it must refuse */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "common/parse.h"

static void size_units(void **state)
{
	uint64_t b;
	assert_int_equal(gp_parse_size("4096", 1 << 20, &b), 0);
	assert_true(b == 4096ULL << 20);
	assert_int_equal(gp_parse_size("512K", 1, &b), 0);
	assert_true(b == 512 * 1024);
	assert_int_equal(gp_parse_size("6GiB", 1, &b), 0);
	assert_true(b == 6ULL << 30);
	assert_int_equal(gp_parse_size("1.5G", 1, &b), 0);
	assert_true(b == 3ULL << 29);
	assert_int_equal(gp_parse_size("0", 1, &b), 0);
	assert_true(b == 0);
}

static void size_rejects(void **state)
{
	uint64_t b;
	const char *bad[] = {"", "G", "-1", "4X", "4 G", " 4", "nan", "inf", "1e400", "4GG", NULL};
	for (int i = 0; bad[i]; i++) {
		errno = 0;
		assert_int_equal(gp_parse_size(bad[i], 1, &b), -1);
		assert_true(errno == EINVAL || errno == ERANGE);
	}
}

static void durations(void **state)
{
	uint32_t s;
	struct {
		const char *in;
		uint32_t want;
	} ok[] = {
	    {"10", 600},      {"1:30", 90},	  {"1:00:00", 3600}, {"2-0", 172800},
	    {"1-2:3", 93780}, {"1-2:3:4", 93784}, {"30s", 30},	     {"5m", 300},
	    {"2h", 7200},     {"1d", 86400},	  {"infinite", 0},   {"UNLIMITED", 0},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(gp_parse_duration(ok[i].in, &s), 0);
		assert_int_equal(s, ok[i].want);
	}
	const char *bad[] = {
	    "", "3x", "1:2:3:4", "-5", ":5", "1:", "a-1", "1-", "s", "99999999999d", NULL};
	for (int i = 0; bad[i]; i++)
		assert_int_equal(gp_parse_duration(bad[i], &s), -1);
}

static void hostlists(void **state)
{
	char **v;
	int n;
	assert_int_equal(gp_hostlist_expand("a,h[1-3,7],b", &v, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(v[0], "a");
	assert_string_equal(v[1], "h1");
	assert_string_equal(v[3], "h3");
	assert_string_equal(v[4], "h7");
	assert_string_equal(v[5], "b");
	gp_strv_free(v, n);
	assert_int_equal(gp_hostlist_expand("n[01-03]", &v, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[2], "n03");
	gp_strv_free(v, n);
	const char *bad[] = {"",     ",", "a,", "h[", "h[]", "h[3-1]", "h[[1]]", "h[1-99999999]",
			     "a,,b", NULL};
	for (int i = 0; bad[i]; i++)
		assert_int_equal(gp_hostlist_expand(bad[i], &v, &n), -1);
}

static void longs(void **state)
{
	long v;
	assert_int_equal(gp_parse_long("42", 0, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(gp_parse_long("101", 0, 100, &v), -1);
	assert_int_equal(errno, ERANGE);
	assert_int_equal(gp_parse_long("4a", 0, 100, &v), -1);
	assert_int_equal(gp_parse_long("", 0, 100, &v), -1);
}

static void listen_addrs(void **state)
{
	char host[16];
	long port = 0;
	assert_int_equal(gp_parse_listen("0.0.0.0:8080", host, sizeof(host), &port), 0);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(port, 8080);
	assert_int_equal(gp_parse_listen("[::1]:1", host, sizeof(host), &port), 0);
	assert_string_equal(host, "[::1]");
	assert_int_equal(port, 1);
	assert_int_equal(gp_parse_listen(":443", host, sizeof(host), &port), 0);
	assert_string_equal(host, "");
	static const char *const bad[] = {"8080", "h:0",  "h:65536",
					  "h:",	  "h:8x", "a-host-name-too-long:80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		port = 7;
		assert_int_equal(gp_parse_listen(bad[i], host, sizeof(host), &port), -1);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(port, 7);
	}
}

static void formats(void **state)
{
	char buf[32];
	gp_format_duration(93784, buf, sizeof(buf));
	assert_string_equal(buf, "1-02:03:04");
	gp_format_duration(61, buf, sizeof(buf));
	assert_string_equal(buf, "00:01:01");
	gp_format_size(6ULL << 30, buf, sizeof(buf));
	assert_string_equal(buf, "6.0G");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(size_units),   cmocka_unit_test(size_rejects),
	    cmocka_unit_test(durations),    cmocka_unit_test(hostlists),
	    cmocka_unit_test(longs),	    cmocka_unit_test(formats),
	    cmocka_unit_test(listen_addrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
