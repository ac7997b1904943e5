/* test_outbox.c: sequenced, acknowledged supervisor messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "worker/node/outbox.h"

static void push(gp_outbox_t *o, uint32_t rank)
{
	Gpool__TaskEvent ev = GPOOL__TASK_EVENT__INIT;
	ev.rank = rank;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_TASK_EVENT;
	m.task_event = &ev;
	assert_int_equal(gp_outbox_push(o, &m), 0);
	assert_int_equal(m.id, gp_outbox_count(o) + gp_outbox_acked(o));
}

static void ack_and_resend(void **state)
{
	gp_outbox_t *o = gp_outbox_create();
	for (uint32_t i = 0; i < 100; i++)
		push(o, i);
	gp_batch_t b = {0};
	int n = gp_outbox_fill(o, &b, 1 << 20);
	assert_int_equal(n, 100);
	gp_outbox_sent(o, n);
	assert_int_equal(gp_outbox_unsent(o), 0);
	/* the batch decodes to the same messages, ids 1..100 */
	Gpool__Batch *d = gpool__batch__unpack(NULL, b.body.len, b.body.data);
	assert_non_null(d);
	assert_int_equal(d->n_msgs, 100);
	assert_int_equal(d->msgs[0]->id, 1);
	assert_int_equal(d->msgs[99]->id, 100);
	assert_int_equal(d->msgs[99]->task_event->rank, 99);
	gpool__batch__free_unpacked(d, NULL);
	gp_outbox_ack(o, 60);
	assert_int_equal(gp_outbox_count(o), 40);
	assert_int_equal(gp_outbox_acked(o), 60);
	gp_outbox_rewind(o);
	assert_int_equal(gp_outbox_unsent(o), 40);
	gp_batch_reset(&b);
	n = gp_outbox_fill(o, &b, 1 << 20);
	assert_int_equal(n, 40);
	d = gpool__batch__unpack(NULL, b.body.len, b.body.data);
	assert_int_equal(d->msgs[0]->id, 61);
	gpool__batch__free_unpacked(d, NULL);
	gp_outbox_ack(o, 1000);
	assert_int_equal(gp_outbox_count(o), 0);
	assert_int_equal(gp_outbox_bytes(o), 0);
	assert_int_equal(gp_outbox_acked(o), 100);
	push(o, 7);
	gp_batch_release(&b);
	gp_outbox_destroy(&o);
	assert_null(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(ack_and_resend)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
