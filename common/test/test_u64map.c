/* test_u64map.c - the u64 hash map (common/u64map.c) through many puts, deletes, gets and
 * a walk, so backward-shift deletion is exercised at every fill */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "common/u64map.h"

static void many(void **state)
{
	gp_u64map_t *m = gp_u64map_create();
	enum { N = 100000 };
	static int vals[N];
	for (uint64_t i = 1; i <= N; i++)
		assert_int_equal(gp_u64map_put(m, i * 7919, &vals[i - 1]), 0);
	assert_int_equal(gp_u64map_count(m), N);
	for (uint64_t i = 1; i <= N; i += 2)
		assert_ptr_equal(gp_u64map_del(m, i * 7919), &vals[i - 1]);
	assert_int_equal(gp_u64map_count(m), N / 2);
	for (uint64_t i = 1; i <= N; i++) {
		void *v = gp_u64map_get(m, i * 7919);
		if (i % 2)
			assert_null(v);
		else
			assert_ptr_equal(v, &vals[i - 1]);
	}
	size_t pos = 0, seen = 0;
	uint64_t k;
	while (gp_u64map_next(m, &pos, &k)) {
		assert_int_equal((k / 7919) % 2, 0);
		seen++;
	}
	assert_int_equal(seen, N / 2);
	assert_null(gp_u64map_del(m, 12345));
	gp_u64map_destroy(&m);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(many)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
