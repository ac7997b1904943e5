/* test_model.c - the model's shape and weights, and the forward pass on the cpu backend, on tiny
 * GGUF files written here: defaults for absent keys, every refusal (another architecture, a
 * tensor missing or of the wrong shape, heads that do not divide, an unsupported rope scaling),
 * the sizes of a layer range and that loading it takes only its bytes, and two ranks holding
 * half the layers each (the activations passed between them) giving the logits of one. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/engine.h"
#include "llm/forward.h"
#include "llm/randmodel.h"
#include "llm/test/eng_check.h"

#define DIM 64
#define NH  2
#define NKV 1
#define HD  32
#define FF  96
#define NV  40
#define NL  2

typedef struct {
	const char *arch;
	const char *skip;     /* a tensor left out */
	const char *bad_dims; /* a tensor written with one row too many */
	int n_heads;	      /* 0: NH */
	int with_kv_key, with_output, f16_norms;
	const char *scaling; /* rope.scaling.type, or NULL; "old": rope.scale_linear */
	int key_length;	     /* attention.key_length, or 0 */
} spec_t;

static uint64_t rng = 1;
static float rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return ((float)(rng >> 40) / (float)(1ull << 24) - 0.5f) * 0.4f;
}

static void add(gl_gguf_writer_t *w, const spec_t *s, const char *name, int d0, int d1)
{
	if (s->skip && strcmp(s->skip, name) == 0)
		return;
	if (s->bad_dims && strcmp(s->bad_dims, name) == 0)
		d1 ? d1++ : d0++;
	uint64_t dims[2] = {(uint64_t)d0, (uint64_t)(d1 ? d1 : 1)};
	size_t n = (size_t)d0 * (d1 ? (size_t)d1 : 1);
	float *f = malloc(n * sizeof *f);
	for (size_t i = 0; i < n; i++)
		f[i] = d1 ? rnd() : 1.0f + rnd();
	if (!d1 && s->f16_norms) {
		uint16_t *h = malloc(n * 2);
		for (size_t i = 0; i < n; i++)
			h[i] = gk_f32_to_f16(f[i]);
		CHECK(gl_gguf_add_tensor(w, name, 1, dims, GK_Q_F16, h, NULL, NULL) == 0);
		free(h);
	} else {
		CHECK(gl_gguf_add_tensor(w, name, d1 ? 2 : 1, dims, GK_Q_F32, f, NULL, NULL) == 0);
	}
	free(f);
}

static void write_model(const char *path, const spec_t *s)
{
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	const char *a = s->arch ? s->arch : "llama";
	char k[96];
	int nh = s->n_heads ? s->n_heads : NH;
	rng = 1;
	CHECK(gl_gguf_set_str(w, "general.architecture", a) == 0);
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", a, suffix), k)
	CHECK(gl_gguf_set_u32(w, KEY("embedding_length"), DIM) == 0);
	CHECK(gl_gguf_set_u32(w, KEY("block_count"), NL) == 0);
	CHECK(gl_gguf_set_u32(w, KEY("feed_forward_length"), FF) == 0);
	CHECK(gl_gguf_set_u32(w, KEY("attention.head_count"), (uint32_t)nh) == 0);
	if (s->with_kv_key)
		CHECK(gl_gguf_set_u32(w, KEY("attention.head_count_kv"), NKV) == 0);
	if (s->key_length)
		CHECK(gl_gguf_set_u32(w, KEY("attention.key_length"), (uint32_t)s->key_length) ==
		      0);
	if (s->scaling && strcmp(s->scaling, "old") == 0) {
		CHECK(gl_gguf_set_f32(w, KEY("rope.scale_linear"), 8.0f) == 0);
	} else if (s->scaling) {
		CHECK(gl_gguf_set_str(w, KEY("rope.scaling.type"), s->scaling) == 0);
		CHECK(gl_gguf_set_f32(w, KEY("rope.scaling.factor"), 4.0f) == 0);
	}
	int kvd = (s->with_kv_key ? NKV : nh) * (DIM / nh), qwen = strcmp(a, "qwen2") == 0;
	add(w, s, "token_embd.weight", DIM, NV);
	for (int l = 0; l < NL; l++) {
		char n[64];
#define T(suffix, d0, d1) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), add(w, s, n, d0, d1))
		T("attn_norm.weight", DIM, 0);
		T("attn_q.weight", DIM, DIM);
		T("attn_k.weight", DIM, kvd);
		T("attn_v.weight", DIM, kvd);
		if (qwen) {
			T("attn_q.bias", DIM, 0);
			T("attn_k.bias", kvd, 0);
			T("attn_v.bias", kvd, 0);
		}
		T("attn_output.weight", DIM, DIM);
		T("ffn_norm.weight", DIM, 0);
		T("ffn_gate.weight", DIM, FF);
		T("ffn_up.weight", DIM, FF);
		T("ffn_down.weight", FF, DIM);
	}
	add(w, s, "output_norm.weight", DIM, 0);
	if (s->with_output)
		add(w, s, "output.weight", DIM, NV);
	gp_error_t err;
	CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
}

