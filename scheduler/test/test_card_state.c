/* The state gschedd owns of each card (drained with a reason, failed by screening, grade,
 * throughput, screen_job) and a whole node's drain survive an agent's re-registration and a
 * gschedd restart: through the real handlers (agent_register, client_node_control,
 * client_card_report) on a real store (SQLite in a temp dir) and an inproc socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scheduler/core/agent.h"
#include "scheduler/core/card_state.h"
#include "scheduler/core/cards.h"
#include "scheduler/shell/client.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/store/store.h"
#include "common/u64map.h"
#include "common/util.h"

#define NV GPOOL__VENDOR__VENDOR_NVIDIA

#include "scheduler/test/sched_fixture.h"

static int setup(void **state)
{
	fixture_up("cards");
	S.heartbeat_ms = 1000;
	S.node_timeout_ms = 10000;
	return 0;
}

static int teardown(void **state)
{
	fixture_down();
	return 0;
}

/* A card as an agent reports it: hardware only, state unknown, no grade. */
static Gpool__Card *card(Gpool__Card *c, uint32_t index, const char *name, const char *uuid,
			 const char *pci)
{
	gpool__card__init(c);
	c->index = index;
	c->vendor = NV;
	c->name = (char *)name;
	c->uuid = (char *)uuid;
	c->pci_bus_id = (char *)pci;
	c->vram_total = 12ULL << 30;
	c->vram_free = 11ULL << 30;
	c->arch = "8.6";
	c->driver_version = "580.1";
	c->power_limit_w = 170;
	return c;
}

static Gpool__Card *fake(Gpool__Card *c, uint32_t index, const char *name)
{
	char *uuid = malloc(32);
	snprintf(uuid, 32, "GPU-fake-%u", index); /* as gworkerd makes it */
	card(c, index, name, uuid, "");
	c->fake = true;
	return c;
}

static struct req request(Gpool__Msg *m, uint32_t uid)
{
	struct req r = {0};
	r.s = &S;
	r.rid = (const uint8_t *)"client";
	r.rid_len = 6;
	r.from.uid = uid;
	r.addr = "127.0.0.1";
	r.msg = m;
	r.node = -1;
	return r;
}

/* The agent of `name` registers (again) with these cards; returns the node. */
static struct node *registers(const char *name, Gpool__Card **cards, size_t n)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	reg.name = (char *)name;
	reg.cpus = 4;
	reg.mem_mb = 8000;
	reg.cards = cards;
	reg.n_cards = n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER;
	m.node_register = &reg;
	struct req r = request(&m, 0);
	r.rid = (const uint8_t *)name;
	r.rid_len = strlen(name);
	agent_register(&r);
	effects_carry_out(&S);
	int idx = nodes_find(S.nodes, name);
	assert_true(idx >= 0);
	struct node *nd = nodes_get(S.nodes, idx);
	assert_int_equal(nd->n_cards, n);
	return nd;
}

/* gnodes drain NODE:CARD --reason WHY (or resume), as root. */
static void drain(const char *node, int c, const char *why)
{
	Gpool__NodeControl nc = GPOOL__NODE_CONTROL__INIT;
	nc.action = why ? GPOOL__NODE_ACTION__NODE_DRAIN : GPOOL__NODE_ACTION__NODE_RESUME;
	nc.name = (char *)node;
	nc.card = c;
	nc.reason = (char *)(why ? why : "");
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_CONTROL;
	m.node_control = &nc;
	struct req r = request(&m, 0);
	client_node_control(&r);
	effects_carry_out(&S);
}

/* A screening result for a card, as root reports it directly (no job). */
static void grade(const char *node, uint32_t c, const char *g, double tput, const char *why)
{
	Gpool__CardReport cr = GPOOL__CARD_REPORT__INIT;
	cr.node = (char *)node;
	cr.card = c;
	cr.grade = (char *)g;
	cr.throughput = tput;
	cr.reason = (char *)why;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CARD_REPORT;
	m.card_report = &cr;
	struct req r = request(&m, 0);
	client_card_report(&r);
}

