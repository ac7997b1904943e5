/* test_rsh.c: the gpool-rsh program (argv[1] of this test) as mpirun calls it: a host of the
 * proxies' file runs the command through its proxy (output, exit status), this node runs it
 * directly, a host outside the job and a missing file fail with 255 as ssh does. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "launch/peers.h"
#include "launch/proxy.h"
#include "launch/rsh.h"

#define JOB 777

static const char *rsh_bin;
static char dir[] = "/tmp/test_rsh.XXXXXX";
static char proxies[64];

/* Run gpool-rsh with args; its stdout in out (NUL-terminated); returns its exit code. */
static int run_rsh(char *out, size_t len, char *const *args)
{
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pp[1], 1);
		close(pp[0]);
		char *argv[16] = {(char *)rsh_bin};
		for (int i = 0; args[i] && i < 14; i++)
			argv[i + 1] = args[i];
		execv(rsh_bin, argv);
		_exit(99);
	}
	close(pp[1]);
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(pp[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(pp[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void through_the_proxy(void **state)
{
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	pid_t proxy = fork();
	if (proxy == 0) {
		gp_error_t err;
		gp_proxy_t *p = gp_proxy_create("127.0.0.1", JOB, &err);
		uint16_t port = p ? gp_proxy_port(p) : 0;
		if (write(pp[1], &port, sizeof(port)) != sizeof(port) || !p)
			_exit(5);
		close(pp[1]);
		int rc = gp_proxy_run(p, 10000);
		gp_proxy_destroy(&p);
		_exit(rc == 0 ? 0 : 4);
	}
	close(pp[1]);
	uint16_t port;
	assert_int_equal(read(pp[0], &port, sizeof(port)), sizeof(port));
	close(pp[0]);
	gp_error_t err;
	int hold = gp_rsh_hold("127.0.0.1", port, JOB, 5000, &err);
	assert_true(hold >= 0);
	struct gp_peer p = {.node = "far", .addr = "127.0.0.1", .port = port, .slots = 1};
	char line[256];
	int n = gp_peer_format(&p, line, sizeof(line));
	FILE *f = fopen(proxies, "w");
	assert_non_null(f);
	fwrite(line, 1, (size_t)n, f);
	fclose(f);
	setenv("GPOOL_MPI_PROXIES", proxies, 1);
	setenv("GPOOL_NODENAME", "near", 1);
	setenv("GPOOL_JOB_ID", "777", 1);
	char out[256];
	/* words joined and run by a shell on the far side, as with ssh */
	char *a1[] = {"far", "echo", "remote", "$((6*7));", "exit", "5", NULL};
	assert_int_equal(run_rsh(out, sizeof(out), a1), 5);
	assert_string_equal(out, "remote 42\n");
	/* this node: run here */
	char *a2[] = {"near", "echo", "local;", "exit", "3", NULL};
	assert_int_equal(run_rsh(out, sizeof(out), a2), 3);
	assert_string_equal(out, "local\n");
	/* a host that is not the job's */
	char *a3[] = {"elsewhere", "true", NULL};
	assert_int_equal(run_rsh(out, sizeof(out), a3), 255);
	/* a proxy that refuses: the credential is for another job */
	setenv("GPOOL_JOB_ID", "778", 1);
	char *a4[] = {"far", "true", NULL};
	assert_int_equal(run_rsh(out, sizeof(out), a4), 255);
	setenv("GPOOL_JOB_ID", "777", 1);
	close(hold);
	int st;
	waitpid(proxy, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* no proxies' file at all: not an MPI job */
	unsetenv("GPOOL_MPI_PROXIES");
	assert_int_equal(run_rsh(out, sizeof(out), a4), 255);
	unlink(proxies);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_launch_rsh PATH-OF-gpool-rsh\n");
		return 2;
	}
	rsh_bin = argv[1];
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	snprintf(proxies, sizeof(proxies), "%s/proxies", dir);
	const struct CMUnitTest tests[] = {cmocka_unit_test(through_the_proxy)};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
