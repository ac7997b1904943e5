/* test_randmodel: random-weight models (llm/randmodel.c). Properties: each test shape, in each
 * type its rows fit, reads back with every tensor llm/model.h names present, of the right dims
 * and type (norms and biases f32), and the metadata an engine and a tokenizer read; the weights
 * have the stated statistics (matrices deviation 0.02, norms around 1) whatever their type (the
 * same values under every type); one seed gives the same file twice, another a different one;
 * a type whose blocks the rows do not fill, and an inconsistent shape, are refused with no file
 * left. argv[1]: a scratch directory. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/gguf.h"
#include "llm/quant.h"
#include "llm/randmodel.h"
#include "llm/test/gguf_check.h"

static char dir[256];

static uint32_t u32(const gl_gguf_t *g, const char *arch, const char *key)
{
	char k[128];
	uint32_t v = 0;
	snprintf(k, sizeof k, "%s.%s", arch, key);
	CHECK(gl_gguf_get_u32(g, k, &v) == 0);
	return v;
}

static void has(const gl_gguf_t *g, const char *name, gk_qtype_t t, uint64_t d0, uint64_t d1)
{
	const gl_tensor_t *x = gl_gguf_find(g, name);
	if (!x)
		fprintf(stderr, "missing %s\n", name);
	CHECK(x && x->type == t && x->dims[0] == d0 && x->ndims == (d1 ? 2 : 1));
	CHECK(!d1 || x->dims[1] == d1);
}

static void check_meta(const gl_gguf_t *g, const gl_randmodel_t *s)
{
	const char *str;
	size_t len;
	float f;
	CHECK(gl_gguf_get_str(g, "general.architecture", &str, &len) == 0 &&
	      strcmp(str, s->arch) == 0);
	CHECK(u32(g, s->arch, "embedding_length") == (uint32_t)s->dim);
	CHECK(u32(g, s->arch, "block_count") == (uint32_t)s->n_layers);
	CHECK(u32(g, s->arch, "feed_forward_length") == (uint32_t)s->n_ff);
	CHECK(u32(g, s->arch, "attention.head_count") == (uint32_t)s->n_heads);
	CHECK(u32(g, s->arch, "attention.head_count_kv") == (uint32_t)s->n_kv_heads);
	CHECK(u32(g, s->arch, "context_length") == (uint32_t)s->n_ctx);
	CHECK(u32(g, s->arch, "rope.dimension_count") == (uint32_t)(s->dim / s->n_heads));
	char k[128];
	snprintf(k, sizeof k, "%s.rope.freq_base", s->arch);
	CHECK(gl_gguf_get_f32(g, k, &f) == 0 && f == s->rope_base);
	snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", s->arch);
	CHECK(gl_gguf_get_f32(g, k, &f) == 0 && f == s->norm_eps);
	/* the vocabulary */
	gl_gguf_vtype_t et;
	uint64_t n;
	int64_t v;
	CHECK(gl_gguf_get_str(g, "tokenizer.ggml.model", &str, &len) == 0 &&
	      strcmp(str, "llama") == 0);
	CHECK(gl_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n) == 0 &&
	      n == (uint64_t)s->n_vocab);
	CHECK(gl_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n) == 0 &&
	      n == (uint64_t)s->n_vocab);
	CHECK(gl_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n) == 0 &&
	      n == (uint64_t)s->n_vocab);
	CHECK(gl_gguf_arr_str(g, "tokenizer.ggml.tokens", 1, &str, &len) == 0 &&
	      strcmp(str, "<s>") == 0);
	CHECK(gl_gguf_arr_str(g, "tokenizer.ggml.tokens", 3 + 0x41, &str, &len) == 0 &&
	      strcmp(str, "<0x41>") == 0);
	CHECK(gl_gguf_arr_i64(g, "tokenizer.ggml.token_type", 2, &v) == 0 && v == 3);
	CHECK(gl_gguf_arr_i64(g, "tokenizer.ggml.token_type", 3 + 255, &v) == 0 && v == 6);
	CHECK(gl_gguf_arr_i64(g, "tokenizer.ggml.token_type", 259, &v) == 0 && v == 1);
	uint32_t id;
	CHECK(gl_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &id) == 0 && id == 1);
	CHECK(gl_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &id) == 0 && id == 2);
	CHECK(gl_gguf_get_u32(g, "tokenizer.ggml.unknown_token_id", &id) == 0 && id == 0);
	/* every piece is different */
	for (uint64_t i = 1; i < (uint64_t)s->n_vocab; i++) {
		const char *a, *b;
		gl_gguf_arr_str(g, "tokenizer.ggml.tokens", i - 1, &a, &len);
		for (uint64_t j = i; j < (uint64_t)s->n_vocab && j < i + 64; j++) {
			gl_gguf_arr_str(g, "tokenizer.ggml.tokens", j, &b, &len);
			CHECK(strcmp(a, b) != 0);
		}
	}
}

