/* auth.h: a route that requires its owner's token (gsub --route-token): the token comes as
 * an X-Gpool-Token header, an Authorization: Bearer header (as OpenAI's clients send their
 * API key; a Bearer that is not the route's token is refused unless a cookie or the query
 * carries the right one), a gpool_token cookie, or once in the query (?gpool_token=T), which
 * is answered with a redirect to the same place without it that sets the cookie (a browser
 * then carries it on every request, the WebSocket handshake too). The gateway knows only the
 * token's SHA-256 (ServiceInfo.route_token_sha256), compared in constant time (auth.c). */
#ifndef GPOOL_GATEWAY_AUTH_H
#define GPOOL_GATEWAY_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "http/msg.h"

enum gw_auth_result {
	GW_AUTH_OK = 0,	   /* open route, or the right token */
	GW_AUTH_MISSING,   /* 401: no token */
	GW_AUTH_WRONG,	   /* 403: a token, not this route's */
	GW_AUTH_SET_COOKIE /* the right token in the query: redirect with the cookie */
};

/* What request m may do on a route whose token hash is hash ("": open). uri: the request
 * target as the client sent it (NUL-terminated). For GW_AUTH_SET_COOKIE, *loc gets the
 * target without the token (malloc'd, the caller frees it). */
enum gw_auth_result gw_auth_check(const char *hash, const struct gh_msg *m, const char *uri,
				  char **loc);
/* "gpool_token=T" in the query of uri, T into tok (bounded): its length, or 0 */
size_t gw_auth_query_token(const char *uri, char *tok, size_t cap);

#endif
