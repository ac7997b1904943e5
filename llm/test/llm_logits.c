/* llm_logits.c - the C forward pass (cpu backend) over a token list, for the comparison with the
 * PyTorch reference (tests/tools/llm_check.py):
 *   llm_logits MODEL --tokens 1,2,3 --out FILE [--mode prefill|decode|chunk=N] [--kv f32|f16]
 *     writes raw f32 logits, ntok x n_vocab: one prefill batch with all_logits, or one token a
 *     step through the KV cache, or prefill chunks of N
 *   llm_logits MODEL --tokens ... --batch K
 *     K sequences (rotations of the list) alone and then in one batch, prefill and one decode
 *     step; prints "batch maxdiff D maxabs M"
 *   llm_logits MODEL --tokens ... --greedy N
 *     prints the N greedy continuation ids, comma-separated */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/forward.h"

#define MAXTOK 4096

typedef struct {
	gk_backend_t *b;
	gl_gguf_t *g;
	gl_hparams_t hp;
	gl_weights_t *w;
	gl_kv_t *kv;
	gl_fwd_t *f;
	int nv;
} ctx_t;

static void die(const char *what, const char *why)
{
	fprintf(stderr, "llm_logits: %s: %s\n", what, why);
	exit(1);
}

static void open_model(ctx_t *c, const char *path, gk_dtype_t kv_t, int max_tokens)
{
	gp_error_t err = { { 0 } };
	gk_error_t ge;
	if (!(c->b = gk_backend_open("cpu", &ge)))
		die("cpu backend", ge.text);
	if (!(c->g = gl_gguf_open(path, &err)))
		die(path, err.text);
	if (gl_hparams_read(c->g, &c->hp, &err) < 0)
		die(path, err.text);
	if (!(c->w = gl_weights_load(c->b, c->g, &c->hp, 0, c->hp.n_layers, 1, 1, &err)))
		die("weights", err.text);
	int row = c->hp.n_kv_heads * c->hp.head_dim;
	/* 16-token blocks, enough for 8 sequences of MAXTOK, given out as sequences grow */
	if (!(c->kv = gl_kv_create(c->b, c->hp.n_layers, 8 * MAXTOK / 16, 16, row, kv_t, 8, &err)))
		die("kv cache", err.text);
	if (!(c->f = gl_fwd_create(c->b, &c->hp, c->w, c->kv, max_tokens, &err)))
		die("forward", err.text);
	c->nv = c->hp.n_vocab;
}

/* One batch: sequences SEQ[j] bring N[j] tokens of TOKS (in order); logits into OUT. */
static void step(ctx_t *c, int nseq, const int32_t *seq, const int32_t *n, const int32_t *toks,
		 int all, float *out)
{
	gl_batch_t bt = { .nseq = nseq, .tokens = toks, .all_logits = all };
	gp_error_t err = { { 0 } };
	for (int j = 0; j < nseq; j++) {
		bt.seq[j] = seq[j];
		bt.n[j] = n[j];
		bt.ctx[j] = gl_kv_len(c->kv, seq[j]) + n[j];
		bt.ntok += n[j];
		if (gl_kv_reserve(c->kv, seq[j], bt.ctx[j]) < 0)
			die("kv", strerror(errno));
	}
	if (gl_fwd_embed(c->f, &bt, &err) < 0 || gl_fwd_layers(c->f, &bt, &err) < 0 ||
	    gl_fwd_head(c->f, &bt, out, &err) < 0)
		die("forward", err.text);
}

static int parse_tokens(const char *s, int32_t *t)
{
	int n = 0;
	while (*s && n < MAXTOK) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s)
			die("--tokens", "not a list of integers");
		t[n++] = (int32_t)v;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void write_out(const char *path, const float *x, size_t n)
{
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(x, sizeof *x, n, fp) != n || fclose(fp) != 0)
		die(path, strerror(errno));
}

/* Logits of every token: one batch, one token a step, or chunks of CHUNK. */
static void run_logits(ctx_t *c, const int32_t *t, int n, int chunk, float *out)
{
	for (int i = 0; i < n; i += chunk) {
		int32_t seq = 0, k = n - i < chunk ? n - i : chunk;
		step(c, 1, &seq, &k, t + i, 1, out + (size_t)i * (size_t)c->nv);
	}
}

