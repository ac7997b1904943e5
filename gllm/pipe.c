/* pipe.c - the pipeline over libgcomm's point-to-point messages (pipe.h): the head rank's
 * executor and the stage ranks' loop. A frame is two messages, its header (tag 1) and its
 * body (tag 2); the receiver bounds the body by the header before it posts the body's
 * receive, so a peer can never make a rank take more than the agreed limits. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gllm/pipe.h"
#include "gllm/plan.h"

enum { TAG_HDR = 1, TAG_BODY = 2 };

typedef struct {
	int used;
	uint64_t id;
	gl_batch_t bt; /* tokens NULL: the head needs only the shape */
	uint8_t hdr[GL_STAGE_HDR_SIZE];
	uint8_t *body;
	gc_req_t *sh, *sb;
	long long t0;
} flight_t;

/* A release on its way to the next rank. */
typedef struct rel {
	struct rel *next;
	uint8_t hdr[GL_STAGE_HDR_SIZE];
	uint8_t body[4 * GL_MAX_BATCH_SEQS];
	gc_req_t *sh, *sb;
} rel_t;

struct gl_pipe {
	gl_pipe_opts_t o;
	int ring[GL_PLAN_MAX_RANKS];
	gl_fwd_t *fwd;
	gl_kv_t *kv;
	int dim;
	flight_t *fl;
	int *fifo; /* flight indices in the order they left */
	int nfl, fhead, fcount;
	float *x;
	size_t max_body;
	uint8_t *rbody;
	uint8_t rhdr[GL_STAGE_HDR_SIZE];
	size_t rlen;
	gc_req_t *rreq; /* the header receive posted */
	rel_t *rels;
	int broken; /* errno of the failure */
	char why[400];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t max_body(const gl_stage_limits_t *lim)
{
	int seqs = lim->max_seqs < GL_MAX_BATCH_SEQS ? lim->max_seqs : GL_MAX_BATCH_SEQS;
	return gl_stage_body_size(GL_STAGE_STEP, seqs, lim->max_tokens, lim->dim, GL_WIRE_F32);
}

gl_pipe_t *gl_pipe_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w, gl_kv_t *kv,
			  const gl_pipe_opts_t *o, gp_error_t *err)
{
	if (!o->comm || o->nring < 2 || o->nring > GL_PLAN_MAX_RANKS || o->ring[0] != 0 ||
	    gc_rank(o->comm) != 0 || o->lim.dim != hp->dim) {
		errno = EINVAL;
		gp_errprintf(err, "pipe: a ring of %d ranks from rank %d", o->nring,
			     o->comm ? gc_rank(o->comm) : -1);
		return NULL;
	}
	gl_pipe_t *p = calloc(1, sizeof(*p));
	if (!p)
		goto nomem;
	p->o = *o;
	memcpy(p->ring, o->ring, (size_t)o->nring * sizeof(int));
	p->o.ring = p->ring;
	p->kv = kv;
	p->dim = hp->dim;
	p->nfl = o->nring;
	p->max_body = max_body(&o->lim);
	p->fl = calloc((size_t)p->nfl, sizeof(*p->fl));
	p->fifo = calloc((size_t)p->nfl, sizeof(int));
	p->x = malloc((size_t)o->lim.max_tokens * (size_t)hp->dim * 4);
	p->rbody = malloc(p->max_body);
	if (!p->fl || !p->fifo || !p->x || !p->rbody)
		goto nomem;
	for (int i = 0; i < p->nfl; i++)
		if (!(p->fl[i].body = malloc(p->max_body)))
			goto nomem;
	if (!(p->fwd = gl_fwd_create(b, hp, w, kv, o->lim.max_tokens, err))) {
		int e = errno;
		gl_pipe_destroy(&p);
		errno = e;
		return NULL;
	}
	return p;
nomem:
	gl_pipe_destroy(&p);
	errno = ENOMEM;
	gp_errprintf(err, "pipe: out of memory");
	return NULL;
}

/* The pipe is broken from now on: E and the reason, for this and every later call. */
static int fail(gl_pipe_t *p, int e, gp_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(gl_pipe_t *p, int e, gp_error_t *err, const char *fmt, ...)
{
	if (!p->broken) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->why, sizeof(p->why), fmt, ap);
		va_end(ap);
		p->broken = e;
	}
	gp_errprintf(err, "pipeline: %s", p->why);
	errno = e == ETIMEDOUT ? ETIMEDOUT : EPIPE;
	return -1;
}

