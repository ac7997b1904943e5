/* ptyframe.h: the framing of a pseudo-terminal's bytes between gsub --pty and the gstepd that
 * holds the task's terminal (docs/protocol.md, "The pty stream").
 *
 * A TCP stream of frames, each a 4-byte header (type, a zero byte, the payload's length as 16
 * bits big-endian) and its payload. Every type has its own bound on the length, checked from
 * the header alone before any payload is read or kept, so a peer that has not authenticated
 * yet can make the reader hold at most one small frame. The first frame from gsub is HELLO: a
 * MUNGE credential whose payload is a gp_pty_hello (which job attempt, and the one-time key).
 */
#ifndef GPOOL_PTYFRAME_H
#define GPOOL_PTYFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GP_PTY_HDR	  4
#define GP_PTY_DATA_MAX	  16384 /* terminal bytes in one DATA frame */
#define GP_PTY_HELLO_MAX  4096	/* a MUNGE credential's text */
#define GP_PTY_REFUSE_MAX 256
#define GP_PTY_FRAME_MAX  (GP_PTY_HDR + GP_PTY_DATA_MAX)
#define GP_PTY_KEY_LEN	  32

enum gp_pty_type {
	GP_PTY_HELLO = 1,   /* gsub -> gstepd: a MUNGE credential (text) */
	GP_PTY_ACCEPT = 2,  /* gstepd -> gsub: attached, empty */
	GP_PTY_REFUSE = 3,  /* gstepd -> gsub: why not (text); the connection closes */
	GP_PTY_DATA = 4,    /* both ways: terminal bytes */
	GP_PTY_WINSIZE = 5, /* gsub -> gstepd: rows, cols (16 bits each, big-endian) */
	GP_PTY_SIGNAL = 6,  /* gsub -> gstepd: a signal for the terminal's foreground group */
	GP_PTY_EOF = 7,	    /* gsub -> gstepd: its input ended (a pipe's end), empty */
	GP_PTY_EXIT = 8,    /* gstepd -> gsub: the task's wait status (32 bits, big-endian) */
};

struct gp_pty_frame {
	uint8_t type;
	const uint8_t *data; /* into the parsed buffer */
	size_t len;
};

/* Take one frame from buf[0..n). Returns the bytes it used (> 0), 0 when buf holds less than
 * a whole frame (and the header, if there, is valid), -1 with errno EPROTO when the header is
 * bad: an unknown type, a nonzero second byte, or a length outside the type's bounds. */
ssize_t gp_pty_frame_parse(const uint8_t *buf, size_t n, struct gp_pty_frame *f);

/* Put a frame into out (room bytes): the bytes written, -1 with errno EINVAL when len is
 * outside type's bounds or room is short. */
ssize_t gp_pty_frame_put(uint8_t *out, size_t room, uint8_t type, const void *data, size_t len);

/* What a HELLO credential binds: the attempt it is for and the key (the preimage of
 * JobSpec.pty_key_sha256). */
struct gp_pty_hello {
	uint64_t job_id;
	uint32_t attempt;
	uint8_t key[GP_PTY_KEY_LEN];
};

#define GP_PTY_HELLO_LEN (6 + 8 + 4 + GP_PTY_KEY_LEN)

/* Pack h into out (GP_PTY_HELLO_LEN bytes). */
void gp_pty_hello_pack(const struct gp_pty_hello *h, uint8_t out[GP_PTY_HELLO_LEN]);
/* Parse a credential's payload: 0, or -1 with errno EPROTO when it is not a hello. */
int gp_pty_hello_parse(const void *payload, size_t len, struct gp_pty_hello *h);

/* Signals a client may ask for (the terminal's own: interrupt, quit, suspend, hangup, and
 * SIGTERM); others are refused. */
bool gp_pty_signal_allowed(int sig);

/* Equal in time independent of where a and b differ. */
bool gp_pty_key_eq(const uint8_t *a, const uint8_t *b, size_t n);

#endif
