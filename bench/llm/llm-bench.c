/* llm-bench.c - a language model's speed on one backend, measured the way a user feels it:
 * prefill tokens/s, decode tokens/s at batch 1, 8 and 32, and time to first token, against the
 * physical limit of decode (the card's copy bandwidth measured in the same run, divided by the
 * bytes a decode step reads: every weight once, the embedding's rows aside, plus the KV cache).
 * One line per measure, with the process's CPU time beside the wall clock on the cpu backend
 * (a shared machine's wall clock counts other people's work too). --greedy TEXT prints the
 * prompt's token ids and the greedy continuation's, for the cross-check against llama.cpp.
 * bench/llm/run-on-gpu.sh runs it on the GPU machine, bench/llm/cpu-bench.sh beside llama.cpp
 * on the CPU; docs/benchmarks.md has the figures. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "gpool/kernels.h"
#include "llm/forward.h"
#include "llm/gguf.h"
#include "llm/kvcache.h"
#include "llm/model.h"
#include "llm/tokenizer.h"

typedef struct {
	const char *model, *backend;
	const char *greedy; /* a prompt for the greedy cross-check, or NULL */
	int prefill, decode, prompt, block, reps, greedy_n, threads;
	int batches[8], nbatches;
	gk_dtype_t kv_t;
} opts_t;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const gp_error_t *err)
{
	fprintf(stderr, "llm-bench: %s: %s\n", what, err ? err->text : strerror(errno));
	exit(1);
}

static int parse(int argc, char **argv, opts_t *o)
{
	*o = (opts_t){.backend = "auto",
		      .prefill = 512,
		      .decode = 64,
		      .prompt = 128,
		      .block = 16,
		      .reps = 3,
		      .greedy_n = 32,
		      .batches = {1, 8, 32},
		      .nbatches = 3,
		      .kv_t = GK_F16};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--backend") && v)
			o->backend = argv[++i];
		else if (!strcmp(a, "--prefill") && v)
			o->prefill = atoi(argv[++i]);
		else if (!strcmp(a, "--decode") && v)
			o->decode = atoi(argv[++i]);
		else if (!strcmp(a, "--prompt") && v)
			o->prompt = atoi(argv[++i]);
		else if (!strcmp(a, "--reps") && v)
			o->reps = atoi(argv[++i]);
		else if (!strcmp(a, "--threads") && v)
			o->threads = atoi(argv[++i]);
		else if (!strcmp(a, "--greedy") && v)
			o->greedy = argv[++i];
		else if (!strcmp(a, "--greedy-n") && v)
			o->greedy_n = atoi(argv[++i]);
		else if (!strcmp(a, "--kv") && v)
			o->kv_t = strcmp(argv[++i], "f32") ? GK_F16 : GK_F32;
		else if (!strcmp(a, "--batches") && v) {
			char *s = argv[++i], *tok, *save = NULL;
			o->nbatches = 0;
			for (tok = strtok_r(s, ",", &save); tok && o->nbatches < 8;
			     tok = strtok_r(NULL, ",", &save))
				o->batches[o->nbatches++] = atoi(tok);
		} else if (a[0] != '-' && !o->model)
			o->model = a;
		else
			return -1;
	}
	if (!o->model || o->prefill < 1 || o->decode < 1 || o->prompt < 1 || o->nbatches < 1 ||
	    o->reps < 1 || o->greedy_n < 1 || o->greedy_n > 4096 || o->threads < 0)
		return -1;
	for (int i = 0; i < o->nbatches; i++)
		if (o->batches[i] < 1 || o->batches[i] > GL_MAX_BATCH_SEQS)
			return -1;
	return 0;
}

