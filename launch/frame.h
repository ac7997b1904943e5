/* frame.h: the wire between gpool-rsh (or the --mpi=mpirun leader) and a node's exec-proxy.
 *
 * One TCP connection per command. Every frame is an 8-byte header, type and payload length
 * (both 32-bit big-endian), then the payload. The proxy sends a CHALLENGE first; the client
 * answers AUTH, a MUNGE credential that binds it (launch/proxyauth.h), then either EXEC (the
 * command, NUL-separated words) or HOLD (keep the proxy alive while this connection is open). The
 * proxy answers OK once, then for EXEC streams OUT and ERR and ends with EXIT (a wait status); FAIL
 * carries why a request was refused. A client may send SIGNAL (a signal number) at any time after
 * EXEC: the proxy passes it to the command's process group.
 */
#ifndef GPOOL_LAUNCH_FRAME_H
#define GPOOL_LAUNCH_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define GP_FRAME_HDR	     8
#define GP_FRAME_MAX	     (1u << 20) /* largest payload */
#define GP_FRAME_PREAUTH_MAX 4096	/* largest frame a proxy reads before AUTH succeeds */
#define GP_FRAME_ARGV_MAX    4096	/* most words an EXEC may carry */

enum gp_frame_type {
	GP_FRAME_AUTH = 1,	/* client: a MUNGE credential answering the challenge */
	GP_FRAME_EXEC = 2,	/* client: argv, each word NUL-terminated */
	GP_FRAME_HOLD = 3,	/* client: hold the proxy open */
	GP_FRAME_SIGNAL = 4,	/* client: 4-byte signal number */
	GP_FRAME_CHALLENGE = 5, /* proxy, first on every connection: the nonce AUTH must bind */
	GP_FRAME_OUT = 16,	/* proxy: stdout bytes */
	GP_FRAME_ERR = 17,	/* proxy: stderr bytes */
	GP_FRAME_EXIT = 18,	/* proxy: 4-byte wait status */
	GP_FRAME_OK = 19,	/* proxy: request accepted */
	GP_FRAME_FAIL = 20,	/* proxy: refused, text says why */
};

struct gp_frame {
	uint32_t type;
	const uint8_t *data; /* points into the parsed buffer */
	uint32_t len;
};

/* Parse one frame at the start of buf. Returns the bytes it takes (> 0), 0 when buf holds
 * only part of one, -1 with errno EPROTO (unknown type) or EMSGSIZE (payload too long). */
int gp_frame_parse(const uint8_t *buf, size_t len, struct gp_frame *f);

/* Append a frame to b. 0 / -1 (ENOMEM, EMSGSIZE). */
int gp_frame_put(gp_buf_t *b, uint32_t type, const void *data, size_t len);
/* Append a frame whose payload is one 32-bit big-endian number. */
int gp_frame_put_u32(gp_buf_t *b, uint32_t type, uint32_t v);
/* The number in a 4-byte payload. -1 (EPROTO) when the payload is not 4 bytes. */
int gp_frame_u32(const struct gp_frame *f, uint32_t *v);

/* Encode argv (NULL-terminated) as an EXEC payload into b. */
int gp_frame_put_argv(gp_buf_t *b, char *const *argv);
/* Decode an EXEC payload: a malloc'd NULL-terminated vector of malloc'd words (free with
 * gp_frame_argv_free). -1 with EPROTO when empty, not NUL-terminated or too many words. */
char **gp_frame_argv(const struct gp_frame *f);
void gp_frame_argv_free(char **argv);

/* Write all of b to fd (blocking), then empty it. 0 / -1 with errno. */
int gp_frame_flush(int fd, gp_buf_t *b);

#endif
