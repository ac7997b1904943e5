/* test_account.c: which local account runs a job's tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "worker/account.h"

/* A passwd of three: root, alice (1000), bob (1001). */
static int fake_lookup(const char *name, struct gp_account *a, void *arg)
{
	static const struct {
		const char *name;
		uid_t uid;
	} pw[] = {{"root", 0}, {"alice", 1000}, {"bob", 1001}};
	(void)arg;
	for (size_t i = 0; i < sizeof(pw) / sizeof(pw[0]); i++) {
		if (!strcmp(name, pw[i].name)) {
			a->uid = pw[i].uid;
			a->gid = pw[i].uid;
			snprintf(a->name, sizeof(a->name), "%s", name);
			return 0;
		}
	}
	return -1;
}

static struct gp_account_rules rules(const char *run_as, bool allow_root, uid_t self)
{
	struct gp_account_rules r = {.run_as = run_as,
				     .allow_root = allow_root,
				     .self = self,
				     .node = "h2",
				     .lookup = fake_lookup};
	return r;
}

static void same_name(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	assert_int_equal(gp_account_resolve(&r, "alice", &a, &err), 0);
	assert_int_equal(a.uid, 1000);
	assert_string_equal(a.name, "alice");
}

static void run_as(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules("bob", false, 0);
	assert_int_equal(gp_account_resolve(&r, "alice", &a, &err), 0);
	assert_int_equal(a.uid, 1001);
	/* run_as wins even when the owner has no account here */
	assert_int_equal(gp_account_resolve(&r, "carol", &a, &err), 0);
	assert_string_equal(a.name, "bob");
	r = rules("nosuch", false, 0);
	assert_int_equal(gp_account_resolve(&r, "alice", &a, &err), -1);
	assert_string_equal(err.text, "no local account 'nosuch' on node h2");
}

static void missing(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules("", false, 0);
	assert_int_equal(gp_account_resolve(&r, "carol", &a, &err), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.text, "no local account 'carol' on node h2");
	assert_int_equal(gp_account_resolve(&r, "", &a, &err), -1);
}

static void root(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	assert_int_equal(gp_account_resolve(&r, "root", &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(err.text, "allow_root"));
	r = rules("root", false, 0);
	assert_int_equal(gp_account_resolve(&r, "alice", &a, &err), -1);
	r = rules(NULL, true, 0);
	assert_int_equal(gp_account_resolve(&r, "root", &a, &err), 0);
	assert_int_equal(a.uid, 0);
}

static void not_root_agent(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 1000);
	assert_int_equal(gp_account_resolve(&r, "alice", &a, &err), 0);
	assert_int_equal(gp_account_resolve(&r, "bob", &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(err.text, "cannot run tasks as 'bob'"));
}

static void real_passwd(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = {.node = "h1"};
	assert_int_equal(gp_account_resolve(&r, "nobody", &a, &err), 0);
	assert_true(a.uid != 0);
	assert_string_equal(a.name, "nobody");
	assert_int_equal(gp_account_resolve(&r, "root", &a, &err), -1);
	r.allow_root = true;
	assert_int_equal(gp_account_resolve(&r, "root", &a, &err), 0);
	assert_int_equal(a.uid, 0);
	assert_int_equal(gp_account_resolve(&r, "no-such-user-xyz", &a, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(same_name),      cmocka_unit_test(run_as),
	    cmocka_unit_test(missing),	      cmocka_unit_test(root),
	    cmocka_unit_test(not_root_agent), cmocka_unit_test(real_passwd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
