/* The card memory of the slices of shared cards (card_memory.h) as heartbeats report it: kept
 * per running attempt, node and card; a node's next report replaces its last; a report for an
 * attempt that does not run there (an old attempt, another node's job, a card its task does not
 * hold) is dropped; JobInfo and /metrics show it; an ended job's entries go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/card_memory.h"
#include "scheduler/features/metrics.h"

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	fixture_up("cardmem");
	S.metrics = metrics_create();
	assert_non_null(S.metrics);
	return 0;
}

static int teardown(void **state)
{
	metrics_destroy(&S.metrics);
	fixture_down();
	return 0;
}

static int add_node(const char *name)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = 4;
	reg.mem_mb = 1000;
	int idx = nodes_register(S.nodes, &reg, (const uint8_t *)name, strlen(name));
	assert_true(idx >= 0);
	return idx;
}

/* A running job of one task on node, holding the cards of mask. */
static struct job *running(uint64_t id, int node, uint64_t cards)
{
	struct job *j = calloc(1, sizeof(*j));
	j->id = id;
	j->user = strdup("alice");
	j->name = strdup("t");
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->attempt = 1;
	j->ntasks = 1;
	j->tasks = calloc(1, sizeof(*j->tasks));
	j->tasks[0].node = node;
	j->tasks[0].cards = cards;
	j->durable = true;
	assert_int_equal(jobs_add(S.jobs, j), 0);
	return j;
}

static void report(int node, const Gpool__CardMemory *in, size_t n)
{
	Gpool__CardMemory v[8], *pv[8];
	for (size_t i = 0; i < n; i++) {
		v[i] = in[i];
		pv[i] = &v[i];
	}
	card_mem_report(&S, node, pv, n);
}

static Gpool__CardMemory cm(uint64_t job, uint32_t attempt, uint32_t card, uint64_t bytes)
{
	Gpool__CardMemory m = GPOOL__CARD_MEMORY__INIT;
	m.job_id = job;
	m.attempt = attempt;
	m.card = card;
	m.bytes = bytes;
	m.peak = bytes + 1;
	m.budget = 4096;
	return m;
}

static void kept_and_shown(void **state)
{
	int h1 = add_node("h1"), h2 = add_node("h2");
	struct job *a = running(1, h1, 1 << 1); /* card 1 of h1 */
	running(2, h2, 1);			/* card 0 of h2 */
	const Gpool__CardMemory r1[] = {
	    cm(1, 1, 1, 1000), /* kept */
	    cm(1, 0, 1, 5),    /* an old attempt: dropped */
	    cm(1, 1, 0, 6),    /* a card the task does not hold: dropped */
	    cm(2, 1, 0, 7),    /* job 2 runs on h2, not h1: dropped */
	    cm(9, 1, 0, 8),    /* no such job: dropped */
	};
	report(h1, r1, 5);
	const Gpool__CardMemory r2[] = {cm(2, 1, 0, 2000)};
	report(h2, r2, 1);
	size_t n;
	const struct card_mem_entry *e = card_mem_entries(&S, &n);
	assert_int_equal(n, 2);
	assert_true(e[0].job == 1 && e[0].card == 1 && e[0].bytes == 1000 && e[0].peak == 1001 &&
		    e[0].budget == 4096 && e[0].node == h1);
	Gpool__JobInfo ji;
	jobinfo_fill(&ji, a, S.nodes);
	card_mem_info_fill(&S, a, &ji);
	assert_int_equal(ji.n_card_memory, 1);
	assert_string_equal(ji.card_memory[0]->node, "h1");
	assert_int_equal(ji.card_memory[0]->bytes, 1000);
	jobinfo_release(&ji);
	char *text = metrics_render(&S);
	assert_non_null(text);
	assert_non_null(
	    strstr(text, "gpool_job_card_memory_bytes{job=\"1\",node=\"h1\",card=\"1\"} 1000\n"));
	assert_non_null(strstr(
	    text, "gpool_job_card_memory_peak_bytes{job=\"2\",node=\"h2\",card=\"0\"} 2001\n"));
	assert_non_null(strstr(
	    text, "gpool_job_card_memory_budget_bytes{job=\"1\",node=\"h1\",card=\"1\"} 4096\n"));
	free(text);
	/* h1's next report replaces its last; h2's stays */
	const Gpool__CardMemory r3[] = {cm(1, 1, 1, 300)};
	report(h1, r3, 1);
	e = card_mem_entries(&S, &n);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(e[i].bytes, e[i].job == 1 ? 300 : 2000);
	report(h1, NULL, 0); /* nothing sampled there now */
	e = card_mem_entries(&S, &n);
	assert_int_equal(n, 1);
	/* job 2 ends: its entry goes */
	jobs_get(S.jobs, 2)->state = GPOOL__JOB_STATE__COMPLETED;
	e = card_mem_entries(&S, &n);
	assert_int_equal(n, 0);
	text = metrics_render(&S);
	assert_null(strstr(text, "gpool_job_card_memory_bytes{"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(kept_and_shown, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
