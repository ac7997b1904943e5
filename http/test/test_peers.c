/* test_peers: connections counted per source address (http/peers.c): the cap per address,
 * addresses apart, a v4-mapped IPv6 address counted as its IPv4, a slot freed on close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "http/peers.h"

static void addr4(const char *s, struct gh_peer_addr *a)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	inet_pton(AF_INET, s, &sin.sin_addr);
	gh_peer_addr_of((struct sockaddr *)&sin, a);
}

static void cap_per_address(void **state)
{
	(void)state;
	gh_peers_t *p = gh_peers_create();
	assert_non_null(p);
	struct gh_peer_addr a, b;
	addr4("10.0.0.1", &a);
	addr4("10.0.0.2", &b);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(gh_peers_add(p, &a, 3), i);
	errno = 0;
	assert_int_equal(gh_peers_add(p, &a, 3), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(gh_peers_add(p, &b, 3), 1); /* another address is not held back */
	gh_peers_del(p, &a);
	assert_int_equal(gh_peers_add(p, &a, 3), 3); /* a closed one frees its slot */
	for (int i = 0; i < 3; i++)
		gh_peers_del(p, &a);
	assert_int_equal(gh_peers_add(p, &a, 1), 1); /* the entry went and came back */
	assert_int_equal(gh_peers_add(p, &a, 0), 2); /* 0: no cap */
	gh_peers_destroy(&p);
	assert_null(p);
	gh_peers_destroy(&p);
}

static void v4_mapped(void **state)
{
	(void)state;
	gh_peers_t *p = gh_peers_create();
	struct gh_peer_addr a, m, v6;
	addr4("192.0.2.7", &a);
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr);
	gh_peer_addr_of((struct sockaddr *)&s6, &m);
	assert_int_equal(m.len, 4);
	inet_pton(AF_INET6, "2001:db8::7", &s6.sin6_addr);
	gh_peer_addr_of((struct sockaddr *)&s6, &v6);
	assert_int_equal(v6.len, 16);
	assert_int_equal(gh_peers_add(p, &a, 2), 1);
	assert_int_equal(gh_peers_add(p, &m, 2), 2);
	assert_int_equal(gh_peers_add(p, &m, 2), -1);
	assert_int_equal(gh_peers_add(p, &v6, 2), 1);
	gh_peers_destroy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cap_per_address),
	    cmocka_unit_test(v4_mapped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