/* The node's card with this uuid (NULL if none). */
static Gpool__Card *by_uuid(struct node *n, const char *uuid)
{
	for (size_t i = 0; i < n->n_cards; i++)
		if (!strcmp(n->cards[i]->uuid, uuid))
			return n->cards[i];
	return NULL;
}

/* Three cards: A drained by an admin, B failed by screening, C graded good. */
static struct node *three_cards_with_state(void)
{
	Gpool__Card c[3], *v[3] = {card(&c[0], 0, "RTX 3060", "GPU-a", "00000000:01:00.0"),
				   card(&c[1], 1, "RTX 3060", "GPU-b", "00000000:02:00.0"),
				   card(&c[2], 2, "RTX 3060", "GPU-c", "00000000:03:00.0")};
	struct node *n = registers("h1", v, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(n->cards[i]->state, GPOOL__CARD_STATE__CARD_UP);
		assert_string_equal(n->cards[i]->grade, "");
	}
	drain("h1", 0, "fan replacement");
	grade("h1", 1, "fail", 12.5, "3 memory errors");
	grade("h1", 2, "good", 301.5, "");
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_DRAINED);
	assert_int_equal(n->cards[1]->state, GPOOL__CARD_STATE__CARD_FAILED);
	assert_int_equal(n->cards[2]->state, GPOOL__CARD_STATE__CARD_UP);
	return n;
}

static void assert_drained_a(struct node *n)
{
	Gpool__Card *a = by_uuid(n, "GPU-a");
	assert_non_null(a);
	assert_int_equal(a->state, GPOOL__CARD_STATE__CARD_DRAINED);
	assert_string_equal(a->state_reason, "fan replacement");
}

static void assert_failed_b(struct node *n)
{
	Gpool__Card *b = by_uuid(n, "GPU-b");
	assert_non_null(b);
	assert_int_equal(b->state, GPOOL__CARD_STATE__CARD_FAILED);
	assert_string_equal(b->state_reason, "screening failed: 3 memory errors");
	assert_string_equal(b->grade, "fail");
	assert_true(b->throughput == 12.5);
}

static void assert_good_c(struct node *n)
{
	Gpool__Card *c = by_uuid(n, "GPU-c");
	assert_non_null(c);
	assert_int_equal(c->state, GPOOL__CARD_STATE__CARD_UP);
	assert_string_equal(c->grade, "good");
	assert_true(c->throughput == 301.5);
}

/* The agent restarts (or reconnects) and reports the same cards, in another order and with
 * other hardware readings: each keeps its state, the readings are the new ones. */
static void reregistration_keeps_state(void **state)
{
	three_cards_with_state();
	Gpool__Card c[3], *v[3] = {card(&c[0], 0, "RTX 3060", "GPU-c", "00000000:03:00.0"),
				   card(&c[1], 1, "RTX 3060", "GPU-a", "00000000:01:00.0"),
				   card(&c[2], 2, "RTX 3060", "GPU-b", "00000000:02:00.0")};
	for (int i = 0; i < 3; i++) {
		c[i].vram_free = 5ULL << 30;
		c[i].driver_version = "580.2";
		c[i].temperature_c = 71;
	}
	struct node *n = registers("h1", v, 3);
	assert_drained_a(n);
	assert_failed_b(n);
	assert_good_c(n);
	Gpool__Card *a = by_uuid(n, "GPU-a");
	assert_int_equal(a->index, 1);
	assert_int_equal(a->vram_free, 5ULL << 30);
	assert_string_equal(a->driver_version, "580.2");
	assert_int_equal(a->temperature_c, 71);
	/* and placement sees it: of the three only C (now card 0) serves a card job */
	Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
	sp.gpus_per_task = 1;
	char why[128];
	int bad;
	struct gpu_req *g = gpu_req_from_spec(&sp, why, sizeof(why), &bad);
	assert_non_null(g);
	assert_int_equal(cards_serving(g, n, ~0ULL, NULL), 1);
	gpu_req_free(g);
	/* resume: up again, also after the next registration */
	drain("h1", 1, NULL);
	n = registers("h1", v, 3);
	assert_int_equal(by_uuid(n, "GPU-a")->state, GPOOL__CARD_STATE__CARD_UP);
	assert_string_equal(by_uuid(n, "GPU-a")->state_reason, "");
}

