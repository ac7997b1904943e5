/* engine.c - continuous batching over an executor (engine.h). Each request, once admitted, owns
 * one KV sequence (a slot) and its tokens: the prompt, then what it generated. FED counts the
 * tokens sent to the model; a batch takes from each sequence not already in flight either its
 * one new token (decode) or the next chunk of what it has not fed (prefill, or a re-prefill
 * after it was preempted), decodes first, then chunks, oldest request first, under
 * max_batch_tokens and the KV space the executor says is free. When a batch comes back, every
 * sequence in it that has fed all its tokens samples the next one.
 *
 * Text is handed out as it is produced, less what must wait: an unfinished UTF-8 character, and
 * the longest tail that could still begin a stop string (it is text only if the stop string
 * does not follow). When the KV cache is full and nothing is in flight, the newest sequence is
 * preempted: its blocks are given back and its tokens fed again later (vLLM's recompute). */
#include "llm/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_DEPTH    16	 /* batches in flight at most, whatever the executor holds */
#define MAX_STOPS    16	 /* stop strings of one request */
#define MAX_STOP_LEN 256 /* bytes in one */
#define MAX_PIECE    512 /* bytes of one token's text (longer ones are cut) */

typedef struct req req_t;
struct req {
	int id, slot; /* slot: the KV sequence, -1 while queued */
	int32_t *tok; /* n_ctx of room: prompt, then generated */
	int ntok, nprompt, fed, inflight, cancelled;
	int max_tokens, ngen, ignore_eos;
	gl_sampler_t *smp;
	char *stop[MAX_STOPS];
	size_t stop_len[MAX_STOPS];
	int nstop;
	char *held; /* text not yet handed out: MAX_STOP_LEN + MAX_PIECE + 8 of room */
	size_t nheld;
	int held_tokens;
	void (*on_text)(void *, const char *, size_t, int);
	void (*on_done)(void *, gl_finish_t, const gl_usage_t *, const char *);
	void *arg;
	double t_submit, t_start, t_first;
	req_t *next; /* the queue */
};

typedef struct {
	int used;
	uint64_t id;
	int nseq;
	int32_t seq[GL_MAX_BATCH_SEQS];
	int32_t *tokens; /* max_batch_tokens */
} flight_t;

struct gl_engine {
	const gl_tok_t *tok;
	gl_hparams_t hp;
	gl_exec_ops_t ops;
	void *exec;
	gl_engine_opts_t o;
	req_t **act; /* admitted requests, oldest first */
	int nact;
	req_t **slots; /* max_seqs: the request of each KV sequence */
	req_t *qhead, *qtail;
	int nqueued, next_id;
	int depth; /* the executor's, this pass */
	flight_t fl[MAX_DEPTH];
	int ninflight;
	uint64_t next_batch;
	float *logits; /* max_seqs x n_vocab */
	gl_batch_t bt;
};

static const char *const finish_names[] = {"stop", "length", "cancelled", "error"};

const char *gl_finish_name(gl_finish_t f)
{
	return (unsigned)f < sizeof finish_names / sizeof finish_names[0] ? finish_names[f] : "?";
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

gl_engine_t *gl_engine_create(const gl_tok_t *tok, const gl_hparams_t *hp, const gl_exec_ops_t *ops,
			      void *exec, const gl_engine_opts_t *o, gp_error_t *err)
{
	if (o->max_seqs < 1 || o->max_seqs > GL_MAX_BATCH_SEQS || o->max_batch_tokens < 1 ||
	    o->n_ctx < 2 || hp->n_vocab < 1) {
		errno = EINVAL;
		gp_errprintf(err,
			     "engine: bad options (max_seqs %d of 1..%d, max_batch_tokens %d, "
			     "n_ctx %d)",
			     o->max_seqs, GL_MAX_BATCH_SEQS, o->max_batch_tokens, o->n_ctx);
		return NULL;
	}
	gl_engine_t *e = calloc(1, sizeof *e);
	if (!e)
		goto nomem;
	e->tok = tok;
	e->hp = *hp;
	e->ops = *ops;
	e->exec = exec;
	e->o = *o;
	e->act = calloc((size_t)o->max_seqs, sizeof *e->act);
	e->slots = calloc((size_t)o->max_seqs, sizeof *e->slots);
	e->logits = malloc((size_t)o->max_seqs * (size_t)hp->n_vocab * sizeof *e->logits);
	if (!e->act || !e->slots || !e->logits)
		goto nomem;
	for (int i = 0; i < MAX_DEPTH; i++)
		if (!(e->fl[i].tokens = malloc((size_t)o->max_batch_tokens * sizeof(int32_t))))
			goto nomem;
	e->next_batch = 1;
	return e;
nomem:
	gl_engine_destroy(&e);
	errno = ENOMEM;
	gp_errprintf(err, "engine: out of memory");
	return NULL;
}

static void req_free(req_t *r)
{
	if (!r)
		return;
	free(r->tok);
	gl_sampler_destroy(&r->smp);
	for (int i = 0; i < r->nstop; i++)
		free(r->stop[i]);
	free(r->held);
	free(r);
}

int gl_engine_open(const gl_engine_t *e)
{
	return e->nact + e->nqueued;
}

/* ---- text ---- */

/* Bytes at the end of BUF that begin a UTF-8 character not yet complete (0..3). */
static size_t utf8_tail(const char *buf, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char c = (unsigned char)buf[n - k];
		if ((c & 0xC0) == 0x80)
			continue; /* a continuation byte: look further back */
		size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		return want > k ? k : 0;
	}
	return 0;
}

