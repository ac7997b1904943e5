/* llm_logits.c - the C forward pass (the cpu backend, or --backend cuda|hip|auto) over a token
 * list, for the comparison with the PyTorch reference (tests/tools/llm_check.py):
 *   llm_logits MODEL --tokens 1,2,3 --out FILE [--mode prefill|decode|chunk=N] [--kv f32|f16]
 *     [--kv-blocks N] (the KV cache's 16-token blocks: few make the engine preempt)
 *     writes raw f32 logits, ntok x n_vocab: one prefill batch with all_logits, or one token a
 *     step through the KV cache, or prefill chunks of N
 *   llm_logits MODEL --tokens ... --batch K
 *     K sequences (rotations of the list) alone and then in one batch, prefill and one decode
 *     step; prints "batch maxdiff D maxabs M"
 *   llm_logits MODEL --tokens ... --greedy N
 *     prints the N greedy continuation ids, comma-separated
 *   llm_logits MODEL --tokens ... --engine K --greedy N
 *     K prompts (rotations of the list) at once through gl_engine and gl_exec_local (prefill in
 *     chunks of 8 tokens, continuous batching), each answer's text against its greedy ids alone;
 *     prints "engine ok, R refusals, T tokens in S s (...)" (R: batches the executor refused
 *     for KV space) or the first difference and exits 1 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/engine.h"
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

static void open_model(ctx_t *c, const char *path, const char *backend, gk_dtype_t kv_t,
		       int max_tokens, int kv_blocks)
{
	gp_error_t err = {{0}};
	gk_error_t ge;
	if (!(c->b = gk_backend_open(backend, &ge)))
		die(backend, ge.text);
	if (!(c->g = gl_gguf_open(path, &err)))
		die(path, err.text);
	if (gl_hparams_read(c->g, &c->hp, &err) < 0)
		die(path, err.text);
	if (!(c->w = gl_weights_load(c->b, c->g, &c->hp, 0, c->hp.n_layers, 1, 1, &err)))
		die("weights", err.text);
	int row = c->hp.n_kv_heads * c->hp.head_dim;
	/* 16-token blocks, enough for 8 sequences of MAXTOK, given out as sequences grow */
	if (!(c->kv = gl_kv_create(c->b, c->hp.n_layers, kv_blocks, 16, row, kv_t, 8, &err)))
		die("kv cache", err.text);
	if (!(c->f = gl_fwd_create(c->b, &c->hp, c->w, c->kv, max_tokens, &err)))
		die("forward", err.text);
	c->nv = c->hp.n_vocab;
}

/* One batch: sequences SEQ[j] bring N[j] tokens of TOKS (in order); logits into OUT. */
static void step(ctx_t *c, int nseq, const int32_t *seq, const int32_t *n, const int32_t *toks,
		 int all, float *out)
{
	gl_batch_t bt = {.nseq = nseq, .tokens = toks, .all_logits = all};
	gp_error_t err = {{0}};
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

/* The greedy ids of T alone in sequence SEQ (given back after). */
static void greedy_ids(ctx_t *c, int32_t seq, const int32_t *t, int n, int ngen, int32_t *ids)
{
	float *l = malloc((size_t)c->nv * 4);
	step(c, 1, &seq, &n, t, 0, l);
	for (int i = 0; i < ngen; i++) {
		ids[i] = argmax(l, c->nv);
		int32_t one = 1;
		if (i + 1 < ngen)
			step(c, 1, &seq, &one, &ids[i], 0, l);
	}
	gl_kv_release(c->kv, seq);
	free(l);
}

typedef struct {
	char text[16384];
	size_t len;
	int done, why, ntok, completion;
} answer_t;

static void on_text(void *arg, const char *text, size_t len, int ntokens)
{
	answer_t *a = arg;
	if (a->len + len < sizeof a->text) {
		memcpy(a->text + a->len, text, len);
		a->len += len;
	}
	a->ntok += ntokens;
}

static void on_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	answer_t *a = arg;
	(void)error;
	a->completion = u->completion_tokens;
	a->done = 1;
	a->why = (int)why;
}

/* The engine's text against the pieces of the ids (the engine turns an unfinished character at
 * the very end into U+FFFD: that end is allowed to differ by up to 3 bytes). */
static int same_text(const gl_tok_t *tok, const int32_t *ids, int n, const answer_t *a)
{
	char want[16384];
	size_t len = 0;
	for (int i = 0; i < n; i++) {
		int k = gl_tok_piece(tok, ids[i], 0, want + len, sizeof want - len);
		if (k > 0 && len + (size_t)k < sizeof want)
			len += (size_t)k;
	}
	if (a->len == len && memcmp(a->text, want, len) == 0)
		return 1;
	return a->len >= 3 && memcmp(a->text + a->len - 3, "\xEF\xBF\xBD", 3) == 0 &&
	       len >= a->len - 3 && len - (a->len - 3) <= 3 &&
	       memcmp(a->text, want, a->len - 3) == 0;
}