static char dir[] = "/tmp/test_llm_model.XXXXXX";

/* Write spec S, read its shape: the return of gl_hparams_read, errno in *E, the message. */
static int try_spec(const spec_t *s, gl_hparams_t *hp, int *e, char *msg)
{
	char path[128];
	snprintf(path, sizeof path, "%s/m.gguf", dir);
	write_model(path, s);
	gp_error_t err = {{0}};
	gl_gguf_t *g = gl_gguf_open(path, &err);
	CHECK(g);
	errno = 0;
	int rc = gl_hparams_read(g, hp, &err);
	*e = errno;
	if (msg)
		snprintf(msg, 256, "%.255s", err.text);
	gl_gguf_close(&g);
	return rc;
}

static void test_hparams(void)
{
	gl_hparams_t hp;
	int e;
	char msg[256];
	spec_t s = {0};
	CHECK(try_spec(&s, &hp, &e, msg) == 0);
	CHECK(hp.arch == GL_ARCH_LLAMA && hp.n_vocab == NV && hp.dim == DIM && hp.n_layers == NL);
	CHECK(hp.n_heads == NH && hp.n_kv_heads == NH && hp.head_dim == HD && hp.rot_dim == HD);
	CHECK(hp.rope_base == 10000.0f && hp.norm_eps == 1e-5f && hp.rope_neox == 0);
	CHECK(hp.rope_scale == 1.0f && hp.tied_output == 1 && hp.n_ctx_train == 2048);
	CHECK(strcmp(hp.name, "llama") == 0);

	s = (spec_t){.arch = "qwen2", .with_kv_key = 1, .with_output = 1};
	CHECK(try_spec(&s, &hp, &e, msg) == 0);
	CHECK(hp.arch == GL_ARCH_QWEN2 && hp.rope_neox == 1 && hp.norm_eps == 1e-6f);
	CHECK(hp.n_kv_heads == NKV && hp.tied_output == 0);

	s = (spec_t){.arch = "gpt2"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == ENOTSUP && strstr(msg, "gpt2"));
	s = (spec_t){.skip = "blk.1.ffn_up.weight"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "blk.1.ffn_up"));
	s = (spec_t){.arch = "qwen2", .skip = "blk.0.attn_k.bias"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "attn_k.bias"));
	s = (spec_t){.with_kv_key = 1, .bad_dims = "blk.0.attn_k.weight"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "attn_k"));
	s = (spec_t){.bad_dims = "output_norm.weight"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL);
	s = (spec_t){.n_heads = 3};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "heads"));
	s = (spec_t){.scaling = "linear"};
	CHECK(try_spec(&s, &hp, &e, msg) == 0 && hp.rope_scale == 0.25f);
	s = (spec_t){.scaling = "old"};
	CHECK(try_spec(&s, &hp, &e, msg) == 0 && hp.rope_scale == 0.125f);
	s = (spec_t){.key_length = HD};
	CHECK(try_spec(&s, &hp, &e, msg) == 0);
	s = (spec_t){.key_length = 2 * HD};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == ENOTSUP && strstr(msg, "key_length"));
	s = (spec_t){.scaling = "yarn"};
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == ENOTSUP && strstr(msg, "yarn"));
}

typedef struct {
	gk_backend_t *b;
	gl_gguf_t *g;
	gl_hparams_t hp;
} model_t;

