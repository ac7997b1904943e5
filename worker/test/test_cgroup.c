/* Card device rules, and (as root) that they reach the job's cgroup: where the v1 devices
 * controller is writable, and on cgroup v2 where a cgroup2 hierarchy can be mounted over
 * /sys/fs/cgroup in a private mount namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/cgroup.h"
#include "worker/test/skip.h"

static void rules(void **state)
{
	/* nvidia, amd, nvidia, amd(fake) */
	int vendor[] = {1, 2, 1, 2};
	bool fake[] = {false, false, false, true};
	uint32_t given[] = {2};
	char buf[8][32];
	const char *r[8];
	size_t n = gp_cgroup_card_rules(given, 1, vendor, fake, 4, buf, r, 8);
	/* not given: nvidia ordinal 0 -> 195:0, amd ordinal 0 -> 226:128; the fake one has no file
	 */
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "c 195:0 rwm");
	assert_string_equal(r[1], "c 226:128 rwm");
	given[0] = 0;
	n = gp_cgroup_card_rules(given, 1, vendor, fake, 4, buf, r, 8);
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "c 226:128 rwm");
	assert_string_equal(r[1], "c 195:1 rwm");
	assert_int_equal(gp_cgroup_card_rules(NULL, 0, vendor, fake, 4, buf, r, 1), 1);
}

static void denied_in_cgroup(void **state)
{
	if (geteuid() != 0 || access("/sys/fs/cgroup/devices/devices.deny", W_OK) != 0) {
		GP_SKIP("not root or no writable v1 devices controller");
	}
	/* deny /dev/null (char 1:3) as a card's device file would be, and try it from inside */
	const char *deny[] = {"c 1:3 rwm"};
	struct gp_cgroup_limits lim = {.deny = deny, .ndeny = 1};
	gp_error_t err;
	char name[64];
	snprintf(name, sizeof(name), "job-test-devices.%d", (int)getpid());
	gp_cgroup_t *cg = gp_cgroup_create("v1", name, &lim, &err);
	assert_non_null(cg);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (gp_cgroup_attach_self(cg) < 0)
			_exit(2);
		int fd = open("/dev/null", O_WRONLY);
		_exit(fd < 0 && errno == EPERM ? 0 : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(st, 0); /* the device was denied inside the group */
	int fd = open("/dev/null", O_WRONLY);
	assert_true(fd >= 0); /* and only there */
	close(fd);
	gp_cgroup_destroy(&cg);
}

/* In a child with its own mount namespace and cgroup2 over /sys/fs/cgroup: make the job's
 * group the way gstepd does with cgroups = v2, and open /dev/null from inside it. The exit
 * status says what happened (77: cannot be set up here, with the reason on stdout). */
static int v2_child(void)
{
	if (unshare(CLONE_NEWNS) < 0) {
		printf("# skip: unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return 77;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL) < 0) {
		printf("# skip: cannot mount cgroup2 on /sys/fs/cgroup: %s\n", strerror(errno));
		return 77;
	}
	const char *deny[] = {"c 1:3 rwm"};
	struct gp_cgroup_limits lim = {.deny = deny, .ndeny = 1};
	gp_error_t err;
	char name[64];
	snprintf(name, sizeof(name), "job-test-devices-v2.%d", (int)getpid());
	gp_cgroup_t *cg = gp_cgroup_create("v2", name, &lim, &err);
	if (!cg) {
		printf("# gp_cgroup_create v2: %s\n", err.text);
		return 10;
	}
	int rc = !strcmp(gp_cgroup_version(cg), "v2") ? 0 : 11;
	pid_t pid = rc ? -1 : fork();
	if (pid == 0) {
		if (gp_cgroup_attach_self(cg) < 0)
			_exit(2);
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0 || errno != EPERM)
			_exit(3);
		_exit(open("/dev/zero", O_RDONLY) >= 0 ? 0 : 4);
	}
	int st;
	if (pid > 0)
		rc = waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 12;
	if (rc == 0 && open("/dev/null", O_WRONLY) < 0)
		rc = 13; /* denied outside the group too */
	gp_cgroup_destroy(&cg);
	rmdir("/sys/fs/cgroup/gpool"); /* when no other test left a group there */
	return rc;
}

static void denied_in_v2_cgroup(void **state)
{
	if (geteuid() != 0) {
		GP_SKIP("not root");
	}
	int st = gp_child_status(v2_child);
	if (st == 77)
		GP_SKIP("the v2 group could not be made (the child said why)");
	/* 0: /dev/null denied inside the v2 group, /dev/zero allowed, /dev/null allowed
	 * outside; 2: could not join; 3: not denied; 4: /dev/zero denied; 10..13: see v2_child */
	assert_int_equal(st, 0);
}

/* test_cgroup: the rules; test_cgroup NAME: that test of the ones that need root and a
 * cgroup controller, alone (77 when it cannot run here) */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(rules)};
	const struct CMUnitTest env_tests[] = {cmocka_unit_test(denied_in_cgroup),
					       cmocka_unit_test(denied_in_v2_cgroup)};
	if (argc > 1)
		return gp_run_only(env_tests, argv[1], NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
