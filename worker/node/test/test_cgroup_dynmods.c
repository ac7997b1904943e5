/* What the agent does to put the cgroup migration lock in favordynmods mode, read from
 * mountinfo texts of a Debian 12 PC (cgroup2), of these build machines (v1) and of neither;
 * and (as root) the cgroup2 remount itself, on a cgroup2 mounted in a private mount namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/node/cgroup_dynmods.h"
#include "worker/test/skip.h"

/* Debian 12: systemd's unified hierarchy */
static const char debian12[] =
    "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
    "28 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n";

/* the build machines: v1 controllers on a tmpfs */
static const char v1[] =
    "30 22 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "32 30 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n";

static void plan_v2(void **state)
{
	struct gp_dynmods_plan p;
	assert_int_equal(gp_dynmods_plan(debian12, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_REMOUNT_V2);
	assert_string_equal(p.target, "/sys/fs/cgroup");
	/* its options are kept: a remount without them would drop nsdelegate and nosuid */
	assert_string_equal(p.data, "nsdelegate,memory_recursiveprot,favordynmods");
	assert_int_equal(p.flags, MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RELATIME);
}

static void plan_v1(void **state)
{
	struct gp_dynmods_plan p;
	assert_int_equal(gp_dynmods_plan(v1, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_MOUNT_V1);
}

static void plan_already(void **state)
{
	char text[2048];
	/* any hierarchy with it: the lock's mode is kernel-wide */
	snprintf(text, sizeof(text), "%s%s", v1,
		 "40 1 0:40 / /run/x rw,nosuid,nodev,noexec,relatime - cgroup cgroup "
		 "rw,name=other,favordynmods\n");
	struct gp_dynmods_plan p;
	assert_int_equal(gp_dynmods_plan(text, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_ALREADY);
	snprintf(text, sizeof(text), "%s",
		 "26 22 0:23 / /sys/fs/cgroup rw,nosuid master:4 - cgroup2 cgroup2 "
		 "rw,favordynmods,nsdelegate\n");
	assert_int_equal(gp_dynmods_plan(text, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_ALREADY);
	/* a word that only starts like it is not it */
	snprintf(text, sizeof(text), "%s",
		 "26 22 0:23 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,favordynmodsx\n");
	assert_int_equal(gp_dynmods_plan(text, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_REMOUNT_V2);
	assert_string_equal(p.data, "favordynmodsx,favordynmods");
}

static void plan_none_and_odd(void **state)
{
	struct gp_dynmods_plan p;
	assert_int_equal(
	    gp_dynmods_plan("28 1 254:1 / / rw - ext4 /dev/vda1 rw\n", "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_NONE);
	assert_int_equal(gp_dynmods_plan("", "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_NONE);
	/* lines cut short or without the separator are not mounts of ours */
	assert_int_equal(
	    gp_dynmods_plan("26 22 0:23 / /sys/fs/cgroup rw cgroup2\n1 2\n", "/sys/fs/cgroup", &p),
	    0);
	assert_int_equal(p.how, GP_DYNMODS_NONE);
	/* a cgroup2 somewhere else is not the root's; an escaped mount point is compared
	 * unescaped; the last mount at the root is the one on top */
	const char text[] =
	    "26 22 0:23 / /a\\040b rw - cgroup2 cgroup2 rw,nsdelegate\n"
	    "27 22 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
	    "28 27 0:23 / /sys/fs/cgroup rw,noexec - cgroup2 cgroup2 rw,nsdelegate\n";
	assert_int_equal(gp_dynmods_plan(text, "/a b", &p), 0);
	assert_int_equal(p.how, GP_DYNMODS_REMOUNT_V2);
	assert_string_equal(p.target, "/a b");
	assert_int_equal(gp_dynmods_plan(text, "/sys/fs/cgroup", &p), 0);
	assert_int_equal(p.flags, MS_NOEXEC);
	assert_string_equal(p.data, "nsdelegate,favordynmods");
	/* options too long for a mount(2) data page of ours: refused, not cut */
	char lng[1200];
	int n = snprintf(lng, sizeof(lng), "%s", "26 22 0:23 / /sys/fs/cgroup rw - cgroup2 c rw");
	while (n < 1100)
		n += snprintf(lng + n, sizeof(lng) - (size_t)n, ",opt%d", n);
	assert_int_equal(gp_dynmods_plan(lng, "/sys/fs/cgroup", &p), -1);
	assert_int_equal(errno, EINVAL);
}

/* In a child with a private mount namespace: cgroup2 mounted nosuid on a temporary directory,
 * planned from the mountinfo line of that directory alone and remounted; the new line must
 * have favordynmods and still nosuid. Exit status: 0 done, 77 cannot here (said why). */
static int remount_child(void)
{
	char dir[] = "/tmp/gpool-dynmods-XXXXXX";
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    !mkdtemp(dir)) {
		printf("# skip: private mount namespace: %s\n", strerror(errno));
		return 77;
	}
	if (mount("cgroup2", dir, "cgroup2", MS_NOSUID, NULL) < 0) {
		printf("# skip: mount cgroup2: %s\n", strerror(errno));
		rmdir(dir);
		return 77;
	}
	int rc = 10;
	char cmd[256], line[1024];
	snprintf(cmd, sizeof(cmd), "awk '$5 == \"%s\"' /proc/self/mountinfo", dir);
	FILE *f = popen(cmd, "r");
	if (!f || !fgets(line, sizeof(line), f))
		goto out;
	pclose(f);
	f = NULL;
	struct gp_dynmods_plan p;
	gp_error_t err = {{0}};
	rc = 11;
	if (gp_dynmods_plan(line, dir, &p) < 0 || p.how != GP_DYNMODS_REMOUNT_V2)
		goto out; /* (ALREADY cannot be: the line is this fresh mount's own) */
	if (gp_dynmods_apply(&p, "/nonexistent", &err) < 0) {
		printf("# %s\n", err.text);
		rc = 12;
		goto out;
	}
	f = popen(cmd, "r");
	rc = 13;
	if (!f || !fgets(line, sizeof(line), f))
		goto out;
	printf("# after: %s", line);
	rc = strstr(line, "favordynmods") && strstr(line, "nosuid") ? 0 : 14;
out:
	if (f)
		pclose(f);
	umount(dir);
	rmdir(dir);
	return rc;
}

static void remount_v2(void **state)
{
	if (geteuid() != 0)
		GP_SKIP("not root: cannot mount cgroup2");
	int st = gp_child_status(remount_child);
	if (st == 77)
		GP_SKIP("cgroup2 cannot be mounted here (the child said why)");
	/* 10: no mountinfo line, 11: not planned as a remount, 12: remount failed, 13: line gone,
	 * 14: favordynmods missing or nosuid lost */
	assert_int_equal(st, 0);
}

/* test_cgroup_dynmods: the plans; test_cgroup_dynmods remount_v2: the remount, alone (77 when
 * it cannot run here) */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(plan_v2), cmocka_unit_test(plan_v1),
					   cmocka_unit_test(plan_already),
					   cmocka_unit_test(plan_none_and_odd)};
	const struct CMUnitTest env_tests[] = {cmocka_unit_test(remount_v2)};
	if (argc > 1)
		return gp_run_only(env_tests, argv[1], NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