static void open_model(model_t *m, const spec_t *s, int header_only)
{
	char path[128];
	snprintf(path, sizeof path, "%s/m.gguf", dir);
	write_model(path, s);
	gk_error_t ge;
	gp_error_t err;
	CHECK((m->b = gk_backend_open("cpu", &ge)));
	m->g = header_only ? gl_gguf_open_header(path, &err) : gl_gguf_open(path, &err);
	CHECK(m->g);
	CHECK(gl_hparams_read(m->g, &m->hp, &err) == 0);
}

static void close_model(model_t *m)
{
	gl_gguf_close(&m->g);
	gk_backend_close(&m->b);
}

static void test_sizes_and_ranges(void)
{
	model_t m;
	spec_t s = {.with_kv_key = 1, .f16_norms = 1};
	open_model(&m, &s, 1);
	int kvd = NKV * HD;
	/* two f16 norms, the f32 matrices q, o, k, v, gate, up, down */
	size_t layer = 2 * DIM * 2 +
		       4 * ((size_t)DIM * DIM * 2 + (size_t)DIM * kvd * 2 + 3 * (size_t)DIM * FF);
	CHECK(gl_layer_bytes(m.g, 0) == layer && gl_layer_bytes(m.g, 1) == layer);
	CHECK(gl_embed_bytes(m.g) == 4 * (size_t)DIM * NV);
	CHECK(gl_head_bytes(m.g) == 2 * DIM + 4 * (size_t)DIM * NV); /* tied: the embedding */
	gp_error_t err;
	/* layer 1 alone, read from a header-only handle: its bytes, the norms widened to f32 */
	gl_weights_t *w = gl_weights_load(m.b, m.g, &m.hp, 1, 2, 0, 0, &err);
	CHECK(w && gl_weights_first(w) == 1 && gl_weights_last(w) == 2);
	CHECK(gl_weights_device_bytes(w) == layer + 2 * DIM * 2);
	gl_weights_destroy(&w);
	CHECK(w == NULL);
	w = gl_weights_load(m.b, m.g, &m.hp, 0, 0, 0, 1, &err); /* the head only */
	CHECK(w && gl_weights_device_bytes(w) == DIM * 4 + 4 * (size_t)DIM * NV);
	gl_weights_destroy(&w);
	CHECK(gl_weights_load(m.b, m.g, &m.hp, 1, 3, 0, 0, &err) == NULL && errno == EINVAL);
	close_model(&m);
}

typedef struct {
	gl_weights_t *w;
	gl_kv_t *kv;
	gl_fwd_t *f;
} rank_t;

static void rank_open_kv(rank_t *r, model_t *m, int first, int last, int embed, int head,
			 int n_blocks, int block_size)
{
	gp_error_t err;
	r->w = gl_weights_load(m->b, m->g, &m->hp, first, last, embed, head, &err);
	CHECK(r->w);
	r->kv = gl_kv_create(m->b, last - first, n_blocks, block_size,
			     m->hp.n_kv_heads * m->hp.head_dim, GK_F32, 4, &err);
	CHECK(r->kv);
	r->f = gl_fwd_create(m->b, &m->hp, r->w, r->kv, 16, &err);
	CHECK(r->f);
}

static void rank_open(rank_t *r, model_t *m, int first, int last, int embed, int head)
{
	rank_open_kv(r, m, first, last, embed, head, 16, 4);
}

static void rank_close(rank_t *r)
{
	gl_fwd_destroy(&r->f);
	gl_kv_destroy(&r->kv);
	gl_weights_destroy(&r->w);
}

static double maxdiff(const float *a, const float *b, size_t n)
{
	double d = 0;
	for (size_t i = 0; i < n; i++)
		if (!(fabs((double)a[i] - b[i]) <= d))
			d = isnan(a[i] - b[i]) ? INFINITY : fabs((double)a[i] - b[i]);
	return d;
}

/* Batch of one sequence bringing N tokens after those it has. */
static gl_batch_t one(gl_kv_t *kv, int seq, const int32_t *t, int n, int all)
{
	gl_batch_t bt = {.nseq = 1, .ntok = n, .tokens = t, .all_logits = all};
	bt.seq[0] = seq;
	bt.n[0] = n;
	bt.ctx[0] = gl_kv_len(kv, seq) + n;
	CHECK(gl_kv_reserve(kv, seq, bt.ctx[0]) == 0);
	return bt;
}

