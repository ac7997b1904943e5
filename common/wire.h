/* wire.h: the envelope around every control-path message (see proto/gpool.proto).
 *
 * A sender collects messages in a gp_batch_t and seals it: one MUNGE credential binds the
 * SHA-256 of (version, epoch, seq, body). A receiver opens an envelope in order of cost:
 * size, protocol version, envelope decode, then the credential, the hash, and the per-sender
 * sequence window (replays of a whole envelope or of any member are refused).
 */
#ifndef GPOOL_WIRE_H
#define GPOOL_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/auth.h"
#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "common/util.h"

typedef struct gp_batch {
	gp_buf_t body;
	int count;
} gp_batch_t;

/* Append one message (packed now: m may live on the stack). */
int gp_batch_add(gp_batch_t *b, const Gpool__Msg *m);
/* One message packed as a batch member, to be added later (worker/outbox.c keeps them):
 * malloc'd, NULL on ENOMEM. */
uint8_t *gp_batch_member(const Gpool__Msg *m, size_t *len);
int gp_batch_add_member(gp_batch_t *b, const uint8_t *member, size_t len);
void gp_batch_reset(gp_batch_t *b);
void gp_batch_release(gp_batch_t *b);

typedef struct gp_wire gp_wire_t;

/* auth NULL: local, unauthenticated envelopes (agent <-> supervisor over a root-only socket). */
gp_wire_t *gp_wire_create(gp_auth_t *auth, size_t max_message);
void gp_wire_destroy(gp_wire_t **w);

/* Seal a batch into envelope bytes (out is reset first). */
int gp_wire_seal(gp_wire_t *w, const gp_batch_t *b, gp_buf_t *out, gp_error_t *err);

struct gp_sender {
	uid_t uid;
	gid_t gid;
	uint64_t epoch;
};

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
};
void gp_wire_stats(const gp_wire_t *w, struct gp_wire_stats *st);

/* Helpers to build common messages. */
void gp_msg_error(Gpool__Msg *m, Gpool__Error *e, uint64_t id, Gpool__ErrorCode code,
		  const char *text);
const char *gp_error_code_name(Gpool__ErrorCode code);

#endif