/* A card replaced in the same slot (new uuid, same PCI bus id) is another card: it starts up
 * and ungraded; a card no longer reported is dropped, and coming back later it is new. */
static void swapped_card_starts_fresh(void **state)
{
	three_cards_with_state();
	Gpool__Card c[2], *v[2] = {card(&c[0], 0, "RTX 3060", "GPU-a", "00000000:01:00.0"),
				   card(&c[1], 1, "RTX 3060", "GPU-d", "00000000:02:00.0")};
	struct node *n = registers("h1", v, 2);
	assert_drained_a(n);
	Gpool__Card *d = by_uuid(n, "GPU-d");
	assert_non_null(d);
	assert_int_equal(d->state, GPOOL__CARD_STATE__CARD_UP);
	assert_string_equal(d->state_reason, "");
	assert_string_equal(d->grade, "");
	assert_true(d->throughput == 0);
	assert_int_equal(d->screen_job, 0);
	assert_null(by_uuid(n, "GPU-b"));
	assert_null(by_uuid(n, "GPU-c"));
	Gpool__Card c2[3], *v2[3] = {card(&c2[0], 0, "RTX 3060", "GPU-a", "00000000:01:00.0"),
				     card(&c2[1], 1, "RTX 3060", "GPU-d", "00000000:02:00.0"),
				     card(&c2[2], 2, "RTX 3060", "GPU-c", "00000000:03:00.0")};
	n = registers("h1", v2, 3);
	assert_drained_a(n);
	assert_string_equal(by_uuid(n, "GPU-c")->grade, "");
}

/* Without uuids the PCI bus id tells; fake cards go by index and model (their uuid is made from
 * the index); a new card takes what the agent reports (a fake card's configured state). */
static void fallback_identities(void **state)
{
	Gpool__Card c[2], *v[2] = {card(&c[0], 0, "RX 6700 XT", "", "0000:03:00.0"),
				   card(&c[1], 1, "RX 6600", "", "0000:04:00.0")};
	struct node *n = registers("amd", v, 2);
	drain("amd", 1, "artifacts");
	Gpool__Card r[2], *rv[2] = {card(&r[0], 0, "RX 6600", "", "0000:04:00.0"),
				    card(&r[1], 1, "RX 6700 XT", "", "0000:03:00.0")};
	n = registers("amd", rv, 2);
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_DRAINED);
	assert_string_equal(n->cards[0]->state_reason, "artifacts");
	assert_int_equal(n->cards[1]->state, GPOOL__CARD_STATE__CARD_UP);

	Gpool__Card f[2], *fv[2] = {fake(&f[0], 0, "RTX 3060"), fake(&f[1], 1, "GTX 1660")};
	f[1].state = GPOOL__CARD_STATE__CARD_DRAINED; /* fake_cards ...:state=drained */
	n = registers("h2", fv, 2);
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_UP);
	assert_int_equal(n->cards[1]->state, GPOOL__CARD_STATE__CARD_DRAINED);
	drain("h2", 0, "fan");
	drain("h2", 1, NULL);
	/* the same fake list again: the scheduler's state wins over the configured one */
	n = registers("h2", fv, 2);
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_DRAINED);
	assert_int_equal(n->cards[1]->state, GPOOL__CARD_STATE__CARD_UP);
	/* card 0 is now another model: a new card, although its uuid is the same GPU-fake-0 */
	Gpool__Card g[1], *gv[1] = {fake(&g[0], 0, "RTX 4060")};
	n = registers("h2", gv, 1);
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_UP);
	for (int i = 0; i < 2; i++)
		free(f[i].uuid);
	free(g[0].uuid);
}

