/* test_stage.c - the pipeline's frames: round trips in f32 and f16, and every bound the
 * decoder enforces refusing a frame that passes it by one. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gllm/stage.h"
#include "gllm/test/check.h"

static const gl_stage_limits_t lim = {.max_seqs = 8, .max_tokens = 16, .dim = 4, .n_ctx = 100};

static gl_batch_t batch(void)
{
	gl_batch_t bt = {.nseq = 2, .ntok = 5};
	bt.seq[0] = 3, bt.n[0] = 4, bt.ctx[0] = 4;  /* a prefill */
	bt.seq[1] = 7, bt.n[1] = 1, bt.ctx[1] = 50; /* a decode */
	return bt;
}

static void round_trip(gl_wire_t w)
{
	gl_batch_t bt = batch(), got;
	float x[5 * 4], y[5 * 4];
	for (int i = 0; i < 20; i++)
		x[i] = (float)(i - 10) * 0.25f; /* exact in f16 */
	gl_stage_hdr_t h, h2;
	gl_stage_hdr_make(&h, GL_STAGE_STEP, 99, &bt, 4, w);
	CHECK(h.body_bytes == 2 * 12 + 20 * (w == GL_WIRE_F16 ? 2u : 4u));
	uint8_t hb[GL_STAGE_HDR_SIZE], body[256];
	gl_stage_hdr_encode(&h, hb);
	gp_error_t err;
	CHECK(gl_stage_hdr_decode(hb, sizeof(hb), &lim, &h2, &err) == 0);
	CHECK(h2.kind == GL_STAGE_STEP && h2.batch == 99 && h2.nseq == 2 && h2.ntok == 5);
	gl_stage_body_encode(&h, &bt, x, body);
	CHECK(gl_stage_body_decode(&h2, body, h.body_bytes, &lim, &got, y, &err) == 0);
	CHECK(got.nseq == 2 && got.ntok == 5 && got.seq[1] == 7 && got.ctx[1] == 50);
	CHECK(got.n[0] == 4 && got.tokens == NULL);
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		CHECK(x[i] == y[i]); /* f32 on the wire: the same values */
}

/* A header of BT's step with one field changed must be refused with errno E. */
static void refuse_hdr(size_t off, uint32_t v, int e)
{
	gl_batch_t bt = batch();
	gl_stage_hdr_t h, h2;
	gl_stage_hdr_make(&h, GL_STAGE_STEP, 1, &bt, 4, GL_WIRE_F32);
	uint8_t hb[GL_STAGE_HDR_SIZE];
	gl_stage_hdr_encode(&h, hb);
	for (int i = 0; i < 4; i++)
		hb[off + i] = (uint8_t)(v >> (8 * i));
	gp_error_t err;
	errno = 0;
	CHECK(gl_stage_hdr_decode(hb, sizeof(hb), &lim, &h2, &err) == -1 && errno == e);
}

/* A body of BT's step with one sequence field changed must be refused. */
static void refuse_table(int seq, int field, uint32_t v)
{
	gl_batch_t bt = batch(), got;
	float x[20] = {0}, y[20];
	gl_stage_hdr_t h;
	gl_stage_hdr_make(&h, GL_STAGE_STEP, 1, &bt, 4, GL_WIRE_F32);
	uint8_t body[256];
	gl_stage_body_encode(&h, &bt, x, body);
	for (int i = 0; i < 4; i++)
		body[12 * seq + 4 * field + i] = (uint8_t)(v >> (8 * i));
	gp_error_t err;
	errno = 0;
	CHECK(gl_stage_body_decode(&h, body, h.body_bytes, &lim, &got, y, &err) == -1 &&
	      errno == EPROTO);
}

static void release_and_shutdown(void)
{
	gl_batch_t bt = {.nseq = 3}, got;
	bt.seq[0] = 0, bt.seq[1] = 5, bt.seq[2] = 7;
	gl_stage_hdr_t h, h2;
	gl_stage_hdr_make(&h, GL_STAGE_RELEASE, 0, &bt, 4, GL_WIRE_F32);
	CHECK(h.body_bytes == 12 && h.ntok == 0 && h.dim == 0);
	uint8_t hb[GL_STAGE_HDR_SIZE], body[12];
	gl_stage_hdr_encode(&h, hb);
	gp_error_t err;
	CHECK(gl_stage_hdr_decode(hb, sizeof(hb), &lim, &h2, &err) == 0);
	gl_stage_body_encode(&h, &bt, NULL, body);
	CHECK(gl_stage_body_decode(&h2, body, 12, &lim, &got, NULL, &err) == 0);
	CHECK(got.nseq == 3 && got.seq[2] == 7);
	body[4] = 0; /* sequence 0 twice */
	CHECK(gl_stage_body_decode(&h2, body, 12, &lim, &got, NULL, &err) == -1);
	gl_stage_hdr_make(&h, GL_STAGE_SHUTDOWN, 0, NULL, 4, GL_WIRE_F32);
	gl_stage_hdr_encode(&h, hb);
	CHECK(gl_stage_hdr_decode(hb, sizeof(hb), &lim, &h2, &err) == 0);
	CHECK(h2.kind == GL_STAGE_SHUTDOWN && h2.body_bytes == 0);
	CHECK(gl_stage_hdr_decode(hb, sizeof(hb) - 1, &lim, &h2, &err) == -1);
}

int main(void)
{
	round_trip(GL_WIRE_F32);
	round_trip(GL_WIRE_F16);
	refuse_hdr(0, 0x12345678, EPROTO);	       /* magic */
	refuse_hdr(4, 2 | 1u << 16, EPROTO);	       /* version 2 */
	refuse_hdr(4, 1 | 9u << 16, EPROTO);	       /* kind 9 */
	refuse_hdr(16, 9, EMSGSIZE);		       /* 9 sequences of 8 */
	refuse_hdr(16, 0xffffffffu, EMSGSIZE);	       /* a negative count */
	refuse_hdr(20, 17, EMSGSIZE);		       /* 17 tokens of 16 */
	refuse_hdr(24, 5, EMSGSIZE);		       /* another width */
	refuse_hdr(28, 2, EPROTO);		       /* another activation type */
	refuse_hdr(32, 2 * 12 + 20 * 4 + 1, EMSGSIZE); /* a body one byte longer */
	refuse_hdr(36, 1, EMSGSIZE);		       /* a body 4 GiB longer */
	refuse_table(0, 0, 8);			       /* sequence id 8 of 8 */
	refuse_table(1, 0, 3);			       /* sequence 3 twice */
	refuse_table(0, 1, 0);			       /* no new token */
	refuse_table(0, 1, 3);			       /* tokens sum to 4, not 5 */
	refuse_table(1, 2, 101);		       /* context past n_ctx */
	refuse_table(0, 2, 3);			       /* a context shorter than the new tokens */
	release_and_shutdown();
	printf("ok: stage frames\n");
	return 0;
}