static void test_split(const char *arch)
{
	model_t m;
	spec_t s = {.arch = arch, .with_kv_key = 1, .with_output = 1};
	open_model(&m, &s, 0);
	rank_t whole, r0, r1;
	rank_open(&whole, &m, 0, NL, 1, 1);
	rank_open(&r0, &m, 0, 1, 1, 0);
	rank_open(&r1, &m, 1, NL, 0, 1);
	const int32_t t[] = {3, 17, 5, 39, 0, 22, 8};
	enum { N = 7 };
	float la[N * NV], lb[N * NV], ld[N * NV], x[N * DIM];
	gp_error_t err;
	gl_batch_t bt = one(whole.kv, 0, t, N, 1);
	CHECK(gl_fwd_embed(whole.f, &bt, &err) == 0 && gl_fwd_layers(whole.f, &bt, &err) == 0 &&
	      gl_fwd_head(whole.f, &bt, la, &err) == 0);
	/* two ranks: layer 0 with the embedding, layer 1 with the head, x handed over */
	gl_batch_t b0 = one(r0.kv, 2, t, N, 1), b1 = one(r1.kv, 2, t, N, 1);
	CHECK(gl_fwd_embed(r0.f, &b0, &err) == 0 && gl_fwd_layers(r0.f, &b0, &err) == 0 &&
	      gl_fwd_get_x(r0.f, &b0, x, &err) == 0);
	CHECK(gl_fwd_set_x(r1.f, &b1, x, &err) == 0 && gl_fwd_layers(r1.f, &b1, &err) == 0 &&
	      gl_fwd_head(r1.f, &b1, lb, &err) == 0);
	CHECK(maxdiff(la, lb, N * NV) == 0);
	/* one token a step through the cache: the same rows */
	for (int i = 0; i < N; i++) {
		gl_batch_t d = one(whole.kv, 1, t + i, 1, 0);
		CHECK(gl_fwd_embed(whole.f, &d, &err) == 0 &&
		      gl_fwd_layers(whole.f, &d, &err) == 0 &&
		      gl_fwd_head(whole.f, &d, ld + i * NV, &err) == 0);
	}
	CHECK(maxdiff(la, ld, N * NV) < 1e-5);
	/* a sequence that reserved more than the step needs (a pipeline reserving ahead) */
	CHECK(gl_kv_reserve(whole.kv, 3, 13) == 0);
	gl_batch_t ahead = {.nseq = 1, .ntok = N, .tokens = t, .all_logits = 1};
	ahead.seq[0] = 3;
	ahead.n[0] = N;
	ahead.ctx[0] = N;
	CHECK(gl_fwd_embed(whole.f, &ahead, &err) == 0 &&
	      gl_fwd_layers(whole.f, &ahead, &err) == 0 &&
	      gl_fwd_head(whole.f, &ahead, lb, &err) == 0);
	CHECK(maxdiff(la, lb, N * NV) == 0);
	/* the same with blocks of one token and 3000 of them held: the step's ints outgrow what
	 * gl_fwd_create sized and are sent again from a larger buffer */
	rank_t wide;
	rank_open_kv(&wide, &m, 0, NL, 1, 1, 4096, 1);
	CHECK(gl_kv_reserve(wide.kv, 1, 3000) == 0);
	ahead.seq[0] = 1;
	CHECK(gl_fwd_embed(wide.f, &ahead, &err) == 0 && gl_fwd_layers(wide.f, &ahead, &err) == 0 &&
	      gl_fwd_head(wide.f, &ahead, lb, &err) == 0);
	CHECK(maxdiff(la, lb, N * NV) < 1e-5);
	rank_close(&wide);
	/* a rank without the embedding or the head refuses them; bad batches are refused */
	CHECK(gl_fwd_embed(r1.f, &b1, &err) == -1 && errno == EINVAL);
	CHECK(gl_fwd_head(r0.f, &b0, lb, &err) == -1 && errno == EINVAL);
	gl_batch_t bad = bt;
	bad.ntok = 17;
	CHECK(gl_fwd_layers(whole.f, &bad, &err) == -1 && errno == EINVAL);
	bad = bt;
	bad.ctx[0] = 9; /* more than sequence 0 reserved */
	bad.n[0] = 7;
	CHECK(gl_fwd_layers(whole.f, &bad, &err) == -1 && errno == EINVAL);
	rank_close(&whole);
	rank_close(&r0);
	rank_close(&r1);
	close_model(&m);
}

