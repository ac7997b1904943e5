/* test_pipe.c - the pipeline on forked ranks of one host (cpu backend), against one rank:
 *   - a random-weight llama of 6 layers written by the project's GGUF writer;
 *   - greedy generation of three prompts, one at a time, on 1 rank and on 3 ranks (2 layers
 *     each, the plan from equal GLLM_MEM/GLLM_SPEED): identical tokens, f32 on the wire;
 *   - four requests at once on 3 ranks: all finish with the lengths asked (several batches in
 *     flight through the ring), f16 on the wire;
 *   - the last rank dies after a few steps: every open request ends with GL_FINISH_ERROR and a
 *     message, within the timeout; none ends as if complete;
 *   - a stage sent a frame over the agreed bounds, or one that is not a frame, stops with the
 *     reason without receiving a body.
 *   test_gllm_pipe DIR   (DIR: where the model file is written) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/test/spawn.h"
#include "gllm/rank.h"
#include "gllm/test/check.h"
#include "llm/randmodel.h"

static char model_path[512];

enum { NPROMPT = 3, NGEN = 12 };
static const char *const prompts[NPROMPT] = {"the quick brown fox", "hello", "abc abc abc abc"};

typedef struct {
	int32_t toks[64];
	int n;
	char text[1024];
	size_t len;
	int done;
	gl_finish_t why;
	char error[256];
} answer_t;

static void on_text(void *arg, const char *text, size_t len, int ntokens)
{
	answer_t *a = arg;
	(void)ntokens;
	if (a->len + len < sizeof(a->text)) {
		memcpy(a->text + a->len, text, len);
		a->len += len;
	}
}

static void on_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	answer_t *a = arg;
	a->done = 1;
	a->why = why;
	a->n = u->completion_tokens;
	snprintf(a->error, sizeof(a->error), "%s", error ? error : "");
}

static gllm_opts_t opts(void)
{
	gllm_opts_t o;
	gllm_opts_default(&o);
	o.model = model_path;
	o.backend = "cpu";
	o.n_ctx = 128;
	o.parallel = 4;
	o.max_batch_tokens = 64;
	o.timeout_ms = 5000;
	return o;
}

/* Run requests for PROMPTS[from..to) on rank 0's engine, together or one after another. */
static int generate(gllm_rank_t *r, answer_t *ans, int n, int together, int max_tokens)
{
	gl_engine_opts_t eo = {.max_seqs = r->o.parallel,
			       .max_batch_tokens = r->o.max_batch_tokens,
			       .n_ctx = r->o.n_ctx};
	gp_error_t err;
	gl_engine_t *e = gl_engine_create(r->tok, &r->hp, r->ops, r->exec, &eo, &err);
	CHECK(e);
	int failed = 0;
	for (int i = 0; i < n; i++) {
		int32_t ids[64];
		const char *p = prompts[i % NPROMPT];
		int np = gl_tok_encode(r->tok, p, strlen(p), 1, 0, ids, 64);
		CHECK(np > 0 && np <= 64);
		gl_request_t rq = {.prompt = ids,
				   .nprompt = np,
				   .max_tokens = max_tokens,
				   .ignore_eos = 1,
				   .on_text = on_text,
				   .on_done = on_done,
				   .arg = &ans[i]};
		gl_sample_defaults(&rq.sp);
		rq.sp.temperature = 0;
		CHECK(gl_engine_submit(e, &rq, &err) >= 0);
		while (!together && gl_engine_open(e) > 0)
			if (gl_engine_run(e, 1000, &err) < 0)
				failed = 1;
	}
	while (gl_engine_open(e) > 0)
		if (gl_engine_run(e, 1000, &err) < 0)
			failed = 1;
	gl_engine_destroy(&e);
	return failed;
}

static gllm_rank_t *open_rank(gc_comm_t *c, gl_wire_t wire)
{
	gllm_opts_t o = opts();
	o.wire = wire;
	gp_error_t err = {{0}};
	gllm_rank_t *r = gllm_rank_open(c, &o, 1, c && gc_rank(c) == 0 ? stdout : NULL, &err);
	if (!r)
		fprintf(stderr, "rank %d: %s\n", c ? gc_rank(c) : 0, err.text);
	return r;
}

