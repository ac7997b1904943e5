/* test_pmixsrv.c: gstepd's PMIx server with a real Open MPI program on one node: the server
 * registers a 2-rank namespace, each rank's environment comes from gp_pmixsrv_client, and
 * both ranks (gp-mpi-check: MPI_Init through this server, an allreduce and a ring, checked by
 * every rank) exit 0. The one-node fence needs no scheduler. Also: a launch without the job's
 * map is refused. Usage: test_worker_pmixsrv PATH-OF-GP-MPI-CHECK (skipped without it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/node/env.h"
#include "worker/stepd/pmixsrv.h"

extern char **environ;
static const char *prog;
static gp_pmixsrv_t *server; /* destroyed by teardown, also after a failed check */

static int teardown(void **state)
{
	(void)state;
	gp_pmixsrv_destroy(&server);
	return 0;
}

/* environ plus a few of ours, as a gp_env_build-style vector */
static char **base_env(void)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **v = calloc(n + 5, sizeof(*v));
	assert_non_null(v);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "ASAN_OPTIONS=", 13) != 0)
			v[k++] = strdup(environ[i]);
	v[k++] = strdup("OMPI_ALLOW_RUN_AS_ROOT=1");
	v[k++] = strdup("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
	v[k++] = strdup("OMPI_MCA_mpi_yield_when_idle=1");
	/* under make sanitize the ranks are instrumented too: what libmpi still holds at exit
	 * (ompi_op_base_op_select and others) is Open MPI's, not ours, so leak checking is off
	 * for them; the address and undefined-behaviour checks stay on */
	v[k++] = strdup("ASAN_OPTIONS=detect_leaks=0:abort_on_error=1");
	return v;
}

static void two_ranks_one_node(void **state)
{
	(void)state;
	if (!prog || access(prog, X_OK) < 0)
		skip();
	char host[256] = "localhost";
	gethostname(host, sizeof(host) - 1);
	Gpool__TaskPlacement tp[2], *tpp[2] = {&tp[0], &tp[1]};
	for (uint32_t i = 0; i < 2; i++) {
		gpool__task_placement__init(&tp[i]);
		tp[i].rank = i;
		tp[i].local_rank = i;
		tp[i].node = host;
	}
	uint32_t rank_nodes[2] = {0, 0};
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = 4242;
	l.attempt = 1;
	l.size = 2;
	l.local_size = 2;
	l.nodelist = host;
	l.tasks = tpp;
	l.n_tasks = 2;
	l.rank_nodes = rank_nodes;
	l.n_rank_nodes = 2;
	gp_error_t err = {{0}};
	gp_pmixsrv_t *p = server = gp_pmixsrv_create(&l, host, getuid(), getgid(), NULL, &err);
	if (!p)
		fail_msg("%s", err.text);
	char out[2][64];
	pid_t pid[2];
	for (int i = 0; i < 2; i++) {
		char **env = base_env();
		if (gp_pmixsrv_client(p, (uint32_t)i, &env, &err) < 0)
			fail_msg("%s", err.text);
		assert_non_null(gp_env_get(env, "PMIX_NAMESPACE"));
		snprintf(out[i], sizeof(out[i]), "/tmp/gp-pmixsrv-test.%d.%d", (int)getpid(), i);
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			int fd = open(out[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
			dup2(fd, 1);
			dup2(fd, 2);
			alarm(60);
			char *argv[] = {(char *)prog, NULL};
			execve(prog, argv, env);
			_exit(127);
		}
		gp_env_free(env);
	}
	for (int i = 0; i < 2; i++) {
		int st = 0;
		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
		char buf[4096] = "";
		FILE *f = fopen(out[i], "r");
		size_t got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[got] = '\0';
		if (f)
			fclose(f);
		unlink(out[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fail_msg("rank %d: status 0x%x: %s", i, st, buf);
		char want[64];
		snprintf(want, sizeof(want), "rank %d of 2 on ", i);
		if (!strstr(buf, want) || !strstr(buf, "allreduce ok ring ok"))
			fail_msg("rank %d: no '%s...allreduce ok ring ok' in: %s", i, want, buf);
	}
	server = NULL;
	gp_pmixsrv_destroy(&p);
	assert_null(p);
}

static void refuses_launch_without_map(void **state)
{
	(void)state;
	Gpool__TaskPlacement tp, *tpp = &tp;
	gpool__task_placement__init(&tp);
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.size = 1;
	l.nodelist = "h1";
	l.tasks = &tpp;
	l.n_tasks = 1;
	gp_error_t err = {{0}};
	assert_null(gp_pmixsrv_create(&l, "h1", getuid(), getgid(), NULL, &err));
	assert_string_equal(err.text, "pmix: the launch carries no map of the job's ranks");
	uint32_t bad[1] = {7};
	l.rank_nodes = bad;
	l.n_rank_nodes = 1;
	assert_null(gp_pmixsrv_create(&l, "h1", getuid(), getgid(), NULL, &err));
	assert_string_equal(err.text, "pmix: the map names 8 nodes for 1 ranks");
}

int main(int argc, char **argv)
{
	prog = argc > 1 ? argv[1] : NULL;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(refuses_launch_without_map),
	    cmocka_unit_test_teardown(two_ranks_one_node, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
