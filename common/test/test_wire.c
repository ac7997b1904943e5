/* Envelope sealing and opening against the real munged: round trip, replay of a whole
 * envelope, tampering, version mismatch, size limit, garbage. Skips when munged is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/wire.h"
#include "common/test/munge.h"

static gp_auth_t *auth;

/* The batches' I-th message: reply I + 1, job 100 + I */
static void submit_reply(Gpool__Msg *m, Gpool__SubmitReply *r, int i)
{
	gpool__msg__init(m);
	gpool__submit_reply__init(r);
	r->job_id = 100 + i;
	m->id = i + 1;
	m->m_case = GPOOL__MSG__M_SUBMIT_REPLY;
	m->submit_reply = r;
}

static void make_batch(gp_batch_t *b, int n)
{
	for (int i = 0; i < n; i++) {
		Gpool__Msg m;
		Gpool__SubmitReply r;
		submit_reply(&m, &r, i);
		assert_int_equal(gp_batch_add(b, &m), 0);
	}
}

/* A sender and a receiver, and n messages sealed by the one (out) for the other. */
struct pair {
	gp_wire_t *tx, *rx;
	gp_batch_t b;
	gp_buf_t out;
	gp_error_t err;
	struct gp_sender from;
	Gpool__ErrorCode code;
};

static void pair_seal(struct pair *p, gp_auth_t *txa, gp_auth_t *rxa, int n)
{
	memset(p, 0, sizeof(*p));
	p->tx = gp_wire_create(txa, 1 << 20);
	p->rx = gp_wire_create(rxa, 1 << 20);
	assert_true(p->tx && p->rx);
	make_batch(&p->b, n);
	assert_int_equal(gp_wire_seal(p->tx, &p->b, &p->out, &p->err), 0);
}

/* bytes as the receiver opens them */
static Gpool__Batch *pair_open(struct pair *p, const void *data, size_t len)
{
	return gp_wire_open(p->rx, data, len, &p->from, &p->code, &p->err);
}

static void pair_close(struct pair *p)
{
	gp_batch_release(&p->b);
	gp_buf_release(&p->out);
	gp_wire_destroy(&p->tx);
	gp_wire_destroy(&p->rx);
}

static void round_trip(void **state)
{
	struct pair p;
	pair_seal(&p, auth, auth, 3);
	Gpool__Batch *got = pair_open(&p, p.out.data, p.out.len);
	assert_non_null(got);
	assert_int_equal(got->n_msgs, 3);
	assert_int_equal(got->msgs[2]->submit_reply->job_id, 102);
	assert_int_equal(p.from.uid, getuid());
	gpool__batch__free_unpacked(got, NULL);
	/* the very same bytes again: munged or the sequence window refuses */
	got = pair_open(&p, p.out.data, p.out.len);
	assert_null(got);
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_REPLAY);
	/* the next batch from the same sender is fine */
	gp_batch_reset(&p.b);
	make_batch(&p.b, 1);
	assert_int_equal(gp_wire_seal(p.tx, &p.b, &p.out, &p.err), 0);
	got = pair_open(&p, p.out.data, p.out.len);
	assert_non_null(got);
	gpool__batch__free_unpacked(got, NULL);
	pair_close(&p);
}

/* The sealed envelope of p with one byte of its body (cred: of its credential) changed,
 * repacked into buf. */
static size_t tamper(struct pair *p, bool cred, uint8_t *buf)
{
	Gpool__Envelope *env = gpool__envelope__unpack(NULL, p->out.len, p->out.data);
	assert_non_null(env);
	if (cred)
		env->cred.data[20] = env->cred.data[20] == 'A' ? 'B' : 'A';
	else
		env->body.data[env->body.len - 1] ^= 1; /* job id 100 -> 101 */
	size_t n = gpool__envelope__pack(env, buf);
	gpool__envelope__free_unpacked(env, NULL);
	return n;
}

static void tampered_body(void **state)
{
	struct pair p;
	uint8_t buf[4096];
	pair_seal(&p, auth, auth, 1);
	size_t n = tamper(&p, false, buf);
	assert_null(pair_open(&p, buf, n));
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_AUTH);
	assert_non_null(strstr(p.err.text, "does not match"));
	pair_close(&p);
}

