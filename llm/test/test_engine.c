/* test_engine.c - the engine's scheduling against a scripted executor: a fake "model" that
 * knows fixed token programs (a sequence that holds the first k tokens of its program is
 * answered with token k), a KV space counted in tokens, batches held in flight up to a depth. The
 * executor checks what the engine must never do (a sequence in two batches at once, tokens fed
 * out of order, a batch over its limits) and records what each test asserts.
 *
 * The tokenizer is a test double linked in place of llm/tokenizer.c's two functions the engine
 * calls (gl_tok_piece, gl_tok_is_eog): pieces chosen to split UTF-8 characters and stop
 * strings across tokens. */
#include <errno.h>
#include <string.h>

#include "llm/engine.h"
#include "llm/test/eng_check.h"

/* ---- the tokenizer double ---- */
#define NV 48
struct gl_tok {
	int unused;
};
static const char *const pieces[NV] = {
    [1] = "a",	 [2] = "b",	    [3] = "c",	   [4] = "d",	  [5] = "e",	 [6] = "f",
    [7] = "g",	 [8] = "h",	    [27] = " ",	   [28] = "\xC3", [29] = "\xA9", [30] = "ST",
    [31] = "OP", [32] = "\xE2\x82", [33] = "\xAC", [34] = "X",
};
#define EOS 0

int gl_tok_piece(const gl_tok_t *t, int32_t id, int first, char *buf, size_t cap)
{
	(void)t;
	(void)first;
	if (id < 0 || id >= NV) {
		errno = EINVAL;
		return -1;
	}
	const char *p = pieces[id] ? pieces[id] : "";
	size_t n = strlen(p);
	memcpy(buf, p, n < cap ? n : cap);
	return (int)n;
}

int gl_tok_is_eog(const gl_tok_t *t, int32_t id)
{
	(void)t;
	return id == EOS;
}

/* ---- the programs: program k starts with token 40 + k ---- */
#define PLEN 64
static int32_t prog[8][PLEN];

static void set_prog(int k, const int32_t *toks, int n)
{
	prog[k][0] = 40 + k;
	for (int i = 0; i < PLEN - 1; i++)
		prog[k][i + 1] = i < n ? toks[i] : 1 + (i % 8); /* then a..h over and over */
}

/* ---- the executor ---- */
#define MAXB 16
typedef struct {
	uint64_t id;
	int nseq;
	float logits[8][NV];
} fbatch_t;

typedef struct {
	int depth, capacity, fail_next_wait, fail_next_submit;
	int len[GL_MAX_BATCH_SEQS], busy[GL_MAX_BATCH_SEQS];
	int32_t seen[GL_MAX_BATCH_SEQS][PLEN];
	fbatch_t q[MAXB];
	int nq;
	/* what the tests assert */
	int violations, batches, max_inflight, mixed, enospc, releases, max_ntok, max_nseq;
	int chunk_log[64], nchunks; /* sizes of prefill entries (n > 1) in order */
	int max_batch_tokens;
	int32_t busy_seq[MAXB][8];
} fexec_t;

static int used_tokens(const fexec_t *x)
{
	int u = 0;
	for (int s = 0; s < GL_MAX_BATCH_SEQS; s++)
		u += x->len[s];
	return u;
}

