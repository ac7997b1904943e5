/* test_outkeep: forwarded output kept until the scheduler answers a message sent after it, sent
 * again in order after a new registration, bounded (worker/agent/outkeep.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "worker/agent/outkeep.h"

static void add(struct outkeep *k, uint64_t offset, size_t len)
{
	static uint8_t buf[1 << 20];
	Gpool__Output o = GPOOL__OUTPUT__INIT;
	o.job_id = 5;
	o.rank = 1;
	o.stream = 1;
	o.offset = offset;
	o.data.data = buf;
	o.data.len = len;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_OUTPUT;
	m.output = &o;
	size_t n;
	assert_non_null(outkeep_add(k, &m, &n));
}

static uint64_t seen[64];
static size_t nseen;
static void collect(void *arg, const uint8_t *member, size_t len)
{
	Gpool__Batch *b = gpool__batch__unpack(NULL, len, member);
	assert_non_null(b);
	assert_int_equal(b->n_msgs, 1);
	assert_int_equal(b->msgs[0]->m_case, GPOOL__MSG__M_OUTPUT);
	seen[nseen++] = b->msgs[0]->output->offset;
	gpool__batch__free_unpacked(b, NULL);
}

static void kept_until_answered(void **state)
{
	struct outkeep *k = outkeep_create();
	assert_non_null(k);
	add(k, 0, 10);
	add(k, 10, 10);
	outkeep_mark(k, 100); /* a heartbeat after the first two */
	add(k, 20, 10);
	outkeep_answered(k, 99); /* an older message's answer covers nothing new */
	nseen = 0;
	outkeep_each(k, collect, NULL);
	assert_int_equal(nseen, 3);
	/* sent again: their marks were cleared, so 100's answer no longer covers them */
	outkeep_answered(k, 100);
	nseen = 0;
	outkeep_each(k, collect, NULL);
	assert_int_equal(nseen, 3);
	assert_int_equal(seen[0], 0);
	assert_int_equal(seen[2], 20);
	/* a heartbeat after all three, answered: nothing left */
	outkeep_mark(k, 101);
	add(k, 30, 10);
	outkeep_answered(k, 101);
	nseen = 0;
	outkeep_each(k, collect, NULL);
	assert_int_equal(nseen, 1);
	assert_int_equal(seen[0], 30);
	outkeep_destroy(&k);
	assert_null(k);
}

static void bounded(void **state)
{
	struct outkeep *k = outkeep_create();
	for (int i = 0; i < 40; i++) /* 40 MiB */
		add(k, (uint64_t)i << 20, 1 << 20);
	assert_true(outkeep_bytes(k) <= OUTKEEP_MAX);
	assert_true(outkeep_bytes(k) > OUTKEEP_MAX - (2u << 20));
	nseen = 0;
	outkeep_each(k, collect, NULL);
	/* the newest are kept, in order */
	assert_int_equal(seen[nseen - 1], (uint64_t)39 << 20);
	assert_true(seen[0] > 0 && seen[0] < seen[1]);
	outkeep_destroy(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(kept_until_answered),
	    cmocka_unit_test(bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
