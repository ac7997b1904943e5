/* test_svcport.c: who listens on a replica's port, on real sockets of this machine: nothing
 * (PORT_CLOSED), the replica's own process (PORT_OWN), a process outside the replica that took
 * the port first (PORT_FOREIGN, named by pid and uid), and the same with IPv6; the parser of
 * /proc/net/tcp on a fixed text; a session's processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/node/svcport.h"

/* A socket listening on port (0: any; family AF_INET or AF_INET6), its fd; the port into
 * *got. -1: cannot (no IPv6 here). */
static int listener(int family, uint32_t port, uint32_t *got)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		close(fd);
		return -1;
	}
	*got = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					: ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static void parse_proc_net_tcp(void **state)
{
	(void)state;
	const char *text =
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
	    "timeout inode\n"
	    "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001 "
	    "       0 4242 1 0000000000000000 100 0 0 10 0\n"
	    "   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1001 "
	    "       0 4343 1 0000000000000000 20 4 30 10 -1\n"
	    "   2: 00000000:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
	    "       0 4444 1 0000000000000000 100 0 0 10 0\n"
	    "   3: 0B0012C6:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002 "
	    "       0 4545 1 0000000000000000 100 0 0 10 0\n";
	uint64_t ino[4];
	uid_t uid[4];
	/* port 8080 (1F90): two listeners (4242 and 4545), the connection 4343 is not one */
	assert_int_equal(gp_svcport_listeners(text, 8080, ino, uid, 4), 2);
	assert_int_equal(ino[0], 4242);
	assert_int_equal(uid[0], 1001);
	assert_int_equal(ino[1], 4545);
	assert_int_equal(uid[1], 1002);
	assert_int_equal(gp_svcport_listeners(text, 8081, ino, NULL, 4), 1);
	assert_int_equal(ino[0], 4444);
	assert_int_equal(gp_svcport_listeners(text, 8082, ino, uid, 4), 0);
	assert_int_equal(gp_svcport_listeners("", 8080, ino, uid, 4), 0);
	assert_int_equal(gp_svcport_listeners("header only", 8080, ino, uid, 4), 0);
	assert_int_equal(gp_svcport_listeners("h\ngarbage line\n\n", 8080, ino, uid, 4), 0);
	/* more than max: counted, max stored */
	assert_int_equal(gp_svcport_listeners(text, 8080, ino, uid, 1), 2);
}

static void own_closed_foreign(int family)
{
	uint32_t port;
	int fd = listener(family, 0, &port);
	if (fd < 0) {
		assert_int_equal(family, AF_INET6);
		return; /* no IPv6 on this machine */
	}
	pid_t me = getpid();
	struct gp_port_seen seen = {0};
	gp_svcport_owner(port, &me, 1, &seen);
	assert_int_equal(seen.state, GPOOL__PORT_STATE__PORT_OWN);
	close(fd);
	gp_svcport_owner(port, &me, 1, &seen);
	assert_int_equal(seen.state, GPOOL__PORT_STATE__PORT_CLOSED);

	/* a squatter: another process binds the port first; the "replica" (this process)
	 * does not listen */
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t sq = fork();
	assert_true(sq >= 0);
	if (sq == 0) {
		uint32_t got;
		int sfd = listener(family, port, &got);
		char c = sfd >= 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	assert_int_equal(c, 'y');
	gp_svcport_owner(port, &me, 1, &seen);
	assert_int_equal(seen.state, GPOOL__PORT_STATE__PORT_FOREIGN);
	assert_int_equal(seen.uid, getuid());
	assert_int_equal(seen.pid, sq); /* our own child: its fds are ours to read */
	/* the squatter counted as the replica's own: its port is */
	pid_t both[2] = {me, sq};
	gp_svcport_owner(port, both, 2, &seen);
	assert_int_equal(seen.state, GPOOL__PORT_STATE__PORT_OWN);
	kill(sq, SIGKILL);
	waitpid(sq, NULL, 0);
}

static void owner_ipv4(void **state)
{
	(void)state;
	own_closed_foreign(AF_INET);
}

static void owner_ipv6(void **state)
{
	(void)state;
	own_closed_foreign(AF_INET6);
}

static void session_members(void **state)
{
	(void)state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t leader = fork();
	assert_true(leader >= 0);
	if (leader == 0) {
		setsid();
		if (fork() == 0) { /* a child of the session too */
			pause();
			_exit(0);
		}
		char c = 'y';
		if (write(go[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(go[0], &c, 1), 1);
	pid_t pids[16];
	size_t n = gp_svcport_session(leader, pids, 16);
	assert_int_equal(n, 2);
	assert_true(pids[0] == leader || pids[1] == leader);
	for (size_t i = 0; i < n; i++)
		assert_true(pids[i] != getpid());
	kill(-leader, SIGKILL);
	waitpid(leader, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parse_proc_net_tcp),
	    cmocka_unit_test(owner_ipv4),
	    cmocka_unit_test(owner_ipv6),
	    cmocka_unit_test(session_members),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