/* gl_exec_local_ops, counting the batches refused for KV space */
static int refusals;
static int counting_submit(void *ctx, uint64_t id, const gl_batch_t *bt, gp_error_t *err)
{
	int rc = gl_exec_local_ops.submit(ctx, id, bt, err);
	if (rc < 0 && errno == ENOSPC)
		refusals++;
	return rc;
}

static void run_engine(ctx_t *c, const int32_t *t, int n, int K, int ngen)
{
	gp_error_t err = {{0}};
	gl_tok_t *tok = gl_tok_from_gguf(c->g, &err);
	if (!tok)
		die("tokenizer", err.text);
	int32_t *toks = malloc((size_t)K * n * 4), *ids = malloc((size_t)K * ngen * 4);
	answer_t *ans = calloc((size_t)K, sizeof *ans);
	for (int j = 0; j < K; j++) {
		for (int i = 0; i < n; i++)
			toks[j * n + i] = t[(i + j) % n];
		greedy_ids(c, 0, toks + j * n, n, ngen, ids + j * ngen);
	}
	gl_exec_local_t *x = gl_exec_local_create(c->b, &c->hp, c->w, c->kv, 8, &err);
	if (!x)
		die("exec", err.text);
	gl_engine_opts_t o = {.max_seqs = K, .max_batch_tokens = 8, .n_ctx = n + ngen + 1};
	gl_exec_ops_t ops = gl_exec_local_ops;
	ops.submit = counting_submit;
	gl_engine_t *e = gl_engine_create(tok, &c->hp, &ops, x, &o, &err);
	if (!e)
		die("engine", err.text);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int j = 0; j < K; j++) {
		gl_request_t r = {.prompt = toks + j * n,
				  .nprompt = n,
				  .max_tokens = ngen,
				  .ignore_eos = 1,
				  .on_text = on_text,
				  .on_done = on_done,
				  .arg = &ans[j]};
		gl_sample_defaults(&r.sp);
		r.sp.temperature = 0;
		if (gl_engine_submit(e, &r, &err) < 0)
			die("submit", err.text);
		if (gl_engine_run(e, 0, &err) < 0) /* the next one joins a running batch */
			die("run", err.text);
	}
	while (gl_engine_open(e) > 0)
		if (gl_engine_run(e, -1, &err) < 0)
			die("run", err.text);
	int bad = 0;
	for (int j = 0; j < K && !bad; j++)
		if (!ans[j].done || ans[j].why != GL_FINISH_LENGTH || ans[j].completion != ngen ||
		    !same_text(tok, ids + j * ngen, ngen, &ans[j])) {
			printf("engine: answer %d differs (done %d, why %d, %d tokens)\n", j,
			       ans[j].done, ans[j].why, ans[j].completion);
			bad = 1;
		}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (!bad)
		printf("engine ok, %d refusals, %d tokens in %.3f s (%.1f tokens/s)\n", refusals,
		       K * ngen, sec, K * ngen / sec);
	gl_engine_destroy(&e);
	gl_exec_local_destroy(&x);
	gl_tok_destroy(&tok);
	free(toks);
	free(ids);
	free(ans);
	if (bad)
		exit(1);
}

static double maxdiff(const float *a, const float *b, size_t n, double *maxabs)
{
	double d = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]);
		if (e > d || isnan(e))
			d = isnan(e) ? INFINITY : e;
		if (fabs((double)a[i]) > *maxabs)
			*maxabs = fabs((double)a[i]);
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
	const char *out = NULL, *mode = "prefill", *backend = "cpu";
	int32_t *t = malloc(MAXTOK * 4);
	int n = 0, batch = 0, greedy = 0, engine = 0, kv_blocks = 8 * MAXTOK / 16;
	gk_dtype_t kv_t = GK_F32;
	for (int i = 2; i < argc; i += 2) { /* every option takes a value */
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
		else if (strcmp(a, "--engine") == 0)
			engine = atoi(v);
		else if (strcmp(a, "--greedy") == 0)
			greedy = atoi(v);
		else if (strcmp(a, "--kv") == 0)
			kv_t = strcmp(v, "f16") == 0 ? GK_F16 : GK_F32;
		else if (strcmp(a, "--backend") == 0)
			backend = v;
		else if (strcmp(a, "--kv-blocks") == 0)
			kv_blocks = atoi(v);
		else
			die(a, "unknown option");
	}
	if (n < 1)
		die("--tokens", "no tokens");
	if (batch > 8 || engine > 8 || (greedy && n + greedy > MAXTOK))
		die("options", "out of range");
	ctx_t c;
	open_model(&c, argv[1], backend, kv_t, batch ? batch * n : n, kv_blocks);
	for (int i = 0; i < n; i++)
		if (t[i] < 0 || t[i] >= c.nv)
			die("--tokens", "an id outside the vocabulary");
	if (engine > 0 && greedy > 0) {
		run_engine(&c, t, n, engine, greedy);
	} else if (batch > 0) {
		run_batch(&c, t, n, batch);
	} else if (greedy > 0) {
		run_greedy(&c, t, n, greedy);
	} else {
		int chunk = strcmp(mode, "decode") == 0	      ? 1
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
