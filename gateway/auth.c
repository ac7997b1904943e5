/* auth.c: the owner's token on a route (see auth.h). The token is the owner's secret: gsub
 * made it and keeps it in a file only the owner reads; gschedd and ggated see its SHA-256
 * only, so neither a ServiceQuery answer nor ggated's memory gives it away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/sha256.h"
#include "gateway/auth.h"

#define TOKEN_MAX 128 /* gsub's are 64 hex digits */

static bool hash_matches(const char *hash, const char *tok, size_t n)
{
	uint8_t md[32];
	const void *p = tok;
	gp_sha256(&p, &n, 1, md);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	unsigned diff = 0;
	for (int i = 0; i < 64; i++)
		diff |= (unsigned char)hex[i] ^ (unsigned char)hash[i];
	return diff == 0;
}

/* the gpool_token cookies in a Cookie header's value v[0..n) (a browser may send several, of
 * paths that overlap): 1 one of them is the route's, 0 none is, -1 there is none */
static int cookie_matches(const char *hash, const char *v, size_t n)
{
	static const char name[] = "gpool_token=";
	size_t nl = sizeof(name) - 1, i = 0;
	int rc = -1;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == ';'))
			i++;
		size_t b = i;
		while (i < n && v[i] != ';')
			i++;
		if (i - b > nl && memcmp(v + b, name, nl) == 0) {
			size_t tl = i - b - nl;
			if (tl <= TOKEN_MAX && hash_matches(hash, v + b + nl, tl))
				return 1;
			rc = 0;
		}
	}
	return rc;
}

size_t gw_auth_query_token(const char *uri, char *tok, size_t cap)
{
	const char *q = strchr(uri, '?');
	while (q) {
		q++;
		if (strncmp(q, "gpool_token=", 12) == 0) {
			const char *v = q + 12;
			size_t n = strcspn(v, "&#");
			if (n == 0 || n >= cap)
				return 0;
			memcpy(tok, v, n);
			tok[n] = '\0';
			return n;
		}
		q = strchr(q, '&');
	}
	return 0;
}

/* uri without its gpool_token parameter (malloc'd) */
static char *without_token(const char *uri)
{
	size_t n = strlen(uri);
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	const char *q = strchr(uri, '?');
	size_t k = (size_t)(q - uri);
	memcpy(out, uri, k);
	bool first = true;
	const char *p = q + 1;
	while (*p && *p != '#') {
		size_t l = strcspn(p, "&#");
		if (strncmp(p, "gpool_token=", 12) != 0) {
			out[k++] = first ? '?' : '&';
			memcpy(out + k, p, l);
			k += l;
			first = false;
		}
		p += l;
		if (*p == '&')
			p++;
	}
	out[k] = '\0';
	return out;
}

enum gw_auth_result gw_auth_check(const char *hash, const struct gh_msg *m, const char *uri,
				  char **loc)
{
	*loc = NULL;
	if (!hash[0])
		return GW_AUTH_OK;
	if (strlen(hash) != 64)
		return GW_AUTH_WRONG; /* never so from gschedd: it checks the spec */
	size_t n = 0;
	const char *t = gh_msg_header(m, "X-Gpool-Token", &n);
	if (t && n && n <= TOKEN_MAX)
		return hash_matches(hash, t, n) ? GW_AUTH_OK : GW_AUTH_WRONG;
	if (t)
		return GW_AUTH_WRONG;
	/* OpenAI's clients send their key so: a Bearer that is not the route's may be the
	 * replica's own key, so the other places are looked at before it is refused */
	const char *b = gh_msg_header(m, "Authorization", &n);
	bool other_bearer = false;
	if (b && n > 7 && strncasecmp(b, "Bearer ", 7) == 0) {
		size_t bl = n - 7;
		const char *bt = b + 7;
		while (bl && *bt == ' ') {
			bt++;
			bl--;
		}
		while (bl && (bt[bl - 1] == ' ' || bt[bl - 1] == '\t'))
			bl--;
		if (bl && bl <= TOKEN_MAX && hash_matches(hash, bt, bl))
			return GW_AUTH_OK;
		other_bearer = true;
	}
	char tok[TOKEN_MAX + 1];
	if ((n = gw_auth_query_token(uri, tok, sizeof(tok)))) {
		if (!hash_matches(hash, tok, n))
			return GW_AUTH_WRONG;
		if (!(*loc = without_token(uri)))
			return GW_AUTH_WRONG; /* out of memory: refused rather than let through */
		return GW_AUTH_SET_COOKIE;
	}
	const char *cv = gh_msg_header(m, "Cookie", &n);
	int rc = cv ? cookie_matches(hash, cv, n) : -1;
	if (rc < 0 && other_bearer)
		rc = 0;
	return rc > 0 ? GW_AUTH_OK : rc == 0 ? GW_AUTH_WRONG : GW_AUTH_MISSING;
}
