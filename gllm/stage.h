/* stage.h - the frames the ranks of a pipeline pass each other (gllm/pipe.c), and their
 * encoding. Every frame is a fixed header that states the body's size, then the body:
 *   STEP      a batch: nseq x (sequence id, new tokens, context length after the step), then
 *             the activations, ntok x dim, as f32 or f16 (the head rank's choice)
 *   RELEASE   nseq sequence ids whose KV space every rank gives back
 *   SHUTDOWN  no body: the stage exits
 * A frame comes from a peer: the header is checked against the agreed limits (nseq, ntok, dim,
 * the body's size computed from them) before any body is received, and the body's sequence
 * table (ids in range and distinct, tokens summing to ntok, contexts within n_ctx) before any
 * activation is read. All integers are little-endian. */
#ifndef GLLM_STAGE_H
#define GLLM_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "llm/forward.h"

#define GL_STAGE_MAGIC	  0x54534c47u /* "GLST" */
#define GL_STAGE_VERSION  1
#define GL_STAGE_HDR_SIZE 40

typedef enum { GL_STAGE_STEP = 1, GL_STAGE_RELEASE = 2, GL_STAGE_SHUTDOWN = 3 } gl_stage_kind_t;
typedef enum { GL_WIRE_F32 = 0, GL_WIRE_F16 = 1 } gl_wire_t;

typedef struct {
	gl_stage_kind_t kind;
	uint64_t batch; /* the head rank's id of a step */
	int nseq, ntok, dim;
	gl_wire_t wire;
	uint64_t body_bytes;
} gl_stage_hdr_t;

/* What a rank agreed to take (from the model and the job's options, the same on every rank). */
typedef struct {
	int max_seqs;	/* sequence ids are 0 .. max_seqs-1 (<= GL_MAX_BATCH_SEQS) */
	int max_tokens; /* tokens in one step */
	int dim;	/* the model's embedding width */
	int n_ctx;	/* tokens a sequence may hold */
} gl_stage_limits_t;

/* The body's size for these counts: 0 for a SHUTDOWN; (size_t)-1 if a count is negative. */
size_t gl_stage_body_size(gl_stage_kind_t kind, int nseq, int ntok, int dim, gl_wire_t w);
/* Fill H (body_bytes included) for a frame of BT (NULL for SHUTDOWN). */
void gl_stage_hdr_make(gl_stage_hdr_t *h, gl_stage_kind_t kind, uint64_t batch,
		       const gl_batch_t *bt, int dim, gl_wire_t w);
void gl_stage_hdr_encode(const gl_stage_hdr_t *h, uint8_t out[GL_STAGE_HDR_SIZE]);
/* Decode and check a header of LEN bytes: 0, or -1 (EPROTO: not a frame, another version;
 * EMSGSIZE: a count beyond LIM, a body size that does not match) with ERR. */
int gl_stage_hdr_decode(const uint8_t *buf, size_t len, const gl_stage_limits_t *lim,
			gl_stage_hdr_t *h, gp_error_t *err);
/* Write H's body for BT and activations X (ntok x dim f32; NULL unless a STEP) into OUT
 * (h->body_bytes). */
void gl_stage_body_encode(const gl_stage_hdr_t *h, const gl_batch_t *bt, const float *x,
			  uint8_t *out);
/* Decode a body checked against H (which gl_stage_hdr_decode accepted) and LIM: BT's nseq,
 * ntok, seq, n, ctx (tokens NULL); a STEP's activations into X (room for ntok x dim f32).
 * 0, or -1 (EPROTO) with ERR. */
int gl_stage_body_decode(const gl_stage_hdr_t *h, const uint8_t *buf, size_t len,
			 const gl_stage_limits_t *lim, gl_batch_t *bt, float *x, gp_error_t *err);

#endif
