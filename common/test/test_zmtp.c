/* The ZMTP 3.0 DEALER (common/zmtp.c) against libzmq's own ROUTER: the handshake, one- and
 * multi-frame messages, short and long frames, over TCP and IPC; nobody listening, a peer that
 * speaks something else, a peer that goes away, a receive that times out, a frame over the
 * limit, and endpoints it must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include "common/zmtp.h"

struct router {
	void *ctx, *sock;
	char ep[256];
};

static void router_open(struct router *r, const char *bind)
{
	r->ctx = zmq_ctx_new();
	r->sock = zmq_socket(r->ctx, ZMQ_ROUTER);
	int zero = 0;
	zmq_setsockopt(r->sock, ZMQ_LINGER, &zero, sizeof(zero));
	assert_int_equal(zmq_bind(r->sock, bind), 0);
	size_t len = sizeof(r->ep);
	assert_int_equal(zmq_getsockopt(r->sock, ZMQ_LAST_ENDPOINT, r->ep, &len), 0);
}

static void router_close(struct router *r)
{
	zmq_close(r->sock);
	zmq_ctx_term(r->ctx);
}

/* the router's next message: rid into rid, the frames after it into buf; their count */
static int router_recv(struct router *r, zmq_msg_t *rid, zmq_msg_t *parts, int max)
{
	zmq_pollitem_t pi = {r->sock, 0, ZMQ_POLLIN, 0};
	assert_int_equal(zmq_poll(&pi, 1, 3000), 1);
	zmq_msg_init(rid);
	assert_true(zmq_msg_recv(rid, r->sock, 0) >= 0);
	int n = 0;
	while (zmq_msg_more(n ? &parts[n - 1] : rid)) {
		assert_true(n < max);
		zmq_msg_init(&parts[n]);
		assert_true(zmq_msg_recv(&parts[n], r->sock, 0) >= 0);
		n++;
	}
	return n;
}

