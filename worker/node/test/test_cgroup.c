/* Card device rules, and (as root) that they reach the job's cgroup: where the v1 devices
 * controller is writable, and on cgroup v2 where a cgroup2 hierarchy can be mounted over
 * /sys/fs/cgroup in a private mount namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/node/cards.h"
#include "worker/node/cgroup.h"
#include "worker/test/skip.h"

static void rules(void **state)
{
	/* nvidia, amd, nvidia, amd(fake) */
	int vendor[] = {1, 2, 1, 2};
	bool fake[] = {false, false, false, true};
	uint32_t given[] = {2};
	char buf[8][32];
	const char *r[8];
	size_t n = gp_cgroup_card_rules(given, 1, vendor, fake, NULL, 4, buf, r, 8);
	/* not given: nvidia ordinal 0 -> 195:0, amd ordinal 0 -> 226:128; the fake one has no file
	 */
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "c 195:0 rwm");
	assert_string_equal(r[1], "c 226:128 rwm");
	given[0] = 0;
	n = gp_cgroup_card_rules(given, 1, vendor, fake, NULL, 4, buf, r, 8);
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "c 226:128 rwm");
	assert_string_equal(r[1], "c 195:1 rwm");
	assert_int_equal(gp_cgroup_card_rules(NULL, 0, vendor, fake, NULL, 4, buf, r, 1), 1);

	/* the driver numbered the NVIDIA cards the other way round (NVML's minor numbers 1 and
	 * 0) and the AMD card is renderD130: the rules name the driver's nodes, not the places */
	uint32_t dev_node[] = {1 + 1, 1 + 130, 0 + 1, 0};
	given[0] = 0;
	n = gp_cgroup_card_rules(given, 1, vendor, fake, dev_node, 4, buf, r, 8);
	assert_int_equal(n, 2);
	assert_string_equal(r[0], "c 226:130 rwm");
	assert_string_equal(r[1], "c 195:0 rwm");
	assert_int_equal(gp_card_dev_minor(1, 0, 3), 3);
	assert_int_equal(gp_card_dev_minor(2, 0, 1), 129);
	assert_int_equal(gp_card_dev_minor(1, 8, 0), 7);
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
	gp_cgroup_t *cg = gp_cgroup_create("v1", name, &lim, NULL, &err);
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

#define V1 "/sys/fs/cgroup"

static bool dir_there(const char *ctrl, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), V1 "/%s/gpool/%s", ctrl, name);
	return access(p, F_OK) == 0;
}

