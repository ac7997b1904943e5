/* test_joinseal.c - the join token and sealed bundle (jointoken.c, joinseal.c): round trips,
 * a wrong secret or an altered byte refused, and the bounds on what is opened */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/joinseal.h"
#include "common/jointoken.h"

static void token_round_trip(void **state)
{
	struct gp_join_token t, u;
	gp_error_t err;
	char text[GP_JOIN_TOKEN_LEN + 1];
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	gp_join_token_format(&t, text);
	assert_int_equal(strlen(text), GP_JOIN_TOKEN_LEN);
	assert_memory_equal(text, "gpj1-", 5);
	assert_int_equal(gp_join_token_parse(text, &u, &err), 0);
	assert_memory_equal(&t, &u, sizeof(t));
	/* blanks of a copy-paste are dropped */
	char padded[GP_JOIN_TOKEN_LEN + 8];
	snprintf(padded, sizeof(padded), "  %s\n", text);
	assert_int_equal(gp_join_token_parse(padded, &u, &err), 0);
	assert_memory_equal(&t, &u, sizeof(t));
	struct gp_join_token t2;
	assert_int_equal(gp_join_token_new(&t2, &err), 0);
	assert_memory_not_equal(t.id, t2.id, GP_JOIN_ID_LEN);
}

static void token_refused(void **state)
{
	struct gp_join_token t;
	gp_error_t err;
	char text[GP_JOIN_TOKEN_LEN + 1], bad[GP_JOIN_TOKEN_LEN + 2];
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	gp_join_token_format(&t, text);
	const char *cases[] = {"", "gpj1-", "gpj2-00", "nonsense"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		assert_int_equal(gp_join_token_parse(cases[i], &t, &err), -1);
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err.text, "invalid token"));
	}
	/* one character short, one too many, uppercase hex, the dash moved, another prefix */
	memcpy(bad, text, sizeof(text));
	bad[GP_JOIN_TOKEN_LEN - 1] = '\0';
	assert_int_equal(gp_join_token_parse(bad, &t, &err), -1);
	snprintf(bad, sizeof(bad), "%s0", text);
	assert_int_equal(gp_join_token_parse(bad, &t, &err), -1);
	memcpy(bad, text, sizeof(text));
	bad[10] = 'A';
	assert_int_equal(gp_join_token_parse(bad, &t, &err), -1);
	memcpy(bad, text, sizeof(text));
	bad[37] = '0';
	assert_int_equal(gp_join_token_parse(bad, &t, &err), -1);
	memcpy(bad, text, sizeof(text));
	bad[3] = '2';
	assert_int_equal(gp_join_token_parse(bad, &t, &err), -1);
}

static uint8_t *sample(const struct gp_join_token *t, uint64_t expiry, size_t *len)
{
	uint8_t key[1024], *p, *b;
	size_t plen;
	gp_error_t err;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 31 + 7);
	assert_int_equal(gp_join_payload_pack(key, sizeof(key),
					      "scheduler = tcp://198.18.0.1:7820\n", &p, &plen,
					      &err),
			 0);
	assert_int_equal(gp_join_seal(t, expiry, p, plen, &b, len, &err), 0);
	free(p);
	return b;
}

static void seal_open(void **state)
{
	struct gp_join_token t;
	gp_error_t err;
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	size_t len, plen, klen;
	uint8_t *b = sample(&t, 1234567890123ULL, &len), *p;
	struct gp_join_header h;
	assert_int_equal(gp_join_header_parse(b, len, &h, &err), 0);
	assert_memory_equal(h.id, t.id, GP_JOIN_ID_LEN);
	assert_int_equal(h.expiry, 1234567890123ULL);
	/* the key is not in the bundle in clear */
	assert_null(memmem(b, len, "scheduler", 9));
	memset(&h, 0, sizeof(h));
	assert_int_equal(gp_join_open(&t, b, len, &h, &p, &plen, &err), 0);
	assert_int_equal(h.expiry, 1234567890123ULL);
	const uint8_t *key;
	char *conf;
	assert_int_equal(gp_join_payload_unpack(p, plen, &key, &klen, &conf, &err), 0);
	assert_int_equal(klen, 1024);
	assert_int_equal(key[1], 38);
	assert_string_equal(conf, "scheduler = tcp://198.18.0.1:7820\n");
	free(conf);
	free(p);
	free(b);
}

