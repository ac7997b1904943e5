/* wire.h: the envelope around every control-path message (see proto/gpool.proto).
 *
 * A sender collects messages in a gp_batch_t and seals it: one MUNGE credential binds the
 * SHA-256 of (version, epoch, seq, body). A receiver opens an envelope in order of cost:
 * size, protocol version, envelope decode, then the credential, the hash, and the per-sender
 * sequence window (replays of a whole envelope or of any member are refused).
 *
 * Reply keys (docs/protocol.md): a wire with a reply key (a command's) binds a random 32-byte
 * key after the hash in its credential, which it restricts to the peer's uid and has munged
 * encipher; only the peer (the scheduler's account) can decode it and learn the key. The peer
 * answers with an HMAC-SHA256 of the reply's hash under that key in place of a credential
 * (gp_wire_seal_mac): one MUNGE round trip on each side fewer per request, and the reply as
 * surely the peer's as a credential signed by its uid would make it.
 */
#ifndef GPOOL_WIRE_H
#define GPOOL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/auth.h"
#include "common/error.h"
#include "common/msg.h" /* gp_batch_member, gp_msg_error */
#include "proto/gpool.pb-c.h"
#include "common/util.h"

typedef struct gp_batch {
	gp_buf_t body;
	int count;
} gp_batch_t;

/* Append one message (packed now: m may live on the stack). */
int gp_batch_add(gp_batch_t *b, const Gpool__Msg *m);
int gp_batch_add_member(gp_batch_t *b, const uint8_t *member, size_t len);
void gp_batch_reset(gp_batch_t *b);
void gp_batch_release(gp_batch_t *b);

typedef struct gp_wire gp_wire_t;

/* auth NULL: local, unauthenticated envelopes (agent <-> supervisor over a root-only socket). */
gp_wire_t *gp_wire_create(gp_auth_t *auth, size_t max_message);
void gp_wire_destroy(gp_wire_t **w);

#define GP_WIRE_KEY_LEN 32

/* Give an authenticated wire a fresh reply key bound into every credential it seals, each
 * restricted to peer_uid; envelopes sealed with the key (gp_wire_seal_mac) then open as from
 * peer_uid. 0 / -1 with errno (EINVAL: no auth; EIO: no randomness). */
int gp_wire_set_reply_key(gp_wire_t *w, uid_t peer_uid);

/* Seal a batch into envelope bytes (out is reset first). */
int gp_wire_seal(gp_wire_t *w, const gp_batch_t *b, gp_buf_t *out, gp_error_t *err);

/* Seal a batch with an HMAC under key (a sender's reply key, from gp_sender) instead of a
 * credential: only the wire that made the key opens it. */
int gp_wire_seal_mac(gp_wire_t *w, const gp_batch_t *b, const uint8_t key[GP_WIRE_KEY_LEN],
		     gp_buf_t *out, gp_error_t *err);

struct gp_sender {
	uid_t uid;
	gid_t gid; /* (gid_t)-1 for an envelope sealed with this wire's reply key */
	uint64_t epoch;
	bool has_key; /* the credential carried the sender's reply key */
	uint8_t key[GP_WIRE_KEY_LEN];
	/* set as soon as the envelope decodes, also when it is then refused, and never believed:
	 * the protocol version it claims and what it calls itself (Envelope.hint, printable
	 * ASCII, "" when none) */
	uint32_t version;
	char hint[64];
};

/* What this side calls itself in every envelope it seals (Envelope.hint: an agent's node name,
 * so that an admin can tell whose envelopes a scheduler refuses); NULL or "": none. */
void gp_wire_set_hint(gp_wire_t *w, const char *hint);

/* An envelope holds at most this many messages; one with more is refused before its body is
 * decoded (gp_wire_open counts the members first). */
#define GP_WIRE_MAX_MSGS 65536
/* Decoding a body may allocate at most this many bytes per byte of it (and 1 MiB more), and
 * never more than GP_WIRE_MAX_DECODED: protobuf's small messages cost a hundred times their
 * size in memory, so a body of many empty members is refused instead of unpacked. */
#define GP_WIRE_DECODE_FACTOR 24
#define GP_WIRE_MAX_DECODED   (512u << 20)

/* Count a Batch body's members without decoding them: the count, or -1 when the bytes are not
 * a Batch (a field other than msgs, a length past the end). */
long gp_wire_count_members(const uint8_t *body, size_t len);

/* Decode a Batch body under the allocation bound above (NULL: malformed or over the bound);
 * free with gpool__batch__free_unpacked(b, NULL). */
Gpool__Batch *gp_wire_unpack_batch(const uint8_t *body, size_t len);

/* Open an envelope. Returns the batch (free with gpool__batch__free_unpacked(b, NULL)) or NULL
 * with *code set to the Gpool__ErrorCode to report and err filled. */
Gpool__Batch *gp_wire_open(gp_wire_t *w, const void *data, size_t len, struct gp_sender *from,
			   Gpool__ErrorCode *code, gp_error_t *err);

/* The SHA-256 a sealed envelope's credential binds: "gpool1" | version | epoch | seq | body
 * (tests/tools/gp-probe.c seals its own envelopes with it). */
void gp_wire_digest(uint32_t version, uint64_t epoch, uint64_t seq, const uint8_t *body, size_t len,
		    uint8_t out[32]);

/* Statistics: envelopes opened, refused, and seconds spent in MUNGE. */
struct gp_wire_stats {
	uint64_t opened;
	uint64_t refused;
	uint64_t sealed;
	uint64_t mac_sealed; /* of sealed: with a sender's reply key */
	uint64_t mac_opened; /* of opened: with this wire's reply key */
};
void gp_wire_stats(const gp_wire_t *w, struct gp_wire_stats *st);

/* An error code in words. */
const char *gp_error_code_name(Gpool__ErrorCode code);

#endif