static int f_submit(void *ctx, uint64_t id, const gl_batch_t *bt, gp_error_t *err)
{
	fexec_t *x = ctx;
	if (x->fail_next_submit) {
		x->fail_next_submit = 0;
		errno = EIO;
		return gp_errprintf(err, "rank 1 refused the batch");
	}
	int grow = 0;
	for (int j = 0; j < bt->nseq; j++)
		grow += bt->ctx[j] - x->len[bt->seq[j]];
	if (used_tokens(x) + grow > x->capacity) {
		x->enospc++;
		errno = ENOSPC;
		return -1;
	}
	if (bt->nseq > 8 || bt->ntok > x->max_batch_tokens || x->nq >= x->depth)
		x->violations++;
	fbatch_t *b = &x->q[x->nq++];
	b->id = id;
	b->nseq = bt->nseq;
	int off = 0, dec = 0, pre = 0;
	for (int j = 0; j < bt->nseq; j++) {
		int s = bt->seq[j], n = bt->n[j];
		if (x->busy[s] || bt->ctx[j] - n != x->len[s] || bt->ctx[j] >= PLEN)
			x->violations++;
		x->busy[s] = 1;
		for (int t = 0; t < n; t++)
			x->seen[s][x->len[s] + t] = bt->tokens[off + t];
		x->len[s] = bt->ctx[j];
		off += n;
		/* the tokens held must be a prefix of the sequence's program */
		int k = x->seen[s][0] - 40;
		if (k < 0 || k >= 8 || memcmp(x->seen[s], prog[k], (size_t)x->len[s] * 4) != 0)
			x->violations++;
		for (int v = 0; v < NV; v++)
			b->logits[j][v] = -1.0f;
		if (k >= 0 && k < 8)
			b->logits[j][prog[k][x->len[s]]] = 5.0f;
		if (n == 1)
			dec++;
		else {
			pre++;
			if (x->nchunks < 64)
				x->chunk_log[x->nchunks++] = n;
		}
	}
	if (off != bt->ntok)
		x->violations++;
	if (dec && pre)
		x->mixed++;
	x->batches++;
	if (x->nq > x->max_inflight)
		x->max_inflight = x->nq;
	if (bt->ntok > x->max_ntok)
		x->max_ntok = bt->ntok;
	if (bt->nseq > x->max_nseq)
		x->max_nseq = bt->nseq;
	for (int j = 0; j < bt->nseq && j < 8; j++)
		x->busy_seq[x->nq - 1][j] = bt->seq[j];
	return 0;
}

static int f_wait(void *ctx, uint64_t *id, float *logits, int timeout_ms, gp_error_t *err)
{
	fexec_t *x = ctx;
	(void)timeout_ms;
	if (x->fail_next_wait) {
		x->fail_next_wait = 0;
		x->nq = 0;
		memset(x->busy, 0, sizeof x->busy);
		errno = EPIPE;
		return gp_errprintf(err, "rank 2 is gone");
	}
	if (x->nq == 0)
		return 0;
	fbatch_t *b = &x->q[0];
	*id = b->id;
	memcpy(logits, b->logits, (size_t)b->nseq * NV * sizeof(float));
	for (int j = 0; j < b->nseq; j++)
		x->busy[x->busy_seq[0][j]] = 0;
	memmove(&x->q[0], &x->q[1], (size_t)(x->nq - 1) * sizeof x->q[0]);
	memmove(&x->busy_seq[0], &x->busy_seq[1], (size_t)(x->nq - 1) * sizeof x->busy_seq[0]);
	x->nq--;
	return 1;
}

static void f_release(void *ctx, int seq)
{
	fexec_t *x = ctx;
	if (x->busy[seq])
		x->violations++; /* released while a batch still holds it */
	x->len[seq] = 0;
	x->releases++;
}

static int f_depth(void *ctx)
{
	return ((fexec_t *)ctx)->depth;
}

static int f_free(void *ctx)
{
	fexec_t *x = ctx;
	return x->capacity - used_tokens(x);
}

static const gl_exec_ops_t fops = {f_submit, f_wait, f_release, f_depth, f_free};

/* ---- a request's outcome ---- */
typedef struct {
	char text[512];
	size_t len;
	int calls, tokens, done;
	char call[16][32]; /* the first calls' texts */
	gl_finish_t why;
	gl_usage_t u;
	char error[128];
} out_t;

static void on_text(void *arg, const char *text, size_t len, int ntokens)
{
	out_t *o = arg;
	CHECK(!o->done && len > 0 && o->len + len < sizeof o->text);
	if (o->calls < 16)
		snprintf(o->call[o->calls], sizeof o->call[0], "%.*s", (int)len, text);
	memcpy(o->text + o->len, text, len);
	o->len += len;
	o->text[o->len] = 0;
	o->calls++;
	o->tokens += ntokens;
}

