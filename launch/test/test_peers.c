/* test_peers.c: the proxies' lines and the file gpool-rsh looks hosts up in. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "launch/peers.h"

static void parse_format(void **state)
{
	struct gp_peer p = {.node = "h2", .addr = "198.18.0.12", .port = 40123, .slots = 2};
	char line[256];
	int n = gp_peer_format(&p, line, sizeof(line));
	assert_string_equal(line, "h2 198.18.0.12 40123 2\n");
	struct gp_peer q;
	assert_int_equal(gp_peer_parse(line, (size_t)n, &q), 0);
	assert_string_equal(q.node, "h2");
	assert_string_equal(q.addr, "198.18.0.12");
	assert_int_equal(q.port, 40123);
	assert_int_equal(q.slots, 2);
	/* without the newline too */
	assert_int_equal(gp_peer_parse(line, (size_t)n - 1, &q), 0);
	assert_int_equal(gp_peer_format(&p, line, 10), -1);
	assert_int_equal(errno, ENOSPC);
}

static void bad_lines(void **state)
{
	static const char *bad[] = {
	    "",
	    "h2 198.18.0.12 40123",	 /* no slots */
	    "h2 198.18.0.12 0 1",	 /* port 0 */
	    "h2 198.18.0.12 70000 1",	 /* port too big */
	    "h2 198.18.0.12 1x 1",	 /* not a number */
	    "h2 198.18.0.12 22 0",	 /* no slots */
	    "h2 198.18.0.12 22 1 extra", /* a word too many (a secret, as lines had before) */
	    "h2 198.18.0.1\x01 22 1",	 /* a control character */
	    "h2 198.18.0.12 22 1\n\n",	 /* two lines */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gp_peer q;
		errno = 0;
		assert_int_equal(gp_peer_parse(bad[i], strlen(bad[i]), &q), -1);
		assert_int_equal(errno, EINVAL);
	}
	char longname[200];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	char line[400];
	snprintf(line, sizeof(line), "%s 1.2.3.4 22 1", longname);
	struct gp_peer q;
	assert_int_equal(gp_peer_parse(line, strlen(line), &q), -1);
}

static void find_in_file(void **state)
{
	char path[] = "/tmp/test_peers.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "h2 198.18.0.12 40001 1\n"
			   "garbage line\n"
			   "h3 198.18.0.13 40002 4\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct gp_peer p;
	assert_int_equal(gp_peers_find(path, "h3", &p), 0);
	assert_int_equal(p.port, 40002);
	assert_int_equal(p.slots, 4);
	assert_int_equal(gp_peers_find(path, "h4", &p), -1);
	assert_int_equal(errno, ENOENT);
	unlink(path);
	assert_int_equal(gp_peers_find(path, "h2", &p), -1);
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_format),
	    cmocka_unit_test(bad_lines),
	    cmocka_unit_test(find_in_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
