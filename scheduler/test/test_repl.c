/* test_repl: the standby group's replication (scheduler/repl.c, repl_auth.c, store.c's
 * changesets) with real SQLite files, real libraft over TCP on 127.0.0.1 and real MUNGE, three
 * members in one process: sched_peers parsing; a commit's changeset applied to another file;
 * a refused replication rolls the commit back; a leader elected, an entry it replicates
 * reaching both followers' jobs.db, and another leader after it stops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#define SQLITE_ENABLE_SESSION
#define SQLITE_ENABLE_PREUPDATE_HOOK
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/test/munge.h"
#include "common/util.h"
#include "scheduler/store/repl.h"
#include "scheduler/shell/standby.h"
#include "scheduler/store/store.h"

static void test_parse_peers(void **state)
{
	(void)state;
	struct repl_peer p[7];
	gp_error_t err;
	assert_int_equal(repl_parse_peers("1@10.0.0.1:7830, 2@pc-b:7830,3@[::1]:7830", p, 7, &err),
			 3);
	assert_int_equal(p[1].id, 2);
	assert_string_equal(p[1].address, "pc-b:7830");
	assert_string_equal(p[1].host, "pc-b");
	assert_string_equal(p[2].host, "[::1]");
	assert_int_equal(repl_parse_peers("", p, 7, &err), -1);
	assert_int_equal(repl_parse_peers("1@a:1, 1@b:2", p, 7, &err), -1);
	assert_non_null(strstr(err.text, "twice"));
	assert_int_equal(repl_parse_peers("0@a:1", p, 7, &err), -1);
	assert_int_equal(repl_parse_peers("x@a:1", p, 7, &err), -1);
	assert_int_equal(repl_parse_peers("1@a", p, 7, &err), -1);
	assert_int_equal(repl_parse_peers("1@a:7x", p, 7, &err), -1);
	assert_int_equal(repl_parse_peers("1@a:1,2@b:1,3@c:1", p, 2, &err), -1);
}

struct capture {
	void *cs;
	size_t len;
	int done;
	int refuse;
};

static int capture_cs(void *arg, const void *cs, size_t len, gp_error_t *err)
{
	struct capture *c = arg;
	if (c->refuse)
		return gp_errprintf(err, "no majority (test)");
	free(c->cs);
	c->cs = malloc(len);
	memcpy(c->cs, cs, len);
	c->len = len;
	return 0;
}

static void capture_done(void *arg)
{
	((struct capture *)arg)->done++;
}

static int count(const char *db, const char *sql)
{
	sqlite3 *d;
	sqlite3_stmt *s;
	int n = -1;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(d, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(d);
	return n;
}

static int omit(void *a, int why, sqlite3_changeset_iter *it)
{
	(void)a;
	(void)why;
	(void)it;
	return SQLITE_CHANGESET_OMIT;
}

static void test_changeset(void **state)
{
	(void)state;
	char a[] = "/tmp/test_repl.XXXXXX", b[] = "/tmp/test_repl.XXXXXX";
	assert_non_null(mkdtemp(a));
	assert_non_null(mkdtemp(b));
	gp_error_t err;
	struct store *sa = store_create(a, "off", 0, &err), *sb = store_create(b, "off", 0, &err);
	assert_non_null(sa);
	assert_non_null(sb);
	struct capture c = {0};
	assert_int_equal(store_set_replication(sa, capture_cs, capture_done, &c), 0);
	assert_int_equal(store_node_known(sa, "h1"), 0);
	assert_int_equal(store_node_drain(sa, "h2", true, "disk"), 0);
	assert_int_equal(store_commit(sa, &err), 0);
	assert_int_equal(c.done, 1);
	assert_true(c.len > 0);
	/* the changeset, applied to another file, gives the same rows */
	char pa[300], pb[300];
	snprintf(pa, sizeof(pa), "%s/jobs.db", a);
	snprintf(pb, sizeof(pb), "%s/jobs.db", b);
	store_destroy(&sb);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(pb, &db), SQLITE_OK);
	assert_int_equal(sqlite3changeset_apply(db, (int)c.len, c.cs, NULL, omit, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(count(pb, "SELECT count(*) FROM nodes"), 2);
	assert_int_equal(count(pb, "SELECT drain FROM nodes WHERE name='h2'"), 1);
	/* a commit whose changes no majority took is rolled back: nothing local either */
	c.refuse = 1;
	assert_int_equal(store_node_known(sa, "h3"), 0);
	assert_int_equal(store_commit(sa, &err), -1);
	assert_non_null(strstr(err.text, "no majority"));
	assert_int_equal(c.done, 1);
	assert_int_equal(count(pa, "SELECT count(*) FROM nodes WHERE name='h3'"), 0);
	/* and the next commit carries only its own changes */
	c.refuse = 0;
	assert_int_equal(store_node_known(sa, "h4"), 0);
	assert_int_equal(store_commit(sa, &err), 0);
	assert_int_equal(count(pa, "SELECT count(*) FROM nodes"), 3);
	store_destroy(&sa);
	free(c.cs);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", a, b);
	assert_int_equal(system(cmd), 0);
}

static int wait_leader(struct repl **m, int n, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		for (int i = 0; i < n; i++)
			if (m[i] && repl_leading(m[i]))
				return i;
		usleep(50000);
	}
	return -1;
}