static int32_t argmax(const float *x, int n)
{
	int32_t best = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

static void run_greedy(ctx_t *c, const int32_t *t, int n, int ngen)
{
	float *l = malloc((size_t)c->nv * 4);
	int32_t seq = 0, tok;
	step(c, 1, &seq, &n, t, 0, l);
	for (int i = 0; i < ngen; i++) {
		tok = argmax(l, c->nv);
		printf("%s%d", i ? "," : "", tok);
		if (i + 1 < ngen) {
			int32_t one = 1;
			step(c, 1, &seq, &one, &tok, 0, l);
		}
	}
	printf("\n");
	free(l);
}

static double maxdiff(const float *a, const float *b, size_t n, double *maxabs)
{
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > d || isnan(e))
			d = isnan(e) ? INFINITY : e;
		if (fabs(a[i]) > *maxabs)
			*maxabs = fabs(a[i]);
	}
	return d;
}

/* K rotations of the list, each alone in sequences 0..K-1, then together in K..2K-1. */
static void run_batch(ctx_t *c, const int32_t *t, int n, int K)
{
	size_t nv = (size_t)c->nv;
	int32_t *toks = malloc((size_t)K * n * 4), seqs[8], ns[8], next[8];
	float *alone = malloc((size_t)K * n * nv * 4), *both = malloc((size_t)K * n * nv * 4);
	float *da = malloc((size_t)K * nv * 4), *db = malloc((size_t)K * nv * 4);
	for (int j = 0; j < K; j++)
		for (int i = 0; i < n; i++)
			toks[j * n + i] = t[(i + j) % n];
	for (int j = 0; j < K; j++) {
		int32_t s = j;
		step(c, 1, &s, &n, toks + j * n, 1, alone + (size_t)j * n * nv);
		next[j] = t[j % n];
		int32_t one = 1;
		step(c, 1, &s, &one, &next[j], 0, da + (size_t)j * nv);
	}
	for (int j = 0; j < K; j++) {
		seqs[j] = K + j;
		ns[j] = n;
	}
	step(c, K, seqs, ns, toks, 1, both);
	for (int j = 0; j < K; j++)
		ns[j] = 1;
	step(c, K, seqs, ns, next, 0, db);
	double mabs = 0, d1 = maxdiff(both, alone, (size_t)K * n * nv, &mabs);
	double d2 = maxdiff(db, da, (size_t)K * nv, &mabs);
	printf("batch maxdiff %g maxabs %g\n", d1 > d2 ? d1 : d2, mabs);
	free(toks);
	free(alone);
	free(both);
	free(da);
	free(db);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die("usage", "llm_logits MODEL --tokens LIST [--out FILE [--mode M] | --batch K | "
			     "--greedy N] [--kv f32|f16]");
	const char *out = NULL, *mode = "prefill";
	int32_t *t = malloc(MAXTOK * 4);
	int n = 0, batch = 0, greedy = 0;
	gk_dtype_t kv_t = GK_F32;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die(a, "needs a value");
		if (strcmp(a, "--tokens") == 0)
			n = parse_tokens(v, t);
		else if (strcmp(a, "--out") == 0)
			out = v;
		else if (strcmp(a, "--mode") == 0)
			mode = v;
		else if (strcmp(a, "--batch") == 0)
			batch = atoi(v);
		else if (strcmp(a, "--greedy") == 0)
			greedy = atoi(v);
		else if (strcmp(a, "--kv") == 0)
			kv_t = strcmp(v, "f16") == 0 ? GK_F16 : GK_F32;
		else
			die(a, "unknown option");
		i++;
	}
	if (n < 1)
		die("--tokens", "no tokens");
	if (batch > 8 || (greedy && n + greedy > MAXTOK))
		die("options", "out of range");
	ctx_t c;
	open_model(&c, argv[1], kv_t, batch ? batch * n : n);
	for (int i = 0; i < n; i++)
		if (t[i] < 0 || t[i] >= c.nv)
			die("--tokens", "an id outside the vocabulary");
	if (batch > 0) {
		run_batch(&c, t, n, batch);
	} else if (greedy > 0) {
		run_greedy(&c, t, n, greedy);
	} else {
		int chunk = strcmp(mode, "decode") == 0 ? 1
			    : strncmp(mode, "chunk=", 6) == 0 ? atoi(mode + 6)
							       : n;
		if (chunk < 1 || !out)
			die("--mode/--out", "bad mode or no --out");
		float *l = malloc((size_t)n * (size_t)c.nv * 4);
		run_logits(&c, t, n, chunk, l);
		write_out(out, l, (size_t)n * (size_t)c.nv);
		free(l);
	}
	gl_fwd_destroy(&c.f);
	gl_kv_destroy(&c.kv);
	gl_weights_destroy(&c.w);
	gl_gguf_close(&c.g);
	gk_backend_close(&c.b);
	free(t);
	return 0;
}