static void wrong_secret_or_altered(void **state)
{
	struct gp_join_token t, other;
	gp_error_t err;
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	size_t len, plen;
	uint8_t *b = sample(&t, 99, &len), *p = NULL;
	struct gp_join_header h;
	/* the right id, a wrong secret */
	other = t;
	other.secret[0] ^= 1;
	errno = 0;
	assert_int_equal(gp_join_open(&other, b, len, &h, &p, &plen, &err), -1);
	assert_int_equal(errno, EBADMSG);
	assert_non_null(strstr(err.text, "secret is wrong"));
	assert_null(p);
	/* another token's id */
	other = t;
	other.id[5] ^= 1;
	assert_int_equal(gp_join_open(&other, b, len, &h, &p, &plen, &err), -1);
	assert_int_equal(errno, EINVAL);
	/* every byte of the bundle is covered: the expiry, the nonce, the ciphertext, the tag */
	size_t at[] = {8 + GP_JOIN_ID_LEN, 8 + GP_JOIN_ID_LEN + 8, GP_JOIN_HEADER_LEN + 3, len - 1};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		b[at[i]] ^= 0x40;
		errno = 0;
		assert_int_equal(gp_join_open(&t, b, len, &h, &p, &plen, &err), -1);
		assert_int_equal(errno, EBADMSG);
		b[at[i]] ^= 0x40;
	}
	/* truncated */
	assert_int_equal(gp_join_open(&t, b, GP_JOIN_HEADER_LEN + 3, &h, &p, &plen, &err), -1);
	assert_int_equal(gp_join_open(&t, b, len, &h, &p, &plen, &err), 0);
	free(p);
	free(b);
}

static void bounds(void **state)
{
	struct gp_join_token t;
	gp_error_t err;
	uint8_t key[GP_JOIN_KEY_MAX + 1] = {0}, *p;
	size_t plen;
	assert_int_equal(gp_join_token_new(&t, &err), 0);
	assert_int_equal(gp_join_payload_pack(key, GP_JOIN_KEY_MIN - 1, "", &p, &plen, &err), -1);
	assert_int_equal(gp_join_payload_pack(key, GP_JOIN_KEY_MAX + 1, "", &p, &plen, &err), -1);
	assert_int_equal(gp_join_payload_pack(key, 32, "a\001b", &p, &plen, &err), -1);
	assert_non_null(strstr(err.text, "byte 0x01"));
	char *big = malloc(GP_JOIN_CONF_MAX + 2);
	memset(big, 'x', GP_JOIN_CONF_MAX + 1);
	big[GP_JOIN_CONF_MAX + 1] = '\0';
	assert_int_equal(gp_join_payload_pack(key, 32, big, &p, &plen, &err), -1);
	free(big);
	uint8_t *huge = calloc(1, GP_JOIN_MAX_BUNDLE), *b;
	size_t blen;
	assert_int_equal(gp_join_seal(&t, 1, huge, GP_JOIN_MAX_BUNDLE, &b, &blen, &err), -1);
	assert_int_equal(errno, EINVAL);
	/* a payload whose key length runs past its end */
	uint8_t lie[8] = {0xff, 0xff, 0, 0, 1, 2, 3, 4};
	const uint8_t *k;
	char *conf;
	size_t kl;
	assert_int_equal(gp_join_payload_unpack(lie, sizeof(lie), &k, &kl, &conf, &err), -1);
	assert_int_equal(gp_join_payload_unpack(lie, 3, &k, &kl, &conf, &err), -1);
	/* a bundle header that is not one */
	struct gp_join_header h;
	memcpy(huge, "GPJB2", 5);
	assert_int_equal(gp_join_header_parse(huge, 100, &h, &err), -1);
	free(huge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(token_round_trip), cmocka_unit_test(token_refused),
	    cmocka_unit_test(seal_open),	cmocka_unit_test(wrong_secret_or_altered),
	    cmocka_unit_test(bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