/* A first port of n in a row that nothing on 127.0.0.1 holds now, below Linux's ephemeral
 * range (32768-60999), where no connection's own end sits: 0 when none was found. */
static int free_ports(int n)
{
	for (int tries = 0; tries < 50; tries++) {
		int base = 20000 + (int)(gp_random64() % 12000), ok = 1;
		for (int i = 0; i < n && ok; i++) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct sockaddr_in a = {.sin_family = AF_INET,
						.sin_port = htons((uint16_t)(base + i)),
						.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
			ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
			if (fd >= 0)
				close(fd);
		}
		if (ok)
			return base;
	}
	return 0;
}

static void test_group(void **state)
{
	(void)state;
	gp_auth_t *auth = gp_test_auth_or_skip();
	if (!auth)
		return;
	gp_auth_destroy(&auth);
	char dir[3][40];
	char peers[200];
	int base = free_ports(3);
	assert_true(base > 0);
	snprintf(peers, sizeof(peers), "1@127.0.0.1:%d, 2@127.0.0.1:%d, 3@127.0.0.1:%d", base,
		 base + 1, base + 2);
	struct repl *m[3];
	gp_error_t err;
	for (int i = 0; i < 3; i++) {
		snprintf(dir[i], sizeof(dir[i]), "/tmp/test_repl.XXXXXX");
		assert_non_null(mkdtemp(dir[i]));
		m[i] = repl_create(dir[i], (uint64_t)i + 1, peers, "7820", getuid(), &err);
		if (!m[i])
			fail_msg("repl_create: %s", err.text);
	}
	int l = wait_leader(m, 3, 10000);
	assert_true(l >= 0);
	char ep[200];
	repl_leader_endpoint(m[(l + 1) % 3], ep, sizeof(ep));
	for (int t = 0; !*ep && t < 40; t++) {
		usleep(50000);
		repl_leader_endpoint(m[(l + 1) % 3], ep, sizeof(ep));
	}
	assert_string_equal(ep, "tcp://127.0.0.1:7820");

	/* the leader's store replicates through it, as gschedd's does */
	gp_error_t serr;
	struct store *st = store_create(dir[l], "off", 0, &serr);
	assert_non_null(st);
	assert_int_equal(store_set_replication(st, standby_replicate, standby_replicated, m[l]), 0);
	assert_int_equal(store_node_drain(st, "pc-a", true, "replicated"), 0);
	assert_int_equal(store_commit(st, &serr), 0);
	char db[3][160];
	for (int i = 0; i < 3; i++)
		snprintf(db[i], sizeof(db[i]), "%s/jobs.db", dir[i]);
	for (int i = 0; i < 3; i++) {
		int n = 0;
		for (int t = 0; t < 100 && n != 1; t++) {
			n = count(db[i],
				  "SELECT count(*) FROM nodes WHERE name='pc-a' AND drain=1");
			if (n != 1)
				usleep(50000);
		}
		assert_int_equal(n, 1);
	}
	store_destroy(&st);

	/* the leader gone: another leads */
	repl_destroy(&m[l]);
	int l2 = wait_leader(m, 3, 10000);
	assert_true(l2 >= 0);
	assert_int_not_equal(l2, l);
	/* a follower is never leading, and was never deposed */
	for (int i = 0; i < 3; i++)
		if (m[i] && i != l2)
			assert_false(repl_leading(m[i]));
	for (int i = 0; i < 3; i++)
		repl_destroy(&m[i]);
	for (int i = 0; i < 3; i++) {
		char cmd[160];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir[i]);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as gschedd: a member's socket closes under Raft's writes */
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_peers),
	    cmocka_unit_test(test_changeset),
	    cmocka_unit_test(test_group),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