static void round_trip(const char *bind)
{
	struct router r;
	router_open(&r, bind);
	gp_error_t err = {{0}};
	gp_zmtp_t *z = gp_zmtp_create(r.ep, 1 << 20, &err);
	assert_non_null(z);
	assert_false(gp_zmtp_connected(z));
	const void *f[2] = {"hello", NULL};
	size_t l[2] = {5, 0};
	assert_int_equal(gp_zmtp_send(z, f, l, 1, 2000, &err), 0);
	assert_true(gp_zmtp_connected(z));
	zmq_msg_t rid, parts[4];
	assert_int_equal(router_recv(&r, &rid, parts, 4), 1);
	char id[256]; /* the routing id, to address the frames sent back */
	size_t idl = zmq_msg_size(&rid);
	memcpy(id, zmq_msg_data(&rid), idl);
	zmq_msg_close(&rid);
	assert_int_equal(zmq_msg_size(&parts[0]), 5);
	assert_memory_equal(zmq_msg_data(&parts[0]), "hello", 5);
	zmq_msg_close(&parts[0]);

	/* two frames back: a short and a long one (over 255 bytes: the 8-byte size) */
	char *big = malloc(70000);
	for (int i = 0; i < 70000; i++)
		big[i] = (char)(i * 7);
	assert_int_equal(zmq_send(r.sock, id, idl, ZMQ_SNDMORE), (int)idl);
	assert_int_equal(zmq_send(r.sock, "env", 3, ZMQ_SNDMORE), 3);
	assert_int_equal(zmq_send(r.sock, big, 70000, 0), 70000);
	const void *got[2];
	size_t gl[2], n;
	assert_int_equal(gp_zmtp_recv(z, got, gl, 2, &n, 3000, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(gl[0], 3);
	assert_memory_equal(got[0], "env", 3);
	assert_int_equal(gl[1], 70000);
	assert_memory_equal(got[1], big, 70000);

	/* two frames the other way; then nothing: the receive times out, the link stays */
	f[1] = big;
	l[1] = 300;
	assert_int_equal(gp_zmtp_send(z, f, l, 2, 2000, &err), 0);
	zmq_msg_t rid2;
	assert_int_equal(router_recv(&r, &rid2, parts, 4), 2);
	assert_int_equal(zmq_msg_size(&parts[1]), 300);
	assert_memory_equal(zmq_msg_data(&parts[1]), big, 300);
	zmq_msg_close(&parts[0]);
	zmq_msg_close(&parts[1]);
	zmq_msg_close(&rid2);
	assert_int_equal(gp_zmtp_recv(z, got, gl, 2, &n, 100, &err), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(gp_zmtp_connected(z));

	/* three frames where two at most are taken: refused */
	assert_int_equal(zmq_send(r.sock, id, idl, ZMQ_SNDMORE), (int)idl);
	zmq_send(r.sock, "a", 1, ZMQ_SNDMORE);
	zmq_send(r.sock, "b", 1, ZMQ_SNDMORE);
	zmq_send(r.sock, "c", 1, 0);
	assert_int_equal(gp_zmtp_recv(z, got, gl, 2, &n, 3000, &err), -1);
	assert_int_equal(errno, EPROTO);
	assert_false(gp_zmtp_connected(z));
	free(big);

	/* the peer goes away: the receive says so, the link is dropped */
	assert_int_equal(gp_zmtp_connect(z, 2000, &err), 0);
	router_close(&r);
	assert_int_equal(gp_zmtp_recv(z, got, gl, 2, &n, 3000, &err), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_false(gp_zmtp_connected(z));
	gp_zmtp_destroy(&z);
}

static void tcp(void **state)
{
	round_trip("tcp://127.0.0.1:*");
}

static void ipc(void **state)
{
	char ep[128];
	snprintf(ep, sizeof(ep), "ipc:///tmp/gp-zmtp-test-%d", (int)getpid());
	round_trip(ep);
	unlink(ep + 6);
}

static void over_limit(void **state)
{
	struct router r;
	router_open(&r, "tcp://127.0.0.1:*");
	gp_error_t err = {{0}};
	gp_zmtp_t *z = gp_zmtp_create(r.ep, 1000, &err);
	const void *f[1] = {"x"};
	size_t l[1] = {1};
	assert_int_equal(gp_zmtp_send(z, f, l, 1, 2000, &err), 0);
	zmq_msg_t rid, parts[2];
	assert_int_equal(router_recv(&r, &rid, parts, 2), 1);
	zmq_msg_close(&parts[0]);
	char big[1001] = {0};
	assert_true(zmq_msg_send(&rid, r.sock, ZMQ_SNDMORE) >= 0);
	zmq_send(r.sock, big, sizeof(big), 0);
	const void *got[2];
	size_t gl[2], n;
	assert_int_equal(gp_zmtp_recv(z, got, gl, 2, &n, 3000, &err), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_false(gp_zmtp_connected(z));
	zmq_msg_close(&rid);
	gp_zmtp_destroy(&z);
	router_close(&r);
}

static void nobody_listens(void **state)
{
	/* a port bound and not listening: nobody takes connections there */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	char ep[64];
	snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", ntohs(a.sin_port));
	gp_error_t err = {{0}};
	gp_zmtp_t *z = gp_zmtp_create(ep, 1 << 20, &err);
	assert_int_equal(gp_zmtp_connect(z, 1000, &err), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_non_null(strstr(err.text, "cannot connect to 127.0.0.1:"));
	gp_zmtp_destroy(&z);

	/* listening, but it answers something other than a ZMTP 3 greeting */
	assert_int_equal(listen(fd, 1), 0);
	z = gp_zmtp_create(ep, 1 << 20, &err);
	if (fork() == 0) {
		int c = accept(fd, NULL, NULL);
		char junk[64];
		memset(junk, 'H', sizeof(junk));
		(void)!write(c, junk, sizeof(junk));
		sleep(1);
		_exit(0);
	}
	assert_int_equal(gp_zmtp_connect(z, 3000, &err), -1);
	assert_int_equal(errno, EPROTO);
	assert_non_null(strstr(err.text, "not a ZMTP 3"));
	gp_zmtp_destroy(&z);
	close(fd);
}

static void bad_endpoints(void **state)
{
	static const char *const bad[] = {
	    "",		 "tcp://",     "tcp://host",	"tcp://host:",	   "tcp://:80",
	    "udp://h:1", "tcp://h:8x", "tcp://[::1:80", "tcp://[::1]x:80", "ipc://",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gp_error_t err = {{0}};
		errno = 0;
		assert_null(gp_zmtp_create(bad[i], 1 << 20, &err));
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err.text, "not tcp://HOST:PORT or ipc://PATH"));
	}
	gp_error_t err = {{0}};
	gp_zmtp_t *z = gp_zmtp_create("tcp://[::1]:5555", 1 << 20, &err);
	assert_non_null(z);
	gp_zmtp_destroy(&z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tcp),	     cmocka_unit_test(ipc),
	    cmocka_unit_test(over_limit),    cmocka_unit_test(nobody_listens),
	    cmocka_unit_test(bad_endpoints),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