static void on_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	out_t *o = arg;
	CHECK(!o->done);
	o->done = 1;
	o->why = why;
	o->u = *u;
	snprintf(o->error, sizeof o->error, "%s", error ? error : "");
}

static struct gl_tok tok;
static gl_hparams_t hp = {.n_vocab = NV};

static gl_engine_t *make(fexec_t *x, int depth, int capacity, int max_seqs, int mbt, int n_ctx)
{
	memset(x, 0, sizeof *x);
	x->depth = depth;
	x->capacity = capacity;
	x->max_batch_tokens = mbt;
	gl_engine_opts_t o = {.max_seqs = max_seqs, .max_batch_tokens = mbt, .n_ctx = n_ctx};
	gp_error_t err;
	gl_engine_t *e = gl_engine_create(&tok, &hp, &fops, x, &o, &err);
	CHECK(e);
	return e;
}

static int submit(gl_engine_t *e, int k, int nprompt, int max_tokens, out_t *o,
		  const char *const *stop, int nstop)
{
	gl_request_t r = {.prompt = prog[k],
			  .nprompt = nprompt,
			  .max_tokens = max_tokens,
			  .stop = stop,
			  .nstop = nstop,
			  .on_text = on_text,
			  .on_done = on_done,
			  .arg = o};
	gl_sample_defaults(&r.sp);
	r.sp.temperature = 0;
	memset(o, 0, sizeof *o);
	gp_error_t err;
	int id = gl_engine_submit(e, &r, &err);
	CHECK(id >= 0);
	return id;
}

static void run_all(gl_engine_t *e)
{
	gp_error_t err;
	for (int i = 0; i < 10000 && gl_engine_open(e) > 0; i++)
		CHECK(gl_engine_run(e, 100, &err) >= 0);
	CHECK(gl_engine_open(e) == 0);
}

/* ---- the tests ---- */

static void test_length_and_eos(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 64, 64);
	const int32_t p0[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, p0, 8);
	out_t o;
	submit(e, 0, 3, 5, &o, NULL, 0); /* prompt: selector, a, b; then c d e f g */
	run_all(e);
	CHECK(o.done && o.why == GL_FINISH_LENGTH && strcmp(o.text, "cdefg") == 0);
	CHECK(o.u.prompt_tokens == 3 && o.u.completion_tokens == 5 && o.tokens == 5);
	CHECK(x.releases == 1 && x.violations == 0);

	const int32_t p1[] = {1, 2, EOS, 3};
	set_prog(1, p1, 4);
	submit(e, 1, 2, 0, &o, NULL, 0);
	run_all(e);
	CHECK(o.why == GL_FINISH_STOP && strcmp(o.text, "b") == 0 && o.u.completion_tokens == 2);
	/* ignore_eos goes on past it (the end-of-generation token has no text) */
	gl_request_t r = {.prompt = prog[1],
			  .nprompt = 2,
			  .max_tokens = 4,
			  .ignore_eos = 1,
			  .on_text = on_text,
			  .on_done = on_done,
			  .arg = &o};
	gl_sample_defaults(&r.sp);
	r.sp.temperature = 0;
	memset(&o, 0, sizeof o);
	gp_error_t err;
	CHECK(gl_engine_submit(e, &r, &err) >= 0);
	run_all(e);
	CHECK(o.why == GL_FINISH_LENGTH && strcmp(o.text, "bce") == 0);
	/* the context: n_ctx 64 holds 60 more tokens after a prompt of 4 */
	submit(e, 0, 4, 0, &o, NULL, 0);
	run_all(e);
	CHECK(o.why == GL_FINISH_LENGTH && o.u.completion_tokens == 60);
	CHECK(x.violations == 0);
	gl_engine_destroy(&e);
}

