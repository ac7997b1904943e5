/* sha256.c: libsodium for short inputs, OpenSSL loaded at the first long one (sha256.h). */
#include "common/sha256.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <sodium.h>
#include <stdbool.h>

/* OpenSSL's digest calls, looked up in libcrypto.so.3 once; NULL when it is not there */
static struct {
	pthread_once_t once;
	__typeof__(&EVP_MD_CTX_new) ctx_new;
	__typeof__(&EVP_MD_CTX_free) ctx_free;
	__typeof__(&EVP_sha256) sha256;
	__typeof__(&EVP_DigestInit_ex) init;
	__typeof__(&EVP_DigestUpdate) update;
	__typeof__(&EVP_DigestFinal_ex) final;
} ossl = {.once = PTHREAD_ONCE_INIT};

static void ossl_load(void)
{
	void *h = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	/* assigned through void** as POSIX allows: dlsym returns data pointers */
	void **dst[] = {(void **)&ossl.ctx_new, (void **)&ossl.ctx_free, (void **)&ossl.sha256,
			(void **)&ossl.init,	(void **)&ossl.update,	 (void **)&ossl.final};
	static const char *const names[] = {"EVP_MD_CTX_new",	"EVP_MD_CTX_free",
					    "EVP_sha256",	"EVP_DigestInit_ex",
					    "EVP_DigestUpdate", "EVP_DigestFinal_ex"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*dst[i] = dlsym(h, names[i]))) {
			ossl.ctx_new = NULL; /* one missing: none used */
			return;
		}
}

static bool ossl_digest(const void *const *parts, const size_t *lens, size_t n, uint8_t out[32])
{
	pthread_once(&ossl.once, ossl_load);
	if (!ossl.ctx_new)
		return false;
	EVP_MD_CTX *c = ossl.ctx_new();
	unsigned int olen = 32;
	bool ok = c && ossl.init(c, ossl.sha256(), NULL) == 1;
	for (size_t i = 0; ok && i < n; i++)
		ok = !lens[i] || ossl.update(c, parts[i], lens[i]) == 1;
	ok = ok && ossl.final(c, out, &olen) == 1 && olen == 32;
	if (c)
		ossl.ctx_free(c);
	return ok;
}

void gp_sha256(const void *const *parts, const size_t *lens, size_t n, uint8_t out[32])
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += lens[i];
	if (total >= GP_SHA256_LONG && ossl_digest(parts, lens, n, out))
		return;
	crypto_hash_sha256_state st;
	crypto_hash_sha256_init(&st);
	for (size_t i = 0; i < n; i++)
		if (lens[i])
			crypto_hash_sha256_update(&st, parts[i], lens[i]);
	crypto_hash_sha256_final(&st, out);
}
