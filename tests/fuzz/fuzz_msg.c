/* fuzz_msg: ggated's HTTP relay of one connection's direction (gateway/msg.c over
 * http-parser) on any bytes. The first byte picks a request or a response, a response to
 * HEAD, and the size of the pieces the rest arrives in (as reads would cut it). Properties:
 * feeding never uses more than it is given, and stops only where it should (after a head,
 * after a message, at an error); no hop-by-hop or framing header is ever forwarded; the head
 * kept stays within its limit; a body framed by length for the next hop is exactly the
 * decoded body; one framed by chunks parses back, through the same code, as that body;
 * messages follow one another as on a keep-alive connection. A request's headers as ggated
 * sends them on (gateway/forwarded.c: the second bit of the first byte says whether the client
 * is a trusted proxy) are whole lines, end with the one X-Forwarded-For, which ends with the
 * peer's address, and carry no Forwarded or X-Real-IP of an untrusted client. */
#include <strings.h>

#include "tests/fuzz/fuzz.h"
#include "gateway/forwarded.h"
#include "http/msg.h"

#define MAX_HEAD 2048
#define MAX_BODY 4096

static const char *const hop[] = {
    "connection:", "keep-alive:", "transfer-encoding:", "content-length:",
    "upgrade:",	   "te:",	  "trailer:",		"expect:"};

static void check_head(const struct gh_msg *m)
{
	FUZZ_CHECK(gh_buf_size(&m->hdrs) + gh_buf_size(&m->target) <= m->max_head + 4);
	const char *p = gh_buf_data(&m->hdrs), *end = p + gh_buf_size(&m->hdrs);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		FUZZ_CHECK(nl && nl > p && nl[-1] == '\r'); /* whole lines only */
		FUZZ_CHECK(memchr(p, '\r', (size_t)(nl - p)) == nl - 1);
		for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
			FUZZ_CHECK(strncasecmp(p, hop[i], strlen(hop[i])) != 0);
		p = nl + 1;
	}
}

static void check_forwarded(const struct gh_msg *m, bool trusted)
{
	static const char peer[] = "198.18.0.9";
	struct gh_buf out = {0};
	if (gw_forwarded_headers(gh_buf_data(&m->hdrs), gh_buf_size(&m->hdrs), peer, trusted,
				 &out) < 0) {
		gh_buf_free(&out);
		return; /* out of memory */
	}
	const char *p = gh_buf_data(&out), *end = p + gh_buf_size(&out);
	int xff = 0;
	const char *last = p;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		FUZZ_CHECK(nl && nl > p && nl[-1] == '\r');
		if (strncasecmp(p, "x-forwarded-for:", 16) == 0)
			xff++;
		if (!trusted)
			FUZZ_CHECK(strncasecmp(p, "forwarded:", 10) != 0 &&
				   strncasecmp(p, "x-real-ip:", 10) != 0);
		last = p;
		p = nl + 1;
	}
	FUZZ_CHECK(xff == 1);
	FUZZ_CHECK(strncmp(last, "X-Forwarded-For: ", 17) == 0);
	FUZZ_CHECK((size_t)(end - last) >= sizeof(peer) + 1 &&
		   memcmp(end - sizeof(peer) - 1, peer, sizeof(peer) - 1) == 0);
	if (!trusted)
		FUZZ_CHECK((size_t)(end - last) == 17 + sizeof(peer) - 1 + 2);
	gh_buf_free(&out);
}

/* a chunked body as framed for the next hop, parsed back: its decoded size */
static uint64_t unchunk(const struct gh_buf *b)
{
	static const char head[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct gh_msg m;
	gh_msg_init(&m, HTTP_REQUEST, 1024, 0);
	size_t u = gh_msg_feed(&m, head, sizeof(head) - 1);
	u += gh_msg_feed(&m, head + u, sizeof(head) - 1 - u);
	FUZZ_CHECK(m.state == GH_MSG_BODY);
	size_t n = gh_buf_size(b), at = 0;
	while (at < n && m.state == GH_MSG_BODY) {
		size_t k = gh_msg_feed(&m, gh_buf_data(b) + at, n - at);
		FUZZ_CHECK(k > 0);
		at += k;
	}
	FUZZ_CHECK(m.state == GH_MSG_DONE && at == n);
	uint64_t got = m.body_bytes;
	gh_msg_free(&m);
	return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t ctl = data[0];
	const char *in = (const char *)data + 1;
	size_t n = size - 1, at = 0;
	size_t piece = (ctl >> 3) ? (size_t)(ctl >> 3) : n + 1;
	struct gh_msg m;
	gh_msg_init(&m, (ctl & 1) ? HTTP_RESPONSE : HTTP_REQUEST, MAX_HEAD, MAX_BODY);
	struct gh_buf out = {0};
	int messages = 0;
	while (at <= n && messages < 16) {
		m.skip_body = (ctl & 2) && (ctl & 1);
		size_t k = n - at < piece ? n - at : piece;
		enum gh_msg_state before = m.state;
		size_t used = gh_msg_feed(&m, in + at, k);
		FUZZ_CHECK(used <= k);
		at += used;
		if (m.state == GH_MSG_ERROR) {
			FUZZ_CHECK(m.status >= 400 && m.status < 600 && m.why);
			break;
		}
		if (m.state == GH_MSG_BODY && before != GH_MSG_BODY) {
			check_head(&m);
			if (!(ctl & 1))
				check_forwarded(&m, (ctl & 2) != 0);
			m.out = &out;
			m.out_frame = (ctl & 4) ? GH_FRAME_CHUNKED : GH_FRAME_LENGTH;
			continue;
		}
		if (m.state == GH_MSG_DONE) {
			FUZZ_CHECK(m.max_body == 0 || m.body_bytes <= m.max_body);
			if (m.out_frame == GH_FRAME_LENGTH)
				FUZZ_CHECK(gh_buf_size(&out) == m.body_bytes);
			else
				FUZZ_CHECK(unchunk(&out) == m.body_bytes);
			gh_buf_clear(&out);
			gh_msg_next(&m);
			messages++;
			if (!gh_msg_keep_alive(&m) && at == n)
				break;
			continue;
		}
		if (at == n) {
			if (k == 0)
				break;		  /* the close was fed */
			gh_msg_feed(&m, NULL, 0); /* the peer closes */
			if (m.state == GH_MSG_DONE)
				continue;
			break;
		}
		/* a piece used in part without a stop is not possible */
		FUZZ_CHECK(used == k);
	}
	gh_msg_free(&m);
	gh_buf_free(&out);
	return 0;
}