/* The longest tail of the held text that is a proper prefix of a stop string. */
static size_t stop_prefix_tail(const req_t *r)
{
	size_t best = 0;
	for (int i = 0; i < r->nstop; i++) {
		size_t max = r->stop_len[i] - 1 < r->nheld ? r->stop_len[i] - 1 : r->nheld;
		for (size_t k = max; k > best; k--)
			if (memcmp(r->held + r->nheld - k, r->stop[i], k) == 0) {
				best = k;
				break;
			}
	}
	return best;
}

/* Hand out the first N held bytes. */
static void emit(req_t *r, size_t n)
{
	if (n == 0)
		return;
	if (r->on_text)
		r->on_text(r->arg, r->held, n, r->held_tokens);
	r->held_tokens = 0;
	memmove(r->held, r->held + n, r->nheld - n);
	r->nheld -= n;
}

/* The end of the answer: the held text is text after all; an unfinished character becomes
 * U+FFFD, so that only whole characters are ever handed out. */
static void flush(req_t *r)
{
	size_t t = utf8_tail(r->held, r->nheld);
	if (t) {
		r->nheld -= t;
		memcpy(r->held + r->nheld, "\xEF\xBF\xBD", 3);
		r->nheld += 3;
	}
	emit(r, r->nheld);
}

/* Add token T's text; 1 if a stop string is now complete (the text before it handed out). */
static int add_text(gl_engine_t *e, req_t *r, int32_t t)
{
	int n = gl_tok_piece(e->tok, t, 0, r->held + r->nheld, MAX_PIECE);
	if (n > MAX_PIECE)
		n = MAX_PIECE;
	if (n > 0)
		r->nheld += (size_t)n;
	r->held_tokens++;
	size_t at = r->nheld;
	for (int i = 0; i < r->nstop; i++) {
		if (r->stop_len[i] > r->nheld)
			continue;
		for (size_t p = 0; p + r->stop_len[i] <= r->nheld && p < at; p++)
			if (memcmp(r->held + p, r->stop[i], r->stop_len[i]) == 0) {
				at = p;
				break;
			}
	}
	if (at < r->nheld) {
		emit(r, at);
		return 1;
	}
	size_t keep = stop_prefix_tail(r), u = utf8_tail(r->held, r->nheld);
	emit(r, r->nheld - (keep > u ? keep : u));
	return 0;
}

/* ---- ending a request ---- */

static void finish(gl_engine_t *e, req_t *r, gl_finish_t why, const char *error)
{
	if (why == GL_FINISH_STOP || why == GL_FINISH_LENGTH)
		flush(r);
	if (r->slot >= 0) {
		e->ops.release(e->exec, r->slot);
		e->slots[r->slot] = NULL;
		for (int i = 0; i < e->nact; i++)
			if (e->act[i] == r) {
				memmove(&e->act[i], &e->act[i + 1],
					(size_t)(e->nact - i - 1) * sizeof *e->act);
				e->nact--;
				break;
			}
	}
	double t = now_ms();
	gl_usage_t u = {
	    .prompt_tokens = r->nprompt,
	    .completion_tokens = r->ngen,
	    .queue_ms = (r->t_start ? r->t_start : t) - r->t_submit,
	    .first_token_ms = r->t_first ? r->t_first - r->t_submit : 0,
	    .total_ms = t - r->t_submit,
	};
	if (r->on_done)
		r->on_done(r->arg, why, &u, error);
	req_free(r);
}

