/* jointoken.h: the token `gpool join` takes (docs/security.md, "Adding a PC").
 *
 * A token is a 128-bit id, which names the sealed bundle in gschedd's state directory and is
 * sent over the LAN, and a 256-bit secret, which never leaves the two PCs: the bundle's key is
 * derived from it (common/joinseal.h). Written as "gpj1-" then the id and the secret in
 * lowercase hexadecimal, joined by '-' (102 characters).
 */
#ifndef GPOOL_JOINTOKEN_H
#define GPOOL_JOINTOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GP_JOIN_ID_LEN	   16
#define GP_JOIN_SECRET_LEN 32
#define GP_JOIN_TOKEN_LEN  (5 + 2 * GP_JOIN_ID_LEN + 1 + 2 * GP_JOIN_SECRET_LEN)

struct gp_join_token {
	uint8_t id[GP_JOIN_ID_LEN];
	uint8_t secret[GP_JOIN_SECRET_LEN];
};

/* A new token from the kernel's random source. 0 / -1 with errno (EIO) and err filled. */
int gp_join_token_new(struct gp_join_token *t, gp_error_t *err);

/* The token as text; out holds at least GP_JOIN_TOKEN_LEN + 1 bytes. */
void gp_join_token_format(const struct gp_join_token *t, char *out);

/* Parse a token's text (exactly the format above; surrounding blanks of a copy-paste are
 * dropped). 0 / -1 with errno EINVAL and err filled. */
int gp_join_token_parse(const char *text, struct gp_join_token *t, gp_error_t *err);

/* The id in lowercase hexadecimal (a bundle's file name); out holds 2 * GP_JOIN_ID_LEN + 1. */
void gp_join_id_hex(const uint8_t id[GP_JOIN_ID_LEN], char *out);

#endif