/* Post a frame's two messages to PEER (the body only when it has one). */
static int send_frame(gc_comm_t *c, int peer, const uint8_t *hdr, const uint8_t *body, size_t blen,
		      gc_req_t **sh, gc_req_t **sb)
{
	*sb = NULL;
	if (gc_isend(c, peer, TAG_HDR, hdr, GL_STAGE_HDR_SIZE, sh) < 0)
		return -1;
	if (blen && gc_isend(c, peer, TAG_BODY, body, blen, sb) < 0)
		return -1;
	return 0;
}

/* Reserve every sequence's KV space, or none (the old lengths back). */
static int reserve(gl_kv_t *kv, const gl_batch_t *bt, int *bad_seq)
{
	int old[GL_MAX_BATCH_SEQS];
	for (int j = 0; j < bt->nseq; j++) {
		old[j] = gl_kv_len(kv, bt->seq[j]);
		if (gl_kv_reserve(kv, bt->seq[j], bt->ctx[j]) < 0) {
			int e = errno;
			*bad_seq = bt->seq[j];
			while (j-- > 0)
				gl_kv_reserve(kv, bt->seq[j], old[j]);
			errno = e;
			return -1;
		}
	}
	return 0;
}

static int p_submit(void *ctx, uint64_t id, const gl_batch_t *bt, gp_error_t *err)
{
	gl_pipe_t *p = ctx;
	if (p->broken)
		return fail(p, p->broken, err, "%s", p->why);
	if (p->fcount == p->nfl) {
		errno = EBUSY;
		return gp_errprintf(err, "pipeline: %d batches already in flight", p->nfl);
	}
	if (bt->nseq < 1 || bt->nseq > p->o.lim.max_seqs || bt->ntok < 1 ||
	    bt->ntok > p->o.lim.max_tokens) {
		errno = EINVAL;
		return gp_errprintf(err, "pipeline: a batch of %d sequences, %d tokens", bt->nseq,
				    bt->ntok);
	}
	int seq;
	if (reserve(p->kv, bt, &seq) < 0) {
		int e = errno;
		gp_errprintf(err, "pipeline: no KV space for sequence %d", seq);
		errno = e;
		return -1;
	}
	int k = 0;
	while (p->fl[k].used)
		k++;
	flight_t *f = &p->fl[k];
	if (gl_fwd_embed(p->fwd, bt, err) < 0 || gl_fwd_layers(p->fwd, bt, err) < 0 ||
	    gl_fwd_get_x(p->fwd, bt, p->x, err) < 0)
		return fail(p, EIO, NULL, "rank 0's layers: %s", err->text);
	f->bt = *bt;
	f->bt.tokens = NULL;
	f->id = id;
	gl_stage_hdr_t h;
	gl_stage_hdr_make(&h, GL_STAGE_STEP, id, bt, p->dim, p->o.wire);
	gl_stage_hdr_encode(&h, f->hdr);
	gl_stage_body_encode(&h, bt, p->x, f->body);
	if (send_frame(p->o.comm, p->ring[1], f->hdr, f->body, h.body_bytes, &f->sh, &f->sb) < 0)
		return fail(p, errno, err, "sending to rank %d: %s", p->ring[1],
			    gc_error(p->o.comm));
	f->used = 1;
	f->t0 = now_ms();
	p->fifo[(p->fhead + p->fcount++) % p->nfl] = k;
	return 0;
}

/* Collect the sends of releases that have gone. */
static int reap_releases(gl_pipe_t *p, gp_error_t *err)
{
	for (rel_t **rp = &p->rels; *rp;) {
		rel_t *r = *rp;
		int d1 = 1, d2 = 1;
		gc_test(r->sh, &d1);
		if (r->sb)
			gc_test(r->sb, &d2);
		if (!d1 || !d2) {
			rp = &r->next;
			continue;
		}
		if (gc_wait(&r->sh) < 0 || (r->sb && gc_wait(&r->sb) < 0))
			return fail(p, errno, err, "releasing on rank %d: %s", p->ring[1],
				    gc_error(p->o.comm));
		*rp = r->next;
		free(r);
	}
	return 0;
}

