/* test_proxy.c: the exec-proxy and its client end to end on loopback: a command's output and
 * exit status come back, a credential for another job is refused, idle and oversized
 * connections before authentication are closed without keeping the job's client out, a signal is
 * passed on, a client that dies takes its command with it, a command's background processes outlive
 * it, and the end of the hold ends the proxy and every command. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/test/munge.h"
#include "launch/frame.h"
#include "launch/proxy.h"
#include "launch/rsh.h"
#include "common/util.h"

#define JOB 4242

struct served {
	pid_t pid;
	uint16_t port;
};

/* A proxy in a child process; its exit code says how gp_proxy_run returned. */
static struct served serve(int hold_timeout_ms)
{
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pp[0]);
		gp_error_t err;
		gp_proxy_t *p = gp_proxy_create("127.0.0.1", JOB, &err);
		if (!p)
			_exit(5);
		uint16_t port = gp_proxy_port(p);
		if (write(pp[1], &port, sizeof(port)) != sizeof(port))
			_exit(5);
		close(pp[1]);
		int rc = gp_proxy_run(p, hold_timeout_ms);
		int e = errno;
		gp_proxy_destroy(&p);
		_exit(rc == 0 ? 0 : e == ETIMEDOUT ? 3 : 4);
	}
	close(pp[1]);
	struct served s = {.pid = pid};
	assert_int_equal(read(pp[0], &s.port, sizeof(s.port)), sizeof(s.port));
	close(pp[0]);
	return s;
}

static int exit_code(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Running: it exists and is no zombie (an orphan waits for init to reap it). */
static bool running(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z';
}

static bool gone_within(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 20; i++) {
		if (!running(pid))
			return true;
		usleep(20000);
	}
	return false;
}

/* Read a whole small file (the pid a command wrote), waiting for it. */
static pid_t read_pid(const char *path)
{
	for (int i = 0; i < 250; i++) {
		FILE *f = fopen(path, "r");
		long v = 0;
		if (f) {
			int n = fscanf(f, "%ld", &v);
			fclose(f);
			if (n == 1 && v > 0)
				return (pid_t)v;
		}
		usleep(20000);
	}
	fail_msg("no pid in %s", path);
	return -1;
}

static void output_and_status(void **state)
{
	struct served s = serve(5000);
	gp_error_t err = {{0}};
	int hold = gp_rsh_hold("127.0.0.1", s.port, JOB, 5000, &err);
	assert_true(hold >= 0);
	char outp[] = "/tmp/test_proxy_out.XXXXXX", errp[] = "/tmp/test_proxy_err.XXXXXX";
	int out = mkstemp(outp), errf = mkstemp(errp);
	/* the words are joined and run by sh, as ssh does */
	char *argv[] = {"echo", "to-out;", "echo", "to-err", ">&2;", "exit", "3", NULL};
	int status = -1;
	assert_int_equal(gp_rsh_exec("127.0.0.1", s.port, JOB, argv, out, errf, -1, &status, &err),
			 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	char buf[64] = {0};
	assert_int_equal(pread(out, buf, sizeof(buf) - 1, 0), 7);
	assert_string_equal(buf, "to-out\n");
	memset(buf, 0, sizeof(buf));
	assert_int_equal(pread(errf, buf, sizeof(buf) - 1, 0), 7);
	assert_string_equal(buf, "to-err\n");
	close(out);
	close(errf);
	unlink(outp);
	unlink(errp);
	/* a credential for another job runs nothing */
	char *touch[] = {"touch", outp, NULL};
	assert_int_equal(gp_rsh_exec("127.0.0.1", s.port, JOB + 1, touch, 1, 2, -1, &status, &err),
			 -1);
	assert_non_null(strstr(err.text, "authentication failed: credential for another job"));
	usleep(100000);
	assert_int_equal(access(outp, F_OK), -1);
	/* the hold ends: so does the proxy, with 0 */
	close(hold);
	assert_int_equal(exit_code(s.pid), 0);
}

/* A client in a child process running `echo $$ > PIDFILE; exec sleep 100`, passing SIGTERM on;
 * it exits with the command's exit code (128 + signal when killed). */
static pid_t client(uint16_t port, const char *pidfile, int hold)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(hold); /* the test's hold is the test's alone */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "echo $$ > %s; exec sleep 100", pidfile);
		char *argv[] = {cmd, NULL};
		int st;
		gp_error_t err;
		if (gp_rsh_exec("127.0.0.1", port, JOB, argv, 1, 2, sfd, &st, &err) < 0)
			_exit(99);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	return pid;
}

/* A proxy serving (5 s for its hold), the test's hold on it and a client running `sleep 100`
 * through it, whose pid (written to pidfile) is cmd. */
struct running {
	struct served s;
	int hold;
	pid_t client, cmd;
	char pidfile[32];
};

static void run_sleep(struct running *r)
{
	gp_error_t err;
	r->s = serve(5000);
	r->hold = gp_rsh_hold("127.0.0.1", r->s.port, JOB, 5000, &err);
	assert_true(r->hold >= 0);
	snprintf(r->pidfile, sizeof(r->pidfile), "/tmp/test_proxy_pid.XXXXXX");
	close(mkstemp(r->pidfile));
	unlink(r->pidfile);
	r->client = client(r->s.port, r->pidfile, r->hold);
	r->cmd = read_pid(r->pidfile);
}

static void signal_passed_on(void **state)
{
	struct running r;
	run_sleep(&r);
	kill(r.client, SIGTERM);
	assert_int_equal(exit_code(r.client), 128 + SIGTERM);
	assert_true(gone_within(r.cmd, 3000));
	unlink(r.pidfile);
	close(r.hold);
	assert_int_equal(exit_code(r.s.pid), 0);
}

