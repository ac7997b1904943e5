/* tp_tcp_test.c - the tcp transport between two forked processes, as one host (payloads
 * pulled from the sender's memory) and as two (payloads through the socket): messages
 * sent before their receive is posted (eager and pulled, in order), a receive too small
 * for its message, a receiver killed while a pull of its peer's buffer is pending, and a
 * receive from a peer that already left.
 * Exit 0 when every check passed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/src/sock.h"
#include "comm/src/tp.h"

static int fails;
#define CHECK(c, ...)                                                                              \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fails++;                                                                   \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                       \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
		}                                                                                  \
	} while (0)

/* Rank RANK of 2: create, swap blobs with the other process over SV, connect. */
static gc_tp_t *open_tp(int rank, int sv, int local, int timeout_ms)
{
	gc_tp_params_t p = {.rank = rank,
			    .size = 2,
			    .timeout_ms = timeout_ms,
			    .spin_us = 50,
			    .local_pull = 1,
			    .addr = "127.0.0.1",
			    .token = "t",
			    .comm_key = 42};
	char blob[2][GC_TP_BLOB_MAX];
	size_t len[2] = {0, 0};
	gc_error_t e = {""};
	gc_tp_t *t = gc_tp_tcp.create(&p, blob[rank], &len[rank], &e);
	if (!t)
		return NULL;
	if (write(sv, &len[rank], sizeof(len[rank])) != sizeof(len[rank]) ||
	    write(sv, blob[rank], len[rank]) != (ssize_t)len[rank] ||
	    read(sv, &len[!rank], sizeof(len[0])) != sizeof(len[0]) ||
	    len[!rank] > GC_TP_BLOB_MAX || read(sv, blob[!rank], len[!rank]) != (ssize_t)len[!rank])
		return NULL;
	const void *bl[2] = {blob[0], blob[1]};
	int hosts[2] = {0, local ? 0 : 1};
	if (gc_tp_tcp.connect(t, bl, len, hosts, &e) < 0) {
		fprintf(stderr, "connect: %s\n", e.text);
		return NULL;
	}
	return t;
}

/* Progress until R is done or MS pass. 1 done, 0 not yet, -1 the transport failed. */
static int wait_req(gc_tp_t *t, gc_tpreq_t *r, int ms)
{
	int64_t end = gc_now_ms() + ms;
	while (!r->done && gc_now_ms() < end)
		if (gc_tp_tcp.progress(t, 10) < 0)
			return -1;
	return r->done;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131 + i * 7);
}

static const size_t sizes[] = {1000, 1 << 20, 40000, 0, 32 * 1024, 32 * 1024 + 1};
#define NMSG (sizeof(sizes) / sizeof(sizes[0]))

/* Sender: everything at once, before the receiver posts anything. */
static int sender(int sv, int local)
{
	fails = 0; /* a forked child: count only its own */
	gc_tp_t *t = open_tp(1, sv, local, 5000);
	if (!t)
		return 2;
	unsigned char *b[NMSG];
	gc_tpreq_t r[NMSG];
	for (size_t k = 0; k < NMSG; k++) {
		b[k] = malloc(sizes[k] + 1);
		fill(b[k], sizes[k], (unsigned)k);
		gc_tp_tcp.isend(t, 0, 7, b[k], sizes[k], &r[k]);
	}
	/* the receiver waits 300 ms before it posts: a pulled message cannot be done yet */
	wait_req(t, &r[NMSG - 1], 150);
	if (local)
		CHECK(!r[1].done, "a pulled 1 MiB send completed before the receiver took it");
	for (size_t k = 0; k < NMSG; k++)
		CHECK(wait_req(t, &r[k], 5000) == 1 && r[k].err == 0, "send %zu: not done (err %d)",
		      k, r[k].err);
	/* too small a receive on the other side: it fails; we see the connection go */
	gc_tpreq_t big;
	unsigned char *m = malloc(1 << 20);
	fill(m, 1 << 20, 9);
	gc_tp_tcp.isend(t, 0, 8, m, 1 << 20, &big);
	int w = wait_req(t, &big, 5000);
	CHECK(w == -1 || (w == 1 && big.err != 0) || (w == 1 && !local),
	      "the 1 MiB send into a 100-byte receive did not fail (%d)", w);
	gc_tp_tcp.destroy(t);
	for (size_t k = 0; k < NMSG; k++)
		free(b[k]);
	free(m);
	return fails ? 1 : 0;
}

static int receiver(int sv, int local)
{
	gc_tp_t *t = open_tp(0, sv, local, 5000);
	if (!t)
		return 2;
	usleep(300 * 1000);
	unsigned char *b[NMSG], *want;
	gc_tpreq_t r[NMSG];
	/* the first receive, then a while reading (the rest arrive before their receives:
	 * a same-host peer's frames wait in the FIFO), then the others */
	for (size_t k = 0; k < NMSG; k++) {
		b[k] = malloc(sizes[k] + 16);
		gc_tp_tcp.irecv(t, 1, 7, b[k], sizes[k] + 16, &r[k]);
		if (k == 0) {
			CHECK(wait_req(t, &r[0], 5000) == 1, "the first receive did not complete");
			int64_t end = gc_now_ms() + 100;
			while (gc_now_ms() < end)
				gc_tp_tcp.progress(t, 10);
		}
	}
	for (size_t k = 0; k < NMSG; k++) {
		CHECK(wait_req(t, &r[k], 5000) == 1 && r[k].err == 0, "receive %zu failed (%d)", k,
		      r[k].err);
		CHECK(r[k].len == sizes[k], "receive %zu: %zu bytes, %zu sent", k, r[k].len,
		      sizes[k]);
		want = malloc(sizes[k] + 1);
		fill(want, sizes[k], (unsigned)k);
		CHECK(!memcmp(b[k], want, sizes[k]), "receive %zu: wrong bytes", k);
		free(want);
		free(b[k]);
	}
	gc_tpreq_t small;
	char tiny[100];
	gc_tp_tcp.irecv(t, 1, 8, tiny, sizeof(tiny), &small);
	int w = wait_req(t, &small, 5000);
	CHECK(w == -1 && errno == EMSGSIZE, "a 1 MiB message into 100 bytes: %d (%s)", w,
	      strerror(errno));
	CHECK(strstr(gc_tp_tcp.error(t), "expected") != NULL, "error message: %s",
	      gc_tp_tcp.error(t));
	gc_tp_tcp.abort(t);
	gc_tp_tcp.destroy(t);
	return fails ? 1 : 0;
}

