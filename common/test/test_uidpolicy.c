/* test_uidpolicy.c - which accounts a job may run as (common/uidpolicy.c): the uid range
 * read from a login.defs file, system accounts refused, the deny list */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uidpolicy.h"

static char defs[] = "/tmp/gp-test-login-defs-XXXXXX";

static int write_defs(void **state)
{
	(void)state;
	int fd = mkstemp(defs);
	assert_true(fd >= 0);
	const char text[] = "# comment UID_MIN 5\nMAIL_DIR /var/mail\nUID_MIN\t\t\t 2000\n"
			    "UID_MAX   3000\n#UID_MAX 9\n";
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	return 0;
}

static int remove_defs(void **state)
{
	(void)state;
	unlink(defs);
	return 0;
}

static void range_from_file(void **state)
{
	(void)state;
	uid_t lo, hi;
	gp_uid_range_from_login_defs(defs, &lo, &hi);
	assert_int_equal(lo, 2000);
	assert_int_equal(hi, 3000);
	/* a missing file: Debian's defaults */
	gp_uid_range_from_login_defs("/nonexistent/login.defs", &lo, &hi);
	assert_int_equal(lo, 1000);
	assert_int_equal(hi, 60000);
}

static void system_accounts_refused(void **state)
{
	(void)state;
	struct gp_uid_policy p;
	gp_error_t err;
	char why[160];
	assert_int_equal(gp_uid_policy_init(&p, defs, 0, 0, "", &err), 0);
	assert_int_equal(gp_uid_policy_check(&p, 2000, "alice", why, sizeof(why)), 0);
	assert_int_equal(gp_uid_policy_check(&p, 3000, "bob", why, sizeof(why)), 0);
	errno = 0;
	assert_int_equal(gp_uid_policy_check(&p, 1999, "munge", why, sizeof(why)), -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "uid 1999 ('munge') is a system account (outside 2000-3000)");
	assert_int_equal(gp_uid_policy_check(&p, 65534, NULL, why, sizeof(why)), -1);
	assert_string_equal(why, "uid 65534 is a system account (outside 2000-3000)");
	/* root is left to allow_root on the nodes */
	assert_int_equal(gp_uid_policy_check(&p, 0, "root", why, sizeof(why)), 0);
	/* the configured range wins over the file */
	assert_int_equal(gp_uid_policy_init(&p, defs, 500, 70000, NULL, &err), 0);
	assert_int_equal(gp_uid_policy_check(&p, 500, "x", why, sizeof(why)), 0);
	assert_int_equal(gp_uid_policy_check(&p, 65534, "nobody", why, sizeof(why)), 0);
	assert_int_equal(gp_uid_policy_init(&p, defs, 5000, 0, NULL, &err), -1);
	assert_string_equal(err.text, "uid range 5000-3000 is empty");
}

static void deny_list(void **state)
{
	(void)state;
	struct gp_uid_policy p;
	gp_error_t err;
	char why[160];
	assert_int_equal(gp_uid_policy_init(&p, defs, 0, 0, " backup, 2500\tops-admin ,", &err), 0);
	assert_int_equal(p.ndeny, 3);
	assert_int_equal(gp_uid_policy_check(&p, 2100, "backup", why, sizeof(why)), -1);
	assert_string_equal(why, "account 'backup' (uid 2100) is on the deny list (deny_users)");
	assert_int_equal(gp_uid_policy_check(&p, 2500, "carol", why, sizeof(why)), -1);
	assert_int_equal(gp_uid_policy_check(&p, 2500, NULL, why, sizeof(why)), -1);
	assert_int_equal(gp_uid_policy_check(&p, 2101, "ops-admin", why, sizeof(why)), -1);
	assert_int_equal(gp_uid_policy_check(&p, 2101, "carol", why, sizeof(why)), 0);
	/* a name without a name to compare: only uids apply */
	assert_int_equal(gp_uid_policy_check(&p, 2100, NULL, why, sizeof(why)), 0);
	/* bad entries leave the policy as it was */
	assert_int_equal(gp_uid_policy_init(&p, defs, 0, 0, "ok, bad/name", &err), -1);
	assert_string_equal(err.text, "deny_users: invalid name 'bad/name'");
	assert_int_equal(p.ndeny, 3);
	assert_int_equal(gp_uid_policy_init(&p, defs, 0, 0, "12x", &err), -1);
	assert_string_equal(err.text, "deny_users: invalid uid '12x'");
	char many[GP_UID_DENY_MAX * 4 + 8] = "";
	for (int i = 0; i <= GP_UID_DENY_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "u%d,", i);
	assert_int_equal(gp_uid_policy_init(&p, defs, 0, 0, many, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(range_from_file),
	    cmocka_unit_test(system_accounts_refused),
	    cmocka_unit_test(deny_list),
	};
	return cmocka_run_group_tests(tests, write_defs, remove_defs);
}
