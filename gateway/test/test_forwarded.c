/* test_forwarded: a client's X-Forwarded-For (and Forwarded, X-Real-IP) is replaced by the
 * address ggated saw; a trusted front proxy's is kept with its address appended; the list of
 * trusted proxies parses addresses and prefixes, and refuses anything else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/forwarded.h"

/* hdrs as the replica gets them, NUL-terminated (the caller frees) */
static char *rewrite(const char *hdrs, const char *peer, bool trusted)
{
	struct gh_buf out = {0};
	assert_int_equal(gw_forwarded_headers(hdrs, strlen(hdrs), peer, trusted, &out), 0);
	char *s = calloc(1, gh_buf_size(&out) + 1);
	memcpy(s, gh_buf_data(&out), gh_buf_size(&out));
	gh_buf_free(&out);
	return s;
}

static void client_xff_replaced(void **state)
{
	(void)state;
	char *s = rewrite("Host: gw\r\nX-Forwarded-For: 10.9.9.9\r\nAccept: */*\r\n"
			  "x-forwarded-for: 1.2.3.4, 5.6.7.8\r\nForwarded: for=6.6.6.6\r\n"
			  "X-Real-IP: 7.7.7.7\r\n",
			  "198.18.0.1", false);
	assert_string_equal(s, "Host: gw\r\nAccept: */*\r\nX-Forwarded-For: 198.18.0.1\r\n");
	free(s);
	/* none given: one added */
	s = rewrite("", "127.0.0.1", false);
	assert_string_equal(s, "X-Forwarded-For: 127.0.0.1\r\n");
	free(s);
	/* a name that only starts like it is another header */
	s = rewrite("X-Forwarded-For-Not: a\r\n", "::1", false);
	assert_string_equal(s, "X-Forwarded-For-Not: a\r\nX-Forwarded-For: ::1\r\n");
	free(s);
}

static void trusted_proxy_appended(void **state)
{
	(void)state;
	char *s =
	    rewrite("Host: gw\r\nX-Forwarded-For: 203.0.113.7\r\nForwarded: for=203.0.113.7\r\n"
		    "X-Forwarded-For:  10.0.0.2 \r\n",
		    "198.18.0.9", true);
	assert_string_equal(s, "Host: gw\r\nForwarded: for=203.0.113.7\r\n"
			       "X-Forwarded-For: 203.0.113.7, 10.0.0.2, 198.18.0.9\r\n");
	free(s);
	s = rewrite("Host: gw\r\n", "198.18.0.9", true);
	assert_string_equal(s, "Host: gw\r\nX-Forwarded-For: 198.18.0.9\r\n");
	free(s);
}

static void trust_list(void **state)
{
	(void)state;
	struct gw_trust t = {0};
	gp_error_t err = {{0}};
	assert_false(gw_trust_has(&t, "127.0.0.1"));
	assert_int_equal(gw_trust_parse(&t, "198.18.0.1,10.0.0.0/8,fd00::/16", &err), 0);
	assert_int_equal(t.n, 3);
	assert_true(gw_trust_has(&t, "198.18.0.1"));
	assert_false(gw_trust_has(&t, "198.18.0.2"));
	assert_true(gw_trust_has(&t, "10.200.3.4"));
	assert_false(gw_trust_has(&t, "11.0.0.1"));
	assert_true(gw_trust_has(&t, "fd00:1::5"));
	assert_false(gw_trust_has(&t, "fe80::1"));
	assert_false(gw_trust_has(&t, "not-an-address"));
	/* bad entries change nothing */
	const char *bad[] = {"",	  "host.example",     "10.0.0.0/33",
			     "10.0.0.1/", "1.2.3.4,,5.6.7.8", "::1/129",
			     "1.2.3.4/8x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(gw_trust_parse(&t, bad[i], &err), -1);
		assert_true(err.text[0] != '\0');
		assert_int_equal(t.n, 3);
	}
	/* a /0 trusts every address of its family */
	struct gw_trust all = {0};
	assert_int_equal(gw_trust_parse(&all, "0.0.0.0/0", &err), 0);
	assert_true(gw_trust_has(&all, "8.8.8.8"));
	assert_false(gw_trust_has(&all, "::1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(client_xff_replaced),
	    cmocka_unit_test(trusted_proxy_appended),
	    cmocka_unit_test(trust_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
