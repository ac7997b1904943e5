/* tp_auth_test.c - attack test of the tcp transport's MUNGE check (GCOMM_AUTH=munge): rank 0
 * of 2 waits for its peer while others talk to its port first, each knowing the token and the
 * communicator's key (the worst case: a leaked job environment):
 *   - a peer with no credential (the plain hello a GCOMM_TOKEN peer sends);
 *   - a forged credential of the right length;
 *   - an oversized credential length (bounded before anything is read);
 *   - a real credential of another uid (nobody), bound to the right key and ranks (root only);
 *   - a real credential of this uid bound to another communicator's key;
 * each is closed without a byte of answer and counted, and then the job's real rank 1 connects
 * and a message passes. Exit 0 passed, 1 failed, 77 skipped (munged does not answer). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/src/sock.h"
#include "comm/src/tp_tcp_int.h"
#include "common/auth.h"

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

#define KEY 0x5eed5eedull

static gc_tp_params_t params(int rank)
{
	return (gc_tp_params_t){.rank = rank,
				.size = 2,
				.timeout_ms = 20000,
				.addr = "127.0.0.1",
				.token = "leaked",
				.comm_key = KEY,
				.auth_munge = 1};
}

struct hello {
	uint32_t magic, rank;
	uint64_t comm_key, digest;
};

typedef struct {
	uint64_t magic, comm_key;
	uint32_t from, to;
} bind_t;

static char blob0[GC_TP_BLOB_MAX];
static size_t len0;
static gc_tp_t *t0;
static int port0;
static int connect_rc = 1;

static void *rank0_connect(void *arg)
{
	(void)arg;
	char own1[] = "tcp 127.0.0.1 1 0 0"; /* rank 1's blob: rank 0 reads none of it */
	const void *bl[2] = {blob0, own1};
	size_t lens[2] = {len0, sizeof(own1)};
	int hosts[2] = {0, 1};
	gc_error_t e = {""};
	connect_rc = gc_tp_tcp.connect(t0, bl, lens, hosts, &e);
	if (connect_rc < 0)
		fprintf(stderr, "rank 0: %s\n", e.text);
	return NULL;
}

/* Connect to rank 0, send BYTES, and report whether rank 0 closed without a byte back. */
static int refused(const void *bytes, size_t n, const char *what)
{
	int fd = gc_sock_connect("127.0.0.1", port0, gc_now_ms() + 5000);
	if (fd < 0) {
		CHECK(0, "%s: cannot connect: %s", what, strerror(errno));
		return 0;
	}
	ssize_t w = send(fd, bytes, n, MSG_NOSIGNAL);
	(void)w; /* rank 0 may close before all is sent */
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char c;
	ssize_t r = recv(fd, &c, 1, 0);
	close(fd);
	int ok = r == 0 || (r < 0 && errno == ECONNRESET);
	CHECK(ok, "%s: rank 0 answered (%zd, %s)", what, r, r < 0 ? strerror(errno) : "a byte");
	return ok;
}

/* A MUNGE credential framed as the transport frames it (length, text), for KEY/FROM/TO. */
static size_t framed_cred(uint64_t key, char *out, size_t cap)
{
	gp_error_t e;
	gp_auth_t *a = gp_auth_create(NULL, &e);
	bind_t b = {0x3148545541434721ull, key, 1, 0};
	char *cred = NULL;
	if (!a || gp_auth_encode(a, &b, sizeof(b), &cred, &e) < 0) {
		gp_auth_destroy(&a);
		return 0;
	}
	uint32_t n = (uint32_t)strlen(cred);
	size_t total = 0;
	if (4 + n + sizeof(struct hello) <= cap) {
		memcpy(out, &n, 4);
		memcpy(out + 4, cred, n);
		struct hello h = {0x47435450u, 1, key, gc_digest("leaked", key)};
		memcpy(out + 4 + n, &h, sizeof(h));
		total = 4 + n + sizeof(h);
	}
	free(cred);
	gp_auth_destroy(&a);
	return total;
}