/* Fork the other rank of a pair: it opens its end and exits with FN's result. Then open
 * ours (rank ME). Returns our end, NULL on failure; *PID is the other rank. */
static gc_tp_t *pair_up(int local, int me, int (*fn)(gc_tp_t *), pid_t *pid)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return NULL;
	fflush(NULL);
	*pid = fork();
	if (*pid == 0) {
		close(sv[0]);
		gc_tp_t *t = open_tp(!me, sv[1], local, 3000);
		_exit(t ? fn(t) : 2);
	}
	close(sv[1]);
	gc_tp_t *t = *pid > 0 ? open_tp(me, sv[0], local, 3000) : NULL;
	close(sv[0]);
	return t;
}

static int never_receive(gc_tp_t *t)
{
	(void)t;
	pause();
	return 0;
}

/* A sender whose 8 MiB pull is pending when the receiver is killed: it must fail, fast. */
static int kill_case(int local)
{
	int fails0 = fails;
	pid_t pid;
	gc_tp_t *t = pair_up(local, 1, never_receive, &pid);
	CHECK(t != NULL, "%s: the pair for the kill case could not be set up",
	      local ? "local" : "remote");
	if (!t)
		return 1;
	size_t n = 8u << 20;
	unsigned char *b = malloc(n);
	memset(b, 1, n);
	gc_tpreq_t r;
	gc_tp_tcp.isend(t, 0, 1, b, n, &r);
	wait_req(t, &r, 200);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	int64_t t0 = gc_now_ms();
	int w = wait_req(t, &r, 5000);
	int64_t dt = gc_now_ms() - t0;
	CHECK(w == -1 || (w == 1 && r.err), "%s: the send to a killed rank did not fail (%d)",
	      local ? "local" : "remote", w);
	CHECK(dt < 3000, "%s: failing took %lld ms", local ? "local" : "remote", (long long)dt);
	printf("%s: send to a killed receiver failed after %lld ms: %s\n",
	       local ? "local" : "remote", (long long)dt, gc_tp_tcp.error(t));
	gc_tp_tcp.destroy(t);
	free(b);
	return fails > fails0;
}

static int send_one_and_leave(gc_tp_t *t)
{
	char m[1000];
	memset(m, 5, sizeof(m));
	gc_tpreq_t r;
	gc_tp_tcp.isend(t, 0, 3, m, sizeof(m), &r);
	int ok = wait_req(t, &r, 3000) == 1 && r.err == 0;
	gc_tp_tcp.destroy(t);
	return ok ? 0 : 1;
}

/* A peer that sent one message and left cleanly: that message arrives, a later receive
 * from it fails at once instead of waiting forever. */
static int closed_case(int local)
{
	int fails0 = fails;
	pid_t pid;
	gc_tp_t *t = pair_up(local, 0, send_one_and_leave, &pid);
	CHECK(t != NULL, "%s: the pair for the closed case could not be set up",
	      local ? "local" : "remote");
	if (!t)
		return 1;
	char m[1000];
	gc_tpreq_t r;
	int st;
	waitpid(pid, &st, 0); /* it is gone */
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: the rank that left: status 0x%x",
	      local ? "local" : "remote", st);
	gc_tp_tcp.irecv(t, 1, 3, m, sizeof(m), &r);
	CHECK(wait_req(t, &r, 3000) == 1 && r.err == 0 && m[999] == 5,
	      "%s: the message of a rank that left was lost", local ? "local" : "remote");
	gc_tp_tcp.irecv(t, 1, 4, m, sizeof(m), &r);
	int64_t t0 = gc_now_ms();
	int w = wait_req(t, &r, 3000);
	CHECK(w == -1 && gc_now_ms() - t0 < 1000,
	      "%s: a receive from a rank that left did not fail at once (%d)",
	      local ? "local" : "remote", w);
	gc_tp_tcp.destroy(t);
	return fails > fails0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	for (int local = 1; local >= 0; local--) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0)
			_exit(sender(sv[1], local));
		int rc = receiver(sv[0], local);
		int st;
		waitpid(pid, &st, 0);
		CHECK(rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "%s: receiver %d, sender status 0x%x", local ? "local" : "remote", rc, st);
		printf("%s pair: %s\n", local ? "same-host" : "two-host",
		       rc == 0 && WIFEXITED(st) && !WEXITSTATUS(st) ? "ok" : "FAILED");
		close(sv[0]);
		close(sv[1]);
		int k = kill_case(local), c = closed_case(local);
		printf("%s kill case: %s, closed case: %s\n", local ? "same-host" : "two-host",
		       k ? "FAILED" : "ok", c ? "FAILED" : "ok");
	}
	printf("%s\n", fails ? "FAILED" : "all passed");
	return fails ? 1 : 0;
}