static req_t *queue_pop(gl_engine_t *e)
{
	req_t *r = e->qhead;
	if (r) {
		e->qhead = r->next;
		if (!e->qhead)
			e->qtail = NULL;
		e->nqueued--;
		r->next = NULL;
	}
	return r;
}

void gl_engine_destroy(gl_engine_t **ep)
{
	if (!ep || !*ep)
		return;
	gl_engine_t *e = *ep;
	req_t *r;
	while (e->act && e->nact > 0)
		finish(e, e->act[0], GL_FINISH_CANCELLED, NULL);
	while ((r = queue_pop(e)))
		finish(e, r, GL_FINISH_CANCELLED, NULL);
	for (int i = 0; i < MAX_DEPTH; i++)
		free(e->fl[i].tokens);
	free(e->act);
	free(e->slots);
	free(e->logits);
	free(e);
	*ep = NULL;
}

/* Every open request ends with an error: the executor lost the batches in flight. */
static int fail_all(gl_engine_t *e, gp_error_t *err)
{
	char msg[sizeof err->text];
	snprintf(msg, sizeof msg, "%s", err && err->text[0] ? err->text : "the executor failed");
	for (int i = 0; i < MAX_DEPTH; i++)
		e->fl[i].used = 0;
	e->ninflight = 0;
	req_t *r;
	while (e->nact > 0)
		finish(e, e->act[0], GL_FINISH_ERROR, msg);
	while ((r = queue_pop(e)))
		finish(e, r, GL_FINISH_ERROR, msg);
	return -1;
}

/* ---- submitting ---- */

static int req_fill(gl_engine_t *e, req_t *r, const gl_request_t *q, gp_error_t *err)
{
	r->tok = malloc((size_t)e->o.n_ctx * sizeof *r->tok);
	r->held = malloc(MAX_STOP_LEN + MAX_PIECE + 8);
	r->smp = gl_sampler_create(&q->sp, e->hp.n_vocab);
	if (!r->tok || !r->held || !r->smp)
		return gp_errprintf(err, "engine: out of memory");
	memcpy(r->tok, q->prompt, (size_t)q->nprompt * sizeof *r->tok);
	for (int i = 0; i < q->nstop; i++) {
		r->stop_len[i] = strlen(q->stop[i]);
		if (!(r->stop[i] = strdup(q->stop[i])))
			return gp_errprintf(err, "engine: out of memory");
		r->nstop++;
	}
	return 0;
}

static int check_request(const gl_engine_t *e, const gl_request_t *q, gp_error_t *err)
{
	const char *field;
	errno = EINVAL;
	if (q->nprompt < 1 || !q->prompt)
		return gp_errprintf(err, "the prompt is empty");
	if (q->nprompt >= e->o.n_ctx)
		return gp_errprintf(err, "a prompt of %d tokens leaves no room in a context of %d",
				    q->nprompt, e->o.n_ctx);
	for (int i = 0; i < q->nprompt; i++)
		if (q->prompt[i] < 0 || q->prompt[i] >= e->hp.n_vocab)
			return gp_errprintf(err, "prompt token %d (%d) is not in the vocabulary", i,
					    (int)q->prompt[i]);
	if (q->max_tokens < 0)
		return gp_errprintf(err, "max_tokens %d is negative", q->max_tokens);
	if (gl_sample_check(&q->sp, &field) < 0)
		return gp_errprintf(err, "'%s' is out of range", field);
	if (q->nstop < 0 || q->nstop > MAX_STOPS || (q->nstop && !q->stop))
		return gp_errprintf(err, "%d stop strings (at most %d)", q->nstop, MAX_STOPS);
	for (int i = 0; i < q->nstop; i++) {
		size_t n = q->stop[i] ? strlen(q->stop[i]) : 0;
		if (n < 1 || n > MAX_STOP_LEN)
			return gp_errprintf(err, "stop string %d is empty or over %d bytes", i,
					    MAX_STOP_LEN);
	}
	return 0;
}

int gl_engine_submit(gl_engine_t *e, const gl_request_t *q, gp_error_t *err)
{
	if (check_request(e, q, err) < 0)
		return -1;
	req_t *r = calloc(1, sizeof *r);
	if (!r || req_fill(e, r, q, err) < 0) {
		req_free(r);
		errno = ENOMEM;
		return gp_errprintf(err, "engine: out of memory");
	}
	r->id = e->next_id++;
	if (e->next_id < 0)
		e->next_id = 0;
	r->slot = -1;
	r->ntok = r->nprompt = q->nprompt;
	r->max_tokens = q->max_tokens;
	r->ignore_eos = q->ignore_eos;
	r->on_text = q->on_text;
	r->on_done = q->on_done;
	r->arg = q->arg;
	r->t_submit = now_ms();
	if (e->qtail)
		e->qtail->next = r;
	else
		e->qhead = r;
	e->qtail = r;
	e->nqueued++;
	return r->id;
}