/* The card's copy bandwidth in GB/s (bytes read + written), as the screening measures it. */
static double copy_gbps(gk_backend_t *b)
{
	size_t bytes = (size_t)1 << 30;
	void *src = NULL, *dst = NULL;
	gk_event_t *e0 = NULL, *e1 = NULL;
	float ms = 0, best = 1e30f;
	if (gk_dev_alloc(b, bytes, &src) || gk_dev_alloc(b, bytes, &dst) ||
	    gk_event_create(b, &e0) || gk_event_create(b, &e1))
		return 0;
	gk_memset(b, src, 1, bytes, NULL);
	for (int r = 0; r < 10; r++) {
		gk_event_record(b, e0, NULL);
		gk_bw_copy(b, dst, src, bytes, NULL);
		gk_event_record(b, e1, NULL);
		gk_event_sync(b, e1);
		if (gk_event_elapsed(b, e0, e1, &ms) == 0 && ms > 0 && ms < best)
			best = ms;
	}
	gk_event_destroy(b, &e0);
	gk_event_destroy(b, &e1);
	gk_dev_free(b, src);
	gk_dev_free(b, dst);
	return best < 1e30f ? 2.0 * (double)bytes / (best * 1e-3) / 1e9 : 0;
}

/* One forward step of BT (embed, layers, head), reserving KV space first. */
static void step(gl_fwd_t *f, gl_kv_t *kv, gl_batch_t *bt, float *logits)
{
	gp_error_t err = {{0}};
	for (int j = 0; j < bt->nseq; j++)
		if (gl_kv_reserve(kv, bt->seq[j], bt->ctx[j]))
			die("kv reserve", NULL);
	if (gl_fwd_embed(f, bt, &err) || gl_fwd_layers(f, bt, &err) ||
	    gl_fwd_head(f, bt, logits, &err))
		die("forward", &err);
}

