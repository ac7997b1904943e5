/* fuzz_standby: a standby scheduler's HTTP answers (scheduler/http/standby_http.c) to any bytes
 * a client sends, in pieces whose size the first byte picks; the second byte's low bit says
 * whether a leader is known. Properties: no crash or leak (the sanitizers), the connection
 * ends once the client shut its side, and what comes back is a sequence of whole HTTP/1.1
 * answers, each 503 or 307 (a 307 only while a leader is known, to its address), no more of
 * them than requests began (plus one refused before its head). An input that holds "HEAD"
 * anywhere is read back only up to the first answer with no body it cannot tell from a
 * truncated one (an answer to HEAD has none). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "http/server.h"
#include "scheduler/http/standby_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t piece = data[0] ? data[0] : size;
	bool known = data[1] & 1;
	int sv[2];
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	struct standby_http *h = standby_http_create_on("7821");
	FUZZ_CHECK(h);
	standby_http_set_leader(h, known ? "tcp://198.18.0.3:7820" : "");
	FUZZ_CHECK(standby_http_adopt(h, sv[0]) == 0);
	struct gh_buf got = {0};
	size_t at = 2;
	bool shut = false, closed = false;
	for (int round = 0; round < 10000 && !closed; round++) {
		if (at < size) {
			size_t k = size - at < piece ? size - at : piece;
			ssize_t w = write(sv[1], data + at, k);
			if (w > 0)
				at += (size_t)w;
		} else if (!shut) {
			shutdown(sv[1], SHUT_WR);
			shut = true;
		}
		standby_http_poll(h);
		ssize_t r;
		while ((r = gh_buf_read(&got, sv[1], 65536)) > 0)
			;
		closed = r == 0;
		if (r < 0 && errno != EAGAIN)
			closed = true;
	}
	FUZZ_CHECK(closed);
	uint64_t heads = standby_http_answered(h);
	standby_http_destroy(&h);
	close(sv[1]);
	struct gh_msg m;
	gh_msg_init(&m, HTTP_RESPONSE, 1 << 16, 0);
	uint64_t answers = 0;
	bool head = memmem(data, size, "HEAD", 4) != NULL;
	size_t off = 0, n = gh_buf_size(&got);
	while (off < n) {
		size_t u = gh_msg_feed(&m, gh_buf_data(&got) + off, n - off);
		off += u;
		if (m.state == GH_MSG_ERROR) { /* an answer to HEAD has no body */
			FUZZ_CHECK(head);
			break;
		}
		if (m.state == GH_MSG_DONE) {
			int st = m.p.status_code;
			if (st != 100) {
				answers++;
				/* the server's own refusals (400, 413, 431...) come before a head
				 */
				FUZZ_CHECK(st == 503 || (st == 307 && known) || st >= 400);
				if (st == 307) {
					size_t ll;
					const char *loc = gh_msg_header(&m, "Location", &ll);
					FUZZ_CHECK(loc && ll >= 23 &&
						   !memcmp(loc, "http://198.18.0.3:7821/", 23));
				}
			}
			gh_msg_next(&m);
		} else if (!u) {
			break;
		}
	}
	FUZZ_CHECK(head || (off == n && (m.state == GH_MSG_IDLE || m.state == GH_MSG_DONE)));
	FUZZ_CHECK(answers <= heads + 1);
	gh_msg_free(&m);
	gh_buf_free(&got);
	return 0;
}
