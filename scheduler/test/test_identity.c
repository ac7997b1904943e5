/* test_identity.c: a job's owner comes from the credential's uid: the scheduler PC's name for
 * it, else the name the agents agree on; system accounts and the deny list are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/core/identity.h"
#include "scheduler/core/nodes.h"

/* the scheduler's PC knows alice (1000) and bob (1001) only */
static int sched_passwd(uid_t uid, char *name, size_t len)
{
	const char *n = uid == 1000 ? "alice" : uid == 1001 ? "bob" : NULL;
	if (!n)
		return -1;
	snprintf(name, len, "%s", n);
	return 0;
}

static void node_with(struct nodes *ns, const char *node, uid_t uid, const char *acct)
{
	Gpool__NodeRegister reg = GPOOL__NODE_REGISTER__INIT;
	Gpool__Account a = GPOOL__ACCOUNT__INIT, *ap[1] = {&a};
	a.uid = uid;
	a.name = (char *)acct;
	reg.name = (char *)node;
	reg.cpus = 1;
	reg.accounts = ap;
	reg.n_accounts = 1;
	reg.accounts_listed = true;
	assert_true(nodes_register(ns, &reg, (const uint8_t *)node, strlen(node)) >= 0);
}

static void owner_names(void **state)
{
	(void)state;
	struct gp_uid_policy p;
	gp_error_t err;
	char name[64], why[256];
	assert_int_equal(gp_uid_policy_init(&p, "/nonexistent", 0, 0, "bob", &err), 0);
	struct nodes *ns = nodes_create();
	/* the scheduler's own passwd first */
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 1000, name, sizeof(name), why, sizeof(why)), 0);
	assert_string_equal(name, "alice");
	/* on the deny list */
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 1001, name, sizeof(name), why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "account 'bob' (uid 1001) is on the deny list (deny_users)");
	/* unknown everywhere */
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 1500, name, sizeof(name), why, sizeof(why)), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(why, "uid 1500 has no account on the scheduler's PC nor on any node");
	/* the agents' word when the scheduler's PC lacks the account */
	node_with(ns, "h1", 1500, "carol");
	node_with(ns, "h2", 1500, "carol");
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 1500, name, sizeof(name), why, sizeof(why)), 0);
	assert_string_equal(name, "carol");
	/* ... unless they disagree */
	node_with(ns, "h3", 1500, "dave");
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 1500, name, sizeof(name), why, sizeof(why)), -1);
	assert_string_equal(why, "uid 1500 is 'carol' on node h1 but 'dave' on node h3: the pool "
				 "needs one uid space");
	/* a system account, even one the scheduler's PC has */
	node_with(ns, "h1", 104, "munge");
	assert_int_equal(
	    identity_owner(&p, ns, sched_passwd, 104, name, sizeof(name), why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "uid 104 ('munge') is a system account (outside 1000-60000)");
	/* the scheduler's own jobs (screening): no policy */
	assert_int_equal(
	    identity_owner(NULL, ns, sched_passwd, 104, name, sizeof(name), why, sizeof(why)), 0);
	nodes_destroy(&ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(owner_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