/* Wait for *REQ until DEADLINE: 1 done, 0 not yet (and not past the deadline), -1 failed. */
static int wait_until(gl_pipe_t *p, gc_req_t **req, long long deadline, int timeout_ms,
		      gp_error_t *err)
{
	long long left = deadline - now_ms();
	int slice = timeout_ms < 0 || left < timeout_ms ? (int)(left > 0 ? left : 0) : timeout_ms;
	int rc = gc_wait_for(req, slice);
	if (rc < 0)
		return fail(p, errno, err, "%s", gc_error(p->o.comm));
	if (rc == 0 && now_ms() >= deadline)
		return fail(p, ETIMEDOUT, err, "no answer from rank %d within %d ms",
			    p->ring[p->o.nring - 1], p->o.timeout_ms);
	return rc;
}

/* The frame that came back is the oldest batch's, whole and consistent. */
static int check_back(gl_pipe_t *p, const flight_t *f, const gl_stage_hdr_t *h,
		      const gl_batch_t *bt, gp_error_t *err)
{
	int ok = h->kind == GL_STAGE_STEP && h->batch == f->id && bt->nseq == f->bt.nseq &&
		 bt->ntok == f->bt.ntok;
	for (int j = 0; ok && j < bt->nseq; j++)
		ok = bt->seq[j] == f->bt.seq[j] && bt->n[j] == f->bt.n[j];
	if (!ok)
		return fail(p, EPROTO, err, "rank %d sent back batch %llu, %llu was due",
			    p->ring[p->o.nring - 1], (unsigned long long)h->batch,
			    (unsigned long long)f->id);
	return 0;
}

/* The oldest batch's activations are back in p->x: the head's logits. */
static int finish_oldest(gl_pipe_t *p, uint64_t *id, float *logits, gp_error_t *err)
{
	flight_t *f = &p->fl[p->fifo[p->fhead]];
	if (gl_fwd_set_x(p->fwd, &f->bt, p->x, err) < 0 ||
	    gl_fwd_head(p->fwd, &f->bt, logits, err) < 0)
		return fail(p, EIO, NULL, "rank 0's head: %s", err->text);
	if (gc_wait(&f->sh) < 0 || (f->sb && gc_wait(&f->sb) < 0))
		return fail(p, errno, err, "%s", gc_error(p->o.comm));
	f->used = 0;
	p->fhead = (p->fhead + 1) % p->nfl;
	p->fcount--;
	*id = f->id;
	return 1;
}

static int p_wait(void *ctx, uint64_t *id, float *logits, int timeout_ms, gp_error_t *err)
{
	gl_pipe_t *p = ctx;
	if (p->broken)
		return fail(p, p->broken, err, "%s", p->why);
	if (reap_releases(p, err) < 0)
		return -1;
	if (p->fcount == 0)
		return 0;
	flight_t *f = &p->fl[p->fifo[p->fhead]];
	int last = p->ring[p->o.nring - 1];
	long long deadline = f->t0 + p->o.timeout_ms;
	if (!p->rreq &&
	    gc_irecv(p->o.comm, last, TAG_HDR, p->rhdr, sizeof(p->rhdr), &p->rlen, &p->rreq) < 0)
		return fail(p, errno, err, "%s", gc_error(p->o.comm));
	int rc = wait_until(p, &p->rreq, deadline, timeout_ms, err);
	if (rc <= 0)
		return rc;
	gl_stage_hdr_t h;
	gl_batch_t bt;
	if (gl_stage_hdr_decode(p->rhdr, p->rlen, &p->o.lim, &h, err) < 0)
		return fail(p, EPROTO, NULL, "rank %d: %s", last, err->text);
	/* the body's size is bounded now; it follows the header at once */
	gc_req_t *rb = NULL;
	size_t blen = 0;
	if (h.body_bytes &&
	    gc_irecv(p->o.comm, last, TAG_BODY, p->rbody, h.body_bytes, &blen, &rb) < 0)
		return fail(p, errno, err, "%s", gc_error(p->o.comm));
	while (rb && (rc = wait_until(p, &rb, deadline, -1, err)) == 0)
		;
	if (rc < 0)
		return -1;
	if (gl_stage_body_decode(&h, p->rbody, blen, &p->o.lim, &bt, p->x, err) < 0)
		return fail(p, EPROTO, NULL, "rank %d: %s", last, err->text);
	if (check_back(p, f, &h, &bt, err) < 0)
		return -1;
	return finish_oldest(p, id, logits, err);
}

