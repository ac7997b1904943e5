/* fuzz_lazy.c: lazy staging's frames (common/lazy.c): a request gstepd reads from a task's
 * socket, a reply the task reads from gstepd. Whatever decodes must encode back to the same
 * bytes (a request) or keep its bounds (a reply: status below 4096, a NUL-terminated message),
 * and the range arithmetic must never return chunks outside the file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/lazy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gp_lazy_req q;
	if (gp_lazy_req_decode(data, size, &q) == 0) {
		uint8_t back[GP_LAZY_REQ_LEN];
		gp_lazy_req_encode(&q, back);
		if (memcmp(back, data, GP_LAZY_REQ_LEN) || q.off + q.len < q.off)
			abort();
		uint64_t k0, k1, fsize = q.off + q.len + (q.len & 0xffff);
		if (fsize >= q.off + q.len &&
		    gp_lazy_chunks(fsize, q.off, q.len, GP_CHUNK_SIZE, &k0, &k1) == 0 &&
		    (k0 > k1 || (q.len && (k0 * GP_CHUNK_SIZE > q.off ||
					   (k1 - 1) * (uint64_t)GP_CHUNK_SIZE >= q.off + q.len))))
			abort();
	}
	struct gp_lazy_rep r;
	if (gp_lazy_rep_decode(data, size, &r) == 0 &&
	    (r.status < 0 || r.status > 4095 || strlen(r.msg) >= GP_LAZY_MSG_LEN))
		abort();
	return 0;
}
