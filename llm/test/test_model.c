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

#include "llm/forward.h"
#include "llm/test/eng_check.h"

#define DIM 64
#define NH 2
#define NKV 1
#define HD 32
#define FF 96
#define NV 40
#define NL 2

typedef struct {
	const char *arch;
	const char *skip;     /* a tensor left out */
	const char *bad_dims; /* a tensor written with one row too many */
	int n_heads;	      /* 0: NH */
	int with_kv_key, with_output, f16_norms;
	const char *scaling; /* rope.scaling.type, or NULL */
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
	uint64_t dims[2] = { (uint64_t)d0, (uint64_t)(d1 ? d1 : 1) };
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
	if (s->scaling) {
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
	gp_error_t err = { { 0 } };
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
	spec_t s = { 0 };
	CHECK(try_spec(&s, &hp, &e, msg) == 0);
	CHECK(hp.arch == GL_ARCH_LLAMA && hp.n_vocab == NV && hp.dim == DIM && hp.n_layers == NL);
	CHECK(hp.n_heads == NH && hp.n_kv_heads == NH && hp.head_dim == HD && hp.rot_dim == HD);
	CHECK(hp.rope_base == 10000.0f && hp.norm_eps == 1e-5f && hp.rope_neox == 0);
	CHECK(hp.rope_scale == 1.0f && hp.tied_output == 1 && hp.n_ctx_train == 2048);
	CHECK(strcmp(hp.name, "llama") == 0);

	s = (spec_t){ .arch = "qwen2", .with_kv_key = 1, .with_output = 1 };
	CHECK(try_spec(&s, &hp, &e, msg) == 0);
	CHECK(hp.arch == GL_ARCH_QWEN2 && hp.rope_neox == 1 && hp.norm_eps == 1e-6f);
	CHECK(hp.n_kv_heads == NKV && hp.tied_output == 0);

	s = (spec_t){ .arch = "gpt2" };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == ENOTSUP && strstr(msg, "gpt2"));
	s = (spec_t){ .skip = "blk.1.ffn_up.weight" };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "blk.1.ffn_up"));
	s = (spec_t){ .arch = "qwen2", .skip = "blk.0.attn_k.bias" };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "attn_k.bias"));
	s = (spec_t){ .with_kv_key = 1, .bad_dims = "blk.0.attn_k.weight" };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "attn_k"));
	s = (spec_t){ .bad_dims = "output_norm.weight" };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL);
	s = (spec_t){ .n_heads = 3 };
	CHECK(try_spec(&s, &hp, &e, msg) == -1 && e == EINVAL && strstr(msg, "heads"));
	s = (spec_t){ .scaling = "linear" };
	CHECK(try_spec(&s, &hp, &e, msg) == 0 && hp.rope_scale == 0.25f);
	s = (spec_t){ .scaling = "yarn" };
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
	spec_t s = { .with_kv_key = 1, .f16_norms = 1 };
	open_model(&m, &s, 1);
	int kvd = NKV * HD;
	/* two f16 norms, the f32 matrices q, o, k, v, gate, up, down */
	size_t layer = 2 * DIM * 2 + 4 * ((size_t)DIM * DIM * 2 + (size_t)DIM * kvd * 2 +
					  3 * (size_t)DIM * FF);
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

static void rank_open(rank_t *r, model_t *m, int first, int last, int embed, int head)
{
	gp_error_t err;
	r->w = gl_weights_load(m->b, m->g, &m->hp, first, last, embed, head, &err);
	CHECK(r->w);
	r->kv = gl_kv_create(m->b, last - first, 16, 4, m->hp.n_kv_heads * m->hp.head_dim, GK_F32,
			     4, &err);
	CHECK(r->kv);
	r->f = gl_fwd_create(m->b, &m->hp, r->w, r->kv, 16, &err);
	CHECK(r->f);
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
	gl_batch_t bt = { .nseq = 1, .ntok = n, .tokens = t, .all_logits = all };
	bt.seq[0] = seq;
	bt.n[0] = n;
	bt.ctx[0] = gl_kv_len(kv, seq) + n;
	CHECK(gl_kv_reserve(kv, seq, bt.ctx[0]) == 0);
	return bt;
}

static void test_split(const char *arch)
{
	model_t m;
	spec_t s = { .arch = arch, .with_kv_key = 1, .with_output = 1 };
	open_model(&m, &s, 0);
	rank_t whole, r0, r1;
	rank_open(&whole, &m, 0, NL, 1, 1);
	rank_open(&r0, &m, 0, 1, 1, 0);
	rank_open(&r1, &m, 1, NL, 0, 1);
	const int32_t t[] = { 3, 17, 5, 39, 0, 22, 8 };
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
		CHECK(gl_fwd_embed(whole.f, &d, &err) == 0 && gl_fwd_layers(whole.f, &d, &err) == 0 &&
		      gl_fwd_head(whole.f, &d, ld + i * NV, &err) == 0);
	}
	CHECK(maxdiff(la, ld, N * NV) < 1e-5);
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

int main(void)
{
	CHECK(mkdtemp(dir));
	test_hparams();
	test_sizes_and_ranges();
	test_split("llama");
	test_split("qwen2");
	char path[128];
	snprintf(path, sizeof path, "%s/m.gguf", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}
