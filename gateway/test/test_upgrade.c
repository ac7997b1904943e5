/* test_upgrade: a WebSocket handshake as ggated checks it (gw_ws_check: the well-formed one
 * carried, a wrong version 426, a bad key, a body, HTTP/1.0, no 'Connection: Upgrade' 400, any
 * other Upgrade left to plain HTTP), the replica's 101 relayed, and a route's token (auth.c:
 * open, missing, wrong, right as a header, among cookies, and once in the query, which is
 * answered with the target without it; Authorization: Bearer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/auth.h"
#include "gateway/upgrade.h"

#define KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
#define HS  "Connection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"

/* a head parsed as server.c parses one (state BODY) */
static void parse(struct gh_msg *m, enum http_parser_type t, const char *head)
{
	gh_msg_init(m, t, 8192, 1 << 20);
	size_t used = gh_msg_feed(m, head, strlen(head));
	assert_true(used > 0);
	assert_int_equal(m->state, GH_MSG_BODY);
}

static enum gw_ws_kind check(const char *head, int *status)
{
	struct gh_msg m;
	parse(&m, HTTP_REQUEST, head);
	const char *why = NULL;
	*status = 0;
	enum gw_ws_kind k = gw_ws_check(&m, status, &why);
	assert_true(k != GW_WS_BAD || why);
	gh_msg_free(&m);
	return k;
}

static void handshakes(void **state)
{
	(void)state;
	int st;
	assert_int_equal(check("GET /chat HTTP/1.1\r\nHost: gw\r\n" HS KEY "\r\n", &st), GW_WS_OK);
	assert_int_equal(check("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: WebSocket\r\n"
			       "Sec-WebSocket-Version: 8\r\n" KEY "\r\n",
			       &st),
			 GW_WS_BAD);
	assert_int_equal(st, 426);
	assert_int_equal(check("GET / HTTP/1.1\r\n" HS "\r\n", &st), GW_WS_BAD);
	assert_int_equal(st, 400);
	assert_int_equal(
	    check("GET / HTTP/1.1\r\n" HS "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\n\r\n", &st),
	    GW_WS_BAD);
	assert_int_equal(check("GET / HTTP/1.1\r\n" HS
			       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\n\r\n",
			       &st),
			 GW_WS_BAD); /* bits past the 16 bytes set */
	assert_int_equal(check("POST / HTTP/1.1\r\n" HS KEY "Content-Length: 2\r\n\r\n", &st),
			 GW_WS_BAD);
	assert_int_equal(check("GET / HTTP/1.0\r\n" HS KEY "\r\n", &st), GW_WS_BAD);
	assert_int_equal(check("GET / HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Version: "
			       "13\r\n" KEY "\r\n",
			       &st),
			 GW_WS_BAD);
	assert_int_equal(st, 400);
	assert_int_equal(
	    check("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", &st),
	    GW_WS_NONE);
	assert_int_equal(check("GET / HTTP/1.1\r\nHost: x\r\n\r\n", &st), GW_WS_NONE);
}