static gc_comm_t *comm(int rank, int size, const char *rdv)
{
	gc_params_t p = {.rank = rank,
			 .size = size,
			 .rdv = rdv,
			 .transport = "tcp",
			 .backend = "cpu",
			 .device = -1,
			 .timeout_ms = 3000};
	gc_error_t e;
	gc_comm_t *c = gc_comm_create(&p, &e);
	if (!c)
		fprintf(stderr, "rank %d: %s\n", rank, e.text);
	return c;
}

static answer_t ref[NPROMPT];

/* The stages' side of every test: serve until told to stop (or, DIE_AFTER > 0, die). */
static int stage_main(gllm_rank_t *r)
{
	gp_error_t err = {{0}};
	int rc = gllm_rank_stage(r, &err);
	if (rc < 0)
		fprintf(stderr, "rank %d: %s\n", r->rank, err.text);
	return rc < 0 ? 1 : 0;
}

static int same_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gc_comm_t *c = comm(rank, size, rdv);
	CHECK(c);
	gllm_rank_t *r = open_rank(c, GL_WIRE_F32);
	CHECK(r);
	int rc = 0;
	if (rank == 0) {
		CHECK(r->nring == 3 && r->ops == &gl_pipe_ops);
		CHECK(r->plan.slot[1].first == 2 && r->plan.slot[1].last == 4);
		answer_t got[NPROMPT] = {0};
		CHECK(generate(r, got, NPROMPT, 0, NGEN) == 0);
		for (int i = 0; i < NPROMPT; i++) {
			CHECK(got[i].done && got[i].why == GL_FINISH_LENGTH && got[i].n == NGEN);
			if (got[i].len != ref[i].len ||
			    memcmp(got[i].text, ref[i].text, got[i].len)) {
				fprintf(stderr, "prompt %d: 3 ranks gave '%.*s', 1 rank '%.*s'\n",
					i, (int)got[i].len, got[i].text, (int)ref[i].len,
					ref[i].text);
				rc = 1;
			}
		}
	} else {
		rc = stage_main(r);
	}
	gllm_rank_close(&r);
	gc_comm_destroy(&c);
	return rc;
}

static int together_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gc_comm_t *c = comm(rank, size, rdv);
	CHECK(c);
	gllm_rank_t *r = open_rank(c, GL_WIRE_F16);
	CHECK(r);
	int rc = 0;
	if (rank == 0) {
		answer_t got[4] = {0};
		CHECK(generate(r, got, 4, 1, NGEN) == 0);
		for (int i = 0; i < 4; i++)
			CHECK(got[i].done && got[i].why == GL_FINISH_LENGTH && got[i].n == NGEN);
	} else {
		rc = stage_main(r);
	}
	gllm_rank_close(&r);
	gc_comm_destroy(&c);
	return rc;
}

static int die_main(int rank, int size, const char *rdv, void *arg)
{
	(void)arg;
	gp_error_t err;
	gc_comm_t *c = comm(rank, size, rdv);
	CHECK(c);
	gllm_rank_t *r = open_rank(c, GL_WIRE_F32);
	CHECK(r);
	if (rank == 2) {
		/* the last stage passes 5 steps on unchanged (its layers skipped: the answers'
		 * text does not matter here), then dies in the middle of the generation */
		static uint8_t hb[GL_STAGE_HDR_SIZE], body[1 << 20];
		for (int steps = 0; steps < 5;) {
			size_t len;
			gl_stage_hdr_t h;
			CHECK(gc_recv(c, 1, 1, hb, sizeof(hb), &len) == 0);
			CHECK(gl_stage_hdr_decode(hb, len, &r->lim, &h, &err) == 0);
			CHECK(h.body_bytes <= sizeof(body));
			if (h.body_bytes)
				CHECK(gc_recv(c, 1, 2, body, h.body_bytes, &len) == 0);
			if (h.kind != GL_STAGE_STEP)
				continue;
			CHECK(gc_send(c, 0, 1, hb, sizeof(hb)) == 0);
			CHECK(gc_send(c, 0, 2, body, h.body_bytes) == 0);
			steps++;
		}
		_exit(0);
	}
	if (rank == 1) {
		stage_main(r); /* fails when its neighbour goes: expected */
		_exit(0);
	}
	answer_t got[4] = {0};
	/* long enough answers that the death falls in the middle */
	int failed = generate(r, got, 4, 1, 100);
	CHECK(failed);
	for (int i = 0; i < 4; i++) {
		CHECK(got[i].done);
		if (got[i].why != GL_FINISH_ERROR || !got[i].error[0]) {
			fprintf(stderr, "request %d ended '%s' (%d tokens) after a rank died\n", i,
				gl_finish_name(got[i].why), got[i].n);
			return 1;
		}
	}
	printf("rank 0: after the death: %s\n", got[0].error);
	fflush(stdout);
	_exit(0); /* the communicator is broken: nothing more to close cleanly */
}