static void test_stop_strings(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 64, 64);
	/* "b" "ST" "OP" "d": STOP is split over two tokens */
	const int32_t p[] = {2, 30, 31, 4};
	set_prog(2, p, 4);
	const char *stop[] = {"STOP"};
	out_t o;
	submit(e, 2, 1, 0, &o, stop, 1);
	run_all(e);
	CHECK(o.why == GL_FINISH_STOP && strcmp(o.text, "b") == 0);
	/* "ST" then "d": held while it could begin "STX", then handed out with "d" */
	const int32_t q[] = {2, 30, 4, 5};
	set_prog(3, q, 4);
	const char *stop2[] = {"STX", "zz"};
	submit(e, 3, 1, 4, &o, stop2, 2);
	run_all(e);
	CHECK(o.why == GL_FINISH_LENGTH && strcmp(o.text, "bSTde") == 0);
	CHECK(strcmp(o.call[0], "b") == 0 && strcmp(o.call[1], "STd") == 0);
	/* a held prefix at the end of the answer is text */
	submit(e, 3, 1, 2, &o, stop2, 2);
	run_all(e);
	CHECK(o.why == GL_FINISH_LENGTH && strcmp(o.text, "bST") == 0 && o.tokens == 2);
	/* a stop string inside one token: the text before it is the answer */
	const char *stop3[] = {"T"};
	submit(e, 3, 1, 0, &o, stop3, 1);
	run_all(e);
	CHECK(o.why == GL_FINISH_STOP && strcmp(o.text, "bS") == 0);
	CHECK(x.violations == 0);
	gl_engine_destroy(&e);
}

static void test_utf8(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 64, 64);
	/* é split over two tokens, then b, then € split over two */
	const int32_t p[] = {28, 29, 2, 32, 33};
	set_prog(4, p, 5);
	out_t o;
	submit(e, 4, 1, 5, &o, NULL, 0);
	run_all(e);
	CHECK(strcmp(o.text, "\xC3\xA9"
			     "b\xE2\x82\xAC") == 0);
	CHECK(strcmp(o.call[0], "\xC3\xA9") == 0 && strcmp(o.call[1], "b") == 0);
	CHECK(strcmp(o.call[2], "\xE2\x82\xAC") == 0 && o.calls == 3 && o.tokens == 5);
	/* cut inside a character: the end is U+FFFD, never half a character */
	submit(e, 4, 1, 4, &o, NULL, 0);
	run_all(e);
	CHECK(strcmp(o.text, "\xC3\xA9"
			     "b\xEF\xBF\xBD") == 0);
	gl_engine_destroy(&e);
}

/* A 20-token prompt under max_batch_tokens 8: chunks of 8, 8 and 4, then decodes. */
static void test_chunks(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 8, 64);
	const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6};
	set_prog(5, p, 22);
	out_t o;
	submit(e, 5, 20, 3, &o, NULL, 0);
	run_all(e);
	CHECK(strcmp(o.text, "def") == 0);
	CHECK(x.nchunks == 3 && x.chunk_log[0] == 8 && x.chunk_log[1] == 8 && x.chunk_log[2] == 4);
	CHECK(x.max_ntok <= 8 && x.violations == 0);
	gl_engine_destroy(&e);
}

/* B arrives while A decodes: B's prompt joins A's decode steps. */
static void test_continuous(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 64, 64);
	const int32_t pa[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, pa, 8);
	const int32_t pb[] = {8, 7, 6, 5, 4, 3, 2, 1};
	set_prog(1, pb, 8);
	out_t a, b;
	gp_error_t err;
	submit(e, 0, 2, 10, &a, NULL, 0);
	for (int i = 0; i < 3; i++)
		CHECK(gl_engine_run(e, 100, &err) == 1);
	CHECK(a.tokens == 3 && x.mixed == 0);
	submit(e, 1, 4, 3, &b, NULL, 0);
	CHECK(gl_engine_run(e, 100, &err) == 2);
	CHECK(x.mixed == 1 && x.max_nseq == 2);
	run_all(e);
	CHECK(strcmp(a.text, "bcdefghabc") == 0 && strcmp(b.text, "edc") == 0);
	CHECK(x.violations == 0 && x.releases == 2);
	gl_engine_destroy(&e);
}

