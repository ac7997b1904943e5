/* lazy.h: lazily staged files (gsub --stage-lazy, docs/staging.md "Lazy staging").
 *
 * A lazily staged file reaches a node as a sparse file of its size; its tasks ask the job's
 * gstepd for the byte ranges they read, and gstepd fetches only the chunks covering them into
 * the node's cache (from the job's other nodes first, then the scheduler), each checked
 * against its hash, and writes them into the file. The request travels over a local socket
 * whose name gstepd gives the tasks in GPOOL_STAGE_SOCK (the abstract namespace), with the
 * file's descriptor attached (SCM_RIGHTS): the file is named by its inode, not by a path.
 *
 * The wire: a request is LAZY_REQ_LEN bytes (magic, flags, offset, length, little-endian), a
 * reply LAZY_REP_LEN (magic, status: 0 or an errno, bytes fetched, a NUL-terminated message);
 * both are fixed-size and checked before use (fuzz_lazy).
 */
#ifndef GPOOL_LAZY_H
#define GPOOL_LAZY_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GP_LAZY_ENV	"GPOOL_STAGE_SOCK"
#define GP_LAZY_REQ_LEN 24
#define GP_LAZY_MSG_LEN 200
#define GP_LAZY_REP_LEN (16 + GP_LAZY_MSG_LEN)

/* The chunks of a file of SIZE bytes that hold bytes [OFF, OFF+LEN): indexes [*K0, *K1) of
 * chunk_size bytes each (*K0 == *K1 when LEN is 0). 0 / -1 with EINVAL when the range is not
 * inside the file (or chunk_size is 0). */
int gp_lazy_chunks(uint64_t size, uint64_t off, uint64_t len, uint32_t chunk_size, uint64_t *k0,
		   uint64_t *k1);

struct gp_lazy_req {
	uint64_t off, len;
};

struct gp_lazy_rep {
	int32_t status;		   /* 0, or an errno value */
	uint64_t fetched;	   /* bytes fetched for this request (not in the node's cache) */
	char msg[GP_LAZY_MSG_LEN]; /* why, when status != 0 */
};

void gp_lazy_req_encode(const struct gp_lazy_req *q, uint8_t out[GP_LAZY_REQ_LEN]);
/* 0 / -1 with EBADMSG (wrong length or magic, flags set, off + len overflowing). */
int gp_lazy_req_decode(const uint8_t *in, size_t n, struct gp_lazy_req *q);
void gp_lazy_rep_encode(const struct gp_lazy_rep *r, uint8_t out[GP_LAZY_REP_LEN]);
/* 0 / -1 with EBADMSG (wrong length or magic, a status out of range); msg is NUL-terminated
 * whatever came. */
int gp_lazy_rep_decode(const uint8_t *in, size_t n, struct gp_lazy_rep *r);

/* Make bytes [off, off+len) of the open file fd present, when it is a lazily staged file of
 * this job: 1 (fetched or there already; *fetched, when not NULL, the bytes that came over the
 * network), 0 when it is not (no GPOOL_STAGE_SOCK in the environment, or fd is a whole file:
 * read it as it is), -1 with errno and err (the range is outside the file, a chunk could not
 * be had or arrived damaged). len 0 asks only whether fd is lazy. */
int gp_lazy_fetch(int fd, uint64_t off, uint64_t len, uint64_t *fetched, gp_error_t *err);

#endif