static void check_tensors(const gl_gguf_t *g, const gl_randmodel_t *s, gk_qtype_t wt)
{
	uint64_t d = (uint64_t)s->dim, hd = d / (uint64_t)s->n_heads,
		 kv = hd * (uint64_t)s->n_kv_heads;
	uint64_t ff = (uint64_t)s->n_ff, nv = (uint64_t)s->n_vocab;
	int n = 2 + (s->tied_output ? 0 : 1) + s->n_layers * (9 + (s->qkv_bias ? 3 : 0));
	CHECK(gl_gguf_ntensors(g) == n);
	has(g, "token_embd.weight", wt, d, nv);
	has(g, "output_norm.weight", GK_Q_F32, d, 0);
	if (s->tied_output)
		CHECK(gl_gguf_find(g, "output.weight") == NULL);
	else
		has(g, "output.weight", wt, d, nv);
	for (int l = 0; l < s->n_layers; l++) {
		char name[64];
#define T(SUFFIX, TYPE, D0, D1)                                                                    \
	snprintf(name, sizeof name, "blk.%d." SUFFIX, l);                                          \
	has(g, name, TYPE, D0, D1)
		T("attn_norm.weight", GK_Q_F32, d, 0);
		T("attn_q.weight", wt, d, d);
		T("attn_k.weight", wt, d, kv);
		T("attn_v.weight", wt, d, kv);
		T("attn_output.weight", wt, d, d);
		T("ffn_norm.weight", GK_Q_F32, d, 0);
		T("ffn_gate.weight", wt, d, ff);
		T("ffn_up.weight", wt, d, ff);
		T("ffn_down.weight", wt, ff, d);
		if (s->qkv_bias) {
			T("attn_q.bias", GK_Q_F32, d, 0);
			T("attn_k.bias", GK_Q_F32, kv, 0);
			T("attn_v.bias", GK_Q_F32, kv, 0);
		}
#undef T
	}
}

/* Mean and deviation of tensor NAME's values. */
static void stats(const gl_gguf_t *g, const char *name, double *mean, double *sd)
{
	const gl_tensor_t *t = gl_gguf_find(g, name);
	CHECK(t);
	float *x = malloc(t->nelem * sizeof *x);
	CHECK(gl_dequantize_row(t->type, t->data, x, t->nelem) == 0);
	double s = 0, s2 = 0;
	for (uint64_t i = 0; i < t->nelem; i++) {
		CHECK(isfinite(x[i]));
		s += x[i];
		s2 += (double)x[i] * x[i];
	}
	*mean = s / (double)t->nelem;
	*sd = sqrt(s2 / (double)t->nelem - *mean * *mean);
	free(x);
}

static gl_gguf_t *write_open(const char *shape, gk_qtype_t t, uint64_t seed, char *path)
{
	gp_error_t err = {{0}};
	snprintf(path, 512, "%s/%s-%s-%llu.gguf", dir, shape, gk_qtype_name(t),
		 (unsigned long long)seed);
	if (gl_randmodel_write(path, gl_randmodel_find(shape), t, seed, &err) < 0)
		fprintf(stderr, "%s\n", err.text);
	gl_gguf_t *g = gl_gguf_open(path, &err);
	CHECK(g);
	return g;
}

static void shapes(void)
{
	static const char *const names[] = {"test-llama", "test-qwen2", "test-kquant"};
	static const gk_qtype_t types[] = {GK_Q_F32,  GK_Q_F16,	 GK_Q_BF16, GK_Q_Q8_0,
					   GK_Q_Q4_0, GK_Q_Q4_K, GK_Q_Q6_K};
	for (size_t i = 0; i < 3; i++)
		for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
			const gl_randmodel_t *s = gl_randmodel_find(names[i]);
			char path[512];
			if (gk_qtype_row_bytes(types[k], (size_t)s->dim) == 0)
				continue;
			gl_gguf_t *g = write_open(names[i], types[k], 5, path);
			check_meta(g, s);
			check_tensors(g, s, types[k]);
			CHECK(gl_gguf_file_size(g) >= gl_randmodel_bytes(s, types[k]));
			double mean, sd;
			stats(g, "blk.1.ffn_down.weight", &mean, &sd);
			CHECK(fabs(mean) < 0.002 && fabs(sd - 0.02) < 0.002);
			stats(g, "blk.0.attn_norm.weight", &mean, &sd);
			CHECK(fabs(mean - 1) < 0.03 && fabs(sd - 0.1) < 0.03);
			gl_gguf_close(&g);
			unlink(path);
		}
}

