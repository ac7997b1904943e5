/* upgrade.c: the WebSocket opening handshake through ggated (see upgrade.h). ggated does not
 * answer the handshake itself: the replica computes Sec-WebSocket-Accept from the client's key,
 * and the client checks it, so the key and the answer travel unchanged; ggated only refuses
 * what no server should get (a malformed key, a body, a version it cannot carry). */
#include <string.h>
#include <strings.h>

#include "gateway/upgrade.h"

/* hop-by-hop: each hop says them again */
static const char upgrade_hdrs[] = "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
static const char switching[] = "HTTP/1.1 101 Switching Protocols\r\n";

/* RFC 6455 4.1: the key is 16 bytes in base64: 22 characters and "==" */
static bool ws_key_ok(const char *k, size_t n)
{
	if (n != 24 || k[22] != '=' || k[23] != '=')
		return false;
	for (size_t i = 0; i < 22; i++) {
		char ch = k[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/'))
			return false;
	}
	/* the last character carries 2 bits: the 4 unused ones are 0 */
	return strchr("AQgw", k[21]) != NULL;
}

static enum gw_ws_kind bad(int *status, const char **why, int st, const char *w)
{
	*status = st;
	*why = w;
	return GW_WS_BAD;
}

enum gw_ws_kind gw_ws_check(const struct gh_msg *m, int *status, const char **why)
{
	if (!m->has_upgrade || !m->upgrade_websocket)
		return GW_WS_NONE;
	if (m->p.method != HTTP_GET)
		return bad(status, why, 400, "a websocket handshake is a GET");
	if (m->p.http_major != 1 || m->p.http_minor < 1)
		return bad(status, why, 400, "a websocket handshake needs HTTP/1.1");
	if (!m->p.upgrade)
		return bad(status, why, 400, "a websocket handshake needs 'Connection: Upgrade'");
	if (m->in != GH_FRAME_NONE)
		return bad(status, why, 400, "a websocket handshake has no body");
	size_t n = 0;
	const char *v = gh_msg_header(m, "Sec-WebSocket-Version", &n);
	if (!v || n != 2 || memcmp(v, "13", 2) != 0)
		return bad(status, why, 426, "websocket version 13 only");
	const char *k = gh_msg_header(m, "Sec-WebSocket-Key", &n);
	if (!k || !ws_key_ok(k, n))
		return bad(status, why, 400, "bad Sec-WebSocket-Key");
	return GW_WS_OK;
}

int gw_ws_request_end(struct gh_buf *out)
{
	return gh_buf_add(out, upgrade_hdrs, sizeof(upgrade_hdrs) - 1);
}

bool gw_ws_switched(const struct gh_msg *resp)
{
	return resp->p.status_code == 101 && resp->upgrade_websocket;
}

int gw_ws_answer_101(const struct gh_msg *resp, struct gh_buf *out)
{
	if (gh_buf_add(out, switching, sizeof(switching) - 1) < 0 ||
	    gh_buf_add(out, gh_buf_data(&resp->hdrs), gh_buf_size(&resp->hdrs)) < 0 ||
	    gh_buf_add(out, upgrade_hdrs, sizeof(upgrade_hdrs) - 1) < 0)
		return -1;
	return 0;
}
