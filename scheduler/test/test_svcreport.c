/* test_svcreport: the gateways' reports of replicas as gstat gets them (svcreport.c): summed
 * over gateways, failing when one has the replica out, for the attempt asked only, forgotten
 * after SVCREP_FRESH_MS. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "scheduler/features/svcreport.h"

static Gpool__ReplicaReport rep(uint64_t job, uint32_t restarts, bool healthy, uint64_t requests)
{
	Gpool__ReplicaReport r = GPOOL__REPLICA_REPORT__INIT;
	r.job_id = job;
	r.restarts = restarts;
	r.healthy = healthy;
	r.requests = requests;
	return r;
}

static void summed_and_judged(void **state)
{
	(void)state;
	svcrep_t *t = svcrep_create();
	Gpool__ReplicaHealth h;
	uint64_t req;
	assert_int_equal(svcrep_get(t, 7, 0, 1000, &h, &req), 0);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_UNKNOWN);
	Gpool__ReplicaReport a = rep(7, 0, true, 100), b = rep(7, 0, true, 20);
	assert_int_equal(svcrep_put(t, "gw1:8000", &a, 1000), 0);
	assert_int_equal(svcrep_put(t, "gw2:8000", &b, 1000), 0);
	assert_int_equal(svcrep_get(t, 7, 0, 1500, &h, &req), 2);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_OK);
	assert_int_equal(req, 120);
	/* a gateway's newer report replaces its own, not the other's */
	a = rep(7, 0, false, 150);
	svcrep_put(t, "gw1:8000", &a, 2000);
	assert_int_equal(svcrep_get(t, 7, 0, 2000, &h, &req), 2);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_FAILING);
	assert_int_equal(req, 170);
	/* another attempt of the replica is not this one */
	assert_int_equal(svcrep_get(t, 7, 1, 2000, &h, &req), 0);
	assert_int_equal(req, 0);
	/* stale reports are forgotten */
	assert_int_equal(svcrep_get(t, 7, 0, 1000 + SVCREP_FRESH_MS + 1, &h, &req), 1);
	assert_int_equal(req, 150);
	assert_int_equal(svcrep_get(t, 7, 0, 2000 + SVCREP_FRESH_MS + 1, &h, &req), 0);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_UNKNOWN);
	svcrep_destroy(&t);
	assert_null(t);
}

static void many_replicas(void **state)
{
	(void)state;
	svcrep_t *t = svcrep_create();
	for (uint64_t j = 1; j <= 1000; j++) {
		Gpool__ReplicaReport r = rep(j, 0, j % 2, j);
		assert_int_equal(svcrep_put(t, "gw", &r, 5000), 0);
	}
	Gpool__ReplicaHealth h;
	uint64_t req;
	assert_int_equal(svcrep_get(t, 999, 0, 5000, &h, &req), 1);
	assert_int_equal(req, 999);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_OK);
	assert_int_equal(svcrep_get(t, 1000, 0, 5000, &h, &req), 1);
	assert_int_equal(h, GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_FAILING);
	/* a NULL table (no gateway ever reported) answers unknown */
	assert_int_equal(svcrep_get(NULL, 1, 0, 5000, &h, &req), 0);
	svcrep_destroy(&t);
}

/* A drain is over by the gateways' word when every fresh report since the drain began says
 * draining with nothing in flight. */
static void drained_by_word(void **state)
{
	(void)state;
	svcrep_t *t = svcrep_create();
	assert_true(svcrep_drained(t, 7, 0, 1000, 1000)); /* no gateway knows it */
	Gpool__ReplicaReport a = rep(7, 0, true, 10), b = rep(7, 0, true, 5);
	svcrep_put(t, "gw1", &a, 900);
	svcrep_put(t, "gw2", &b, 900);
	/* reports from before the drain began: not yet */
	assert_false(svcrep_drained(t, 7, 0, 1000, 1100));
	/* gw1 has it draining with 2 in flight, gw2 does not know of the drain yet */
	a.draining = true;
	a.outstanding = 2;
	svcrep_put(t, "gw1", &a, 1200);
	svcrep_put(t, "gw2", &b, 1200);
	assert_false(svcrep_drained(t, 7, 0, 1000, 1300));
	b.draining = true;
	svcrep_put(t, "gw2", &b, 1400);
	assert_false(svcrep_drained(t, 7, 0, 1000, 1500)); /* gw1's 2 requests */
	a.outstanding = 0;
	svcrep_put(t, "gw1", &a, 1600);
	assert_true(svcrep_drained(t, 7, 0, 1000, 1700));
	/* another attempt is not this one */
	assert_true(svcrep_drained(t, 7, 1, 1000, 1700));
	/* a gateway gone silent is forgotten after SVCREP_FRESH_MS */
	a.outstanding = 3;
	svcrep_put(t, "gw1", &a, 1800);
	assert_false(svcrep_drained(t, 7, 0, 1000, 1900));
	assert_true(svcrep_drained(t, 7, 0, 1000, 1800 + SVCREP_FRESH_MS + 1));
	assert_true(svcrep_drained(NULL, 7, 0, 1000, 1000));
	svcrep_destroy(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(summed_and_judged),
	    cmocka_unit_test(many_replicas),
	    cmocka_unit_test(drained_by_word),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
