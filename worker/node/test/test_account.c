/* test_account.c: which local account runs a job's tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "worker/node/account.h"

/* A passwd of five: root, munge (a system account), alice (1000), bob (1001), and on this node
 * uid 1002 is dave, while the pool knows 1002 as carol. */
static const struct {
	const char *name;
	uid_t uid;
} pw[] = {{"root", 0}, {"munge", 104}, {"alice", 1000}, {"bob", 1001}, {"dave", 1002}};

static int fake_lookup(const char *name, uid_t uid, struct gp_account *a, void *arg)
{
	(void)arg;
	for (size_t i = 0; i < sizeof(pw) / sizeof(pw[0]); i++) {
		if (name ? !strcmp(name, pw[i].name) : uid == pw[i].uid) {
			a->uid = pw[i].uid;
			a->gid = pw[i].uid;
			snprintf(a->name, sizeof(a->name), "%s", pw[i].name);
			return 0;
		}
	}
	return -1;
}

static struct gp_uid_policy policy;

static struct gp_account_rules rules(const char *run_as, bool allow_root, uid_t self)
{
	struct gp_account_rules r = {.run_as = run_as,
				     .allow_root = allow_root,
				     .self = self,
				     .node = "h2",
				     .policy = &policy,
				     .lookup = fake_lookup};
	return r;
}

static struct gp_owner owner(uid_t uid, const char *name)
{
	struct gp_owner o = {.uid = uid, .name = name};
	return o;
}

static int setup(void **state)
{
	gp_error_t err;
	(void)state;
	return gp_uid_policy_init(&policy, "/nonexistent", 1000, 60000, "", &err);
}

static void by_uid(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	struct gp_owner o = owner(1000, "alice");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_int_equal(a.uid, 1000);
	assert_string_equal(a.name, "alice");
	/* the uid decides, not a name: an owner the pool knows only by uid */
	o = owner(1001, NULL);
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_string_equal(a.name, "bob");
}

static void other_name_refused(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	/* uid 1002 is carol to the pool, dave here: never run as dave */
	struct gp_owner o = owner(1002, "carol");
	errno = 0;
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(err.text, "uid 1002 is 'dave' on node h2 but 'carol' in the pool: the "
				      "pool needs one uid space");
	/* a claimed name that exists here under another uid changes nothing */
	o = owner(1000, "bob");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
}

static void missing(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules("", false, 0);
	struct gp_owner o = owner(1500, "erin");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err.text,
			    "no local account with uid 1500 ('erin' in the pool) on node h2");
	o = owner(1500, "");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_string_equal(err.text, "no local account with uid 1500 on node h2");
}

static void system_account_refused(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	struct gp_owner o = owner(104, "munge");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(err.text,
			    "node h2 refuses: uid 104 ('munge') is a system account (outside "
			    "1000-60000)");
	/* this node's deny list */
	struct gp_uid_policy deny;
	assert_int_equal(gp_uid_policy_init(&deny, "/nonexistent", 0, 0, "bob", &err), 0);
	r.policy = &deny;
	o = owner(1001, "bob");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_non_null(strstr(err.text, "deny list"));
	/* a supervisor (no policy) runs what its agent checked */
	r.policy = NULL;
	o = owner(104, "munge");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
}

static void run_as(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules("bob", false, 0);
	struct gp_owner o = owner(1000, "alice");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_int_equal(a.uid, 1001);
	/* run_as wins even when the owner has no account here */
	o = owner(1500, "carol");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_string_equal(a.name, "bob");
	r = rules("nosuch", false, 0);
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_string_equal(err.text, "no local account 'nosuch' on node h2");
}

static void root(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 0);
	struct gp_owner o = owner(0, "root");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(err.text, "allow_root"));
	r = rules("root", false, 0);
	o = owner(1000, "alice");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	r = rules(NULL, true, 0);
	o = owner(0, "root");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_int_equal(a.uid, 0);
}

static void not_root_agent(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = rules(NULL, false, 1000);
	struct gp_owner o = owner(1000, "alice");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	o = owner(1001, "bob");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
	assert_non_null(strstr(err.text, "cannot run tasks as 'bob'"));
}

static void real_passwd(void **state)
{
	struct gp_account a;
	gp_error_t err;
	struct gp_account_rules r = {.node = "h1"};
	struct passwd *nb = getpwnam("nobody");
	assert_non_null(nb);
	struct gp_owner o = owner(nb->pw_uid, "nobody");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_string_equal(a.name, "nobody");
	/* Debian's nobody (65534) is outside UID_MIN..UID_MAX: a system account */
	struct gp_uid_policy sys;
	assert_int_equal(gp_uid_policy_init(&sys, NULL, 0, 0, "", &err), 0);
	r.policy = &sys;
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	assert_int_equal(errno, EPERM);
	r.policy = NULL;
	o = owner(0, "root");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	r.allow_root = true;
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), 0);
	assert_int_equal(a.uid, 0);
	o = owner(4000000000u, "");
	assert_int_equal(gp_account_resolve(&r, &o, &a, &err), -1);
	/* the list an agent registers with holds no system account and no root */
	uid_t uids[4096];
	char names[4096][33];
	bool truncated;
	size_t n = gp_account_list(&sys, uids, names, 4096, &truncated);
	assert_false(truncated);
	for (size_t i = 0; i < n; i++) {
		assert_true(uids[i] >= sys.min && uids[i] <= sys.max);
		struct passwd *p = getpwuid(uids[i]);
		assert_non_null(p);
		assert_string_equal(p->pw_name, names[i]);
		for (size_t j = 0; j < i; j++) /* each uid once */
			assert_true(uids[j] != uids[i]);
	}
	if (n > 1) {
		assert_int_equal(gp_account_list(&sys, uids, names, 1, &truncated), 1);
		assert_true(truncated);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(by_uid),	      cmocka_unit_test(other_name_refused),
	    cmocka_unit_test(missing),	      cmocka_unit_test(system_account_refused),
	    cmocka_unit_test(run_as),	      cmocka_unit_test(root),
	    cmocka_unit_test(not_root_agent), cmocka_unit_test(real_passwd),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
