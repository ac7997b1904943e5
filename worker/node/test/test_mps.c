/* The MPS control daemon per shared card (mps.h), driven through fake-mps-control.sh (which
 * acts as nvidia-cuda-mps-control does for start, quit and its pid file): the card's
 * directories made private to the user whose jobs share the card, the daemon started as that
 * user, found again when it already runs, stopped and gone; the client settings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/mps.h"
#include "worker/test/skip.h"

static char root[256], dir[512], fake[600];

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/gp-test-mps.XXXXXX");
	assert_non_null(mkdtemp(root));
	chmod(root, 0755);
	assert_int_equal(gp_mps_dir(root, 2, dir, sizeof(dir)), 0);
	/* a copy every account can run: the source tree may be where only root goes (a clone
	 * under /root), and the daemon of another user's card runs as that user */
	snprintf(fake, sizeof(fake), "%s/mps-control", root);
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", FAKE_MPS, fake, fake);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static pid_t pid_of(void)
{
	char p[700];
	snprintf(p, sizeof(p), "%s/pipe/nvidia-cuda-mps-control.pid", dir);
	FILE *f = fopen(p, "r");
	long v = 0;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 0;
		fclose(f);
	}
	return (pid_t)v;
}

/* gone: reaped within 2 s (gp_mps_stop returns once it is a zombie) */
static bool gone(pid_t pid)
{
	for (int i = 0; i < 200; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
		usleep(10000);
	}
	return false;
}

static void log_has(const char *want)
{
	char p[700], line[256];
	snprintf(p, sizeof(p), "%s/log/control.log", dir);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	bool found = false;
	while (fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	fclose(f);
	if (!found)
		fail_msg("'%s' not in %s", want, p);
}

static void start_stop(void **state)
{
	char err[256] = "";
	/* as in gworkerd, whose signals come through a signalfd: the daemon must not inherit
	 * them blocked (the stand-in's quit is a SIGTERM to its process) */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);
	assert_string_equal(dir + strlen(root), "/card2");
	assert_int_equal(
	    gp_mps_start(fake, dir, "GPU-aaaa", geteuid(), getegid(), err, sizeof(err)), 0);
	struct stat st;
	char p[700];
	snprintf(p, sizeof(p), "%s/pipe", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	pid_t pid = pid_of();
	assert_true(pid > 1);
	assert_int_equal(kill(pid, 0), 0);
	log_has("visible=GPU-aaaa");
	/* started again while it runs (an agent restarted): the same daemon */
	assert_int_equal(
	    gp_mps_start(fake, dir, "GPU-aaaa", geteuid(), getegid(), err, sizeof(err)), 0);
	assert_int_equal(pid_of(), pid);
	assert_int_equal(gp_mps_stop(fake, dir, err, sizeof(err)), 0);
	assert_true(gone(pid));
	log_has("stop");
	/* nothing runs: stopping again is no error */
	assert_int_equal(gp_mps_stop(fake, dir, err, sizeof(err)), 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void missing_program(void **state)
{
	char err[256] = "";
	assert_int_equal(gp_mps_start("/nonexistent/nvidia-cuda-mps-control", dir, "0", geteuid(),
				      getegid(), err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "not found"));
}

/* as root: the daemon of another user's card runs as that user, in directories only that user
 * can enter */
static void as_the_jobs_user(void **state)
{
	struct passwd *pw = getpwnam("gpool-other");
	if (geteuid() != 0 || !pw) {
		GP_SKIP("needs root and the gpool-other account");
		return;
	}
	char err[256] = "";
	if (gp_mps_start(fake, dir, "0", pw->pw_uid, pw->pw_gid, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_uid, pw->pw_uid);
	assert_int_equal(st.st_mode & 0777, 0700);
	char want[64];
	snprintf(want, sizeof(want), "start uid=%u", (unsigned)pw->pw_uid);
	log_has(want);
	pid_t pid = pid_of();
	assert_int_equal(gp_mps_stop(fake, dir, err, sizeof(err)), 0);
	assert_true(gone(pid));
	snprintf(want, sizeof(want), "stop uid=%u", (unsigned)pw->pw_uid);
	log_has(want);
}

/* a root others may write is refused (a user could swap a card's directory for a link); a
 * card directory left as a link is not followed */
static void root_must_be_private(void **state)
{
	char err[256] = "";
	assert_int_equal(chmod(root, 01777), 0);
	assert_int_equal(gp_mps_start(fake, dir, "0", geteuid(), getegid(), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "that others cannot write"));
	assert_int_equal(chmod(root, 0755), 0);
	char target[600];
	snprintf(target, sizeof(target), "%s/elsewhere", root);
	assert_int_equal(mkdir(target, 0755), 0);
	assert_int_equal(symlink(target, dir), 0);
	/* the link is cleared away, not followed: the card's directory is a real one */
	assert_int_equal(gp_mps_start(fake, dir, "0", geteuid(), getegid(), err, sizeof(err)), 0);
	struct stat st;
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(target, sizeof(target), "%s/elsewhere/pipe", root);
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(gp_mps_stop(fake, dir, err, sizeof(err)), 0);
}

static void client_settings(void **state)
{
	char v[64];
	gp_mps_mem_limit(2ULL << 30, v, sizeof(v));
	assert_string_equal(v, "0=2048M");
	gp_mps_mem_limit(1, v, sizeof(v));
	assert_string_equal(v, "0=1M");
	assert_int_equal(gp_mps_thread_pct(2ULL << 30, 8ULL << 30), 25);
	assert_int_equal(gp_mps_thread_pct(1, 8ULL << 30), 1);
	assert_int_equal(gp_mps_thread_pct(9ULL << 30, 8ULL << 30), 100);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(start_stop, setup, teardown),
	    cmocka_unit_test_setup_teardown(missing_program, setup, teardown),
	    cmocka_unit_test_setup_teardown(as_the_jobs_user, setup, teardown),
	    cmocka_unit_test_setup_teardown(root_must_be_private, setup, teardown),
	    cmocka_unit_test(client_settings),
	};
	return gp_skip_status(cmocka_run_group_tests(tests, NULL, NULL));
}
