/* test_owner_sources.c: the owner's sources and windows (owner_sources.h): names, windows at
 * chosen local times, the file source, and the CPU and gpool tests on a made-up /proc tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/owner_sources.h"

static void names(void **state)
{
	assert_int_equal(gp_owner_policy_parse("suspend"), 1);
	assert_int_equal(gp_owner_policy_parse("vacate"), 2);
	assert_int_equal(gp_owner_policy_parse("ignore"), 3);
	assert_int_equal(gp_owner_policy_parse("freeze"), -1);
	assert_string_equal(gp_owner_policy_name(2), "vacate");
	unsigned m;
	gp_error_t err;
	assert_int_equal(gp_owner_sources_parse("file, logind,cards,cpu", &m, &err), 0);
	assert_int_equal(m, GP_OWNER_FILE | GP_OWNER_LOGIND | GP_OWNER_CARDS | GP_OWNER_CPU);
	assert_int_equal(gp_owner_sources_parse("none", &m, &err), 0);
	assert_int_equal(m, 0);
	assert_int_equal(gp_owner_sources_parse("file,keyboard", &m, &err), -1);
	assert_non_null(strstr(err.text, "'keyboard'"));
}

static struct tm at(int wday, int hour, int min)
{
	struct tm t = {0};
	t.tm_wday = wday; /* 0 Sunday */
	t.tm_hour = hour;
	t.tm_min = min;
	return t;
}

static void windows(void **state)
{
	struct gp_owner_window w[8];
	size_t n;
	gp_error_t err;
	assert_int_equal(
	    gp_owner_windows_parse("Mon-Fri 09:00-18:00; Sat,Sun 10:00-12:00", w, 8, &n, &err), 0);
	assert_int_equal(n, 2);
	struct tm t = at(1, 9, 0); /* Monday 09:00 */
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(5, 17, 59);
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(5, 18, 0);
	assert_false(gp_owner_windows_on(w, n, &t));
	t = at(6, 11, 0); /* Saturday */
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(6, 9, 0);
	assert_false(gp_owner_windows_on(w, n, &t));
	/* past midnight: Friday 22:00 to Saturday 06:00, not Sunday morning */
	assert_int_equal(gp_owner_windows_parse("Fri 22:00-06:00", w, 8, &n, &err), 0);
	t = at(5, 23, 0);
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(6, 5, 59);
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(0, 5, 0);
	assert_false(gp_owner_windows_on(w, n, &t));
	/* a week that wraps: Sat-Mon */
	assert_int_equal(gp_owner_windows_parse("Sat-Mon 00:00-24:00", w, 8, &n, &err), 0);
	t = at(0, 12, 0);
	assert_true(gp_owner_windows_on(w, n, &t));
	t = at(2, 12, 0);
	assert_false(gp_owner_windows_on(w, n, &t));
	assert_int_equal(gp_owner_windows_parse("* 00:00-24:00", w, 8, &n, &err), 0);
	t = at(3, 3, 3);
	assert_true(gp_owner_windows_on(w, n, &t));
	assert_int_equal(gp_owner_windows_parse("", w, 8, &n, &err), 0);
	assert_int_equal(n, 0);
	const char *bad[] = {"Mon",
			     "Mon 9-18",
			     "Xyz 09:00-10:00",
			     "Mon 09:00-09:00",
			     "Mon 25:00-26:00",
			     "Mon 09:00-10:00 extra"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gp_owner_windows_parse(bad[i], w, 8, &n, &err), -1);
}

static char root[64];