/* The local executor: a batch's KV space reserved at submit (all of it or none), one batch at a
 * time, wait running it into the caller's logits (those of one rank with every layer). */
static void test_exec_local(void)
{
	model_t m;
	spec_t s = {.with_kv_key = 1};
	open_model(&m, &s, 0);
	rank_t r;
	rank_open(&r, &m, 0, NL, 1, 1); /* 16 blocks of 4 tokens */
	gp_error_t err;
	gl_exec_local_t *x = gl_exec_local_create(m.b, &m.hp, r.w, r.kv, 16, &err);
	CHECK(x);
	const gl_exec_ops_t *ops = &gl_exec_local_ops;
	CHECK(ops->depth(x) == 1 && ops->free_tokens(x) == 64);
	const int32_t t[] = {3, 17, 5, 39, 0, 22, 8, 1, 2};
	float want[2 * NV], got[2 * NV];
	/* sequence 0 brings 7 tokens, sequence 2 two: their last rows' logits */
	gl_batch_t bt = {.nseq = 2, .ntok = 9, .tokens = t};
	bt.seq[0] = 0, bt.n[0] = 7, bt.ctx[0] = 7;
	bt.seq[1] = 2, bt.n[1] = 2, bt.ctx[1] = 2;
	uint64_t id = 0;
	CHECK(ops->wait(x, &id, got, 0, &err) == 0); /* nothing in flight */
	CHECK(ops->submit(x, 41, &bt, &err) == 0);
	CHECK(gl_kv_len(r.kv, 0) == 7 && gl_kv_len(r.kv, 2) == 2 && ops->free_tokens(x) == 52);
	CHECK(ops->submit(x, 42, &bt, &err) == -1 && errno == EBUSY);
	CHECK(ops->wait(x, &id, got, -1, &err) == 1 && id == 41);
	/* the same through the forward pass by hand, in fresh sequences */
	gl_batch_t b2 = bt;
	b2.seq[0] = 1, b2.seq[1] = 3;
	CHECK(gl_kv_reserve(r.kv, 1, 7) == 0 && gl_kv_reserve(r.kv, 3, 2) == 0);
	CHECK(gl_fwd_embed(r.f, &b2, &err) == 0 && gl_fwd_layers(r.f, &b2, &err) == 0 &&
	      gl_fwd_head(r.f, &b2, want, &err) == 0);
	CHECK(maxdiff(want, got, 2 * NV) == 0);
	/* more than is free: ENOSPC, and the sequences keep what they had */
	gl_batch_t big = {.nseq = 2, .ntok = 2, .tokens = t};
	big.seq[0] = 0, big.n[0] = 1, big.ctx[0] = 8;
	big.seq[1] = 2, big.n[1] = 1, big.ctx[1] = 60;
	CHECK(ops->submit(x, 43, &big, &err) == -1 && errno == ENOSPC);
	CHECK(gl_kv_len(r.kv, 0) == 7 && gl_kv_len(r.kv, 2) == 2);
	ops->release(x, 0);
	ops->release(x, 2);
	CHECK(gl_kv_len(r.kv, 0) == 0 && gl_kv_free_blocks(r.kv) == 16 - 2 - 1);
	gl_exec_local_destroy(&x);
	CHECK(x == NULL);
	rank_close(&r);
	close_model(&m);
}

/* ---- the engine over the local executor, on a random model with a tokenizer ---- */

typedef struct {
	char text[1024];
	size_t len;
	int done, ntok;
	gl_finish_t why;
} answer_t;

static void on_text(void *arg, const char *text, size_t len, int ntokens)
{
	answer_t *a = arg;
	CHECK(a->len + len < sizeof a->text);
	memcpy(a->text + a->len, text, len);
	a->len += len;
	(void)ntokens;
}

static void on_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	answer_t *a = arg;
	(void)error;
	a->done = 1;
	a->why = why;
	a->ntok = u->completion_tokens;
}

static int32_t argmax(const float *l, int n)
{
	int32_t b = 0;
	for (int i = 1; i < n; i++)
		if (l[i] > l[b])
			b = i;
	return b;
}

