/* fuzz_upgrade: ggated's WebSocket handshake path without sockets (gateway/upgrade.c and
 * auth.c over http/msg.c). The first byte splits the rest into a client's request and a
 * replica's answer. The request is parsed as server.c parses one, then checked (gw_ws_check)
 * and put through the route-token check against the hash of "secret"; an accepted handshake is
 * rebuilt as a replica is sent it (the request line, forwarded.h's headers, gw_ws_request_end)
 * and parsed again. The answer is parsed as tunnel.c parses one; a 101 that switches is
 * rebuilt as the client gets it and parsed again. Properties: a handshake the check accepts is
 * a GET of HTTP/1.1 with a 24-byte key, and what the replica is sent is again such a handshake
 * with the same key; a token check lets a request through only when it carries "secret", and
 * a redirect's target holds no gpool_token parameter; a relayed 101 parses back as a switch. */
#include "tests/fuzz/fuzz.h"
#include "gateway/auth.h"
#include "gateway/forwarded.h"
#include "gateway/upgrade.h"
#include "http/msg.h"

/* SHA-256("secret") */
static const char secret_hash[] =
    "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

/* parse d[0..n) as one head; true: the head is whole (state BODY) */
static bool head_of(struct gh_msg *m, const char *d, size_t n)
{
	size_t at = 0;
	while (at < n && m->state != GH_MSG_BODY && m->state != GH_MSG_ERROR &&
	       m->state != GH_MSG_DONE) {
		size_t used = gh_msg_feed(m, d + at, n - at);
		if (!used && m->state != GH_MSG_BODY)
			break;
		at += used;
	}
	return m->state == GH_MSG_BODY;
}

static void request(const char *d, size_t n)
{
	struct gh_msg m;
	gh_msg_init(&m, HTTP_REQUEST, 8192, 1 << 20);
	if (!head_of(&m, d, n)) {
		gh_msg_free(&m);
		return;
	}
	int status = 0;
	const char *why = NULL;
	enum gw_ws_kind k = gw_ws_check(&m, &status, &why);
	if (k == GW_WS_BAD)
		FUZZ_CHECK((status == 400 || status == 426) && why);
	size_t kl = 0;
	const char *key = gh_msg_header(&m, "Sec-WebSocket-Key", &kl);
	if (k == GW_WS_OK) {
		FUZZ_CHECK(m.p.method == HTTP_GET && m.p.http_major == 1 && m.p.http_minor >= 1);
		FUZZ_CHECK(key && kl == 24);
		struct gh_buf out = {0};
		FUZZ_CHECK(gh_buf_printf(&out, "GET /x HTTP/1.1\r\n") == 0);
		FUZZ_CHECK(gw_forwarded_headers(gh_buf_data(&m.hdrs), gh_buf_size(&m.hdrs),
						"198.18.0.9", false, &out) == 0);
		FUZZ_CHECK(gw_ws_request_end(&out) == 0);
		struct gh_msg again;
		gh_msg_init(&again, HTTP_REQUEST, 1 << 20, 0);
		FUZZ_CHECK(head_of(&again, gh_buf_data(&out), gh_buf_size(&out)));
		int st2 = 0;
		const char *why2 = NULL;
		FUZZ_CHECK(gw_ws_check(&again, &st2, &why2) == GW_WS_OK);
		size_t kl2 = 0;
		const char *key2 = gh_msg_header(&again, "Sec-WebSocket-Key", &kl2);
		FUZZ_CHECK(key2 && kl2 == 24 && memcmp(key, key2, 24) == 0);
		gh_msg_free(&again);
		gh_buf_free(&out);
	}
	/* the route's token */
	FUZZ_CHECK(gh_buf_add(&m.target, "", 1) == 0);
	const char *uri = gh_buf_data(&m.target);
	char *loc = NULL;
	enum gw_auth_result a = gw_auth_check(secret_hash, &m, uri, &loc);
	if (a == GW_AUTH_OK || a == GW_AUTH_SET_COOKIE) {
		bool seen = memmem(gh_buf_data(&m.hdrs), gh_buf_size(&m.hdrs), "secret", 6) ||
			    strstr(uri, "secret");
		FUZZ_CHECK(seen);
	}
	if (a == GW_AUTH_SET_COOKIE) {
		/* no query parameter of that name is left (the path may hold anything, and
		 * another parameter's name may end with it) */
		FUZZ_CHECK(loc);
		const char *q = strchr(loc, '?');
		FUZZ_CHECK(
		    !q || (strncmp(q + 1, "gpool_token=", 12) != 0 && !strstr(q, "&gpool_token=")));
		FUZZ_CHECK(strncmp(loc, uri, strcspn(uri, "?")) == 0);
	} else {
		FUZZ_CHECK(!loc);
	}
	free(loc);
	FUZZ_CHECK(gw_auth_check("", &m, uri, &loc) == GW_AUTH_OK && !loc);
	gh_msg_free(&m);
}

static void answer(const char *d, size_t n)
{
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 8192, 0);
	if (!head_of(&m, d, n) || !gw_ws_switched(&m)) {
		gh_msg_free(&m);
		return;
	}
	FUZZ_CHECK(m.p.status_code == 101);
	struct gh_buf out = {0};
	FUZZ_CHECK(gw_ws_answer_101(&m, &out) == 0);
	struct gh_msg again;
	gh_msg_init(&again, HTTP_RESPONSE, 1 << 20, 0);
	FUZZ_CHECK(head_of(&again, gh_buf_data(&out), gh_buf_size(&out)));
	FUZZ_CHECK(gw_ws_switched(&again));
	gh_msg_free(&again);
	gh_buf_free(&out);
	gh_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t cut = 1 + (size_t)data[0] * (size - 1) / 255;
	request((const char *)data + 1, cut - 1);
	answer((const char *)data + cut, size - cut);
	return 0;
}
