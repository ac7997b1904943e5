/* joinseal.h: the sealed bundle that carries the pool's MUNGE key and a worker's gpool.conf
 * from the scheduler's PC to a joining PC (gpool join-token -> gschedd -> gpool join).
 *
 * Bundle: "GPJB1\0\0\0" | token id (16) | expiry (u64le, Unix seconds) | nonce (12) |
 * AES-256-GCM ciphertext of the payload | tag (16). The first 44 bytes are the GCM's
 * additional data, so the id and the expiry cannot be changed without the tag failing; the key
 * is HKDF-SHA256(ikm = the token's secret, salt = its id, info = "gpool join bundle v1").
 * gschedd reads only the header (gp_join_header_parse): it never holds the secret.
 *
 * Payload: key length (u32le) | the MUNGE key | gpool.conf text (printable ASCII, newlines).
 */
#ifndef GPOOL_JOINSEAL_H
#define GPOOL_JOINSEAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/jointoken.h"

#define GP_JOIN_HEADER_LEN 44
#define GP_JOIN_TAG_LEN	   16
#define GP_JOIN_MAX_BUNDLE 16384 /* a bundle larger is refused unread */
#define GP_JOIN_KEY_MIN	   32	 /* MUNGE's own bounds on a key file, with room */
#define GP_JOIN_KEY_MAX	   4096
#define GP_JOIN_CONF_MAX   8192

struct gp_join_header {
	uint8_t id[GP_JOIN_ID_LEN];
	uint64_t expiry; /* Unix seconds */
};

/* The clear header of a bundle: 0 / -1 with errno EINVAL (too short or long, another magic). */
int gp_join_header_parse(const uint8_t *b, size_t len, struct gp_join_header *h, gp_error_t *err);

/* Seal plain under t with this expiry; *out is malloc'd. 0 / -1 with errno and err filled
 * (EINVAL: too large for a bundle; EIO: OpenSSL failed). */
int gp_join_seal(const struct gp_join_token *t, uint64_t expiry, const uint8_t *plain, size_t len,
		 uint8_t **out, size_t *outlen, gp_error_t *err);

/* Open a bundle with t: its header in *h, the payload malloc'd in *plain. 0 / -1 with errno
 * (EINVAL: not a bundle or another token's id; EBADMSG: the tag does not match, a wrong secret
 * or altered bytes; EIO) and err filled. */
int gp_join_open(const struct gp_join_token *t, const uint8_t *b, size_t len,
		 struct gp_join_header *h, uint8_t **plain, size_t *plainlen, gp_error_t *err);

/* The payload of a key and a conf text; *out malloc'd. 0 / -1 with errno EINVAL (out of the
 * bounds above, or a conf byte that is not printable) and err filled. */
int gp_join_payload_pack(const uint8_t *key, size_t keylen, const char *conf, uint8_t **out,
			 size_t *outlen, gp_error_t *err);

/* Split a payload: *key points into p, *conf is malloc'd and NUL-terminated. Same bounds and
 * errors as packing. */
int gp_join_payload_unpack(const uint8_t *p, size_t len, const uint8_t **key, size_t *keylen,
			   char **conf, gp_error_t *err);

#endif