static int32_t argmax(const float *x, int n)
{
	int32_t best = 0;
	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

typedef struct {
	gl_fwd_t *f;
	gl_kv_t *kv;
	const gl_hparams_t *hp;
	float *logits;
	int32_t *tokens;
	int cpu; /* the cpu backend: print CPU time too */
} run_t;

/* Prefill: one sequence of o->prefill tokens, the best of o->reps after one that warms up. */
static void bench_prefill(const run_t *r, const opts_t *o)
{
	gl_batch_t bt;
	double best = 1e30, best_cpu = 0;
	for (int rep = 0; rep <= o->reps; rep++) {
		memset(&bt, 0, sizeof bt);
		bt.nseq = 1;
		bt.ntok = o->prefill;
		bt.n[0] = o->prefill;
		bt.ctx[0] = o->prefill;
		bt.tokens = r->tokens;
		double s = now_s(), c = cpu_s();
		step(r->f, r->kv, &bt, r->logits);
		double t = now_s() - s;
		if (rep > 0 && t < best)
			best = t, best_cpu = cpu_s() - c;
		gl_kv_release(r->kv, 0);
	}
	printf("prefill %d tokens: %.1f ms, %.1f tokens/s", o->prefill, best * 1e3,
	       o->prefill / best);
	if (r->cpu)
		printf(", %.2f cpu-ms a token", best_cpu / o->prefill * 1e3);
	printf("\n");
}

/* Decode at batch B: B sequences of o->prompt tokens, then o->decode steps of one each. */
static void bench_decode(const run_t *r, const opts_t *o, int B, double bw, size_t wbytes,
			 size_t slot)
{
	const gl_hparams_t *hp = r->hp;
	gl_batch_t bt;
	memset(&bt, 0, sizeof bt);
	bt.nseq = B;
	bt.ntok = B * o->prompt;
	for (int j = 0; j < B; j++) {
		bt.seq[j] = j;
		bt.n[j] = o->prompt;
		bt.ctx[j] = o->prompt;
	}
	bt.tokens = r->tokens;
	double s = now_s();
	step(r->f, r->kv, &bt, r->logits);
	double ttft = now_s() - s;
	int32_t next[GL_MAX_BATCH_SEQS];
	for (int j = 0; j < B; j++)
		next[j] = argmax(r->logits + (size_t)j * hp->n_vocab, hp->n_vocab);
	double start = 0, start_cpu = 0;
	int warm = 3;
	for (int t = 0; t < o->decode + warm; t++) {
		if (t == warm)
			start = now_s(), start_cpu = cpu_s();
		bt.ntok = B;
		for (int j = 0; j < B; j++) {
			bt.n[j] = 1;
			bt.ctx[j] = o->prompt + t + 1;
		}
		bt.tokens = next;
		step(r->f, r->kv, &bt, r->logits);
		for (int j = 0; j < B; j++)
			next[j] = argmax(r->logits + (size_t)j * hp->n_vocab, hp->n_vocab);
	}
	double el = now_s() - start, el_cpu = cpu_s() - start_cpu;
	double tps = (double)B * o->decode / el;
	int mid_ctx = o->prompt + warm + o->decode / 2;
	double bytes_step = (double)wbytes + (double)B * mid_ctx * (double)slot;
	double limit = bw > 0 ? bw * 1e9 / bytes_step * B : 0;
	printf(
	    "decode batch %d: %.1f tokens/s (%.1f ms a step), limit %.0f tokens/s, %.1f%% of it; "
	    "first step of %d prompts %.1f ms",
	    B, tps, el / o->decode * 1e3, limit, limit > 0 ? 100 * tps / limit : 0, B, ttft * 1e3);
	if (r->cpu)
		printf("; %.2f cpu-ms a token", el_cpu / o->decode / B * 1e3);
	printf("\n");
	for (int j = 0; j < B; j++)
		gl_kv_release(r->kv, j);
}

/* The greedy cross-check: TEXT through the file's tokenizer (BOS as the file says), then
 * o->greedy_n greedy tokens; prints both lists of ids as llamacpp_bench.mjs does. */
static void greedy_check(const run_t *r, const opts_t *o, const gl_gguf_t *g)
{
	gp_error_t err = {{0}};
	gl_tok_t *tok = gl_tok_from_gguf(g, &err);
	if (!tok)
		die("tokenizer", &err);
	int cap = 512, n;
	int32_t *ids = malloc((size_t)cap * sizeof(int32_t));
	if (!ids)
		die("memory", NULL);
	n = gl_tok_encode(tok, o->greedy, strlen(o->greedy), gl_tok_add_bos(tok), 0, ids, cap);
	if (n < 1 || n + o->greedy_n > cap)
		die("greedy prompt: too long or empty", NULL);
	printf("prompt ids:");
	for (int i = 0; i < n; i++)
		printf(" %d", ids[i]);
	printf("\ngreedy ids:");
	gl_batch_t bt;
	memset(&bt, 0, sizeof bt);
	bt.nseq = 1;
	bt.ntok = bt.n[0] = bt.ctx[0] = n;
	bt.tokens = ids;
	int32_t next;
	for (int t = 0; t < o->greedy_n; t++) {
		step(r->f, r->kv, &bt, r->logits);
		next = argmax(r->logits, r->hp->n_vocab);
		if (gl_tok_is_eog(tok, next)) { /* as llama.cpp's generator ends: without the id */
			printf(" <eog>");
			break;
		}
		printf(" %d", next);
		bt.ntok = bt.n[0] = 1;
		bt.ctx[0] = n + t + 1;
		bt.tokens = &next;
	}
	printf("\n");
	gl_kv_release(r->kv, 0);
	free(ids);
	gl_tok_destroy(&tok);
}

int main(int argc, char **argv)
{
	opts_t o;
	gp_error_t err = {{0}};
	gk_error_t kerr;
	if (parse(argc, argv, &o)) {
		fprintf(stderr,
			"usage: llm-bench MODEL.gguf [--backend auto|cpu|cuda|hip] [--prefill N] "
			"[--prompt N] [--decode N] [--reps N] [--batches 1,8,32] [--kv f16|f32] "
			"[--threads N] [--greedy TEXT [--greedy-n N]]\n");
		return 2;
	}
	if (o.threads >
	    0) { /* the cpu backend's threads (kernels/cpu/gk_cpu_llm.c reads it once) */
		char nt[16];
		snprintf(nt, sizeof nt, "%d", o.threads);
		setenv("GPOOL_KERNELS_THREADS", nt, 1);
	}
	gl_gguf_t *g = gl_gguf_open(o.model, &err);
	if (!g)
		die(o.model, &err);
	gl_hparams_t hp;
	if (gl_hparams_read(g, &hp, &err))
		die("model", &err);
	gk_backend_t *b = gk_backend_open(o.backend, &kerr);
	if (!b) {
		fprintf(stderr, "llm-bench: backend %s: %s\n", o.backend, kerr.text);
		return 1;
	}
	gk_device_info_t info;
	gk_device_info(b, &info);
	double t0 = now_s();
	gl_weights_t *w = gl_weights_load(b, g, &hp, 0, hp.n_layers, 1, 1, &err);
	if (!w)
		die("load", &err);
	double load_s = now_s() - t0;

	int maxb = 0;
	for (int i = 0; i < o.nbatches; i++)
		maxb = o.batches[i] > maxb ? o.batches[i] : maxb;
	int per_seq = o.prompt + o.decode;
	if (o.prefill > per_seq)
		per_seq = o.prefill;
	if (o.greedy && per_seq < 512)
		per_seq = 512;
	int nblocks = maxb * ((per_seq + o.block - 1) / o.block + 1);
	int row = hp.n_kv_heads * hp.head_dim;
	gl_kv_t *kv = gl_kv_create(b, hp.n_layers, nblocks, o.block, row, o.kv_t, maxb, &err);
	if (!kv)
		die("kv cache", &err);
	int max_tokens = o.prefill > maxb * o.prompt ? o.prefill : maxb * o.prompt;
	if (o.greedy && max_tokens < 512)
		max_tokens = 512;
	if (max_tokens > 8192)
		max_tokens = 8192;
	gl_fwd_t *f = gl_fwd_create(b, &hp, w, kv, max_tokens, &err);
	if (!f)
		die("forward", &err);
	float *logits = malloc((size_t)maxb * hp.n_vocab * sizeof(float));
	int32_t *tokens = malloc((size_t)max_tokens * sizeof(int32_t));
	if (!logits || !tokens)
		die("memory", NULL);
	for (int i = 0; i < max_tokens; i++)
		tokens[i] = 1 + (int32_t)((i * 7919u) % (unsigned)(hp.n_vocab - 1));

	double bw = copy_gbps(b);
	size_t wbytes = 0;
	for (int l = 0; l < hp.n_layers; l++)
		wbytes += gl_layer_bytes(g, l);
	wbytes += gl_head_bytes(g);
	size_t slot = gl_kv_slot_bytes(hp.n_layers, row, o.kv_t);
	printf("model %s: %s, %d layers, dim %d, %d heads (%d kv), vocab %d, weights %.2f GiB read "
	       "per "
	       "step, loaded in %.2f s\n",
	       o.model, hp.name, hp.n_layers, hp.dim, hp.n_heads, hp.n_kv_heads, hp.n_vocab,
	       (double)wbytes / (1 << 30), load_s);
	printf("device %s (%s): copy bandwidth %.0f GB/s%s%s\n", info.name, gk_backend_name(b), bw,
	       o.threads ? ", threads " : "", o.threads ? getenv("GPOOL_KERNELS_THREADS") : "");
	fflush(stdout);

	run_t r = {f, kv, &hp, logits, tokens, !strcmp(gk_backend_name(b), "cpu")};
	if (o.greedy)
		greedy_check(&r, &o, g);
	bench_prefill(&r, &o);
	fflush(stdout);
	for (int bi = 0; bi < o.nbatches; bi++) {
		bench_decode(&r, &o, o.batches[bi], bw, wbytes, slot);
		fflush(stdout);
	}
	free(logits);
	free(tokens);
	gl_fwd_destroy(&f);
	gl_kv_destroy(&kv);
	gl_weights_destroy(&w);
	gk_backend_close(&b);
	gl_gguf_close(&g);
	return 0;
}
