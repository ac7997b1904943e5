/* gp_sha256: the FIPS 180-2 vectors, and the same digest as OpenSSL's on both sides of the
 * short/long boundary (libsodium below it, libcrypto loaded above it), in one part or split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"

static void hex(const uint8_t h[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

static void one(const void *p, size_t n, char out[65])
{
	uint8_t h[32];
	gp_sha256(&p, &n, 1, h);
	hex(h, out);
}

static void vectors(void **state)
{
	char h[65];
	one("", 0, h);
	assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	one("abc", 3, h);
	assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* a million 'a': long, so OpenSSL's */
	size_t n = 1000000;
	char *m = malloc(n);
	assert_non_null(m);
	memset(m, 'a', n);
	one(m, n, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(m);
}

static void same_as_openssl(void **state)
{
	size_t max = GP_SHA256_LONG + 4096;
	uint8_t *b = malloc(max);
	assert_non_null(b);
	for (size_t i = 0; i < max; i++)
		b[i] = (uint8_t)(i * 131 + (i >> 7));
	const size_t sizes[] = {
	    1, 55, 56, 64, 1000, GP_SHA256_LONG - 1, GP_SHA256_LONG, GP_SHA256_LONG + 1, max};
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint8_t want[32], got[32];
		unsigned int wl = 32;
		assert_int_equal(EVP_Digest(b, n, want, &wl, EVP_sha256(), NULL), 1);
		const void *p = b;
		gp_sha256(&p, &n, 1, got);
		assert_memory_equal(got, want, 32);
		/* split in three parts, one empty: the same digest */
		size_t cut = n / 3;
		const void *parts[] = {b, b + cut, b + cut};
		const size_t lens[] = {cut, 0, n - cut};
		gp_sha256(parts, lens, 3, got);
		assert_memory_equal(got, want, 32);
	}
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(vectors),
					   cmocka_unit_test(same_as_openssl)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