static void same_card_rules(void **state)
{
	Gpool__Card a, b;
	card(&a, 0, "RTX 3060", "GPU-a", "00:01.0");
	card(&b, 3, "RTX 3060", "GPU-a", "00:09.0");
	assert_true(card_same(&a, &b)); /* uuid decides, index and slot may change */
	card(&b, 0, "RTX 3060", "GPU-b", "00:01.0");
	assert_false(card_same(&a, &b)); /* a new uuid in the same slot */
	card(&b, 5, "RTX 3060", "", "00:01.0");
	assert_true(card_same(&a, &b)); /* one without a uuid: the slot */
	card(&a, 2, "RTX 3060", "", "");
	card(&b, 2, "RTX 3060", "", "");
	assert_true(card_same(&a, &b)); /* nothing else: index and model */
	card(&b, 2, "RTX 3070", "", "");
	assert_false(card_same(&a, &b));
	card(&a, 1, "RTX 3060", "GPU-fake-1", "");
	card(&b, 1, "RTX 3060", "GPU-fake-1", "");
	a.fake = b.fake = true;
	assert_true(card_same(&a, &b));
	card(&b, 1, "GTX 1660", "GPU-fake-1", "");
	b.fake = true;
	assert_false(card_same(&a, &b));
	b.fake = false;
	card(&b, 1, "RTX 3060", "GPU-fake-1", "");
	assert_false(card_same(&a, &b)); /* a fake card is never a real one */
}

static int collect(void *arg, const char *node, Gpool__Card *c)
{
	struct nodes *ns = arg;
	return nodes_restore_card(ns, node, c);
}

/* The stored rows, each checked against what was set. */
static int check_row(void *arg, const char *node, Gpool__Card *c)
{
	(*(int *)arg)++;
	assert_string_equal(node, "h1");
	assert_false(c->fake);
	assert_string_equal(c->name, "RTX 3060");
	if (!strcmp(c->uuid, "GPU-a")) {
		assert_int_equal(c->index, 0);
		assert_string_equal(c->pci_bus_id, "00000000:01:00.0");
		assert_int_equal(c->state, GPOOL__CARD_STATE__CARD_DRAINED);
		assert_string_equal(c->state_reason, "fan replacement");
		assert_string_equal(c->grade, "");
	} else if (!strcmp(c->uuid, "GPU-b")) {
		assert_int_equal(c->index, 1);
		assert_int_equal(c->state, GPOOL__CARD_STATE__CARD_FAILED);
		assert_string_equal(c->state_reason, "screening failed: 3 memory errors");
		assert_string_equal(c->grade, "fail");
		assert_true(c->throughput == 12.5);
	} else {
		assert_string_equal(c->uuid, "GPU-c");
		assert_int_equal(c->state, GPOOL__CARD_STATE__CARD_UP);
		assert_string_equal(c->grade, "good");
		assert_true(c->throughput == 301.5);
		assert_int_equal(c->screen_job, 42);
	}
	gpool__card__free_unpacked(c, NULL);
	return 0;
}

/* gschedd restarts: the store gives back each card's owned state, and the node's first
 * registration of the new process matches its report against it. */
static void store_round_trip(void **state)
{
	struct node *n = three_cards_with_state();
	n->cards[2]->screen_job = 42; /* as a screening job's relayed result sets it */
	orders_save_node(S.orders, 0);
	effects_carry_out(&S);
	assert_true(store_in_txn(S.store));
	assert_true(S.txn_first_ms > 0); /* the group commit window is open */
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), 0);
	S.txn_first_ms = 0;
	int count = 0;
	assert_int_equal(store_cards_load(S.store, check_row, &count), 0);
	assert_int_equal(count, 3);

	/* a new process: new store handle, new node table, the cards restored from the store */
	store_destroy(&S.store);
	nodes_destroy(&S.nodes);
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	S.nodes = nodes_create();
	assert_int_equal(store_cards_load(S.store, collect, S.nodes), 0);
	assert_int_equal(nodes_count(S.nodes), 0); /* no node until its agent registers */
	Gpool__Card c[3], *v[3] = {card(&c[0], 0, "RTX 3060", "GPU-a", "00000000:01:00.0"),
				   card(&c[1], 1, "RTX 3060", "GPU-b", "00000000:02:00.0"),
				   card(&c[2], 2, "RTX 3060", "GPU-c", "00000000:03:00.0")};
	n = registers("h1", v, 3);
	assert_drained_a(n);
	assert_failed_b(n);
	assert_good_c(n);
	assert_int_equal(by_uuid(n, "GPU-c")->screen_job, 42);
	/* the registration wrote the rows again; another restart still has them */
	assert_int_equal(store_commit(S.store, &err), 0);
	store_destroy(&S.store);
	nodes_destroy(&S.nodes);
	S.store = store_create(dir, "off", 0, &err);
	S.nodes = nodes_create();
	assert_int_equal(store_cards_load(S.store, collect, S.nodes), 0);
	n = registers("h1", v, 3);
	assert_drained_a(n);
	assert_failed_b(n);
	/* a node with no stored cards: its cards start up */
	Gpool__Card o[1], *ov[1] = {card(&o[0], 0, "RTX 3060", "GPU-z", "00000000:01:00.0")};
	n = registers("h9", ov, 1);
	assert_int_equal(n->cards[0]->state, GPOOL__CARD_STATE__CARD_UP);
}

