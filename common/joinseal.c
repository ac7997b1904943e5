/* joinseal.c - the sealed bundle that carries the pool's MUNGE key and a worker's
 * gpool.conf to a joining PC: packing, sealing and opening it, bounded (joinseal.h) */
#include "common/joinseal.h"

#include <errno.h>
#include <stdbool.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t magic[8] = {'G', 'P', 'J', 'B', '1', 0, 0, 0};
#define NONCE_LEN 12
#define INFO	  "gpool join bundle v1"

static void put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64le(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int gp_join_header_parse(const uint8_t *b, size_t len, struct gp_join_header *h, gp_error_t *err)
{
	if (len < GP_JOIN_HEADER_LEN + GP_JOIN_TAG_LEN || len > GP_JOIN_MAX_BUNDLE ||
	    memcmp(b, magic, sizeof(magic)) != 0) {
		errno = EINVAL;
		return gp_errprintf(err, "not a join bundle (%zu bytes)", len);
	}
	memcpy(h->id, b + 8, GP_JOIN_ID_LEN);
	h->expiry = get_u64le(b + 8 + GP_JOIN_ID_LEN);
	return 0;
}

static int derive(const struct gp_join_token *t, uint8_t key[32])
{
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	size_t n = 32;
	int ok = c && EVP_PKEY_derive_init(c) > 0 &&
		 EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
		 EVP_PKEY_CTX_set1_hkdf_salt(c, t->id, GP_JOIN_ID_LEN) > 0 &&
		 EVP_PKEY_CTX_set1_hkdf_key(c, t->secret, GP_JOIN_SECRET_LEN) > 0 &&
		 EVP_PKEY_CTX_add1_hkdf_info(c, (const unsigned char *)INFO, strlen(INFO)) > 0 &&
		 EVP_PKEY_derive(c, key, &n) > 0 && n == 32;
	EVP_PKEY_CTX_free(c);
	return ok ? 0 : -1;
}

/* One AES-256-GCM pass over in (enc: tag written at tag; else checked against it). */
static int gcm(bool enc, const uint8_t key[32], const uint8_t *nonce, const uint8_t *aad,
	       const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0, ok = c != NULL;
	ok = ok && (enc ? EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL)
			: EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL)) > 0;
	ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, NONCE_LEN, NULL) > 0;
	ok = ok && (enc ? EVP_EncryptInit_ex(c, NULL, NULL, key, nonce)
			: EVP_DecryptInit_ex(c, NULL, NULL, key, nonce)) > 0;
	ok = ok && (enc ? EVP_EncryptUpdate(c, NULL, &n, aad, GP_JOIN_HEADER_LEN)
			: EVP_DecryptUpdate(c, NULL, &n, aad, GP_JOIN_HEADER_LEN)) > 0;
	if (ok && len)
		ok = (enc ? EVP_EncryptUpdate(c, out, &n, in, (int)len)
			  : EVP_DecryptUpdate(c, out, &n, in, (int)len)) > 0;
	if (ok && enc)
		ok = EVP_EncryptFinal_ex(c, out + len, &n) > 0 &&
		     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, GP_JOIN_TAG_LEN, tag) > 0;
	else if (ok)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, GP_JOIN_TAG_LEN, tag) > 0 &&
		     EVP_DecryptFinal_ex(c, out + len, &n) > 0;
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

int gp_join_seal(const struct gp_join_token *t, uint64_t expiry, const uint8_t *plain, size_t len,
		 uint8_t **out, size_t *outlen, gp_error_t *err)
{
	size_t total = GP_JOIN_HEADER_LEN + len + GP_JOIN_TAG_LEN;
	if (total > GP_JOIN_MAX_BUNDLE) {
		errno = EINVAL;
		return gp_errprintf(err, "a join bundle of %zu bytes is over %d", total,
				    GP_JOIN_MAX_BUNDLE);
	}
	uint8_t *b = malloc(total), key[32];
	if (!b) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	memcpy(b, magic, sizeof(magic));
	memcpy(b + 8, t->id, GP_JOIN_ID_LEN);
	put_u64le(b + 8 + GP_JOIN_ID_LEN, expiry);
	uint8_t *nonce = b + 8 + GP_JOIN_ID_LEN + 8;
	if (RAND_bytes(nonce, NONCE_LEN) != 1 || derive(t, key) < 0 ||
	    gcm(true, key, nonce, b, plain, len, b + GP_JOIN_HEADER_LEN,
		b + GP_JOIN_HEADER_LEN + len) < 0) {
		memset(key, 0, sizeof(key));
		free(b);
		errno = EIO;
		return gp_errprintf(err, "cannot seal the join bundle (openssl)");
	}
	memset(key, 0, sizeof(key));
	*out = b;
	*outlen = total;
	return 0;
}

