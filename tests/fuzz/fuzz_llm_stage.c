/* fuzz_llm_stage: a pipeline rank's frame as a peer sends it (gllm/stage.h): the first 40
 * bytes are the header, the rest the body. Checks: a header the decoder takes states a body
 * size within the limits' bound; a body it takes has every sequence id in range and once,
 * tokens adding up to ntok and contexts within n_ctx; encoding what was decoded gives the
 * same header, and the same body where the activations are f32. */
#include "gllm/stage.h"
#include "tests/fuzz/fuzz.h"

static const gl_stage_limits_t lim = {.max_seqs = 16, .max_tokens = 64, .dim = 8, .n_ctx = 512};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < GL_STAGE_HDR_SIZE)
		return 0;
	gl_stage_hdr_t h;
	gp_error_t err;
	if (gl_stage_hdr_decode(data, GL_STAGE_HDR_SIZE, &lim, &h, &err) < 0)
		return 0;
	FUZZ_CHECK(h.body_bytes <= 16 * 12 + 64 * 8 * 4);
	uint8_t again[GL_STAGE_HDR_SIZE];
	gl_stage_hdr_encode(&h, again);
	FUZZ_CHECK(memcmp(again, data, GL_STAGE_HDR_SIZE) == 0);
	static gl_batch_t bt;
	static float x[64 * 8];
	const uint8_t *body = data + GL_STAGE_HDR_SIZE;
	size_t blen = size - GL_STAGE_HDR_SIZE;
	if (gl_stage_body_decode(&h, body, blen, &lim, &bt, x, &err) < 0)
		return 0;
	FUZZ_CHECK(blen == h.body_bytes && bt.nseq == h.nseq && bt.ntok == h.ntok);
	int sum = 0;
	for (int i = 0; i < bt.nseq; i++) {
		FUZZ_CHECK(bt.seq[i] >= 0 && bt.seq[i] < lim.max_seqs);
		for (int j = 0; j < i; j++)
			FUZZ_CHECK(bt.seq[j] != bt.seq[i]);
		FUZZ_CHECK(bt.ctx[i] >= bt.n[i] && bt.ctx[i] <= lim.n_ctx);
		sum += bt.n[i];
	}
	if (h.kind == GL_STAGE_STEP)
		FUZZ_CHECK(sum == h.ntok);
	if (h.wire == GL_WIRE_F32 || h.kind != GL_STAGE_STEP) {
		static uint8_t out[16 * 12 + 64 * 8 * 4];
		gl_stage_body_encode(&h, &bt, x, out);
		FUZZ_CHECK(memcmp(out, body, blen) == 0);
	}
	return 0;
}
