/* auth.h: MUNGE credentials. A credential's payload is whatever the caller binds into it
 * (gpool binds a SHA-256 of the envelope); decoding yields the sender's uid and gid as munged
 * vouches for them. The munged socket is MUNGE's default unless $GPOOL_MUNGE_SOCKET names
 * another (tests start a second munged with a different key).
 */
#ifndef GPOOL_AUTH_H
#define GPOOL_AUTH_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct gp_auth gp_auth_t;

/* Outcome classes of a decode, mapped from MUNGE's error codes. */
enum gp_auth_status {
	GP_AUTH_OK = 0,
	GP_AUTH_INVALID, /* forged, corrupt, or made with another key */
	GP_AUTH_EXPIRED,
	GP_AUTH_REPLAYED,
	GP_AUTH_UNAVAILABLE, /* munged does not answer */
};

gp_auth_t *gp_auth_create(const char *socket_path, gp_error_t *err);
void gp_auth_destroy(gp_auth_t **auth);

/* Set the time to live of credentials this context encodes (seconds, 0: munged's default). */
int gp_auth_set_ttl(gp_auth_t *auth, int ttl);

/* Encode a credential binding payload. *cred is malloc'd, NUL-terminated. */
int gp_auth_encode(gp_auth_t *auth, const void *payload, size_t len, char **cred, gp_error_t *err);

/* Encode a credential that only uid (and root) may decode, its payload enciphered (AES-128
 * whatever munged's default cipher): for a payload that carries a secret for uid. */
int gp_auth_encode_for(gp_auth_t *auth, const void *payload, size_t len, uid_t uid, char **cred,
		       gp_error_t *err);

/* Decode. On success *payload (malloc'd, may be NULL when empty) and *len, *uid, *gid are
 * set. On failure returns -1 and *status says why. */
int gp_auth_decode(gp_auth_t *auth, const char *cred, void **payload, size_t *len, uid_t *uid,
		   gid_t *gid, enum gp_auth_status *status, gp_error_t *err);

/* Cumulative seconds spent inside munge_encode/munge_decode (for the benchmark's share). */
double gp_auth_seconds(const gp_auth_t *auth);

#endif
