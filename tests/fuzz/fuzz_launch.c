/* fuzz_launch: what the exec-proxy reads from the network (launch/frame.h: frames, an EXEC's
 * argv) and the proxy lines gpool-launch reads from the rendezvous (launch/peers.h).
 * Properties: a parsed frame lies within the input, an argv is NULL-terminated and each word
 * within the frame, a parsed peer line formats back to a line that parses the same. */
#include "tests/fuzz/fuzz.h"
#include "launch/frame.h"
#include "launch/peers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		struct gp_frame f;
		int k = gp_frame_parse(data + off, size - off, &f);
		if (k <= 0)
			break;
		FUZZ_CHECK((size_t)k <= size - off && (size_t)k == GP_FRAME_HDR + f.len);
		FUZZ_CHECK(f.data == data + off + GP_FRAME_HDR);
		if (f.type == GP_FRAME_EXEC) {
			char **v = gp_frame_argv(&f);
			if (v) {
				size_t n = 0;
				for (; v[n]; n++)
					FUZZ_CHECK(strlen(v[n]) < f.len);
				FUZZ_CHECK(n >= 1 && n <= GP_FRAME_ARGV_MAX);
				gp_frame_argv_free(v);
			}
		}
		uint32_t u;
		if (gp_frame_u32(&f, &u) == 0)
			FUZZ_CHECK(f.len == 4);
		off += (size_t)k;
	}
	struct gp_peer p, q;
	if (gp_peer_parse((const char *)data, size, &p) == 0) {
		char line[512];
		int n = gp_peer_format(&p, line, sizeof(line));
		FUZZ_CHECK(n > 0);
		FUZZ_CHECK(gp_peer_parse(line, (size_t)n, &q) == 0);
		FUZZ_CHECK(!strcmp(p.node, q.node) && !strcmp(p.addr, q.addr) && p.port == q.port &&
			   p.slots == q.slots);
	}
	return 0;
}