int gl_engine_cancel(gl_engine_t *e, int id)
{
	for (int i = 0; i < e->nact; i++)
		if (e->act[i]->id == id) {
			e->act[i]->cancelled = 1;
			return 0;
		}
	for (req_t *r = e->qhead; r; r = r->next)
		if (r->id == id) {
			r->cancelled = 1;
			return 0;
		}
	errno = ENOENT;
	return -1;
}

/* Cancelled requests not in flight end now. */
static void reap_cancelled(gl_engine_t *e)
{
	for (int i = 0; i < e->nact;)
		if (e->act[i]->cancelled && !e->act[i]->inflight)
			finish(e, e->act[i], GL_FINISH_CANCELLED, NULL);
		else
			i++;
	for (req_t **pp = &e->qhead; *pp;) {
		req_t *r = *pp;
		if (!r->cancelled) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		if (e->qtail == r)
			e->qtail = NULL;
		e->nqueued--;
		finish(e, r, GL_FINISH_CANCELLED, NULL);
	}
	if (!e->qtail) /* rebuild the tail after removals */
		for (req_t *r = e->qhead; r; r = r->next)
			e->qtail = r;
}

/* Queued requests take free slots. */
static void admit(gl_engine_t *e)
{
	for (int s = 0; s < e->o.max_seqs && e->qhead; s++) {
		if (e->slots[s])
			continue;
		req_t *r = queue_pop(e);
		r->slot = s;
		r->t_start = now_ms();
		e->slots[s] = r;
		e->act[e->nact++] = r;
	}
}

/* ---- batches ---- */

static void batch_add(gl_engine_t *e, flight_t *f, req_t *r, int n)
{
	gl_batch_t *bt = &e->bt;
	memcpy(f->tokens + bt->ntok, r->tok + r->fed, (size_t)n * sizeof(int32_t));
	bt->seq[bt->nseq] = r->slot;
	bt->n[bt->nseq] = n;
	bt->ctx[bt->nseq] = r->fed + n;
	bt->nseq++;
	bt->ntok += n;
}

/* Decodes first, then prefill chunks, oldest first; KV room as the executor counts it. A
 * pipeline of DEPTH stages gets the sequences spread over DEPTH batches, so that every stage
 * has one to work on. */
static void form_batch(gl_engine_t *e, flight_t *f)
{
	gl_batch_t *bt = &e->bt;
	memset(bt, 0, sizeof *bt);
	bt->tokens = f->tokens;
	int room = e->ops.free_tokens(e->exec), max = e->o.max_batch_tokens;
	int maxseq = (e->nact + e->depth - 1) / e->depth;
	for (int i = 0; i < e->nact && bt->ntok < max && bt->nseq < maxseq; i++) {
		req_t *r = e->act[i];
		if (!r->inflight && !r->cancelled && r->ntok - r->fed == 1) {
			batch_add(e, f, r, 1);
			room--;
		}
	}
	for (int i = 0; i < e->nact && bt->ntok < max && bt->nseq < maxseq; i++) {
		req_t *r = e->act[i];
		int n = r->ntok - r->fed;
		if (r->inflight || r->cancelled || n < 2)
			continue;
		if (n > max - bt->ntok)
			n = max - bt->ntok;
		if (n > room)
			n = room;
		if (n < 1)
			break;
		batch_add(e, f, r, n);
		room -= n;
	}
}

/* Nothing in flight and nothing fits: give back the newest sequence's blocks (it is fed again
 * later), or, when only one holds any, it alone is too long for the cache. */
static void make_room(gl_engine_t *e)
{
	int holders = 0, newest = -1;
	for (int i = 0; i < e->nact; i++)
		if (e->act[i]->fed > 0) {
			holders++;
			newest = i;
		}
	if (holders >= 2) {
		req_t *r = e->act[newest];
		e->ops.release(e->exec, r->slot);
		r->fed = 0;
	} else if (e->nact > 0) {
		finish(e, newest >= 0 ? e->act[newest] : e->act[0], GL_FINISH_LENGTH, NULL);
	}
}

