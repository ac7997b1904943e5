/* test_caps: http/'s connection caps on real loopback sockets (server.c, peers.c): 20 idle
 * connections from 127.0.0.1 to a server capped at 4 per address and 6 in all keep 4, the rest
 * closed when accepted; a client from 127.0.0.2 is still served; once the idle ones close,
 * 127.0.0.1 is served again; the total cap holds across addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server.h"

static void on_head(gh_conn_t *c, void *arg)
{
	(void)arg;
	gh_conn_answer(c, 200, "text/plain", "ok", 2);
}

static struct event_base *base;
static gh_server_t *srv;
static uint16_t port;

static void start(size_t total, size_t per_addr)
{
	static const struct gh_handler h = {.head = on_head};
	struct gh_limits lim = {.max_head = 4096,
				.client_timeout_ms = 10000,
				.max_conns = total,
				.max_conns_per_addr = per_addr};
	base = event_base_new();
	srv = gh_server_create(base, &h, &lim);
	assert_true(base && srv);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	assert_int_equal(gh_server_listen_fd(srv, fd, NULL), 0);
}

static void stop(void)
{
	gh_server_destroy(&srv);
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_free(base);
}

static void spin(void)
{
	for (int i = 0; i < 20; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

/* a non-blocking connection from src to the server */
static int dial(const char *src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in s = {.sin_family = AF_INET};
	inet_pton(AF_INET, src, &s.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&s, sizeof(s)), 0);
	struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
	int rc = connect(fd, (struct sockaddr *)&d, sizeof(d));
	assert_true(rc == 0 || errno == EINPROGRESS);
	return fd;
}

/* whether the server closed fd (EOF or reset) */
static bool closed(int fd)
{
	char b[16];
	ssize_t n = recv(fd, b, sizeof(b), MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN);
}

/* a GET on fd answered 200 */
static bool served(int fd)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		return false;
	char b[256];
	ssize_t got = 0;
	for (int i = 0; i < 200 && got < 12; i++) {
		spin();
		ssize_t n = read(fd, b + got, sizeof(b) - 1 - (size_t)got);
		if (n > 0)
			got += n;
		else if (n == 0 || errno != EAGAIN)
			break;
	}
	b[got] = '\0';
	return strstr(b, "HTTP/1.1 200") == b;
}

static void per_address(void **state)
{
	(void)state;
	start(6, 4);
	int fds[20];
	for (int i = 0; i < 20; i++)
		fds[i] = dial("127.0.0.1");
	spin();
	int open = 0;
	for (int i = 0; i < 20; i++)
		open += !closed(fds[i]);
	assert_int_equal(open, 4);
	assert_int_equal(gh_server_conns(srv), 4);
	assert_int_equal(gh_server_refused_conns(srv), 16);
	int other = dial("127.0.0.2");
	assert_true(served(other)); /* another address is served meanwhile */
	close(other);
	for (int i = 0; i < 20; i++)
		close(fds[i]);
	spin();
	assert_int_equal(gh_server_conns(srv), 0);
	int again = dial("127.0.0.1");
	assert_true(served(again)); /* the slots came back */
	close(again);
	stop();
}

static void in_all(void **state)
{
	(void)state;
	start(6, 4);
	const char *srcs[3] = {"127.0.0.3", "127.0.0.4", "127.0.0.5"};
	int fds[9];
	for (int i = 0; i < 9; i++)
		fds[i] = dial(srcs[i % 3]);
	spin();
	int open = 0;
	for (int i = 0; i < 9; i++)
		open += !closed(fds[i]);
	assert_int_equal(open, 6);
	assert_int_equal(gh_server_refused_conns(srv), 3);
	for (int i = 0; i < 9; i++)
		close(fds[i]);
	stop();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(per_address),
	    cmocka_unit_test(in_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