static void test_cancel(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 1, 64, 64);
	const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, p, 8);
	out_t a, b;
	gp_error_t err;
	int ida = submit(e, 0, 2, 0, &a, NULL, 0);
	int idb = submit(e, 0, 2, 0, &b, NULL, 0); /* queued: one slot */
	CHECK(gl_engine_run(e, 100, &err) == 2 && a.tokens == 1);
	CHECK(gl_engine_cancel(e, idb) == 0);
	CHECK(gl_engine_run(e, 100, &err) == 1);
	CHECK(b.done && b.why == GL_FINISH_CANCELLED && b.u.completion_tokens == 0);
	CHECK(gl_engine_cancel(e, ida) == 0);
	CHECK(gl_engine_run(e, 100, &err) == 0);
	CHECK(a.done && a.why == GL_FINISH_CANCELLED && a.tokens >= 1);
	CHECK(f_free(&x) == 1000 && x.violations == 0);
	CHECK(gl_engine_cancel(e, ida) == -1 && errno == ENOENT);
	gl_engine_destroy(&e);
}

static void test_failure(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 2, 1000, 1, 64, 64);
	const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, p, 8);
	out_t a, b, c;
	gp_error_t err;
	submit(e, 0, 2, 0, &a, NULL, 0);
	submit(e, 0, 3, 0, &b, NULL, 0); /* queued behind A */
	CHECK(gl_engine_run(e, 100, &err) == 2);
	x.fail_next_wait = 1;
	CHECK(gl_engine_run(e, 100, &err) == -1);
	CHECK(a.done && a.why == GL_FINISH_ERROR && strstr(a.error, "rank 2 is gone"));
	CHECK(b.done && b.why == GL_FINISH_ERROR);
	CHECK(gl_engine_open(e) == 0 && f_free(&x) == 1000);
	/* and it takes new work */
	submit(e, 0, 2, 3, &c, NULL, 0);
	run_all(e);
	CHECK(c.why == GL_FINISH_LENGTH && strcmp(c.text, "bcd") == 0);
	gl_engine_destroy(&e);
}

/* A refusal other than ENOSPC at submit is a failure too. */
static void test_submit_failure(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 2, 64, 64);
	const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, p, 8);
	out_t a, b;
	gp_error_t err;
	submit(e, 0, 2, 0, &a, NULL, 0);
	CHECK(gl_engine_run(e, 100, &err) == 1);
	submit(e, 0, 3, 0, &b, NULL, 0);
	x.fail_next_submit = 1; /* A's decode in flight comes back first, then the refusal */
	CHECK(gl_engine_run(e, 100, &err) == -1 && strstr(err.text, "rank 1 refused"));
	CHECK(a.why == GL_FINISH_ERROR && b.why == GL_FINISH_ERROR && a.tokens == 2);
	CHECK(f_free(&x) == 1000 && gl_engine_open(e) == 0);
	submit(e, 0, 2, 2, &a, NULL, 0);
	run_all(e);
	CHECK(a.why == GL_FINISH_LENGTH && strcmp(a.text, "bc") == 0);
	gl_engine_destroy(&e);
}

/* Sampled, not greedy: the same seed gives the same answer, whatever else is in the batch. */
static void test_seeded(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 2, 1000, 4, 64, 64);
	const int32_t p[] = {1, 2, 3, 4, 5, 6, 7, 8};
	set_prog(0, p, 8);
	out_t o[3];
	for (int k = 0; k < 3; k++) {
		gl_request_t r = {.prompt = prog[0],
				  .nprompt = 2,
				  .max_tokens = 12,
				  .ignore_eos = 1,
				  .on_text = on_text,
				  .on_done = on_done,
				  .arg = &o[k]};
		gl_sample_defaults(&r.sp);
		r.sp.temperature = 1.5f; /* logits 5 and -1: other tokens often */
		r.sp.seed = k == 2 ? 8 : 7;
		memset(&o[k], 0, sizeof o[k]);
		gp_error_t err;
		CHECK(gl_engine_submit(e, &r, &err) >= 0);
		if (k == 0)
			run_all(e); /* the first alone, the others together */
	}
	run_all(e);
	CHECK(o[0].u.completion_tokens == 12 && strcmp(o[0].text, o[1].text) == 0);
	CHECK(strcmp(o[0].text, o[2].text) != 0);
	gl_engine_destroy(&e);
}

