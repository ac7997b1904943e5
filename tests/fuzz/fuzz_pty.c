/* fuzz_pty: the bytes a gsub --pty client (or anyone who reaches the port) sends gstepd's pty
 * server, and gstepd sends gsub: the frames of common/ptyframe.c read through a
 * common/ptylink.c link, as both ends read them. The input is written into one end of a
 * socketpair; the link on the other end takes frames until the stream ends or a header is
 * refused. Every frame must lie inside the bytes sent, within its type's bounds, and put back
 * together byte for byte; a HELLO's payload is also parsed as the credential's payload would
 * be (gp_pty_hello_parse), and a hello that parses packs back to the same bytes. */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ptyframe.h"
#include "common/ptylink.h"

#define INPUT_LIMIT 65536 /* under a socketpair's buffer: the write never blocks */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_LIMIT)
		return 0;
	/* the parser alone, over the whole input */
	size_t off = 0;
	struct gp_pty_frame f;
	ssize_t used;
	while ((used = gp_pty_frame_parse(data + off, size - off, &f)) > 0) {
		FUZZ_CHECK(f.data == data + off + GP_PTY_HDR);
		FUZZ_CHECK(f.len <= GP_PTY_DATA_MAX && (size_t)used == GP_PTY_HDR + f.len);
		uint8_t back[GP_PTY_FRAME_MAX];
		ssize_t n = gp_pty_frame_put(back, sizeof(back), f.type, f.data, f.len);
		FUZZ_CHECK(n == used && !memcmp(back, data + off, (size_t)n));
		if (f.type == GP_PTY_HELLO) {
			struct gp_pty_hello h;
			if (gp_pty_hello_parse(f.data, f.len, &h) == 0) {
				uint8_t p[GP_PTY_HELLO_LEN];
				gp_pty_hello_pack(&h, p);
				FUZZ_CHECK(f.len == GP_PTY_HELLO_LEN && !memcmp(p, f.data, f.len));
			}
		}
		off += (size_t)used;
	}
	FUZZ_CHECK(used == 0 || errno == EPROTO);
	/* the same bytes through a link on a socket, as gstepd and gsub read them */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int bufsz = 4 * INPUT_LIMIT;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	close(sv[1]);
	gp_ptylink_t *l = gp_ptylink_create(sv[0]);
	FUZZ_CHECK(l != NULL);
	size_t taken = 0;
	bool bad = false;
	while (!bad) {
		int r = gp_ptylink_read(l);
		int k;
		while ((k = gp_ptylink_next(l, &f)) > 0) {
			FUZZ_CHECK(taken + GP_PTY_HDR + f.len <= size);
			FUZZ_CHECK(!memcmp(f.data, data + taken + GP_PTY_HDR, f.len));
			taken += GP_PTY_HDR + f.len;
		}
		if (k < 0)
			bad = true;
		if (r < 0)
			break;
	}
	/* the link takes the frames the parser took, and stops where it stopped */
	FUZZ_CHECK(taken == off);
	FUZZ_CHECK(bad == (used < 0));
	/* what a reply costs: a frame queued goes out whole */
	FUZZ_CHECK(gp_ptylink_send(l, GP_PTY_REFUSE, "x", 1) == 0);
	FUZZ_CHECK(gp_ptylink_pending(l) == GP_PTY_HDR + 1);
	gp_ptylink_destroy(&l);
	return 0;
}
