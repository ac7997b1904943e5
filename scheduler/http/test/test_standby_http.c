/* A standby's HTTP answers (standby_http.c) through a socketpair, no listener: the REST API and
 * /metrics get 503 ERROR_NOT_LEADER with the leader's HTTP address (made from its client
 * endpoint and http_listen's port), the dashboard a 307 to the same path there, everything 503
 * with "leader" empty while none is known, and a target that cannot go into a header line is
 * not redirected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "scheduler/http/standby_http.h"

/* Send req to a standby whose leader is `leader`, return what came back (malloc'd). */
static char *ask(const char *leader, const char *req)
{
	struct standby_http *h = standby_http_create_on("8443");
	assert_non_null(h);
	standby_http_set_leader(h, leader);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(standby_http_adopt(h, sv[0]), 0);
	assert_int_equal(write(sv[1], req, strlen(req)), (ssize_t)strlen(req));
	char *out = calloc(1, 8192);
	size_t n = 0;
	for (int i = 0; i < 200 && !strstr(out, "\r\n\r\n"); i++) {
		standby_http_poll(h);
		ssize_t r = read(sv[1], out + n, 8191 - n);
		if (r > 0)
			n += (size_t)r;
		else
			usleep(1000);
	}
	for (int i = 0; i < 20; i++) { /* the body after the head */
		standby_http_poll(h);
		ssize_t r = read(sv[1], out + n, 8191 - n);
		if (r > 0)
			n += (size_t)r;
	}
	assert_int_equal(standby_http_answered(h), 1);
	close(sv[1]);
	standby_http_destroy(&h);
	assert_null(h);
	return out;
}

static void api_gets_503_with_the_leader(void **state)
{
	char *o = ask("tcp://198.18.0.3:7820", "GET /api/v1/jobs HTTP/1.1\r\nHost: s\r\n\r\n");
	assert_non_null(strstr(o, "HTTP/1.1 503 "));
	assert_non_null(strstr(o, "Gpool-Leader: http://198.18.0.3:8443\r\n"));
	assert_non_null(strstr(o, "Retry-After: 1\r\n"));
	assert_non_null(strstr(o, "\"code\":\"ERROR_NOT_LEADER\""));
	assert_non_null(strstr(o, "\"leader\":\"http://198.18.0.3:8443\""));
	free(o);
	o = ask("tcp://198.18.0.3:7820",
		"POST /api/v1/jobs HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
	assert_non_null(strstr(o, "HTTP/1.1 503 "));
	free(o);
	o = ask("tcp://198.18.0.3:7820", "GET /metrics HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(o, "HTTP/1.1 503 "));
	assert_non_null(strstr(o, "\"leader\":\"http://198.18.0.3:8443\""));
	free(o);
}

static void dashboard_is_redirected(void **state)
{
	char *o = ask("tcp://198.18.0.4:7820", "GET /jobs.html?x=1 HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(o, "HTTP/1.1 307 "));
	assert_non_null(strstr(o, "Location: http://198.18.0.4:8443/jobs.html?x=1\r\n"));
	free(o);
	/* a target of bytes no header line may carry: answered, not redirected */
	o = ask("tcp://198.18.0.4:7820", "GET /a\xc4\xff"
					 "b HTTP/1.1\r\n\r\n");
	assert_null(strstr(o, "Location:"));
	free(o);
}

static void no_leader_known(void **state)
{
	char *o = ask("", "GET / HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(o, "HTTP/1.1 503 "));
	assert_non_null(strstr(o, "\"leader\":\"\""));
	assert_non_null(strstr(o, "no leader is known now"));
	assert_null(strstr(o, "Gpool-Leader:"));
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(api_gets_503_with_the_leader),
	    cmocka_unit_test(dashboard_is_redirected),
	    cmocka_unit_test(no_leader_known),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