static int expect(void *arg, const char *node, bool drain, const char *reason, bool member)
{
	return nodes_expect(arg, node, drain, reason, member);
}

/* A new gschedd process on the same jobs.db: the node list (with drains) from the store. */
static void restart(void)
{
	gp_error_t err;
	assert_int_equal(store_commit(S.store, &err), 0);
	store_destroy(&S.store);
	nodes_destroy(&S.nodes);
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	S.nodes = nodes_create();
	assert_int_equal(store_nodes_load(S.store, expect, S.nodes), 0);
}

/* gnodes drain NODE (a whole node) is kept in the store: after a gschedd restart the node
 * registers drained, with its reason, and takes no work; an agent's re-registration keeps the
 * reason; a resume is kept too. */
static void node_drain_survives_restart(void **state)
{
	(void)state;
	registers("h1", NULL, 0);
	registers("h2", NULL, 0);
	drain("h1", -1, "psu swap");
	struct node *n = nodes_get(S.nodes, nodes_find(S.nodes, "h1"));
	assert_true(n->drain);
	assert_int_equal(n->state, GPOOL__NODE_STATE__NODE_DRAINED);
	assert_true(store_in_txn(S.store)); /* the reply waits for the commit */
	restart();
	n = registers("h1", NULL, 0);
	assert_true(n->drain);
	assert_false(node_usable(n));
	assert_int_equal(n->state, GPOOL__NODE_STATE__NODE_DRAINED);
	assert_string_equal(n->reason, "psu swap");
	n = registers("h1", NULL, 0); /* its agent registers again */
	assert_string_equal(n->reason, "psu swap");
	n = registers("h2", NULL, 0);
	assert_false(n->drain);
	assert_true(node_usable(n));
	assert_null(n->reason);
	/* resumed, then restarted: up */
	drain("h1", -1, NULL);
	n = nodes_get(S.nodes, nodes_find(S.nodes, "h1"));
	assert_int_equal(n->state, GPOOL__NODE_STATE__NODE_UP);
	restart();
	n = registers("h1", NULL, 0);
	assert_false(n->drain);
	assert_true(node_usable(n));
	assert_null(n->reason);
}

/* A jobs.db made before the node drain was kept (nodes without its columns) opens, gains
 * them, and its nodes load undrained. */
static void old_nodes_table(void **state)
{
	(void)state;
	gp_error_t err;
	store_destroy(&S.store);
	char path[128];
	snprintf(path, sizeof(path), "%s/jobs.db", dir);
	unlink(path);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
				      "CREATE TABLE nodes(name TEXT PRIMARY KEY);"
				      "INSERT INTO nodes VALUES('old');",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	nodes_destroy(&S.nodes);
	S.nodes = nodes_create();
	assert_int_equal(store_nodes_load(S.store, expect, S.nodes), 0);
	struct node *n = registers("old", NULL, 0);
	assert_false(n->drain);
	drain("old", -1, "kept now");
	restart();
	assert_true(registers("old", NULL, 0)->drain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(reregistration_keeps_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(swapped_card_starts_fresh, setup, teardown),
	    cmocka_unit_test_setup_teardown(fallback_identities, setup, teardown),
	    cmocka_unit_test(same_card_rules),
	    cmocka_unit_test_setup_teardown(store_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(node_drain_survives_restart, setup, teardown),
	    cmocka_unit_test_setup_teardown(old_nodes_table, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
