/* test_ports.c: the master ports an agent offers, on real sockets of this machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <stdio.h>
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

/* an idle pool binds nothing: every port it offers can be bound by anyone else (the PC's
 * owner's own torchrun); a launch reserves one (bound until the tasks start), and a port a job
 * holds is not offered again */
static void offer_reserve_release(void **state)
{
	uint32_t lo = free_range(8);
	gp_ports_t *p = gp_ports_create(lo, lo + 7, 3);
	assert_non_null(p);
	uint32_t held[8];
	assert_int_equal(gp_ports_held(p, held, 8), 0); /* nothing until refilled */
	gp_ports_refill(p, busy, NULL, 0);
	assert_int_equal(gp_ports_held(p, held, 8), 3);
	assert_int_equal(gp_ports_bound(p), 0);
	for (int i = 0; i < 3; i++) {
		assert_in_range(held[i], lo, lo + 7);
		assert_int_equal(listen_like_a_framework(held[i]), 0); /* idle: nothing held */
	}
	uint32_t given = held[1];
	assert_int_equal(gp_ports_reserve(p, given), 0);
	assert_int_equal(gp_ports_bound(p), 1);
	assert_int_equal(listen_like_a_framework(given), -1); /* reserved for the launch */
	assert_int_equal(gp_ports_held(p, held, 8), 2);	      /* and no longer offered */
	assert_true(gp_ports_release(p, given));
	assert_false(gp_ports_release(p, lo + 100));
	assert_int_equal(gp_ports_bound(p), 0);
	assert_int_equal(listen_like_a_framework(given), 0); /* the job's rank 0 can bind it */
	/* while a job holds it, it is not offered */
	busy_port = given;
	gp_ports_refill(p, busy, NULL, 10000);
	assert_int_equal(gp_ports_held(p, held, 8), 3);
	for (int i = 0; i < 3; i++)
		assert_int_not_equal(held[i], given);
	/* the job is gone: offered again */
	busy_port = 0;
	gp_ports_refill(p, busy, NULL, 20000);
	assert_int_equal(gp_ports_held(p, held, 8), 3);
	assert_int_equal(held[0], lo);
	gp_ports_destroy(&p);
	assert_null(p);
}

/* a port something else has bound is skipped; a reservation of it is refused */
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
	assert_int_equal(gp_ports_reserve(p, lo), -1);
	assert_int_equal(gp_ports_bound(p), 0);
	gp_ports_destroy(&p);
	close(fd);
}

/* a range is checked against the kernel's ephemeral range as this machine sets it */
static void ephemeral(void **state)
{
	unsigned elo = 32768, ehi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (f) {
		assert_int_equal(fscanf(f, "%u %u", &elo, &ehi), 2);
		fclose(f);
	}
	assert_true(gp_ports_overlap_ephemeral(elo, elo));
	assert_true(gp_ports_overlap_ephemeral(ehi, ehi));
	assert_true(gp_ports_overlap_ephemeral(1024, 65535));
	if (elo > 1026)
		assert_false(gp_ports_overlap_ephemeral(elo - 2, elo - 1));
	if (ehi < 65534)
		assert_false(gp_ports_overlap_ephemeral(ehi + 1, ehi + 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(range_parse),
	    cmocka_unit_test(offer_reserve_release),
	    cmocka_unit_test(ephemeral),
	    cmocka_unit_test(skips_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