/* Submit one batch: 1 started, 0 nothing to start (or no room until a batch comes back), -1 the
 * executor failed. */
static int start_one(gl_engine_t *e, gp_error_t *err)
{
	flight_t *f = NULL;
	for (int i = 0; i < MAX_DEPTH && !f; i++)
		if (!e->fl[i].used)
			f = &e->fl[i];
	form_batch(e, f);
	gl_batch_t *bt = &e->bt;
	uint64_t id = e->next_batch;
	while (bt->nseq > 0) {
		if (e->ops.submit(e->exec, id, bt, err) == 0)
			break;
		if (errno != ENOSPC)
			return -1;
		bt->nseq--; /* the last (newest, or a chunk) waits */
		bt->ntok -= bt->n[bt->nseq];
	}
	if (bt->nseq == 0) {
		if (e->ninflight == 0 && e->nact > 0) {
			make_room(e);
			return e->nact > 0 ? 2 : 0;
		}
		return 0;
	}
	e->next_batch++;
	f->used = 1;
	f->id = id;
	f->nseq = bt->nseq;
	for (int j = 0; j < bt->nseq; j++) {
		req_t *r = e->slots[bt->seq[j]];
		f->seq[j] = bt->seq[j];
		r->fed += bt->n[j];
		r->inflight = 1;
	}
	e->ninflight++;
	return 1;
}

static int start_batches(gl_engine_t *e, gp_error_t *err)
{
	int depth = e->ops.depth(e->exec), tries = 0;
	e->depth = depth < 1 ? 1 : depth > MAX_DEPTH ? MAX_DEPTH : depth;
	reap_cancelled(e);
	admit(e);
	while (e->ninflight < e->depth) {
		int rc = start_one(e, err);
		if (rc < 0)
			return fail_all(e, err);
		if (rc == 0)
			break;
		if (rc == 2 && ++tries > 2 * e->o.max_seqs + 2)
			break; /* made room: try again, a bounded number of times */
		admit(e);
	}
	return 0;
}

/* ---- a batch back ---- */

static void take_token(gl_engine_t *e, req_t *r, int32_t t)
{
	if (!r->t_first)
		r->t_first = now_ms();
	r->ngen++;
	if (!r->ignore_eos && gl_tok_is_eog(e->tok, t)) {
		finish(e, r, GL_FINISH_STOP, NULL);
		return;
	}
	r->tok[r->ntok++] = t;
	if (add_text(e, r, t)) {
		r->nheld = 0; /* the stop string and what follows it are not the answer */
		finish(e, r, GL_FINISH_STOP, NULL);
		return;
	}
	if ((r->max_tokens > 0 && r->ngen >= r->max_tokens) || r->ntok >= e->o.n_ctx)
		finish(e, r, GL_FINISH_LENGTH, NULL);
}

static void batch_done(gl_engine_t *e, uint64_t id)
{
	flight_t *f = NULL;
	for (int i = 0; i < MAX_DEPTH && !f; i++)
		if (e->fl[i].used && e->fl[i].id == id)
			f = &e->fl[i];
	if (!f)
		return; /* not ours (a batch of before a failure) */
	f->used = 0;
	e->ninflight--;
	for (int j = 0; j < f->nseq; j++) {
		req_t *r = e->slots[f->seq[j]];
		if (!r)
			continue;
		r->inflight = 0;
		if (r->cancelled) {
			finish(e, r, GL_FINISH_CANCELLED, NULL);
			continue;
		}
		if (r->fed < r->ntok)
			continue; /* a chunk of the prompt: more to feed */
		float *row = e->logits + (size_t)j * (size_t)e->hp.n_vocab;
		take_token(e, r, gl_sampler_next(r->smp, row, r->tok, r->ntok));
	}
}

int gl_engine_run(gl_engine_t *e, int timeout_ms, gp_error_t *caller_err)
{
	gp_error_t local, *err = caller_err ? caller_err : &local;
	err->text[0] = 0; /* fail_all reports the executor's own words, never older ones */
	if (start_batches(e, err) < 0)
		return -1;
	if (e->ninflight == 0) {
		reap_cancelled(e);
		return gl_engine_open(e);
	}
	uint64_t id = 0;
	int rc = e->ops.wait(e->exec, &id, e->logits, timeout_ms, err);
	if (rc < 0)
		return fail_all(e, err);
	if (rc > 0)
		batch_done(e, id);
	if (start_batches(e, err) < 0)
		return -1;
	return gl_engine_open(e);
}