/* Another uid's credential, made in a child that became nobody. */
static void other_uid(void)
{
	if (geteuid() != 0) {
		printf("skip: another uid's credential (not root)\n");
		return;
	}
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		char buf[4096];
		size_t n = 0;
		if (setgid(65534) == 0 && setuid(65534) == 0)
			n = framed_cred(KEY, buf, sizeof(buf));
		ssize_t w = write(sv[1], buf, n);
		_exit(w == (ssize_t)n && n > 0 ? 0 : 1);
	}
	close(sv[1]);
	char buf[4096];
	ssize_t n = 0, k;
	while ((k = read(sv[0], buf + n, sizeof(buf) - (size_t)n)) > 0)
		n += k;
	close(sv[0]);
	int st;
	waitpid(pid, &st, 0);
	CHECK(n > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "nobody could not make a credential");
	if (n > 0)
		refused(buf, (size_t)n, "another uid's credential");
}

/* The job's real rank 1, in a child. */
static pid_t real_rank1(void)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	gc_tp_params_t p = params(1);
	char blob1[GC_TP_BLOB_MAX];
	size_t len1 = 0;
	gc_error_t e = {""};
	gc_tp_t *t = gc_tp_tcp.create(&p, blob1, &len1, &e);
	const void *bl[2] = {blob0, blob1};
	size_t lens[2] = {len0, len1};
	int hosts[2] = {0, 1};
	if (!t || gc_tp_tcp.connect(t, bl, lens, hosts, &e) < 0) {
		fprintf(stderr, "rank 1: %s\n", e.text);
		_exit(1);
	}
	gc_tpreq_t r;
	int v = 77;
	if (gc_tp_tcp.isend(t, 0, 5, &v, sizeof(v), &r) < 0)
		_exit(1);
	while (!r.done)
		if (gc_tp_tcp.progress(t, 100) < 0)
			_exit(1);
	gc_tp_tcp.destroy(t);
	_exit(r.err ? 1 : 0);
}

int main(void)
{
	gp_error_t ge;
	gp_auth_t *probe = gp_auth_create(NULL, &ge);
	char *c = NULL;
	if (!probe || gp_auth_encode(probe, "x", 1, &c, &ge) < 0) {
		printf("SKIP: munged does not answer\n");
		return 77;
	}
	free(c);
	gp_auth_destroy(&probe);
	gc_tp_params_t p = params(0);
	gc_error_t e = {""};
	if (!(t0 = gc_tp_tcp.create(&p, blob0, &len0, &e))) {
		fprintf(stderr, "create: %s\n", e.text);
		return 1;
	}
	char a[64];
	long pid;
	uint64_t pr;
	gc_tcp_parse_blob(blob0, len0, a, sizeof(a), &port0, &pid, &pr);
	pthread_t th;
	pthread_create(&th, NULL, rank0_connect, NULL);

	struct hello h = {0x47435450u, 1, KEY, gc_digest("leaked", KEY)};
	refused(&h, sizeof(h), "the token's hello, no credential");
	char forged[4 + 200];
	uint32_t n = 200;
	memcpy(forged, &n, 4);
	memset(forged + 4, 'A', 200);
	refused(forged, sizeof(forged), "a forged credential");
	uint32_t huge = 1u << 30;
	refused(&huge, sizeof(huge), "a credential length of 1 GiB");
	other_uid();
	char buf[4096];
	size_t bl = framed_cred(KEY ^ 1, buf, sizeof(buf));
	CHECK(bl > 0, "cannot make a credential");
	refused(buf, bl, "a credential of another communicator");
	unsigned want = geteuid() == 0 ? 5 : 4;

	pid_t r1 = real_rank1();
	pthread_join(th, NULL);
	CHECK(connect_rc == 0, "rank 0 did not connect to the real rank 1");
	CHECK(t0->refused == want, "rank 0 refused %u connections, %u expected", t0->refused, want);
	if (connect_rc == 0) {
		gc_tpreq_t r;
		int v = 0;
		gc_tp_tcp.irecv(t0, 1, 5, &v, sizeof(v), &r);
		int64_t end = gc_now_ms() + 10000;
		while (!r.done && gc_now_ms() < end)
			if (gc_tp_tcp.progress(t0, 100) < 0)
				break;
		CHECK(r.done && !r.err && v == 77, "the real rank 1's message did not arrive");
	}
	int st;
	waitpid(r1, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank 1 failed");
	gc_tp_tcp.destroy(t0);
	if (fails)
		return 1;
	printf("ok: %u connections without this job's credential refused unanswered; the peer "
	       "with one served\n",
	       want);
	return 0;
}