/* Depth 3: three batches in flight with five requests, never one sequence in two. */
static void test_pipeline(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 3, 1000, 8, 64, 64);
	out_t o[5];
	for (int k = 0; k < 5; k++) {
		const int32_t p[] = {1 + k, 2 + k, 3, 4, 5, 6, 7, 8};
		set_prog(k, p, 8);
		submit(e, k, 2, 6, &o[k], NULL, 0);
	}
	run_all(e);
	for (int k = 0; k < 5; k++) {
		CHECK(o[k].why == GL_FINISH_LENGTH && o[k].u.completion_tokens == 6);
		CHECK(o[k].text[0] == pieces[2 + k][0] && strcmp(o[k].text + 1, "cdefg") == 0);
	}
	CHECK(x.max_inflight == 3 && x.violations == 0);
	gl_engine_destroy(&e);
}

/* A KV space of 40 tokens for three requests that grow to 30 each: sequences are preempted and
 * fed again, and every answer is still the program's. */
static void test_preempt(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 40, 4, 64, 64);
	out_t o[3];
	for (int k = 0; k < 3; k++) {
		const int32_t p[] = {1 + k, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3};
		set_prog(k, p, 19);
		submit(e, k, 10, 20, &o[k], NULL, 0);
	}
	run_all(e);
	for (int k = 0; k < 3; k++) {
		CHECK(o[k].why == GL_FINISH_LENGTH && o[k].u.completion_tokens == 20);
		CHECK(strncmp(o[k].text, "bcdefghabc", 10) == 0);
	}
	CHECK(x.enospc > 0 && x.violations == 0);
	/* one request longer than the whole cache ends at its length */
	submit(e, 0, 10, 0, &o[0], NULL, 0);
	run_all(e);
	CHECK(o[0].why == GL_FINISH_LENGTH && o[0].u.completion_tokens == 31);
	gl_engine_destroy(&e);
}

static void test_submit_checks(void)
{
	fexec_t x;
	gl_engine_t *e = make(&x, 1, 1000, 4, 64, 16);
	set_prog(0, (const int32_t[]){1}, 1);
	gl_request_t r = {.prompt = prog[0], .nprompt = 0};
	gl_sample_defaults(&r.sp);
	gp_error_t err;
	CHECK(gl_engine_submit(e, &r, &err) == -1 && errno == EINVAL);
	r.nprompt = 16;
	CHECK(gl_engine_submit(e, &r, &err) == -1 && errno == EINVAL && strstr(err.text, "16"));
	r.nprompt = 2;
	r.sp.top_p = 2;
	CHECK(gl_engine_submit(e, &r, &err) == -1 && strstr(err.text, "top_p"));
	r.sp.top_p = 1;
	const int32_t bad[] = {1, NV};
	r.prompt = bad;
	CHECK(gl_engine_submit(e, &r, &err) == -1 && errno == EINVAL);
	r.prompt = prog[0];
	const char *stop[] = {""};
	r.stop = stop;
	r.nstop = 1;
	CHECK(gl_engine_submit(e, &r, &err) == -1 && errno == EINVAL);
	CHECK(gl_engine_open(e) == 0);
	CHECK(strcmp(gl_finish_name(GL_FINISH_CANCELLED), "cancelled") == 0);
	gl_engine_destroy(&e);
}

int main(void)
{
	test_length_and_eos();
	test_stop_strings();
	test_utf8();
	test_chunks();
	test_continuous();
	test_cancel();
	test_failure();
	test_submit_failure();
	test_seeded();
	test_pipeline();
	test_preempt();
	test_submit_checks();
	return 0;
}