static void dead_client_kills_command(void **state)
{
	struct running r;
	run_sleep(&r);
	kill(r.client, SIGKILL);
	exit_code(r.client);
	assert_true(gone_within(r.cmd, 4000));
	unlink(r.pidfile);
	close(r.hold);
	assert_int_equal(exit_code(r.s.pid), 0);
}

static void hold_end_kills_everything(void **state)
{
	struct running r;
	run_sleep(&r);
	close(r.hold);
	/* the proxy stops its command (the client sees it killed) and exits 0 */
	assert_int_equal(exit_code(r.s.pid), 0);
	assert_true(gone_within(r.cmd, 1000));
	int code = exit_code(r.client);
	assert_true(code == 128 + SIGTERM || code == 99);
	unlink(r.pidfile);
}

/* A command that exits leaves what it started in the background running, as under ssh: Open
 * MPI's `orted --daemonize` forks, its parent exits, and only then does the child call setsid,
 * so killing the command's group when it exits killed some daemons (a launch that hung). The
 * end of the hold stops what is left. */
static void background_outlives_command(void **state)
{
	struct served s = serve(5000);
	gp_error_t err;
	int hold = gp_rsh_hold("127.0.0.1", s.port, JOB, 5000, &err);
	assert_true(hold >= 0);
	char pidfile[] = "/tmp/test_proxy_pid.XXXXXX";
	close(mkstemp(pidfile));
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "sleep 100 </dev/null >/dev/null 2>&1 & echo $! > %s; exit 0",
		 pidfile);
	char *argv[] = {cmd, NULL};
	int status = -1;
	assert_int_equal(gp_rsh_exec("127.0.0.1", s.port, JOB, argv, 1, 2, -1, &status, &err), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	pid_t bg = read_pid(pidfile);
	usleep(300000);
	assert_true(running(bg));
	close(hold);
	assert_int_equal(exit_code(s.pid), 0);
	assert_true(gone_within(bg, 3000));
	unlink(pidfile);
}

static void no_hold_times_out(void **state)
{
	struct served s = serve(300);
	int64_t t0 = gp_mono_ms();
	assert_int_equal(exit_code(s.pid), 3);
	assert_true(gp_mono_ms() - t0 < 3000);
}

/* A raw TCP client of the proxy: connected, its challenge read. */
static int raw_client(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	uint8_t ch[GP_FRAME_HDR + 32];
	assert_int_equal(recv(fd, ch, sizeof(ch), MSG_WAITALL), (ssize_t)sizeof(ch));
	assert_int_equal(ch[3], GP_FRAME_CHALLENGE);
	return fd;
}

/* What the proxy says before it closes: the FAIL text, "" when it closed without one. */
static void read_to_close(int fd, char *text, size_t len)
{
	uint8_t buf[512];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	text[0] = '\0';
	if (got > GP_FRAME_HDR && buf[3] == GP_FRAME_FAIL)
		snprintf(text, len, "%.*s", (int)(got - GP_FRAME_HDR), (char *)buf + GP_FRAME_HDR);
}

/* Before authentication: a frame over 4 KiB is refused at its header, an AUTH that is no
 * credential is refused, and a connection that says nothing is closed after 5 s; 200 idle
 * connections from one address evict each other, and the job's own client still gets in. */
static void unauthenticated_bounded(void **state)
{
	struct served s = serve(20000);
	char text[256];
	int big = raw_client(s.port);
	uint8_t hdr[GP_FRAME_HDR] = {0, 0, 0, GP_FRAME_AUTH, 0, 0x10, 0, 0}; /* 1 MiB */
	assert_int_equal(write(big, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	read_to_close(big, text, sizeof(text));
	assert_string_equal(text, "gpool-proxy: frame too large before authentication");
	close(big);
	int junk = raw_client(s.port);
	gp_buf_t b = {0};
	assert_int_equal(gp_frame_put(&b, GP_FRAME_AUTH, "not-a-credential", 16), 0);
	assert_int_equal(gp_frame_flush(junk, &b), 0);
	gp_buf_release(&b);
	read_to_close(junk, text, sizeof(text));
	assert_non_null(strstr(text, "gpool-proxy: authentication failed"));
	close(junk);
	int idle[200];
	for (int i = 0; i < 200; i++)
		idle[i] = raw_client(s.port);
	gp_error_t err = {{0}};
	int64_t t0 = gp_mono_ms();
	int hold = gp_rsh_hold("127.0.0.1", s.port, JOB, 5000, &err);
	assert_true(hold >= 0);
	assert_true(gp_mono_ms() - t0 < 1000);
	/* the newest idle one is closed by its timeout, 5 s after it came */
	read_to_close(idle[199], text, sizeof(text));
	assert_true(gp_mono_ms() - t0 >= 4000 && gp_mono_ms() - t0 < 8000);
	for (int i = 0; i < 200; i++)
		close(idle[i]);
	close(hold);
	assert_int_equal(exit_code(s.pid), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	gp_auth_t *auth = gp_test_auth_or_skip();
	if (!auth)
		return 77;
	gp_auth_destroy(&auth);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(output_and_status),
	    cmocka_unit_test(signal_passed_on),
	    cmocka_unit_test(dead_client_kills_command),
	    cmocka_unit_test(hold_end_kills_everything),
	    cmocka_unit_test(background_outlives_command),
	    cmocka_unit_test(no_hold_times_out),
	    cmocka_unit_test(unauthenticated_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