static void read_file(const char *ctrl, const char *name, const char *file, char *buf, size_t len)
{
	char p[512];
	snprintf(p, sizeof(p), V1 "/%s/gpool/%s/%s", ctrl, name, file);
	FILE *f = fopen(p, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* A child in the group: 0 when /proc/self/cgroup names the group in the memory hierarchy; with
 * touch_mb, it then touches that much memory (the limit's OOM kill ends it). */
static int run_in(gp_cgroup_t *cg, const char *name, size_t touch_mb)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (gp_cgroup_attach_self(cg) < 0)
			_exit(2);
		FILE *f = fopen("/proc/self/cgroup", "r");
		char line[512];
		int in = 0;
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, ":memory:") && strstr(line, name))
				in = 1;
		if (f)
			fclose(f);
		for (size_t i = 0; i < touch_mb; i++) {
			char *m = malloc(1 << 20);
			if (m)
				memset(m, 1, 1 << 20);
		}
		_exit(in ? 0 : 3);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A task shell's pool: a job's group is kept idle under another name, the next job takes it
 * under its own name with its own limits, an earlier job's OOM kill is not the next one's, a
 * job denied device files neither takes nor leaves one, and the pool's end removes them all. */
static void pooled(void **state)
{
	if (geteuid() != 0 || access(V1 "/memory/cgroup.procs", W_OK) != 0 ||
	    access(V1 "/cpuset/cgroup.procs", W_OK) != 0) {
		GP_SKIP("not root or no writable v1 memory and cpuset controllers");
	}
	char tag[32], a[64], b[64], c[64], idle0[64], idle1[64], buf[256];
	int me = (int)getpid();
	snprintf(tag, sizeof(tag), "t%d", me);
	snprintf(a, sizeof(a), "job-pool-a.%d", me);
	snprintf(b, sizeof(b), "job-pool-b.%d", me);
	snprintf(c, sizeof(c), "job-pool-c.%d", me);
	snprintf(idle0, sizeof(idle0), "idle.%s.0", tag);
	snprintf(idle1, sizeof(idle1), "idle.%s.1", tag);
	gp_cgroup_pool_t *pool = gp_cgroup_pool_create(tag, 1);
	assert_non_null(pool);
	size_t idle;
	uint64_t taken, parked;
	gp_error_t err;

	/* job a: 64 MiB on the first cpu, a process ran in it */
	uint32_t cpu0[] = {0}, cpu1[] = {1};
	struct gp_cgroup_limits la = {.mem_bytes = 64u << 20, .cpus = cpu0, .ncpus = 1};
	gp_cgroup_t *cg = gp_cgroup_create("v1", a, &la, pool, &err);
	assert_non_null(cg);
	read_file("memory", a, "memory.limit_in_bytes", buf, sizeof(buf));
	assert_string_equal(buf, "67108864");
	assert_int_equal(run_in(cg, a, 0), 0);
	gp_cgroup_destroy(&cg);
	assert_null(cg);
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	assert_int_equal(idle, 1);
	assert_int_equal(parked, 1);
	const char *ctrls[] = {"memory", "cpuset", "pids", "freezer"};
	for (size_t i = 0; i < 4; i++) {
		if (access(V1 "/pids/cgroup.procs", W_OK) != 0 && i == 2)
			continue;
		if (access(V1 "/freezer/cgroup.procs", W_OK) != 0 && i == 3)
			continue;
		assert_false(dir_there(ctrls[i], a));	 /* the job's name is gone */
		assert_true(dir_there(ctrls[i], idle0)); /* its group idles */
	}

	/* job b takes it: its own name, 128 MiB (memory+swap raised first), the second cpu */
	struct gp_cgroup_limits lb = {.mem_bytes = 128u << 20, .cpus = cpu1, .ncpus = 1};
	cg = gp_cgroup_create("v1", b, &lb, pool, &err);
	assert_non_null(cg);
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	assert_int_equal(idle, 0);
	assert_int_equal(taken, 1);
	assert_false(dir_there("memory", idle0));
	assert_true(dir_there("memory", b));
	read_file("memory", b, "memory.limit_in_bytes", buf, sizeof(buf));
	assert_string_equal(buf, "134217728");
	read_file("memory", b, "memory.memsw.limit_in_bytes", buf, sizeof(buf));
	assert_true(!*buf || !strcmp(buf, "134217728")); /* absent without swap accounting */
	char online[64];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	assert_non_null(f);
	assert_non_null(fgets(online, sizeof(online), f));
	fclose(f);
	read_file("cpuset", b, "cpuset.cpus", buf, sizeof(buf));
	if (!strncmp(online, "0-", 2)) /* two cpus or more */
		assert_string_equal(buf, "1");
	assert_int_equal(run_in(cg, b, 0), 0); /* a process joins it under b's name */

	/* an OOM kill in b, counted for b */
	bool swap = false;
	f = fopen("/proc/swaps", "r");
	while (f && fgets(buf, sizeof(buf), f))
		swap = swap || strncmp(buf, "Filename", 8);
	if (f)
		fclose(f);
	bool oom = !swap;
	if (oom) {
		assert_int_equal(run_in(cg, b, 512), 128 + SIGKILL);
		assert_int_equal(gp_cgroup_oom_kills(cg), 1);
	}
	gp_cgroup_destroy(&cg);

	/* job c: no limits at all; b's kill is not c's, and c's limits are the parent's */
	struct gp_cgroup_limits lc = {0};
	cg = gp_cgroup_create("v1", c, &lc, pool, &err);
	assert_non_null(cg);
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	assert_int_equal(taken, 2);
	read_file("memory", c, "memory.limit_in_bytes", buf, sizeof(buf));
	assert_true(strtoull(buf, NULL, 10) > (1ull << 40));
	char parent[256];
	snprintf(parent, sizeof(parent), "%s", "");
	f = fopen(V1 "/cpuset/gpool/cpuset.cpus", "r");
	assert_non_null(f);
	assert_non_null(fgets(parent, sizeof(parent), f));
	fclose(f);
	parent[strcspn(parent, "\n")] = '\0';
	read_file("cpuset", c, "cpuset.cpus", buf, sizeof(buf));
	assert_string_equal(buf, parent);
	gp_cgroup_destroy(&cg);
	/* and with 32 MiB again: the kill of b is still not counted */
	struct gp_cgroup_limits ld = {.mem_bytes = 32u << 20};
	cg = gp_cgroup_create("v1", a, &ld, pool, &err);
	assert_non_null(cg);
	if (oom)
		assert_int_equal(gp_cgroup_oom_kills(cg), 0);
	read_file("memory", a, "memory.limit_in_bytes", buf, sizeof(buf));
	assert_string_equal(buf, "33554432");

	/* a second group while the first is out: a new one; both go back, the pool keeps one */
	gp_cgroup_t *cg2 = gp_cgroup_create("v1", b, &lb, pool, &err);
	assert_non_null(cg2);
	gp_cgroup_destroy(&cg);
	gp_cgroup_destroy(&cg2);
	assert_false(dir_there("memory", a));
	assert_false(dir_there("memory", b));
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	assert_int_equal(idle, 1);

	/* denied device files: not from the pool, not into it */
	if (access(V1 "/devices/devices.deny", W_OK) == 0) {
		const char *deny[] = {"c 1:3 rwm"};
		struct gp_cgroup_limits le = {.deny = deny, .ndeny = 1};
		cg = gp_cgroup_create("v1", c, &le, pool, &err);
		assert_non_null(cg);
		gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
		assert_int_equal(idle, 1);
		assert_int_equal(taken, 3);
		gp_cgroup_destroy(&cg);
		assert_false(dir_there("memory", c));
		assert_false(dir_there("devices", c));
		gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
		assert_int_equal(idle, 1);
	}

	/* a job that leaves 4 MiB charged (a file in /dev/shm): its group is removed, not kept */
	char shm[64];
	snprintf(shm, sizeof(shm), "/dev/shm/gp-test-cgroup.%d", me);
	cg = gp_cgroup_create("v1", c, &lc, pool, &err);
	assert_non_null(cg);
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	uint64_t parked_before = parked;
	pid_t pid = fork();
	if (pid == 0) {
		if (gp_cgroup_attach_self(cg) < 0)
			_exit(2);
		FILE *w = fopen(shm, "w");
		static char mb[1 << 20];
		memset(mb, 7, sizeof(mb));
		for (int i = 0; w && i < 4; i++)
			fwrite(mb, 1, sizeof(mb), w);
		_exit(w && fclose(w) == 0 ? 0 : 3);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(st, 0);
	gp_cgroup_destroy(&cg);
	unlink(shm);
	gp_cgroup_pool_stats(pool, &idle, &taken, &parked);
	assert_int_equal(parked, parked_before);
	assert_false(dir_there("memory", c));

	/* the pool's end: no idle group left */
	gp_cgroup_pool_destroy(&pool);
	assert_null(pool);
	for (unsigned i = 0; i < 8; i++) {
		snprintf(idle1, sizeof(idle1), "idle.%s.%u", tag, i);
		assert_false(dir_there("memory", idle1));
		assert_false(dir_there("cpuset", idle1));
	}
}

/* The idle groups of a shell that is gone are swept; a running one's only when named. */
static void swept(void **state)
{
	if (geteuid() != 0 || access(V1 "/memory/cgroup.procs", W_OK) != 0) {
		GP_SKIP("not root or no writable v1 memory controller");
	}
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	char tag[64], name[64], idle[80];
	snprintf(tag, sizeof(tag), "s%d.sweep-node", (int)dead);
	snprintf(name, sizeof(name), "job-sweep.%d", (int)getpid());
	gp_error_t err;
	struct gp_cgroup_limits lim = {0};
	gp_cgroup_pool_t *pool = gp_cgroup_pool_create(tag, 4);
	assert_non_null(pool);
	gp_cgroup_t *cg = gp_cgroup_create("v1", name, &lim, pool, &err);
	assert_non_null(cg);
	gp_cgroup_destroy(&cg);
	snprintf(idle, sizeof(idle), "idle.%s.0", tag);
	assert_true(dir_there("memory", idle));
	assert_int_equal(gp_cgroup_sweep_idle("other-node", 0), 0); /* another node's shells */
	assert_true(gp_cgroup_sweep_idle("sweep-node", 0) >= 1);
	assert_false(dir_there("memory", idle));
	gp_cgroup_pool_destroy(&pool); /* what is gone stays gone */

	/* a shell that runs (this process): kept, unless it is named */
	snprintf(tag, sizeof(tag), "s%d.sweep-node", (int)getpid());
	pool = gp_cgroup_pool_create(tag, 4);
	assert_non_null(pool);
	cg = gp_cgroup_create("v1", name, &lim, pool, &err);
	assert_non_null(cg);
	gp_cgroup_destroy(&cg);
	snprintf(idle, sizeof(idle), "idle.%s.0", tag);
	assert_int_equal(gp_cgroup_sweep_idle("sweep-node", 0), 0);
	assert_true(dir_there("memory", idle));
	assert_true(gp_cgroup_sweep_idle("sweep-node", getpid()) >= 1);
	assert_false(dir_there("memory", idle));
	gp_cgroup_pool_destroy(&pool);
}

/* A job step's group inside its job's (gp_cgroup_create_in, v1): the job's memory limit bounds
 * the step's use although the step's own is higher, the OOM kill is counted in the step's group
 * (its job's counts none), the agent finds it by gp_cgroup_name_in, and a job group its gstepd
 * could not remove while the step's was inside goes with the step's. */
static void nested(void **state)
{
	if (geteuid() != 0 || access(V1 "/memory/cgroup.procs", W_OK) != 0 ||
	    access(V1 "/cpuset/cgroup.procs", W_OK) != 0) {
		GP_SKIP("not root or no writable v1 memory and cpuset controllers");
	}
	char job[64], step[64], full[160], found[320];
	snprintf(job, sizeof(job), "job-nest.%d.n", (int)getpid());
	snprintf(step, sizeof(step), "step-nest.%d.n", (int)getpid());
	snprintf(full, sizeof(full), "%s/%s", job, step);
	uint32_t cpus[1] = {0};
	struct gp_cgroup_limits jl = {.mem_bytes = 64u << 20, .cpus = cpus, .ncpus = 1};
	struct gp_cgroup_limits sl = {.mem_bytes = 512u << 20, .cpus = cpus, .ncpus = 1};
	gp_error_t err;
	/* no job group yet: the step's is made as any */
	gp_cgroup_t *s = gp_cgroup_create_in("v1", job, step, &sl, NULL, &err);
	assert_non_null(s);
	assert_false(gp_cgroup_nested(s));
	assert_true(dir_there("memory", step));
	gp_cgroup_destroy(&s);
	gp_cgroup_t *j = gp_cgroup_create("v1", job, &jl, NULL, &err);
	assert_non_null(j);
	s = gp_cgroup_create_in("v1", job, step, &sl, NULL, &err);
	assert_non_null(s);
	assert_true(gp_cgroup_nested(s));
	assert_true(dir_there("memory", full));
	assert_true(dir_there("cpuset", full));
	assert_false(dir_there("memory", step));
	gp_cgroup_name_in(job, step, found, sizeof(found));
	assert_string_equal(found, full);
	gp_cgroup_name_in("job-none.1.n", step, found, sizeof(found));
	assert_string_equal(found, step);
	char buf[128];
	read_file("cpuset", full, "cpuset.cpus", buf, sizeof(buf));
	assert_string_not_equal(buf, "");
	/* 200 MB under its own 512 MB limit, but the job's is 64 MB */
	assert_int_equal(run_in(s, step, 200), 128 + SIGKILL);
	assert_int_equal(gp_cgroup_oom_kills(s), 1);
	assert_int_equal(gp_cgroup_oom_kills(j), 0);
	/* a task of the job itself, beside the step's group, still runs in the job's */
	assert_int_equal(run_in(j, job, 8), 0);
	/* the job's gstepd ends first: its group stays while the step's is in it... */
	gp_cgroup_destroy(&j);
	assert_true(dir_there("memory", job));
	/* ...and goes with the step's */
	gp_cgroup_destroy(&s);
	assert_false(dir_there("memory", full));
	assert_false(dir_there("memory", job));
	assert_false(dir_there("cpuset", job));

	/* a task shell's job group is not parked idle while a step's group is inside it (renamed,
	 * the step's would move under the next job's) */
	char tag[64], idle[96];
	snprintf(tag, sizeof(tag), "s%d.nest-node", (int)getpid());
	snprintf(idle, sizeof(idle), "idle.%s.0", tag);
	gp_cgroup_pool_t *pool = gp_cgroup_pool_create(tag, 4);
	assert_non_null(pool);
	j = gp_cgroup_create("v1", job, &jl, pool, &err);
	assert_non_null(j);
	s = gp_cgroup_create_in("v1", job, step, &sl, NULL, &err);
	assert_true(gp_cgroup_nested(s));
	gp_cgroup_destroy(&j);
	assert_false(dir_there("memory", idle));
	assert_true(dir_there("memory", full));
	/* the job's group gone between the step's check and its mkdir (another step removed it,
	 * empty): made again, the step still gets its group */
	gp_cgroup_destroy(&s);
	assert_false(dir_there("memory", job));
	char jobdir[256];
	snprintf(jobdir, sizeof(jobdir), V1 "/memory/gpool/%s", job);
	assert_int_equal(mkdir(jobdir, 0755), 0);
	s = gp_cgroup_create_in("v1", job, step, &sl, NULL, &err); /* placed inside */
	assert_true(gp_cgroup_nested(s));
	assert_true(dir_there("cpuset", full)); /* its cpuset's parent was made again */
	assert_int_equal(run_in(s, step, 8), 0);
	gp_cgroup_destroy(&s);
	assert_false(dir_there("memory", job));
	assert_false(dir_there("cpuset", job));
	gp_cgroup_pool_destroy(&pool);
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
	gp_cgroup_t *cg = gp_cgroup_create("v2", name, &lim, NULL, &err);
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
	const struct CMUnitTest env_tests[] = {
	    cmocka_unit_test(denied_in_cgroup), cmocka_unit_test(pooled), cmocka_unit_test(swept),
	    cmocka_unit_test(nested), cmocka_unit_test(denied_in_v2_cgroup)};
	if (argc > 1)
		return gp_run_only(env_tests, argv[1], NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
