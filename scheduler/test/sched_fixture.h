/* sched_fixture.h - the scheduler the unit tests drive: SQLite in a temp dir with sync off,
 * output store, empty node and job tables, an inproc ROUTER without authentication (no
 * credential is made until a flush, so no munged is needed). Include once per test file. */
#ifndef GPOOL_SCHED_FIXTURE_H
#define GPOOL_SCHED_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "scheduler/core/core.h"
#include "scheduler/shell/plug.h"
#include "scheduler/shell/effects.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/output.h"
#include "scheduler/store/store.h"
#include "common/u64map.h"
#include "common/util.h"

static struct gsched S;
static char dir[64];

static const char *fixture_namer(int idx)
{
	return nodes_name(S.nodes, idx);
}

/* The test's passwd: every uid is "user<uid>" (the fixture's own, not this machine's). */
static int fixture_owner_name(uid_t uid, char *name, size_t len)
{
	snprintf(name, len, "user%u", (unsigned)uid);
	return 0;
}

/* NAME tells the temp dir and the inproc endpoint apart between test programs. */
static void fixture_up(const char *name)
{
	gp_error_t err;
	char ep[96];
	memset(&S, 0, sizeof(S));
	snprintf(dir, sizeof(dir), "/tmp/gp-%s-XXXXXX", name);
	assert_non_null(mkdtemp(dir));
	S.cfg = gp_config_create(GP_SCHED);
	S.store = store_create(dir, "off", 0, &err);
	assert_non_null(S.store);
	store_set_node_namer(fixture_namer);
	S.output = output_create(dir, 1 << 20, &err);
	assert_int_equal(sched_core_init(&S, 1), 0);
	assert_int_equal(sched_core_subscribe(&S), 0);
	S.dep_target = effects_dep_target;
	snprintf(ep, sizeof(ep), "inproc://%s-test", name);
	S.net = net_create(ep, NULL, 1 << 20, 0, &err);
	assert_non_null(S.net);
	S.owner_name = fixture_owner_name;
	assert_int_equal(gp_uid_policy_init(&S.uids, "/nonexistent", 1, 0x7ffffffe, "", &err), 0);
}

static void fixture_down(void)
{
	net_destroy(&S.net);
	store_destroy(&S.store);
	output_destroy(&S.output);
	sched_features_release(&S);
	sched_core_release(&S);
	gp_config_destroy(&S.cfg);
	free(S.touched);
	free(S.subs);
	gp_rm_rf(dir);
}

#endif