static void answer_relayed(void **state)
{
	(void)state;
	struct gh_msg m, again;
	parse(
	    &m, HTTP_RESPONSE,
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: chat\r\n"
	    "\r\n");
	assert_true(gw_ws_switched(&m));
	struct gh_buf out = {0};
	assert_int_equal(gw_ws_answer_101(&m, &out), 0);
	assert_int_equal(gh_buf_add(&out, "", 1), 0);
	assert_string_equal(gh_buf_data(&out),
			    "HTTP/1.1 101 Switching Protocols\r\n"
			    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
			    "Sec-WebSocket-Protocol: chat\r\n"
			    "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	out.len--;
	parse(&again, HTTP_RESPONSE, gh_buf_data(&out));
	assert_true(gw_ws_switched(&again));
	gh_msg_free(&again);
	gh_msg_free(&m);
	parse(&m, HTTP_RESPONSE, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n");
	assert_false(gw_ws_switched(&m));
	gh_msg_free(&m);
	parse(&m, HTTP_RESPONSE, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
	assert_false(gw_ws_switched(&m));
	gh_msg_free(&m);
	gh_buf_free(&out);
}

/* SHA-256("secret") */
#define H "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"

static enum gw_auth_result auth(const char *hash, const char *head, char **loc)
{
	struct gh_msg m;
	parse(&m, HTTP_REQUEST, head);
	assert_int_equal(gh_buf_add(&m.target, "", 1), 0);
	enum gw_auth_result r = gw_auth_check(hash, &m, gh_buf_data(&m.target), loc);
	gh_msg_free(&m);
	return r;
}

static void tokens(void **state)
{
	(void)state;
	char *loc = NULL;
	assert_int_equal(auth("", "GET / HTTP/1.1\r\n\r\n", &loc), GW_AUTH_OK);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\n\r\n", &loc), GW_AUTH_MISSING);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\nX-Gpool-Token: secret\r\n\r\n", &loc),
			 GW_AUTH_OK);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\nX-Gpool-Token: secreT\r\n\r\n", &loc),
			 GW_AUTH_WRONG);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\nX-Gpool-Token: " H "\r\n\r\n", &loc),
			 GW_AUTH_WRONG); /* the hash is no token */
	assert_int_equal(
	    auth(H, "GET / HTTP/1.1\r\nCookie: a=1; gpool_token=old; gpool_token=secret\r\n\r\n",
		 &loc),
	    GW_AUTH_OK);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\nCookie: a=1; gpool_token=old\r\n\r\n", &loc),
			 GW_AUTH_WRONG);
	assert_int_equal(auth(H, "GET / HTTP/1.1\r\nCookie: xgpool_token=secret\r\n\r\n", &loc),
			 GW_AUTH_MISSING);
	assert_int_equal(auth(H, "GET /a?x=1&gpool_token=secret&y=2 HTTP/1.1\r\n\r\n", &loc),
			 GW_AUTH_SET_COOKIE);
	assert_string_equal(loc, "/a?x=1&y=2");
	free(loc);
	assert_int_equal(auth(H, "GET /svc/nb/tree?gpool_token=secret HTTP/1.1\r\n\r\n", &loc),
			 GW_AUTH_SET_COOKIE);
	assert_string_equal(loc, "/svc/nb/tree");
	free(loc);
	assert_int_equal(auth(H, "GET /a?gpool_token=nope HTTP/1.1\r\n\r\n", &loc), GW_AUTH_WRONG);
	assert_null(loc);
}

/* Authorization: Bearer, as OpenAI's clients send their key */
static void bearer(void **state)
{
	(void)state;
	char *loc = NULL;
	assert_int_equal(auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: Bearer secret\r\n\r\n", &loc),
			 GW_AUTH_OK);
	assert_int_equal(
	    auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: bearer  secret \r\n\r\n", &loc),
	    GW_AUTH_OK); /* the scheme is case-insensitive (RFC 6750) */
	assert_int_equal(auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: Bearer secreT\r\n\r\n", &loc),
			 GW_AUTH_WRONG);
	assert_int_equal(auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: Bearer\r\n\r\n", &loc),
			 GW_AUTH_MISSING); /* no token in it */
	assert_int_equal(
	    auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: Basic c2VjcmV0\r\n\r\n", &loc),
	    GW_AUTH_MISSING); /* not a Bearer: not the route's */
	assert_int_equal(auth(H, "POST /v1 HTTP/1.1\r\nAuthorization: Bearer " H "\r\n\r\n", &loc),
			 GW_AUTH_WRONG); /* the hash is no token */
	/* the replica's own key as Bearer, the route's token in the cookie */
	assert_int_equal(auth(H,
			      "POST /v1 HTTP/1.1\r\nAuthorization: Bearer sk-own\r\n"
			      "Cookie: gpool_token=secret\r\n\r\n",
			      &loc),
			 GW_AUTH_OK);
	/* the right token as a header wins over a wrong Bearer, a wrong header is refused */
	assert_int_equal(auth(H,
			      "POST /v1 HTTP/1.1\r\nAuthorization: Bearer sk-own\r\n"
			      "X-Gpool-Token: secret\r\n\r\n",
			      &loc),
			 GW_AUTH_OK);
	assert_int_equal(auth("", "POST /v1 HTTP/1.1\r\nAuthorization: Bearer x\r\n\r\n", &loc),
			 GW_AUTH_OK); /* an open route */
	assert_null(loc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(handshakes),
	    cmocka_unit_test(answer_relayed),
	    cmocka_unit_test(tokens),
	    cmocka_unit_test(bearer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
