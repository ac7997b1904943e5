/* test_join.c - gschedd's side of `gpool join` (scheduler/join.c): a bundle handed out once,
 * expired ones refused and swept, other requests refused, the rate per address */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/joinseal.h"
#include "common/jointoken.h"
#include "common/util.h"
#include "proto/gpool.pb-c.h"
#include "scheduler/shell/join.h"

static char state[] = "/tmp/test-join.XXXXXX";

/* A bundle for a new token in STATE/join, expiring at `expiry`. */
static struct gp_join_token put_bundle(uint64_t expiry)
{
	struct gp_join_token t;
	gp_error_t err;
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	uint8_t key[64] = {1}, *p, *b;
	size_t plen, blen;
	assert_int_equal(gp_join_payload_pack(key, sizeof(key), "scheduler = x\n", &p, &plen, &err),
			 0);
	assert_int_equal(gp_join_seal(&t, expiry, p, plen, &b, &blen, &err), 0);
	char hex[2 * GP_JOIN_ID_LEN + 1], path[512];
	gp_join_id_hex(t.id, hex);
	snprintf(path, sizeof(path), "%s/join/%s.bundle", state, hex);
	assert_int_equal(gp_write_file(path, b, blen, 0600), 0);
	free(p);
	free(b);
	return t;
}

static size_t request(const uint8_t *id, size_t idlen, const char *cred, uint8_t *out)
{
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	Gpool__JoinFetch jf = GPOOL__JOIN_FETCH__INIT;
	env.version = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	env.join_fetch = &jf;
	jf.token_id.data = (uint8_t *)id;
	jf.token_id.len = idlen;
	if (cred) {
		env.cred.data = (uint8_t *)cred;
		env.cred.len = strlen(cred);
	}
	return gpool__envelope__pack(&env, out);
}

/* One request through join_take: the answer's code (-1: no answer), its bundle copied out. */
static int ask(struct join *j, const char *addr, const uint8_t *req, size_t len, int64_t now_ms,
	       time_t now, uint8_t **bundle, size_t *blen)
{
	uint8_t *reply;
	size_t rlen;
	assert_int_equal(join_take(j, addr, req, len, now_ms, now, &reply, &rlen), 1);
	if (!reply)
		return -1;
	Gpool__Envelope *e = gpool__envelope__unpack(NULL, rlen, reply);
	assert_non_null(e);
	assert_non_null(e->join_bundle);
	assert_int_equal(e->cred.len, 0);
	int code = (int)e->join_bundle->code;
	if (bundle) {
		*blen = e->join_bundle->bundle.len;
		*bundle = malloc(*blen + 1);
		memcpy(*bundle, e->join_bundle->bundle.data, *blen);
	}
	gpool__envelope__free_unpacked(e, NULL);
	free(reply);
	return code;
}

static void once_then_used(void **st)
{
	struct join *j = join_create(state);
	struct gp_join_token t = put_bundle(2000);
	uint8_t req[128], *b = NULL, *plain = NULL;
	size_t len = request(t.id, GP_JOIN_ID_LEN, NULL, req), blen, plen;
	assert_int_equal(ask(j, "10.0.0.1", req, len, 1000, 1000, &b, &blen),
			 GPOOL__ERROR_CODE__ERROR_NONE);
	struct gp_join_header h;
	gp_error_t err;
	assert_int_equal(gp_join_open(&t, b, blen, &h, &plain, &plen, &err), 0);
	free(plain);
	free(b);
	/* the file is gone, and the id is known as used */
	assert_int_equal(ask(j, "10.0.0.1", req, len, 2000, 1000, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	assert_int_equal(join_sweep(j, 1000), 0);
	join_destroy(&j);
	assert_null(j);
}

static void expired_refused_and_swept(void **st)
{
	struct join *j = join_create(state);
	struct gp_join_token t = put_bundle(500);
	uint8_t req[128];
	size_t len = request(t.id, GP_JOIN_ID_LEN, NULL, req);
	assert_int_equal(ask(j, "10.0.0.2", req, len, 1000, 501, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_EXPIRED);
	assert_int_equal(ask(j, "10.0.0.2", req, len, 2000, 501, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	put_bundle(500);
	put_bundle(9999);
	assert_int_equal(join_sweep(j, 600), 1); /* only the expired one */
	assert_int_equal(join_sweep(j, 600), 0);
	assert_int_equal(join_sweep(j, 10000), 1);
	join_destroy(&j);
}

static void not_a_join_request(void **st)
{
	struct join *j = join_create(state);
	uint8_t *reply = (uint8_t *)1;
	size_t rlen;
	/* an ordinary envelope (a credential and a body, no join_fetch) is left to be opened */
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	env.version = 1;
	env.cred.data = (uint8_t *)"MUNGE:abc";
	env.cred.len = 9;
	uint8_t buf[128];
	size_t len = gpool__envelope__pack(&env, buf);
	assert_int_equal(join_take(j, "10.0.0.3", buf, len, 1000, 1000, &reply, &rlen), 0);
	assert_null(reply);
	assert_int_equal(join_take(j, "10.0.0.3", "\xff\xff\xff", 3, 1000, 1000, &reply, &rlen), 0);
	/* a join request that carries more than an id, or a short id: refused, answered */
	uint8_t id[GP_JOIN_ID_LEN] = {0};
	len = request(id, GP_JOIN_ID_LEN, "MUNGE:abc", buf);
	assert_int_equal(ask(j, "10.0.0.3", buf, len, 2000, 1000, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_MALFORMED);
	len = request(id, 3, NULL, buf);
	assert_int_equal(ask(j, "10.0.0.3", buf, len, 3000, 1000, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_MALFORMED);
	join_destroy(&j);
}

static void rate_per_address_and_in_all(void **st)
{
	struct join *j = join_create(state);
	uint8_t id[GP_JOIN_ID_LEN] = {7}, req[128];
	size_t len = request(id, GP_JOIN_ID_LEN, NULL, req);
	int64_t now = 100000;
	for (int i = 0; i < JOIN_RATE_ADDR; i++)
		assert_int_equal(ask(j, "10.0.1.1", req, len, now, 1000, NULL, NULL),
				 GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	assert_int_equal(ask(j, "10.0.1.1", req, len, now, 1000, NULL, NULL), -1);
	/* another address is not held back by the first one's flood */
	assert_int_equal(ask(j, "10.0.1.2", req, len, now, 1000, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	/* one minute / JOIN_RATE_ADDR later the first address may ask once more */
	now += 60000 / JOIN_RATE_ADDR + 1;
	assert_int_equal(ask(j, "10.0.1.1", req, len, now, 1000, NULL, NULL),
			 GPOOL__ERROR_CODE__ERROR_NOT_FOUND);
	assert_int_equal(ask(j, "10.0.1.1", req, len, now, 1000, NULL, NULL), -1);
	/* many addresses: JOIN_RATE_ALL in all within a minute */
	join_destroy(&j);
	j = join_create(state);
	int answered = 0;
	for (int i = 0; i < 2 * JOIN_RATE_ALL; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "10.0.2.%d", i);
		answered += ask(j, addr, req, len, now, 1000, NULL, NULL) >= 0;
	}
	assert_int_equal(answered, JOIN_RATE_ALL);
	join_destroy(&j);
}

int main(void)
{
	if (!mkdtemp(state))
		return 1;
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/join", state);
	mkdir(dir, 0700);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(once_then_used),
	    cmocka_unit_test(expired_refused_and_swept),
	    cmocka_unit_test(not_a_join_request),
	    cmocka_unit_test(rate_per_address_and_in_all),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	gp_rm_rf(state);
	return rc;
}