static void p_release(void *ctx, int seq)
{
	gl_pipe_t *p = ctx;
	gl_kv_release(p->kv, seq);
	if (p->broken)
		return;
	rel_t *r = calloc(1, sizeof(*r));
	if (!r) {
		fail(p, ENOMEM, NULL, "out of memory for a release");
		return;
	}
	gl_batch_t bt = {.nseq = 1};
	bt.seq[0] = seq;
	gl_stage_hdr_t h;
	gl_stage_hdr_make(&h, GL_STAGE_RELEASE, 0, &bt, p->dim, p->o.wire);
	gl_stage_hdr_encode(&h, r->hdr);
	gl_stage_body_encode(&h, &bt, NULL, r->body);
	if (send_frame(p->o.comm, p->ring[1], r->hdr, r->body, h.body_bytes, &r->sh, &r->sb) < 0) {
		fail(p, errno, NULL, "releasing on rank %d: %s", p->ring[1], gc_error(p->o.comm));
		/* the request may hold r: left to the broken communicator */
		return;
	}
	r->next = p->rels;
	p->rels = r;
}

static int p_depth(void *ctx)
{
	return ((gl_pipe_t *)ctx)->nfl;
}

static int p_free_tokens(void *ctx)
{
	gl_pipe_t *p = ctx;
	return gl_kv_free_blocks(p->kv) * gl_kv_block_size(p->kv);
}

const gl_exec_ops_t gl_pipe_ops = {p_submit, p_wait, p_release, p_depth, p_free_tokens};

/* Every rank besides this one gets a SHUTDOWN: the ring's next one (it passes it on), and the
 * ranks with no layers, which wait for nothing else. */
static void shutdown_all(gl_pipe_t *p)
{
	gl_stage_hdr_t h;
	uint8_t hb[GL_STAGE_HDR_SIZE];
	gl_stage_hdr_make(&h, GL_STAGE_SHUTDOWN, 0, NULL, p->dim, p->o.wire);
	gl_stage_hdr_encode(&h, hb);
	int size = gc_size(p->o.comm);
	for (int r = 1; r < size; r++) {
		int in_ring = 0;
		for (int i = 2; i < p->o.nring; i++)
			in_ring |= p->ring[i] == r;
		if (!in_ring && gc_send(p->o.comm, r, TAG_HDR, hb, sizeof(hb)) < 0)
			return;
	}
}

void gl_pipe_destroy(gl_pipe_t **pp)
{
	if (!pp || !*pp)
		return;
	gl_pipe_t *p = *pp;
	int healthy = !p->broken && p->o.comm;
	/* sends still out name their buffers: wait for them, or (broken) leave them */
	for (int i = 0; healthy && p->fl && i < p->nfl; i++) {
		if (p->fl[i].sh && gc_wait_for(&p->fl[i].sh, 1000) <= 0)
			healthy = 0;
		if (p->fl[i].sb && gc_wait_for(&p->fl[i].sb, 1000) <= 0)
			healthy = 0;
	}
	gp_error_t e;
	if (healthy && reap_releases(p, &e) == 0 && p->fcount == 0)
		shutdown_all(p);
	if (healthy) {
		for (int i = 0; p->fl && i < p->nfl; i++)
			free(p->fl[i].body);
		while (p->rels) {
			rel_t *r = p->rels;
			p->rels = r->next;
			gc_wait_for(&r->sh, 1000);
			if (r->sb)
				gc_wait_for(&r->sb, 1000);
			free(r);
		}
		free(p->rbody);
	}
	/* a broken pipe's buffers may still be named by the transport's requests: kept */
	gl_fwd_destroy(&p->fwd);
	free(p->fl);
	free(p->fifo);
	free(p->x);
	free(p);
	*pp = NULL;
}

/* ---- a stage rank ---- */

typedef struct {
	gc_comm_t *c;
	gl_fwd_t *fwd;
	gl_kv_t *kv;
	int prev, next, dim;
	const gl_stage_limits_t *lim;
	gl_wire_t wire;
	uint8_t hdr[GL_STAGE_HDR_SIZE];
	uint8_t *body, *out;
	float *x;
} stage_t;

static int s_fail(stage_t *s, gp_error_t *err, const char *what)
{
	int e = errno;
	gp_errprintf(err, "stage %d: %s: %s", gc_rank(s->c), what, gc_error(s->c));
	errno = e;
	return -1;
}

