/* jointoken.c - the token `gpool join` takes: making one, writing and reading its text
 * form (jointoken.h) */
#include "common/jointoken.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#define PREFIX "gpj1-"

int gp_join_token_new(struct gp_join_token *t, gp_error_t *err)
{
	uint8_t buf[GP_JOIN_ID_LEN + GP_JOIN_SECRET_LEN];
	if (getrandom(buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
		errno = EIO;
		return gp_errprintf(err, "no randomness from the kernel");
	}
	memcpy(t->id, buf, GP_JOIN_ID_LEN);
	memcpy(t->secret, buf + GP_JOIN_ID_LEN, GP_JOIN_SECRET_LEN);
	memset(buf, 0, sizeof(buf));
	return 0;
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void gp_join_id_hex(const uint8_t id[GP_JOIN_ID_LEN], char *out)
{
	hex(id, GP_JOIN_ID_LEN, out);
}

void gp_join_token_format(const struct gp_join_token *t, char *out)
{
	memcpy(out, PREFIX, 5);
	hex(t->id, GP_JOIN_ID_LEN, out + 5);
	out[5 + 2 * GP_JOIN_ID_LEN] = '-';
	hex(t->secret, GP_JOIN_SECRET_LEN, out + 5 + 2 * GP_JOIN_ID_LEN + 1);
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int gp_join_token_parse(const char *text, struct gp_join_token *t, gp_error_t *err)
{
	while (isspace((unsigned char)*text))
		text++;
	size_t len = strlen(text);
	while (len && isspace((unsigned char)text[len - 1]))
		len--;
	const char *id = text + 5, *secret = id + 2 * GP_JOIN_ID_LEN + 1;
	if (len != GP_JOIN_TOKEN_LEN || strncmp(text, PREFIX, 5) != 0 ||
	    id[2 * GP_JOIN_ID_LEN] != '-' || unhex(id, t->id, GP_JOIN_ID_LEN) < 0 ||
	    unhex(secret, t->secret, GP_JOIN_SECRET_LEN) < 0) {
		memset(t, 0, sizeof(*t));
		errno = EINVAL;
		return gp_errprintf(err,
				    "invalid token: expected gpj1-, 32 hex digits, '-', 64 hex "
				    "digits (as gpool join-token printed it)");
	}
	return 0;
}