/* A head that sends a stage a frame over the agreed bounds, then one that is not a frame: the
 * stage refuses the first before receiving any body, and stops with the reason. */
static int bad_frame_main(int rank, int size, const char *rdv, void *arg)
{
	int which = *(int *)arg;
	gc_comm_t *c = comm(rank, size, rdv);
	CHECK(c);
	gllm_rank_t *r = open_rank(c, GL_WIRE_F32);
	CHECK(r);
	if (rank == 0) {
		gl_batch_t bt = {.nseq = 1, .ntok = r->o.max_batch_tokens + 1};
		bt.seq[0] = 0, bt.n[0] = bt.ctx[0] = bt.ntok;
		gl_stage_hdr_t h;
		uint8_t hb[GL_STAGE_HDR_SIZE];
		gl_stage_hdr_make(&h, GL_STAGE_STEP, 1, &bt, r->hp.dim, GL_WIRE_F32);
		gl_stage_hdr_encode(&h, hb);
		if (which == 1)
			memset(hb, 0x41, sizeof(hb));
		CHECK(gc_send(c, 1, 1, hb, sizeof(hb)) == 0);
		/* no body follows: the stage must not wait for one */
		uint8_t x;
		CHECK(gc_recv(c, 1, 1, &x, 1, NULL) < 0); /* it went away */
		_exit(0);
	}
	gp_error_t err = {{0}};
	errno = 0;
	int rc = gllm_rank_stage(r, &err);
	const char *want = which == 1 ? "not a frame" : "tokens";
	if (rc != -1 || !strstr(err.text, want)) {
		fprintf(stderr, "stage: rc %d, '%s' (wanted '%s')\n", rc, err.text, want);
		_exit(1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_gllm_pipe DIR\n");
		return 2;
	}
	snprintf(model_path, sizeof(model_path), "%s/pipe-test.gguf", argv[1]);
	gl_randmodel_t shape = *gl_randmodel_find("test-llama");
	shape.n_layers = 6;
	gp_error_t err = {{0}};
	CHECK(gl_randmodel_write(model_path, &shape, GK_Q_F32, 7, &err) == 0);
	setenv("GLLM_MEM", "1G", 1);
	setenv("GLLM_SPEED", "10", 1);
	/* the reference: one rank, no communicator */
	gllm_rank_t *r = open_rank(NULL, GL_WIRE_F32);
	CHECK(r && r->ops == &gl_exec_local_ops);
	CHECK(generate(r, ref, NPROMPT, 0, NGEN) == 0);
	for (int i = 0; i < NPROMPT; i++)
		CHECK(ref[i].done && ref[i].n == NGEN && ref[i].len > 0);
	gllm_rank_close(&r);
	CHECK(gc_spawn(3, same_main, NULL, 120) == 0);
	printf("ok: 3 ranks give 1 rank's tokens\n");
	CHECK(gc_spawn(3, together_main, NULL, 120) == 0);
	printf("ok: 4 requests at once through 3 ranks\n");
	CHECK(gc_spawn(3, die_main, NULL, 120) == 0);
	printf("ok: a rank's death ends every open request with an error\n");
	setenv("GLLM_MEM", "1G", 1);
	for (int which = 0; which < 2; which++)
		CHECK(gc_spawn(2, bad_frame_main, &which, 60) == 0);
	printf("ok: a stage refuses an oversized frame and a non-frame before any body\n");
	unlink(model_path);
	return 0;
}