/* Receive a frame from the previous rank: its header checked before the body is taken. */
static int s_recv(stage_t *s, gl_stage_hdr_t *h, gl_batch_t *bt, gp_error_t *err)
{
	size_t len = 0;
	if (gc_recv(s->c, s->prev, TAG_HDR, s->hdr, sizeof(s->hdr), &len) < 0)
		return s_fail(s, err, "receiving");
	if (gl_stage_hdr_decode(s->hdr, len, s->lim, h, err) < 0)
		return -1;
	if (h->body_bytes && gc_recv(s->c, s->prev, TAG_BODY, s->body, h->body_bytes, &len) < 0)
		return s_fail(s, err, "receiving");
	if (!h->body_bytes)
		len = 0;
	return gl_stage_body_decode(h, s->body, len, s->lim, bt, s->x, err);
}

static int s_send(stage_t *s, const uint8_t *hdr, const uint8_t *body, size_t blen, gp_error_t *err)
{
	if (gc_send(s->c, s->next, TAG_HDR, hdr, GL_STAGE_HDR_SIZE) < 0 ||
	    (blen && gc_send(s->c, s->next, TAG_BODY, body, blen) < 0))
		return s_fail(s, err, "sending");
	return 0;
}

static int s_step(stage_t *s, gl_stage_hdr_t *h, gl_batch_t *bt, gp_error_t *err)
{
	int seq;
	if (reserve(s->kv, bt, &seq) < 0) {
		gp_errprintf(err, "stage %d: no KV space for sequence %d (the head found some)",
			     gc_rank(s->c), seq);
		return -1;
	}
	if (gl_fwd_set_x(s->fwd, bt, s->x, err) < 0 || gl_fwd_layers(s->fwd, bt, err) < 0 ||
	    gl_fwd_get_x(s->fwd, bt, s->x, err) < 0)
		return -1;
	gl_stage_hdr_t o;
	uint8_t ob[GL_STAGE_HDR_SIZE];
	gl_stage_hdr_make(&o, GL_STAGE_STEP, h->batch, bt, s->dim, s->wire);
	gl_stage_hdr_encode(&o, ob);
	gl_stage_body_encode(&o, bt, s->x, s->out);
	return s_send(s, ob, s->out, o.body_bytes, err);
}

static int s_loop(stage_t *s, gp_error_t *err)
{
	for (;;) {
		gl_stage_hdr_t h;
		gl_batch_t bt;
		if (s_recv(s, &h, &bt, err) < 0)
			return -1;
		if (h.kind == GL_STAGE_STEP) {
			if (s->next < 0) {
				gp_errprintf(err, "stage %d: a step for a rank with no layers",
					     gc_rank(s->c));
				return errno = EPROTO, -1;
			}
			if (s_step(s, &h, &bt, err) < 0)
				return -1;
			continue;
		}
		if (h.kind == GL_STAGE_RELEASE)
			for (int j = 0; j < bt.nseq; j++)
				gl_kv_release(s->kv, bt.seq[j]);
		/* releases and the shutdown go round the ring, not back to the head */
		if (s->next > 0 && s_send(s, s->hdr, s->body, h.body_bytes, err) < 0)
			return -1;
		if (h.kind == GL_STAGE_SHUTDOWN)
			return 0;
	}
}

int gl_stage_run(gc_comm_t *c, gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w,
		 gl_kv_t *kv, int prev, int next, const gl_stage_limits_t *lim, gl_wire_t wire,
		 gp_error_t *err)
{
	stage_t s = {
	    .c = c, .kv = kv, .prev = prev, .next = next, .dim = hp->dim, .lim = lim, .wire = wire};
	size_t mb = max_body(lim);
	int rc = -1;
	s.body = malloc(mb);
	s.out = malloc(mb);
	s.x = malloc((size_t)lim->max_tokens * (size_t)hp->dim * 4);
	if (!s.body || !s.out || !s.x) {
		errno = ENOMEM;
		gp_errprintf(err, "stage: out of memory");
	} else if (next < 0 || (s.fwd = gl_fwd_create(b, hp, w, kv, lim->max_tokens, err))) {
		rc = s_loop(&s, err);
	}
	gl_fwd_destroy(&s.fwd);
	free(s.body);
	free(s.out);
	free(s.x);
	return rc;
}
