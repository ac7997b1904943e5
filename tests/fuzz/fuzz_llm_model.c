/* fuzz_llm_model: a model's shape and weights (llm/model.c) from any GGUF bytes, and the forward
 * pass (llm/forward.c, the kernels' cpu backend) over what it accepts. Properties: a refused
 * shape sets errno and says why; an accepted one loads (every tensor it names present, of the
 * dims it checked) unless memory runs out, and a 3-token prefill then one decode step run over
 * it without a fault (the logits may be anything: the weights are the input's). */
#include <errno.h>
#include <stdio.h>

#include "llm/forward.h"
#include "tests/fuzz/fuzz.h"

#define MAX_WEIGHT_BYTES (4u << 20) /* larger shapes are only read, not run (time) */

static gk_backend_t *backend(void)
{
	static gk_backend_t *b;
	gk_error_t ge;
	if (!b && !(b = gk_backend_open("cpu", &ge)))
		abort();
	return b;
}

static void step(gl_fwd_t *f, gl_kv_t *kv, const int32_t *t, int n, float *logits)
{
	gl_batch_t bt = {.nseq = 1, .ntok = n, .tokens = t};
	gp_error_t err = {{0}};
	bt.seq[0] = 0;
	bt.n[0] = n;
	bt.ctx[0] = gl_kv_len(kv, 0) + n;
	FUZZ_CHECK(gl_kv_reserve(kv, 0, bt.ctx[0]) == 0);
	FUZZ_CHECK(gl_fwd_embed(f, &bt, &err) == 0);
	FUZZ_CHECK(gl_fwd_layers(f, &bt, &err) == 0);
	FUZZ_CHECK(gl_fwd_head(f, &bt, logits, &err) == 0);
}

static void run(const gl_gguf_t *g, const gl_hparams_t *hp)
{
	size_t bytes = gl_embed_bytes(g) + gl_head_bytes(g);
	for (int l = 0; l < hp->n_layers; l++)
		bytes += gl_layer_bytes(g, l);
	if (bytes > MAX_WEIGHT_BYTES || (size_t)hp->n_ff * 4 > MAX_WEIGHT_BYTES)
		return;
	gp_error_t err = {{0}};
	gl_weights_t *w = gl_weights_load(backend(), g, hp, 0, hp->n_layers, 1, 1, &err);
	FUZZ_CHECK(w || errno == ENOMEM);
	if (!w)
		return;
	gl_kv_t *kv = gl_kv_create(backend(), hp->n_layers, 2, 4, hp->n_kv_heads * hp->head_dim,
				   GK_F32, 1, &err);
	gl_fwd_t *f = kv ? gl_fwd_create(backend(), hp, w, kv, 3, &err) : NULL;
	float *logits = malloc((size_t)3 * (size_t)hp->n_vocab * sizeof *logits);
	if (f && logits) {
		int32_t t[3] = {0, hp->n_vocab - 1, hp->n_vocab / 2};
		step(f, kv, t, 3, logits);
		step(f, kv, t + 1, 1, logits);
	}
	free(logits);
	gl_fwd_destroy(&f);
	gl_kv_destroy(&kv);
	gl_weights_destroy(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	gl_gguf_t *g = gl_gguf_open_mem(data, size, &err);
	if (!g)
		return 0;
	gl_hparams_t hp;
	err.text[0] = 0;
	errno = 0;
	if (gl_hparams_read(g, &hp, &err) < 0) {
		FUZZ_CHECK(errno != 0 && err.text[0] != 0);
	} else {
		FUZZ_CHECK(hp.n_vocab > 0 && hp.dim % hp.n_heads == 0 &&
			   hp.n_heads % hp.n_kv_heads == 0 && hp.rot_dim <= hp.head_dim);
		run(g, &hp);
	}
	gl_gguf_close(&g);
	return 0;
}
