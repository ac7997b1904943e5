/* randmodel.c - random-weight GGUF models of real shapes (llm/randmodel.h). One walk over the
 * shape's tensors (plan) serves both the size estimate and the writer; each tensor's values
 * come from a counter-based generator keyed by the seed and the tensor's name, so any chunk of
 * any tensor is made on its own, in any order, and the file is the same however it is cut. */
#include "llm/randmodel.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gk_scalar.h"
#include "llm/gguf.h"
#include "llm/quant.h"

#define N_SPECIAL 3 /* <unk> <s> </s> */
#define N_BYTES	  256

static const gl_randmodel_t shapes[] = {
    {"llama2-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 4096, 10000.0f, 1e-5f, 0, 0},
    {"llama3-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 8192, 500000.0f, 1e-5f, 0, 0},
    {"mistral-7b", "llama", 4096, 32, 32, 8, 14336, 32000, 32768, 10000.0f, 1e-5f, 0, 0},
    {"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 5632, 32000, 2048, 10000.0f, 1e-5f, 0, 0},
    {"qwen2-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f, 1, 1},
    /* small shapes for tests: head_dim 32; test-kquant's 256 fits q4_K and q6_K blocks */
    {"test-llama", "llama", 128, 2, 4, 2, 256, 512, 256, 10000.0f, 1e-5f, 0, 0},
    {"test-qwen2", "qwen2", 128, 2, 4, 2, 256, 512, 256, 1000000.0f, 1e-6f, 1, 1},
    {"test-kquant", "llama", 256, 2, 8, 4, 512, 512, 256, 10000.0f, 1e-5f, 0, 0},
};

const gl_randmodel_t *gl_randmodel_shapes(int *n)
{
	*n = (int)(sizeof shapes / sizeof shapes[0]);
	return shapes;
}

const gl_randmodel_t *gl_randmodel_find(const char *name)
{
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		if (strcmp(shapes[i].name, name) == 0)
			return &shapes[i];
	errno = ENOENT;
	return NULL;
}

/* ---- the tensors of a shape ---- */

enum kind { MATRIX, NORM, BIAS };
enum size { SZ_NONE, SZ_DIM, SZ_Q, SZ_KV, SZ_FF, SZ_VOCAB };

static const struct {
	const char *name; /* after "blk.N." */
	enum kind kind;
	enum size in, out; /* dims[0], dims[1] */
	int bias_only;	   /* only where the shape has q/k/v biases */
} layer_tensors[] = {
    {"attn_norm.weight", NORM, SZ_DIM, SZ_NONE, 0}, {"attn_q.weight", MATRIX, SZ_DIM, SZ_Q, 0},
    {"attn_q.bias", BIAS, SZ_Q, SZ_NONE, 1},	    {"attn_k.weight", MATRIX, SZ_DIM, SZ_KV, 0},
    {"attn_k.bias", BIAS, SZ_KV, SZ_NONE, 1},	    {"attn_v.weight", MATRIX, SZ_DIM, SZ_KV, 0},
    {"attn_v.bias", BIAS, SZ_KV, SZ_NONE, 1},	    {"attn_output.weight", MATRIX, SZ_Q, SZ_DIM, 0},
    {"ffn_norm.weight", NORM, SZ_DIM, SZ_NONE, 0},  {"ffn_gate.weight", MATRIX, SZ_DIM, SZ_FF, 0},
    {"ffn_up.weight", MATRIX, SZ_DIM, SZ_FF, 0},    {"ffn_down.weight", MATRIX, SZ_FF, SZ_DIM, 0},
};

typedef int (*tensor_f)(void *arg, const char *name, int ndims, const uint64_t *dims, gk_qtype_t t,
			enum kind kind);

static uint64_t size_of(const gl_randmodel_t *s, enum size z)
{
	int hd = s->dim / s->n_heads;
	uint64_t v[] = {[SZ_NONE] = 1,
			[SZ_DIM] = (uint64_t)s->dim,
			[SZ_Q] = (uint64_t)s->n_heads * (uint64_t)hd,
			[SZ_KV] = (uint64_t)s->n_kv_heads * (uint64_t)hd,
			[SZ_FF] = (uint64_t)s->n_ff,
			[SZ_VOCAB] = (uint64_t)s->n_vocab};
	return v[z];
}

static int one(const gl_randmodel_t *s, gk_qtype_t wt, const char *name, enum kind k, enum size in,
	       enum size out, tensor_f f, void *arg)
{
	uint64_t dims[2] = {size_of(s, in), size_of(s, out)};
	return f(arg, name, out == SZ_NONE ? 1 : 2, dims, k == MATRIX ? wt : GK_Q_F32, k);
}

/* F for every tensor of shape S with matrices of type WT, in the file's order. */
static int plan(const gl_randmodel_t *s, gk_qtype_t wt, tensor_f f, void *arg)
{
	if (one(s, wt, "token_embd.weight", MATRIX, SZ_DIM, SZ_VOCAB, f, arg) < 0)
		return -1;
	for (int l = 0; l < s->n_layers; l++)
		for (size_t i = 0; i < sizeof layer_tensors / sizeof layer_tensors[0]; i++) {
			char name[GL_GGUF_MAX_NAME];
			if (layer_tensors[i].bias_only && !s->qkv_bias)
				continue;
			snprintf(name, sizeof name, "blk.%d.%s", l, layer_tensors[i].name);
			if (one(s, wt, name, layer_tensors[i].kind, layer_tensors[i].in,
				layer_tensors[i].out, f, arg) < 0)
				return -1;
		}
	if (one(s, wt, "output_norm.weight", NORM, SZ_DIM, SZ_NONE, f, arg) < 0)
		return -1;
	if (!s->tied_output && one(s, wt, "output.weight", MATRIX, SZ_DIM, SZ_VOCAB, f, arg) < 0)
		return -1;
	return 0;
}

static int add_bytes(void *arg, const char *name, int ndims, const uint64_t *dims, gk_qtype_t t,
		     enum kind kind)
{
	(void)name;
	(void)kind;
	uint64_t rb = gk_qtype_row_bytes(t, (size_t)dims[0]);
	if (rb == 0)
		return errno = EINVAL, -1;
	*(uint64_t *)arg += rb * (ndims > 1 ? dims[1] : 1);
	return 0;
}

static int check_shape(const gl_randmodel_t *s, gk_qtype_t wt, gp_error_t *err)
{
	if (!gk_qtype_valid((int)wt))
		return errno = EINVAL, gp_errprintf(err, "unknown weight type %d", (int)wt);
	if (s->dim <= 0 || s->n_layers <= 0 || s->n_heads <= 0 || s->n_kv_heads <= 0 ||
	    s->n_ff <= 0 || s->n_ctx <= 0 || s->dim % s->n_heads || s->n_heads % s->n_kv_heads ||
	    (s->dim / s->n_heads) % 2 || s->n_vocab < N_SPECIAL + N_BYTES ||
	    (strcmp(s->arch, "llama") && strcmp(s->arch, "qwen2")))
		return errno = EINVAL, gp_errprintf(err, "shape '%s' is not consistent", s->name);
	uint64_t bytes = 0;
	if (plan(s, wt, add_bytes, &bytes) < 0)
		return errno = EINVAL,
		       gp_errprintf(
			   err, "shape '%s': rows of %d, %d or %d values are not whole %s blocks",
			   s->name, s->dim, s->n_ff, s->n_heads * (s->dim / s->n_heads),
			   gk_qtype_name(wt));
	return 0;
}

uint64_t gl_randmodel_bytes(const gl_randmodel_t *shape, gk_qtype_t wtype)
{
	uint64_t bytes = 0;
	if (!gk_qtype_valid((int)wtype) || plan(shape, wtype, add_bytes, &bytes) < 0)
		return 0;
	return bytes;
}

/* ---- the values ---- */

#define MAX_THREADS 16

typedef struct {
	int nthreads;
	float *row[MAX_THREADS]; /* one row of f32 values per thread, the widest of the model */
} scratch_t;

typedef struct {
	scratch_t *scratch;
	uint64_t key, at; /* the generator's key; values made so far */
	size_t cols;
	gk_qtype_t t;
	float mean, std;
} gen_t;

/* Roughly normal, mean 0, deviation 1: the sum of the four 16-bit parts of one mixed word
 * (a value costs one splitmix64, so a 7B model is made in seconds, not minutes). */
static float normalish(uint64_t key, uint64_t i)
{
	uint64_t r = gk_splitmix64(key + i);
	double s = (double)(r & 0xFFFF) + (double)((r >> 16) & 0xFFFF) +
		   (double)((r >> 32) & 0xFFFF) + (double)(r >> 48);
	return (float)((s - 4 * 32767.5) / 37837.23); /* 65536 sqrt(4 / 12) */
}

/* Rows R0..R1-1 of a chunk at DST, row R0 being value AT0 of the tensor on. */
typedef struct {
	const gen_t *g;
	uint8_t *dst;
	size_t r0, r1;
	uint64_t at0;
	float *row;
	int rc;
} job_t;

static void *run_job(void *arg)
{
	job_t *j = arg;
	const gen_t *g = j->g;
	size_t rb = gk_qtype_row_bytes(g->t, g->cols);
	for (size_t r = j->r0; r < j->r1 && j->rc == 0; r++) {
		uint64_t at = j->at0 + (r - j->r0) * g->cols;
		for (size_t c = 0; c < g->cols; c++)
			j->row[c] = g->mean + g->std * normalish(g->key, at + c);
		j->rc = gl_quantize_row(g->t, j->row, j->dst + r * rb, g->cols);
	}
	return NULL;
}

/* The next BYTES of the tensor: its rows cut among the threads (the K-quants' scale searches
 * cost about 100 ns a value: a 7B model's on one core would take twenty minutes). */
static int fill(void *arg, void *dst, size_t bytes)
{
	gen_t *g = arg;
	size_t rb = gk_qtype_row_bytes(g->t, g->cols), nrows = bytes / rb;
	int n = g->scratch->nthreads;
	if ((size_t)n > nrows)
		n = (int)nrows;
	job_t jobs[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	int started[MAX_THREADS] = {0};
	for (int i = 0; i < n; i++) {
		size_t r0 = nrows * (size_t)i / (size_t)n, r1 = nrows * (size_t)(i + 1) / (size_t)n;
		jobs[i] = (job_t){g, dst, r0, r1, g->at + r0 * g->cols, g->scratch->row[i], 0};
		if (i > 0)
			started[i] = pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
		if (i > 0 && !started[i])
			run_job(&jobs[i]); /* no thread: do it here */
	}
	if (n > 0)
		run_job(&jobs[0]);
	int rc = 0;
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(tid[i], NULL);
		rc |= jobs[i].rc;
	}
	g->at += nrows * g->cols;
	return rc ? (errno = EINVAL, -1) : 0;
}

static uint64_t name_key(uint64_t seed, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return gk_splitmix64(seed ^ h);
}

typedef struct {
	gl_gguf_writer_t *w;
	gen_t *gens;
	int n;
	uint64_t seed;
	scratch_t scratch;
} build_t;

static int add_tensor(void *arg, const char *name, int ndims, const uint64_t *dims, gk_qtype_t t,
		      enum kind kind)
{
	build_t *b = arg;
	gen_t *g = &b->gens[b->n++];
	g->scratch = &b->scratch;
	g->key = name_key(b->seed, name);
	g->cols = (size_t)dims[0];
	g->t = t;
	g->mean = kind == NORM ? 1.0f : 0.0f;
	g->std = kind == NORM ? 0.1f : 0.02f;
	return gl_gguf_add_tensor(b->w, name, ndims, dims, t, NULL, fill, g);
}

static int count_tensor(void *arg, const char *name, int ndims, const uint64_t *dims, gk_qtype_t t,
			enum kind kind)
{
	(void)name, (void)ndims, (void)dims, (void)t, (void)kind;
	++*(int *)arg;
	return 0;
}

/* ---- metadata ---- */

static int set_arch_u32(gl_gguf_writer_t *w, const char *arch, const char *key, uint32_t v)
{
	char k[128];
	snprintf(k, sizeof k, "%s.%s", arch, key);
	return gl_gguf_set_u32(w, k, v);
}

static int set_arch_f32(gl_gguf_writer_t *w, const char *arch, const char *key, float v)
{
	char k[128];
	snprintf(k, sizeof k, "%s.%s", arch, key);
	return gl_gguf_set_f32(w, k, v);
}

static int hparams(gl_gguf_writer_t *w, const gl_randmodel_t *s)
{
	const char *a = s->arch;
	int hd = s->dim / s->n_heads;
	if (gl_gguf_set_str(w, "general.architecture", a) < 0 ||
	    gl_gguf_set_str(w, "general.name", s->name) < 0 ||
	    set_arch_u32(w, a, "context_length", (uint32_t)s->n_ctx) < 0 ||
	    set_arch_u32(w, a, "embedding_length", (uint32_t)s->dim) < 0 ||
	    set_arch_u32(w, a, "block_count", (uint32_t)s->n_layers) < 0 ||
	    set_arch_u32(w, a, "feed_forward_length", (uint32_t)s->n_ff) < 0 ||
	    set_arch_u32(w, a, "attention.head_count", (uint32_t)s->n_heads) < 0 ||
	    set_arch_u32(w, a, "attention.head_count_kv", (uint32_t)s->n_kv_heads) < 0 ||
	    set_arch_f32(w, a, "rope.freq_base", s->rope_base) < 0 ||
	    set_arch_f32(w, a, "attention.layer_norm_rms_epsilon", s->norm_eps) < 0 ||
	    set_arch_u32(w, a, "rope.dimension_count", (uint32_t)hd) < 0)
		return -1;
	return 0;
}

/* Made-up pieces after the specials and bytes: single characters, alone and after the word
 * mark U+2581, then lowercase strings of 2, 3, ... letters, each alone and after the mark. */
static void make_pieces(char **tok, char *arena, int from, int to)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				    ".,!?'-:;()\"";
	const int nchars = (int)sizeof chars - 1;
	int i = from;
	char *p = arena;
#define PIECE(...) (tok[i++] = p, p += sprintf(p, __VA_ARGS__) + 1)
	PIECE("\xe2\x96\x81");
	for (int c = 0; c < nchars && i < to; c++) {
		PIECE("%c", chars[c]);
		if (i < to)
			PIECE("\xe2\x96\x81%c", chars[c]);
	}
	for (int len = 2; i < to; len++) {
		char w[16] = {0};
		long total = 1;
		for (int k = 0; k < len; k++)
			total *= 26;
		for (long n = 0; n < total && i < to; n++) {
			for (int k = 0, v = (int)n; k < len; k++, v /= 26)
				w[len - 1 - k] = (char)('a' + v % 26);
			PIECE("%s", w);
			if (i < to)
				PIECE("\xe2\x96\x81%s", w);
		}
	}
#undef PIECE
}

static int vocab(gl_gguf_writer_t *w, const gl_randmodel_t *s)
{
	int n = s->n_vocab, rc = -1;
	char **tok = calloc((size_t)n, sizeof *tok);
	char *arena = malloc((size_t)n * 16 + 64);
	float *scores = calloc((size_t)n, sizeof *scores);
	int32_t *types = calloc((size_t)n, sizeof *types);
	if (!tok || !arena || !scores || !types) {
		errno = ENOMEM;
		goto out;
	}
	static char specials[N_SPECIAL][8] = {"<unk>", "<s>", "</s>"}, bytes[N_BYTES][8];
	static const int32_t special_type[N_SPECIAL] = {2, 3, 3}; /* unknown, control, control */
	for (int i = 0; i < N_SPECIAL; i++) {
		tok[i] = specials[i];
		types[i] = special_type[i];
	}
	for (int i = 0; i < N_BYTES; i++) {
		snprintf(bytes[i], sizeof bytes[i], "<0x%02X>", i);
		tok[N_SPECIAL + i] = bytes[i];
		types[N_SPECIAL + i] = 6; /* byte */
	}
	make_pieces(tok, arena, N_SPECIAL + N_BYTES, n);
	for (int i = N_SPECIAL + N_BYTES; i < n; i++) {
		types[i] = 1; /* normal */
		scores[i] = -(float)(i - N_SPECIAL - N_BYTES);
	}
	if (gl_gguf_set_str(w, "tokenizer.ggml.model", "llama") == 0 &&
	    gl_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok,
				(uint64_t)n) == 0 &&
	    gl_gguf_set_arr_f32(w, "tokenizer.ggml.scores", scores, (uint64_t)n) == 0 &&
	    gl_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", types, (uint64_t)n) == 0 &&
	    gl_gguf_set_u32(w, "tokenizer.ggml.bos_token_id", 1) == 0 &&
	    gl_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2) == 0 &&
	    gl_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", 0) == 0 &&
	    gl_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", 1) == 0)
		rc = 0;
out:
	free(tok);
	free(arena);
	free(scores);
	free(types);
	return rc;
}

int gl_randmodel_write(const char *path, const gl_randmodel_t *s, gk_qtype_t wt, uint64_t seed,
		       gp_error_t *err)
{
	if (check_shape(s, wt, err) < 0)
		return -1;
	build_t b = {.seed = seed};
	int ntensors = 0, rc = -1;
	plan(s, wt, count_tensor, &ntensors);
	size_t widest = (size_t)(s->n_ff > s->dim ? s->n_ff : s->dim);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	b.scratch.nthreads = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
	int rows_ok = 1;
	for (int i = 0; i < b.scratch.nthreads; i++)
		rows_ok &= (b.scratch.row[i] = malloc(widest * sizeof(float))) != NULL;
	b.gens = calloc((size_t)ntensors, sizeof *b.gens);
	b.w = gl_gguf_writer_create();
	if (!b.gens || !rows_ok || !b.w) {
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
	} else if (hparams(b.w, s) < 0 || vocab(b.w, s) < 0 || plan(s, wt, add_tensor, &b) < 0) {
		gp_errprintf(err, "shape '%s': cannot describe the model: %s", s->name,
			     strerror(errno));
	} else {
		rc = gl_gguf_write(b.w, path, err);
	}
	int e = errno;
	gl_gguf_writer_destroy(&b.w);
	free(b.gens);
	for (int i = 0; i < b.scratch.nthreads; i++)
		free(b.scratch.row[i]);
	errno = e;
	return rc;
}
