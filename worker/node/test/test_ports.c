/* test_ports.c: the agent's pool of master ports, on real sockets of this machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/node/ports.h"

/* What a framework's rank 0 does with MASTER_PORT: SO_REUSEADDR, bind, listen. 0 / -1. */
static int listen_like_a_framework(uint32_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_ANY)};
	int rc = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 4) == 0 ? 0 : -1;
	close(fd);
	return rc;
}

/* A free range of n ports in 40000-59999 (this test may share the machine). */
static uint32_t free_range(uint32_t n)
{
	for (uint32_t lo = 40000 + (uint32_t)getpid() % 10000 * 2; lo < 60000; lo += n) {
		uint32_t ok = 0;
		for (uint32_t p = lo; p < lo + n && listen_like_a_framework(p) == 0; p++)
			ok++;
		if (ok == n)
			return lo;
	}
	fail_msg("no free port range");
	return 0;
}

static void range_parse(void **state)
{
	uint32_t lo, hi;
	gp_error_t err;
	assert_int_equal(gp_ports_parse_range("29500-29999", &lo, &hi, &err), 0);
	assert_int_equal(lo, 29500);
	assert_int_equal(hi, 29999);
	const char *bad[] = {"", "29500", "29999-29500", "80-90", "29500-70000", "a-b", "1-2x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gp_ports_parse_range(bad[i], &lo, &hi, &err), -1);
	assert_null(gp_ports_create(0, 10, 1));
	assert_null(gp_ports_create(2000, 1999, 1));
	assert_null(gp_ports_create(2000, 2001, 0));
}

static uint32_t busy_port;
static bool busy(uint32_t port, void *arg)
{
	(void)arg;
	return port == busy_port;
}

/* held ports cannot be bound by anyone else; a released one can, and is taken back only
 * when no job holds it */
static void hold_release(void **state)
{
	uint32_t lo = free_range(8);
	gp_ports_t *p = gp_ports_create(lo, lo + 7, 3);
	assert_non_null(p);
	uint32_t held[8];
	assert_int_equal(gp_ports_held(p, held, 8), 0); /* nothing until refilled */
	gp_ports_refill(p, busy, NULL, 0);
	assert_int_equal(gp_ports_held(p, held, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_in_range(held[i], lo, lo + 7);
		assert_int_equal(listen_like_a_framework(held[i]), -1);
	}
	uint32_t given = held[1];
	assert_true(gp_ports_release(p, given));
	assert_false(gp_ports_release(p, lo + 100));
	assert_int_equal(gp_ports_held(p, held, 8), 2);
	assert_int_equal(listen_like_a_framework(given), 0); /* the job's rank 0 can bind it */
	/* while a job holds it, it stays released */
	busy_port = given;
	gp_ports_refill(p, busy, NULL, 10000);
	assert_int_equal(gp_ports_held(p, held, 8), 2);
	/* the job is gone: held again */
	busy_port = 0;
	gp_ports_refill(p, busy, NULL, 20000);
	assert_int_equal(gp_ports_held(p, held, 8), 3);
	assert_int_equal(listen_like_a_framework(given), -1);
	gp_ports_destroy(&p);
	assert_null(p);
	assert_int_equal(listen_like_a_framework(given), 0);
}

/* a port something else has bound is skipped; the pool takes the next ones */
static void skips_taken(void **state)
{
	uint32_t lo = free_range(4);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)lo),
				.sin_addr.s_addr = htonl(INADDR_ANY)};
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	gp_ports_t *p = gp_ports_create(lo, lo + 3, 2);
	gp_ports_refill(p, NULL, NULL, 0);
	uint32_t held[4];
	assert_int_equal(gp_ports_held(p, held, 4), 2);
	assert_int_equal(held[0], lo + 1);
	assert_int_equal(held[1], lo + 2);
	/* two pools over one range (agents sharing a PC) never hold the same port */
	gp_ports_t *q = gp_ports_create(lo, lo + 3, 2);
	gp_ports_refill(q, NULL, NULL, 0);
	assert_int_equal(gp_ports_held(q, held, 4), 1);
	assert_int_equal(held[0], lo + 3);
	gp_ports_destroy(&q);
	gp_ports_destroy(&p);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(range_parse),
	    cmocka_unit_test(hold_release),
	    cmocka_unit_test(skips_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