/* The values do not depend on the type: q8_0's are f32's within q8_0's error. */
static void same_values(void)
{
	char p1[512], p2[512];
	gl_gguf_t *a = write_open("test-qwen2", GK_Q_F32, 9, p1),
		  *b = write_open("test-qwen2", GK_Q_Q8_0, 9, p2);
	const gl_tensor_t *ta = gl_gguf_find(a, "blk.0.attn_k.weight"),
			  *tb = gl_gguf_find(b, "blk.0.attn_k.weight");
	float *x = malloc(tb->nelem * sizeof *x);
	CHECK(gl_dequantize_row(tb->type, tb->data, x, tb->nelem) == 0);
	double e = 0, s = 0;
	for (uint64_t i = 0; i < ta->nelem; i++) {
		float v = ((const float *)ta->data)[i];
		e += (v - x[i]) * (double)(v - x[i]);
		s += (double)v * v;
	}
	CHECK(sqrt(e / s) < gl_quant_rms_bound(GK_Q_Q8_0));
	const gl_tensor_t *ba = gl_gguf_find(a, "blk.1.attn_v.bias"),
			  *bb = gl_gguf_find(b, "blk.1.attn_v.bias");
	CHECK(ba->bytes == bb->bytes && memcmp(ba->data, bb->data, ba->bytes) == 0);
	free(x);
	gl_gguf_close(&a);
	gl_gguf_close(&b);
	unlink(p1);
	unlink(p2);
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	void *b = malloc(*len);
	CHECK(fread(b, 1, *len, f) == *len);
	fclose(f);
	return b;
}

static void seeds(void)
{
	char p1[512], p2[512], p3[512];
	gp_error_t err;
	gl_gguf_t *g = write_open("test-llama", GK_Q_Q4_0, 1, p1);
	gl_gguf_close(&g);
	snprintf(p2, sizeof p2, "%s/again.gguf", dir);
	CHECK(gl_randmodel_write(p2, gl_randmodel_find("test-llama"), GK_Q_Q4_0, 1, &err) == 0);
	g = write_open("test-llama", GK_Q_Q4_0, 2, p3);
	gl_gguf_close(&g);
	size_t n1, n2, n3;
	void *a = slurp(p1, &n1), *b = slurp(p2, &n2), *c = slurp(p3, &n3);
	CHECK(n1 == n2 && memcmp(a, b, n1) == 0);
	CHECK(n1 == n3 && memcmp(a, c, n1) != 0);
	free(a);
	free(b);
	free(c);
	unlink(p1);
	unlink(p2);
	unlink(p3);
}

static void refused(void)
{
	char path[512];
	gp_error_t err = {{0}};
	snprintf(path, sizeof path, "%s/no.gguf", dir);
	CHECK(gl_randmodel_write(path, gl_randmodel_find("test-llama"), GK_Q_Q4_K, 1, &err) < 0);
	CHECK(errno == EINVAL && strstr(err.text, "q4_K") && access(path, F_OK) < 0);
	CHECK(gl_randmodel_write(path, gl_randmodel_find("qwen2-0.5b"), GK_Q_Q6_K, 1, &err) < 0);
	gl_randmodel_t bad = *gl_randmodel_find("test-llama");
	bad.n_kv_heads = 3;
	CHECK(gl_randmodel_write(path, &bad, GK_Q_F16, 1, &err) < 0 && errno == EINVAL);
	bad = *gl_randmodel_find("test-llama");
	bad.n_vocab = 100;
	CHECK(gl_randmodel_write(path, &bad, GK_Q_F16, 1, &err) < 0 && errno == EINVAL);
	CHECK(gl_randmodel_write(path, gl_randmodel_find("test-llama"), (gk_qtype_t)3, 1, &err) <
	      0);
	CHECK(access(path, F_OK) < 0);
	CHECK(gl_randmodel_find("gpt-5") == NULL && errno == ENOENT);
	int n;
	const gl_randmodel_t *all = gl_randmodel_shapes(&n);
	CHECK(n >= 8 && gl_randmodel_find("llama2-7b") == &all[0]);
	/* llama2-7b in q4_0 is about 3.6 GiB of weights, in f16 12.6 GiB */
	CHECK(gl_randmodel_bytes(&all[0], GK_Q_Q4_0) > 3600ull << 20 &&
	      gl_randmodel_bytes(&all[0], GK_Q_Q4_0) < 3700ull << 20);
	CHECK(gl_randmodel_bytes(&all[0], GK_Q_F16) > 12800ull << 20);
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "%s/test_randmodel.%d", argc > 1 ? argv[1] : "/tmp",
		 (int)getpid());
	char cmd[512];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	CHECK(system(cmd) == 0);
	shapes();
	same_values();
	seeds();
	refused();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	printf("test_randmodel: ok\n");
	return 0;
}