static void put(const char *rel, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	char *slash = strrchr(p, '/');
	*slash = '\0';
	mkdir(p, 0755);
	*slash = '/';
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* put with bytes that hold NULs (an environ file) */
static void putn(const char *rel, const char *bytes, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	fclose(f);
}

/* a made-up /proc: 10 (the owner's game, 300+200 ticks), 11 (a job in gpool's cgroup), 12
 * (gstepd), 13 (a kernel thread), 14 (the owner's editor: a name with spaces and a ')') */
static void cpu_tree(void **state)
{
	snprintf(root, sizeof(root), "/tmp/owner-proc.%d", (int)getpid());
	mkdir(root, 0755);
	put("10/stat", "10 (game) S 1 10 10 0 -1 4194304 0 0 0 0 300 200 0 0 20 0 1 0\n");
	put("10/comm", "game\n");
	put("10/cgroup", "0::/user.slice/user-1000.slice/session-2.scope\n");
	put("11/stat", "11 (python3) R 1 11 11 0 -1 4194304 0 0 0 0 5000 0 0 0 20 0 1 0\n");
	put("11/comm", "python3\n");
	put("11/cgroup", "5:freezer:/gpool/job7.1.h1\n4:pids:/gpool/job7.1.h1\n");
	put("12/stat", "12 (gstepd) S 1 12 12 0 -1 4194304 0 0 0 0 70 0 0 0 20 0 1 0\n");
	put("12/comm", "gstepd\n");
	put("12/cgroup", "0::/system.slice/gpool-worker.service\n");
	put("13/stat", "13 (kworker/0:1) I 2 0 0 0 -1 69238880 0 0 0 0 900 0 0 0 20 0 1 0\n");
	put("13/comm", "kworker/0:1\n");
	put("13/cgroup", "0::/\n");
	put("14/stat", "14 (my ed) (x) S 1 14 14 0 -1 4194304 0 0 0 0 1 2 0 0 20 0 1 0\n");
	put("14/comm", "my ed) (x\n");
	put("14/cgroup", "0::/user.slice\n");
	/* the MPS control daemon the agent started for a shared card (its pipe directory under
	 * the agent's SCRATCH_DIR/mps) and the server it forked (no such variable of its own);
	 * the owner's own MPS daemon, pipes elsewhere; a look-alike path that only starts the same
	 */
	static const char gpool_env[] =
	    "HOME=/x\0CUDA_MPS_PIPE_DIRECTORY=/scratch/mps/card0/pipe\0";
	static const char own_env[] = "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps\0";
	static const char near_env[] = "CUDA_MPS_PIPE_DIRECTORY=/scratch/mps-evil/pipe\0";
	put("15/stat", "15 (nvidia-cuda-mps) S 1 15 15 0 -1 4194304 0 0 0 0 40 0 0 0 20 0 1 0\n");
	put("15/comm", "nvidia-cuda-mps\n");
	put("15/cgroup", "0::/system.slice/gpool-worker.service\n");
	putn("15/environ", gpool_env, sizeof(gpool_env) - 1);
	put("16/stat", "16 (nvidia-cuda-mps) S 15 15 15 0 -1 4194304 0 0 0 0 50 0 0 0 20 0 1 0\n");
	put("16/comm", "nvidia-cuda-mps\n");
	put("16/cgroup", "0::/system.slice/gpool-worker.service\n");
	putn("16/environ", "HOME=/x\0", 7);
	put("17/stat", "17 (nvidia-cuda-mps) S 1 17 17 0 -1 4194304 0 0 0 0 7 0 0 0 20 0 1 0\n");
	put("17/comm", "nvidia-cuda-mps\n");
	put("17/cgroup", "0::/user.slice\n");
	putn("17/environ", own_env, sizeof(own_env) - 1);
	put("18/stat", "18 (nvidia-cuda-mps) S 1 18 18 0 -1 4194304 0 0 0 0 9 0 0 0 20 0 1 0\n");
	put("18/comm", "nvidia-cuda-mps\n");
	put("18/cgroup", "0::/user.slice\n");
	putn("18/environ", near_env, sizeof(near_env) - 1);
	assert_false(gp_owner_pid_is_gpool(root, NULL, 10));
	assert_true(gp_owner_pid_is_gpool(root, NULL, 11));
	assert_true(gp_owner_pid_is_gpool(root, NULL, 12));
	assert_true(gp_owner_pid_is_gpool(root, "/scratch/mps", 15));
	assert_true(gp_owner_pid_is_gpool(root, "/scratch/mps", 16)); /* through its parent */
	assert_false(gp_owner_pid_is_gpool(root, "/scratch/mps", 17));
	assert_false(gp_owner_pid_is_gpool(root, "/scratch/mps", 18));
	assert_false(gp_owner_pid_is_gpool(root, NULL, 15)); /* no MPS root: not known as gpool's */
	assert_false(gp_owner_pid_is_gpool(root, "/scratch/mps", 10));
	uint64_t ticks = 0;
	assert_int_equal(gp_owner_cpu_ticks(root, "/scratch/mps", &ticks), 0);
	assert_int_equal(ticks, 300 + 200 + 1 + 2 + 7 + 9);
	assert_int_equal(gp_owner_cpu_ticks("/nonexistent-proc", NULL, &ticks), -1);
	/* the real /proc reads */
	assert_int_equal(gp_owner_cpu_ticks("/proc", NULL, &ticks), 0);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

static void file_and_fake_card(void **state)
{
	char p[64];
	snprintf(p, sizeof(p), "/tmp/owner-file.%d", (int)getpid());
	unlink(p);
	assert_false(gp_owner_file_active(p));
	assert_false(gp_owner_file_active(""));
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "123\n0\n456\n");
	fclose(f);
	assert_true(gp_owner_file_active(p));
	pid_t pids[4];
	assert_int_equal(gp_owner_fake_card_pids(p, pids, 4), 2);
	assert_int_equal(pids[0], 123);
	assert_int_equal(pids[1], 456);
	unlink(p);
	assert_int_equal(gp_owner_fake_card_pids(p, pids, 4), -1);
	/* no NVIDIA or AMD card here: the lists cannot be read (never a crash) */
	assert_true(gp_owner_card_pids(1, "00000000:99:00.0", pids, 4) <= 0);
	assert_int_equal(gp_owner_card_pids(0, "", pids, 4), -1);
}

/* without logind (this build machine has no systemd running) the source says why */
static void logind(void **state)
{
	gp_error_t err = {{0}};
	struct gp_logind *l = gp_logind_open(&err);
	if (l) {
		bool idle;
		uint64_t since;
		assert_int_equal(gp_logind_idle(l, &idle, &since, &err), 0);
		gp_logind_close(&l);
		assert_null(l);
		return;
	}
	assert_true(strlen(err.text) > 0);
	assert_non_null(strstr(err.text, "bus") ? strstr(err.text, "bus")
						: strstr(err.text, "logind"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names),	cmocka_unit_test(windows),
	    cmocka_unit_test(cpu_tree), cmocka_unit_test(file_and_fake_card),
	    cmocka_unit_test(logind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