/* The text of NGEN greedy tokens after PROMPT, run by hand in sequence 3. */
static size_t greedy_text(rank_t *r, const gl_tok_t *tok, const int32_t *prompt, int n, int ngen,
			  int nv, char *out)
{
	float *l = malloc((size_t)nv * sizeof *l);
	size_t len = 0;
	gp_error_t err;
	gl_batch_t bt = one(r->kv, 3, prompt, n, 0);
	int32_t t;
	for (int i = 0; i < ngen; i++) {
		CHECK(gl_fwd_embed(r->f, &bt, &err) == 0 && gl_fwd_layers(r->f, &bt, &err) == 0 &&
		      gl_fwd_head(r->f, &bt, l, &err) == 0);
		t = argmax(l, nv);
		int k = gl_tok_piece(tok, t, 0, out + len, 64);
		len += k > 0 ? (size_t)k : 0;
		bt = one(r->kv, 3, &t, 1, 0);
	}
	gl_kv_release(r->kv, 3);
	free(l);
	return len;
}

static void test_engine_local(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/r.gguf", dir);
	gp_error_t err;
	CHECK(gl_randmodel_write(path, gl_randmodel_find("test-llama"), GK_Q_Q8_0, 5, &err) == 0);
	model_t m;
	gk_error_t ge;
	CHECK((m.b = gk_backend_open("cpu", &ge)) && (m.g = gl_gguf_open(path, &err)));
	CHECK(gl_hparams_read(m.g, &m.hp, &err) == 0);
	gl_tok_t *tok = gl_tok_from_gguf(m.g, &err);
	CHECK(tok);
	rank_t r;
	rank_open_kv(&r, &m, 0, m.hp.n_layers, 1, 1, 64, 4);
	gl_exec_local_t *x = gl_exec_local_create(m.b, &m.hp, r.w, r.kv, 16, &err);
	CHECK(x);
	/* three prompts; prefill in chunks of at most 6 tokens beside the others' decodes */
	gl_engine_opts_t o = {.max_seqs = 3, .max_batch_tokens = 6, .n_ctx = 64};
	gl_engine_t *e = gl_engine_create(tok, &m.hp, &gl_exec_local_ops, x, &o, &err);
	CHECK(e);
	const int32_t p[3][9] = {{1, 300, 301, 302, 303, 304, 305, 306, 307},
				 {1, 400, 17, 5},
				 {1, 260, 261, 262, 263, 264, 265}};
	const int np[3] = {9, 4, 7};
	answer_t a[3];
	memset(a, 0, sizeof a);
	for (int j = 0; j < 3; j++) {
		gl_request_t q = {.prompt = p[j],
				  .nprompt = np[j],
				  .max_tokens = 12,
				  .ignore_eos = 1,
				  .on_text = on_text,
				  .on_done = on_done,
				  .arg = &a[j]};
		gl_sample_defaults(&q.sp);
		q.sp.temperature = 0;
		CHECK(gl_engine_submit(e, &q, &err) == j);
		CHECK(gl_engine_run(e, 0, &err) >= 0);
	}
	for (int i = 0; i < 1000 && gl_engine_open(e) > 0; i++)
		CHECK(gl_engine_run(e, -1, &err) >= 0);
	for (int j = 0; j < 3; j++) {
		char want[1024];
		size_t len = greedy_text(&r, tok, p[j], np[j], 12, m.hp.n_vocab, want);
		CHECK(a[j].done && a[j].why == GL_FINISH_LENGTH && a[j].ntok == 12);
		/* the engine's text; a character cut at the end is U+FFFD there */
		if (a[j].len == len)
			CHECK(memcmp(a[j].text, want, len) == 0);
		else
			CHECK(a[j].len >= 3 && a[j].len - 3 <= len &&
			      memcmp(a[j].text + a[j].len - 3, "\xEF\xBF\xBD", 3) == 0 &&
			      memcmp(a[j].text, want, a[j].len - 3) == 0);
	}
	CHECK(gl_kv_free_blocks(r.kv) == 64);
	gl_engine_destroy(&e);
	gl_exec_local_destroy(&x);
	gl_tok_destroy(&tok);
	rank_close(&r);
	close_model(&m);
	unlink(path);
}

int main(void)
{
	CHECK(mkdtemp(dir));
	test_hparams();
	test_sizes_and_ranges();
	test_split("llama");
	test_split("qwen2");
	test_exec_local();
	test_engine_local();
	char path[128];
	snprintf(path, sizeof path, "%s/m.gguf", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}