int gp_join_open(const struct gp_join_token *t, const uint8_t *b, size_t len,
		 struct gp_join_header *h, uint8_t **plain, size_t *plainlen, gp_error_t *err)
{
	if (gp_join_header_parse(b, len, h, err) < 0)
		return -1;
	if (memcmp(h->id, t->id, GP_JOIN_ID_LEN) != 0) {
		errno = EINVAL;
		return gp_errprintf(err, "the bundle is another token's");
	}
	size_t n = len - GP_JOIN_HEADER_LEN - GP_JOIN_TAG_LEN;
	uint8_t *p = malloc(n + 1), key[32];
	if (!p) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	if (derive(t, key) < 0) {
		free(p);
		errno = EIO;
		return gp_errprintf(err, "cannot derive the bundle's key (openssl)");
	}
	int rc = gcm(false, key, b + 8 + GP_JOIN_ID_LEN + 8, b, b + GP_JOIN_HEADER_LEN, n, p,
		     (uint8_t *)(b + len - GP_JOIN_TAG_LEN));
	memset(key, 0, sizeof(key));
	if (rc < 0) {
		memset(p, 0, n);
		free(p);
		errno = EBADMSG;
		return gp_errprintf(err,
				    "the bundle does not decrypt with this token: its secret is "
				    "wrong or the bundle was altered");
	}
	*plain = p;
	*plainlen = n;
	return 0;
}

static bool conf_byte_ok(uint8_t c)
{
	return c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f);
}

static int payload_check(size_t keylen, const uint8_t *conf, size_t conflen, gp_error_t *err)
{
	if (keylen < GP_JOIN_KEY_MIN || keylen > GP_JOIN_KEY_MAX) {
		errno = EINVAL;
		return gp_errprintf(err, "a munge key of %zu bytes (expected %d to %d)", keylen,
				    GP_JOIN_KEY_MIN, GP_JOIN_KEY_MAX);
	}
	if (conflen > GP_JOIN_CONF_MAX) {
		errno = EINVAL;
		return gp_errprintf(err, "a gpool.conf of %zu bytes (at most %d)", conflen,
				    GP_JOIN_CONF_MAX);
	}
	for (size_t i = 0; i < conflen; i++)
		if (!conf_byte_ok(conf[i])) {
			errno = EINVAL;
			return gp_errprintf(err, "the gpool.conf text has byte 0x%02x at %zu",
					    conf[i], i);
		}
	return 0;
}

int gp_join_payload_pack(const uint8_t *key, size_t keylen, const char *conf, uint8_t **out,
			 size_t *outlen, gp_error_t *err)
{
	size_t conflen = strlen(conf);
	if (payload_check(keylen, (const uint8_t *)conf, conflen, err) < 0)
		return -1;
	size_t n = 4 + keylen + conflen;
	uint8_t *p = malloc(n);
	if (!p) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(keylen >> (8 * i));
	memcpy(p + 4, key, keylen);
	memcpy(p + 4 + keylen, conf, conflen);
	*out = p;
	*outlen = n;
	return 0;
}

int gp_join_payload_unpack(const uint8_t *p, size_t len, const uint8_t **key, size_t *keylen,
			   char **conf, gp_error_t *err)
{
	if (len < 4) {
		errno = EINVAL;
		return gp_errprintf(err, "a join payload of %zu bytes", len);
	}
	size_t kl = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
	if (kl > len - 4) {
		errno = EINVAL;
		return gp_errprintf(err, "a join payload's key runs past its end");
	}
	const uint8_t *c = p + 4 + kl;
	size_t cl = len - 4 - kl;
	if (payload_check(kl, c, cl, err) < 0)
		return -1;
	char *s = malloc(cl + 1);
	if (!s) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	memcpy(s, c, cl);
	s[cl] = '\0';
	*key = p + 4;
	*keylen = kl;
	*conf = s;
	return 0;
}