static void cheap_checks(void **state)
{
	gp_wire_t *rx = gp_wire_create(auth, 64);
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err;
	uint8_t big[65] = {0};
	assert_null(gp_wire_open(rx, big, sizeof(big), &from, &code, &err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	assert_null(gp_wire_open(rx, junk, sizeof(junk), &from, &code, &err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_MALFORMED);
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	env.version = 99;
	uint8_t buf[64];
	size_t n = gpool__envelope__pack(&env, buf);
	assert_null(gp_wire_open(rx, buf, n, &from, &code, &err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_VERSION);
	assert_non_null(strstr(err.text, "version 99"));
	/* right version, no credential */
	env.version = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	n = gpool__envelope__pack(&env, buf);
	assert_null(gp_wire_open(rx, buf, n, &from, &code, &err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_AUTH);
	gp_wire_destroy(&rx);
}

static void forged_credential(void **state)
{
	struct pair p;
	uint8_t buf[4096];
	pair_seal(&p, auth, auth, 1);
	size_t n = tamper(&p, true, buf);
	assert_null(pair_open(&p, buf, n));
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_AUTH);
	pair_close(&p);
}

static void expired_credential(void **state)
{
	gp_error_t err;
	gp_auth_t *short_lived = gp_auth_create(NULL, &err);
	assert_int_equal(gp_auth_set_ttl(short_lived, 1), 0);
	struct pair p;
	pair_seal(&p, short_lived, auth, 1);
	sleep(3);
	assert_null(pair_open(&p, p.out.data, p.out.len));
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_EXPIRED);
	pair_close(&p);
	gp_auth_destroy(&short_lived);
}

/* munged absent (a socket nobody listens on): the dependency named, not a refused credential */
static void munged_missing(void **state)
{
	gp_error_t err;
	gp_auth_t *a = gp_auth_create("/nonexistent/munge.socket.2", &err);
	assert_non_null(a);
	char *cred = NULL;
	assert_int_equal(gp_auth_encode(a, "x", 1, &cred, &err), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_non_null(strstr(err.text, "cannot get a MUNGE credential: munged does not answer on "
					 "this machine (is it installed and running?"));
	free(cred);
	gp_auth_destroy(&a);
}

static void local_unauthenticated(void **state)
{
	struct pair p;
	pair_seal(&p, NULL, NULL, 2);
	Gpool__Batch *got = pair_open(&p, p.out.data, p.out.len);
	assert_non_null(got);
	assert_int_equal(got->n_msgs, 2);
	gpool__batch__free_unpacked(got, NULL);
	pair_close(&p);
}

/* A batch is packed one-message Batches one after another (the generated code writes the
 * member's tag): it parses as one Batch, in order, and a member kept for later (the outbox)
 * adds the very same bytes. */
static void batch_members(void **state)
{
	gp_batch_t a = {0}, b = {0};
	make_batch(&a, 3);
	for (int i = 0; i < 3; i++) {
		Gpool__Msg m;
		Gpool__SubmitReply r;
		submit_reply(&m, &r, i);
		size_t len;
		uint8_t *d = gp_batch_member(&m, &len);
		assert_non_null(d);
		assert_int_equal(gp_batch_add_member(&b, d, len), 0);
		free(d);
	}
	assert_int_equal(a.count, 3);
	assert_int_equal(b.count, 3);
	assert_int_equal(a.body.len, b.body.len);
	assert_memory_equal(a.body.data, b.body.data, a.body.len);
	Gpool__Batch *got = gpool__batch__unpack(NULL, a.body.len, a.body.data);
	assert_non_null(got);
	assert_int_equal(got->n_msgs, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(got->msgs[i]->id, i + 1);
		assert_int_equal(got->msgs[i]->submit_reply->job_id, 100 + i);
	}
	gpool__batch__free_unpacked(got, NULL);
	gp_batch_release(&a);
	gp_batch_release(&b);
}

/* Bounds before and during decoding: a body of too many members is refused before any is
 * decoded, even with a good credential; one whose members cost far more memory than bytes
 * (empty cards) is refused by the decoding budget; the hint is read but the body is not. */
static void decode_bounds(void **state)
{
	/* 70,000 empty messages: 140 KB of body, 70,000 Msg structs if decoded */
	enum { N = GP_WIRE_MAX_MSGS + 4464 };
	gp_batch_t b = {0};
	assert_int_equal(gp_buf_reserve(&b.body, 2 * N), 0);
	for (int i = 0; i < N; i++) {
		b.body.data[b.body.len++] = 0x0a; /* field 1, length-delimited */
		b.body.data[b.body.len++] = 0x00; /* an empty Msg */
	}
	b.count = N;
	assert_int_equal(gp_wire_count_members(b.body.data, b.body.len), N);
	struct pair p;
	memset(&p, 0, sizeof(p));
	p.tx = gp_wire_create(auth, 8 << 20);
	p.rx = gp_wire_create(auth, 8 << 20);
	gp_wire_set_hint(p.tx, "h7\x01");
	assert_int_equal(gp_wire_seal(p.tx, &b, &p.out, &p.err), 0);
	assert_null(pair_open(&p, p.out.data, p.out.len));
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	assert_string_equal(p.err.text, "envelope of 70000 messages is over the limit of 65536");
	assert_string_equal(p.from.hint, "h7?"); /* printable only, and never believed */
	/* not a Batch: another field at the top */
	uint8_t other[] = {0x12, 0x00};
	/* an empty Batch: no members, and no pointer arithmetic on a NULL body (fuzz_envelope) */
	assert_int_equal(gp_wire_count_members(NULL, 0), 0);
	assert_int_equal(gp_wire_count_members(other, sizeof(other)), -1);
	uint8_t past[] = {0x0a, 0x05, 0x00};
	assert_int_equal(gp_wire_count_members(past, sizeof(past)), -1);
	/* a member holding 400,000 empty cards (a NodeRegister): 800 KB of bytes, ~100 MB if
	 * unpacked: over the budget */
	gp_buf_t reg = {0}, msg = {0};
	enum { CARDS = 400000 };
	assert_int_equal(gp_buf_reserve(&reg, 2 * CARDS), 0);
	for (int i = 0; i < CARDS; i++) {
		reg.data[reg.len++] = 0x2a; /* NodeRegister.cards (5), length-delimited */
		reg.data[reg.len++] = 0x00;
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__NodeRegister nr = GPOOL__NODE_REGISTER__INIT;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER;
	m.node_register = &nr;
	gp_batch_t one = {0};
	assert_int_equal(gp_batch_add(&one, &m), 0);
	/* the member's bytes: the Msg with the register's body spliced in as its field */
	Gpool__Batch *plain = gpool__batch__unpack(NULL, one.body.len, one.body.data);
	assert_non_null(plain);
	gpool__batch__free_unpacked(plain, NULL);
	uint8_t hdr[16];
	size_t h = 0;
	/* Msg.node_register's tag, from the packed empty register (its last two bytes: tag, 0) */
	size_t tagpos = one.body.len - 2;
	size_t taglen = 1;
	while (tagpos > 2 && (one.body.data[tagpos - 1] & 0x80)) {
		tagpos--;
		taglen++;
	}
	memcpy(hdr, one.body.data + tagpos, taglen);
	h = taglen;
	size_t v = reg.len;
	do {
		hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	assert_int_equal(gp_buf_append(&msg, hdr, h), 0);
	assert_int_equal(gp_buf_append(&msg, reg.data, reg.len), 0);
	gp_buf_t body = {0};
	uint8_t mh[16] = {0x0a};
	size_t mhl = 1;
	v = msg.len;
	do {
		mh[mhl++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	assert_int_equal(gp_buf_append(&body, mh, mhl), 0);
	assert_int_equal(gp_buf_append(&body, msg.data, msg.len), 0);
	assert_int_equal(gp_wire_count_members(body.data, body.len), 1);
	/* without the bound it decodes (the protobuf code itself takes it) ... */
	Gpool__Batch *all = gpool__batch__unpack(NULL, body.len, body.data);
	assert_non_null(all);
	assert_int_equal(all->msgs[0]->node_register->n_cards, CARDS);
	gpool__batch__free_unpacked(all, NULL);
	/* ... with it, it is refused */
	assert_null(gp_wire_unpack_batch(body.data, body.len));
	/* and an ordinary batch still decodes under the bound */
	gp_batch_t ok = {0};
	make_batch(&ok, 3);
	Gpool__Batch *three = gp_wire_unpack_batch(ok.body.data, ok.body.len);
	assert_non_null(three);
	assert_int_equal(three->n_msgs, 3);
	gpool__batch__free_unpacked(three, NULL);
	gp_batch_release(&ok);
	gp_batch_release(&one);
	gp_buf_release(&reg);
	gp_buf_release(&msg);
	gp_buf_release(&body);
	gp_batch_release(&b);
	pair_close(&p);
}

/* Reply keys: a keyed wire binds its key into a credential only its peer's uid decodes; the
 * peer answers under it without a credential, and the reply opens as from the peer's uid. */
static void reply_key(void **state)
{
	struct pair p;
	memset(&p, 0, sizeof(p));
	p.tx = gp_wire_create(auth, 1 << 20); /* the command */
	p.rx = gp_wire_create(auth, 1 << 20); /* the scheduler */
	assert_true(p.tx && p.rx);
	assert_int_equal(gp_wire_set_reply_key(p.tx, geteuid()), 0);
	make_batch(&p.b, 2);
	assert_int_equal(gp_wire_seal(p.tx, &p.b, &p.out, &p.err), 0);
	Gpool__Batch *got = pair_open(&p, p.out.data, p.out.len);
	assert_non_null(got);
	gpool__batch__free_unpacked(got, NULL);
	assert_true(p.from.has_key);
	assert_int_equal(p.from.uid, geteuid());
	uint8_t key[GP_WIRE_KEY_LEN];
	memcpy(key, p.from.key, sizeof(key));

	/* the answer under that key opens on the command's wire, as from its peer's uid */
	gp_buf_t reply = {0}, copy = {0};
	struct gp_sender from;
	Gpool__ErrorCode code;
	assert_int_equal(gp_wire_seal_mac(p.rx, &p.b, key, &reply, &p.err), 0);
	assert_int_equal(gp_buf_append(&copy, reply.data, reply.len), 0);
	got = gp_wire_open(p.tx, reply.data, reply.len, &from, &code, &p.err);
	assert_non_null(got);
	assert_int_equal(got->n_msgs, 2);
	assert_int_equal(from.uid, geteuid());
	assert_int_equal(from.gid, (gid_t)-1);
	gpool__batch__free_unpacked(got, NULL);
	struct gp_wire_stats st;
	gp_wire_stats(p.tx, &st);
	assert_int_equal(st.mac_opened, 1);
	/* the same answer again is a replay */
	assert_null(gp_wire_open(p.tx, copy.data, copy.len, &from, &code, &p.err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_REPLAY);

	/* under another key, altered in transit, or to a wire that gave no key: refused */
	uint8_t other[GP_WIRE_KEY_LEN];
	memcpy(other, key, sizeof(other));
	other[0] ^= 1;
	assert_int_equal(gp_wire_seal_mac(p.rx, &p.b, other, &reply, &p.err), 0);
	assert_null(gp_wire_open(p.tx, reply.data, reply.len, &from, &code, &p.err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_AUTH);
	assert_non_null(strstr(p.err.text, "reply key does not match"));
	assert_int_equal(gp_wire_seal_mac(p.rx, &p.b, key, &reply, &p.err), 0);
	reply.data[reply.len - 40] ^= 1; /* in the body, before the MAC at the end */
	assert_null(gp_wire_open(p.tx, reply.data, reply.len, &from, &code, &p.err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_AUTH);
	assert_int_equal(gp_wire_seal_mac(p.rx, &p.b, key, &reply, &p.err), 0);
	assert_null(gp_wire_open(p.rx, reply.data, reply.len, &from, &code, &p.err));
	assert_int_equal(code, GPOOL__ERROR_CODE__ERROR_AUTH);
	assert_non_null(strstr(p.err.text, "never gave"));
	gp_buf_release(&reply);
	gp_buf_release(&copy);
	pair_close(&p);
}

/* The key is for the peer's uid alone: a credential restricted to another uid does not decode
 * here (munged refuses it, root included), so nobody else learns the key. */
static void reply_key_other_uid(void **state)
{
	struct pair p;
	memset(&p, 0, sizeof(p));
	p.tx = gp_wire_create(auth, 1 << 20);
	p.rx = gp_wire_create(auth, 1 << 20);
	assert_true(p.tx && p.rx);
	assert_int_equal(gp_wire_set_reply_key(p.tx, geteuid() + 4242), 0);
	make_batch(&p.b, 1);
	assert_int_equal(gp_wire_seal(p.tx, &p.b, &p.out, &p.err), 0);
	assert_null(pair_open(&p, p.out.data, p.out.len));
	assert_int_equal(p.code, GPOOL__ERROR_CODE__ERROR_AUTH);
	assert_false(p.from.has_key);
	pair_close(&p);
	/* a wire without auth cannot have a key */
	gp_wire_t *local = gp_wire_create(NULL, 1 << 20);
	assert_int_equal(gp_wire_set_reply_key(local, 0), -1);
	gp_wire_destroy(&local);
}

int main(void)
{
	if (!(auth = gp_test_auth_or_skip()))
		return 77;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(round_trip),	  cmocka_unit_test(tampered_body),
	    cmocka_unit_test(cheap_checks),	  cmocka_unit_test(forged_credential),
	    cmocka_unit_test(expired_credential), cmocka_unit_test(local_unauthenticated),
	    cmocka_unit_test(munged_missing),	  cmocka_unit_test(batch_members),
	    cmocka_unit_test(reply_key),	  cmocka_unit_test(reply_key_other_uid),
	    cmocka_unit_test(decode_bounds),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	gp_auth_destroy(&auth);
	return rc;
}
