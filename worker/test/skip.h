/* skip.h: a unit test that cannot run here (not root, no cgroup controller, bpf() refused)
 * says why and ctest counts it as skipped, not passed.
 *
 * cmocka's skip() alone reports the test as passed and the program exits 0. GP_SKIP also
 * counts it, and gp_skip_status() turns the run's status into 77 (SKIP_RETURN_CODE) when
 * every test passed and one skipped. So each test that may skip runs as a ctest of its own:
 * gp_run_only() runs the one test of v that argv names. */
#ifndef GPOOL_WORKER_TEST_SKIP_H
#define GPOOL_WORKER_TEST_SKIP_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int gp_skipped;

#define GP_SKIP(...)                                                                               \
	do {                                                                                       \
		printf("# skip: ");                                                                \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
		gp_skipped++;                                                                      \
		skip();                                                                            \
	} while (0)

static inline int gp_skip_status(int rc)
{
	return rc ? rc : gp_skipped ? 77 : 0;
}

/* Run fn in a forked child (a mount namespace or a cgroup it enters stays there) and return
 * its exit status; the child says why when it returns 77 (cannot run here). */
static inline int gp_child_status(int (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int rc = fn();
		fflush(stdout);
		_exit(rc);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Run the test of v named ONLY alone (cmocka's filter): its status as gp_skip_status gives
 * it; 2 when v has no test of that name. */
#define gp_run_only(v, only, setup, teardown)                                                      \
	({                                                                                         \
		int found_ = 0;                                                                    \
		for (size_t i_ = 0; i_ < sizeof(v) / sizeof((v)[0]); i_++)                         \
			found_ |= !strcmp((v)[i_].name, (only));                                   \
		if (!found_)                                                                       \
			fprintf(stderr, "no test named '%s'\n", (only));                           \
		cmocka_set_test_filter(only);                                                      \
		found_ ? gp_skip_status(cmocka_run_group_tests(v, setup, teardown)) : 2;           \
	})

#endif
