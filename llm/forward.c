/* forward.c - the forward pass of a rank's layers over a batch (forward.h), every step a
 * gpool/kernels.h call on device buffers sized once for max_tokens: nothing is allocated per
 * step except when a batch's block table outgrows the one held (it then grows, doubling).
 *
 * A layer: x += attn_output(attention(rope(q), rope(k) and v written to the paged cache)) over
 * attn_norm(x); x += down(silu(gate(h)) * up(h)) with h = ffn_norm(x). The head's rows (each
 * sequence's last, or all) are gathered, normed and multiplied in slices of HEAD_ROWS rows, so
 * the logits buffer holds HEAD_ROWS x n_vocab however many tokens a batch has. */
#include "llm/forward.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "llm/weights.h"

#define HEAD_ROWS 32

struct gl_fwd {
	gk_backend_t *b;
	gl_hparams_t hp;
	gl_weights_t *w;
	gl_kv_t *kv;
	int max_tokens, kvd;
	/* device activations */
	float *x, *xn, *q, *k, *v, *att, *tmp, *gate, *up, *logits;
	int32_t *d_ids; /* token ids (the embedding), then the head's rows */
	/* a step's ints, packed on the host and sent in one copy: positions, slots, q_start,
	 * ctx_len, the block table (the views below point into them, per batch) */
	int32_t *h_ints, *d_ints;
	size_t ints_cap;
	int32_t *h_pos, *h_slots, *h_qstart, *h_ctx, *h_table;
	int32_t *d_pos, *d_slots, *d_qstart, *d_ctx, *d_table;
	int32_t *h_rows; /* the head's rows */
	int max_blocks;	 /* this batch's table stride */
};

static int kfail(gl_fwd_t *f, const char *what, gp_error_t *err)
{
	int e = errno ? errno : EIO;
	gp_errprintf(err, "forward: %s: %s", what, gk_backend_error(f->b));
	errno = e;
	return -1;
}

static int dalloc(gl_fwd_t *f, void *pp, size_t bytes)
{
	return gk_dev_alloc(f->b, bytes ? bytes : 1, (void **)pp);
}

gl_fwd_t *gl_fwd_create(gk_backend_t *b, const gl_hparams_t *hp, gl_weights_t *w, gl_kv_t *kv,
			int max_tokens, gp_error_t *err)
{
	if (max_tokens < 1 || max_tokens > (1 << 20)) {
		errno = EINVAL;
		gp_errprintf(err, "forward: max_tokens %d", max_tokens);
		return NULL;
	}
	gl_fwd_t *f = calloc(1, sizeof *f);
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->b = b;
	f->hp = *hp;
	f->w = w;
	f->kv = kv;
	f->max_tokens = max_tokens;
	f->kvd = hp->n_kv_heads * hp->head_dim;
	size_t T = (size_t)max_tokens, D = (size_t)hp->dim, F = (size_t)hp->n_ff;
	size_t S = GL_MAX_BATCH_SEQS, hr = T < HEAD_ROWS ? T : HEAD_ROWS;
	int ok = dalloc(f, &f->x, T * D * 4) == 0 && dalloc(f, &f->xn, T * D * 4) == 0 &&
		 dalloc(f, &f->q, T * D * 4) == 0 && dalloc(f, &f->k, T * f->kvd * 4) == 0 &&
		 dalloc(f, &f->v, T * f->kvd * 4) == 0 && dalloc(f, &f->att, T * D * 4) == 0 &&
		 dalloc(f, &f->tmp, T * D * 4) == 0 && dalloc(f, &f->gate, T * F * 4) == 0 &&
		 dalloc(f, &f->up, T * F * 4) == 0 &&
		 dalloc(f, &f->logits, hr * (size_t)hp->n_vocab * 4) == 0 &&
		 dalloc(f, &f->d_ids, T * 4) == 0;
	f->ints_cap = 2 * T + 2 * S + 1 + 1024; /* room for a table of 1024 blocks at first */
	ok = ok && dalloc(f, &f->d_ints, f->ints_cap * 4) == 0;
	f->h_ints = malloc(f->ints_cap * 4);
	f->h_rows = malloc(T * 4);
	if (!ok || !f->h_ints || !f->h_rows) {
		int e = errno ? errno : ENOMEM;
		gp_errprintf(err, "forward: buffers for %d tokens: %s", max_tokens,
			     gk_backend_error(b));
		gl_fwd_destroy(&f);
		errno = e;
		return NULL;
	}
	return f;
}

void gl_fwd_destroy(gl_fwd_t **fp)
{
	if (!fp || !*fp)
		return;
	gl_fwd_t *f = *fp;
	void *dev[] = {f->x,   f->xn,	f->q,  f->k,	  f->v,	    f->att,
		       f->tmp, f->gate, f->up, f->logits, f->d_ids, f->d_ints};
	for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
		gk_dev_free(f->b, dev[i]);
	free(f->h_ints);
	free(f->h_rows);
	free(f);
	*fp = NULL;
}

/* The batch's shape is the caller's (an engine, a peer rank): bounded before anything is
 * sized or indexed from it. */
static int check_batch(const gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err)
{
	errno = EINVAL;
	if (bt->nseq < 1 || bt->nseq > GL_MAX_BATCH_SEQS || bt->ntok < 1 ||
	    bt->ntok > f->max_tokens)
		return gp_errprintf(err, "forward: a batch of %d sequences, %d tokens (at most %d)",
				    bt->nseq, bt->ntok, f->max_tokens);
	int sum = 0;
	for (int j = 0; j < bt->nseq; j++) {
		if (bt->n[j] < 1 || bt->ctx[j] < bt->n[j] || bt->n[j] > f->max_tokens)
			return gp_errprintf(err, "forward: sequence %d: %d new of %d", j, bt->n[j],
					    bt->ctx[j]);
		sum += bt->n[j];
	}
	if (sum != bt->ntok)
		return gp_errprintf(err, "forward: %d tokens, the sequences' sum is %d", bt->ntok,
				    sum);
	errno = 0;
	return 0;
}

static int to_dev(gl_fwd_t *f, void *d, const void *h, size_t bytes, gp_error_t *err)
{
	if (gk_copy(f->b, d, h, bytes, GK_H2D) < 0)
		return kfail(f, "copy", err);
	return 0;
}

/* Room for TOTAL ints on both sides (it grows, doubling, the first times a table needs more). */
static int ints_room(gl_fwd_t *f, size_t total, gp_error_t *err)
{
	if (total <= f->ints_cap)
		return 0;
	size_t cap = f->ints_cap;
	while (cap < total)
		cap *= 2;
	int32_t *h = realloc(f->h_ints, cap * 4);
	if (!h) {
		errno = ENOMEM;
		return gp_errprintf(err, "forward: out of memory");
	}
	f->h_ints = h;
	gk_dev_free(f->b, f->d_ints);
	f->d_ints = NULL;
	f->ints_cap = 0;
	if (dalloc(f, &f->d_ints, cap * 4) < 0)
		return kfail(f, "block table", err);
	f->ints_cap = cap;
	return 0;
}

/* The widest block table of the batch: the blocks each sequence holds, which may be more than
 * this step's context needs (a sequence reserved ahead); -1 if one holds fewer than its context. */
static int table_width(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err)
{
	int maxb = 1, bs = gl_kv_block_size(f->kv);
	for (int j = 0; j < bt->nseq; j++) {
		int len = gl_kv_len(f->kv, bt->seq[j]);
		if (len < bt->ctx[j]) {
			errno = EINVAL;
			return gp_errprintf(
			    err, "forward: sequence %d holds %d tokens, the batch needs %d",
			    bt->seq[j], len, bt->ctx[j]);
		}
		if ((len + bs - 1) / bs > maxb)
			maxb = (len + bs - 1) / bs;
	}
	return maxb;
}

/* Positions, slots, query starts, context lengths and block tables of the batch, packed and put
 * on the device in one copy. */
static int prepare(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err)
{
	int maxb = table_width(f, bt, err);
	if (maxb < 0)
		return -1;
	size_t nt = (size_t)bt->ntok, ns = (size_t)bt->nseq, need = ns * (size_t)maxb;
	size_t total = 2 * nt + 2 * ns + 1 + need;
	if (ints_room(f, total, err) < 0)
		return -1;
	size_t off[5] = {0, nt, 2 * nt, 2 * nt + ns + 1, 2 * nt + 2 * ns + 1};
	int32_t **h[5] = {&f->h_pos, &f->h_slots, &f->h_qstart, &f->h_ctx, &f->h_table};
	int32_t **d[5] = {&f->d_pos, &f->d_slots, &f->d_qstart, &f->d_ctx, &f->d_table};
	for (int i = 0; i < 5; i++) {
		*h[i] = f->h_ints + off[i];
		*d[i] = f->d_ints + off[i];
	}
	int t = 0;
	for (int j = 0; j < bt->nseq; j++) {
		int seq = bt->seq[j], start = bt->ctx[j] - bt->n[j];
		f->h_qstart[j] = t;
		f->h_ctx[j] = bt->ctx[j];
		for (int i = 0; i < bt->n[j]; i++, t++) {
			f->h_pos[t] = start + i;
			f->h_slots[t] = gl_kv_slot(f->kv, seq, start + i);
		}
		int32_t *row = f->h_table + (size_t)j * (size_t)maxb;
		int nb = gl_kv_blocks(f->kv, seq, row, maxb);
		for (int i = nb < 0 ? 0 : nb; i < maxb; i++)
			row[i] = 0; /* past its context: never read */
	}
	f->h_qstart[bt->nseq] = t;
	f->max_blocks = maxb;
	return to_dev(f, f->d_ints, f->h_ints, total * 4, err);
}

int gl_fwd_embed(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err)
{
	if (check_batch(f, bt, err) < 0)
		return -1;
	if (!f->w->has_embed) {
		errno = EINVAL;
		return gp_errprintf(err, "forward: this rank holds no embedding");
	}
	const gl_mat_t *e = &f->w->embed;
	if (to_dev(f, f->d_ids, bt->tokens, (size_t)bt->ntok * 4, err) < 0)
		return -1;
	if (gk_qget_rows(f->b, e->t, e->w, e->rows, e->cols, f->d_ids, bt->ntok, f->x, NULL) < 0)
		return kfail(f, "embedding", err);
	return 0;
}

int gl_fwd_set_x(gl_fwd_t *f, const gl_batch_t *bt, const float *x_host, gp_error_t *err)
{
	if (check_batch(f, bt, err) < 0)
		return -1;
	return to_dev(f, f->x, x_host, (size_t)bt->ntok * (size_t)f->hp.dim * 4, err);
}

int gl_fwd_get_x(gl_fwd_t *f, const gl_batch_t *bt, float *x_host, gp_error_t *err)
{
	if (check_batch(f, bt, err) < 0)
		return -1;
	if (gk_copy(f->b, x_host, f->x, (size_t)bt->ntok * (size_t)f->hp.dim * 4, GK_D2H) < 0)
		return kfail(f, "copy", err);
	return 0;
}

static int mm(gl_fwd_t *f, const gl_mat_t *m, const float *x, int n, float *y)
{
	return gk_qmatmul(f->b, m->t, m->w, m->rows, m->cols, x, n, y, m->rows, NULL);
}

static int attention_part(gl_fwd_t *f, const gl_layer_t *ly, int li, int n)
{
	const gl_hparams_t *hp = &f->hp;
	gk_backend_t *b = f->b;
	if (gk_rmsnorm(b, f->xn, f->x, ly->attn_norm, n, hp->dim, hp->norm_eps, NULL) < 0 ||
	    mm(f, &ly->q, f->xn, n, f->q) < 0 || mm(f, &ly->k, f->xn, n, f->k) < 0 ||
	    mm(f, &ly->v, f->xn, n, f->v) < 0)
		return -1;
	if ((ly->bq && gk_add_bias(b, f->q, ly->bq, n, hp->dim, NULL) < 0) ||
	    (ly->bk && gk_add_bias(b, f->k, ly->bk, n, f->kvd, NULL) < 0) ||
	    (ly->bv && gk_add_bias(b, f->v, ly->bv, n, f->kvd, NULL) < 0))
		return -1;
	if (gk_rope(b, f->q, f->d_pos, n, hp->n_heads, hp->head_dim, hp->rot_dim, hp->rope_base,
		    hp->rope_scale, hp->rope_neox, NULL) < 0 ||
	    gk_rope(b, f->k, f->d_pos, n, hp->n_kv_heads, hp->head_dim, hp->rot_dim, hp->rope_base,
		    hp->rope_scale, hp->rope_neox, NULL) < 0)
		return -1;
	gk_dtype_t kt = gl_kv_type(f->kv);
	void *kc = gl_kv_k(f->kv, li), *vc = gl_kv_v(f->kv, li);
	if (gk_kv_write(b, kt, kc, f->d_slots, f->k, n, f->kvd, NULL) < 0 ||
	    gk_kv_write(b, kt, vc, f->d_slots, f->v, n, f->kvd, NULL) < 0)
		return -1;
	return 0;
}

static int layer(gl_fwd_t *f, const gl_batch_t *bt, const gl_layer_t *ly, int li)
{
	const gl_hparams_t *hp = &f->hp;
	gk_backend_t *b = f->b;
	int n = bt->ntok;
	if (attention_part(f, ly, li, n) < 0)
		return -1;
	gk_attn_t a = {
	    .nseq = bt->nseq,
	    .ntok = n,
	    .q_start = f->d_qstart,
	    .ctx_len = f->d_ctx,
	    .block_table = f->d_table,
	    .max_blocks = f->max_blocks,
	    .block_size = gl_kv_block_size(f->kv),
	    .n_heads = hp->n_heads,
	    .n_kv_heads = hp->n_kv_heads,
	    .head_dim = hp->head_dim,
	    .scale = 1.0f / sqrtf((float)hp->head_dim),
	    .kv_t = gl_kv_type(f->kv),
	    .k_cache = gl_kv_k(f->kv, li),
	    .v_cache = gl_kv_v(f->kv, li),
	    .q = f->q,
	    .out = f->att,
	};
	size_t nd = (size_t)n * (size_t)hp->dim, nf = (size_t)n * (size_t)hp->n_ff;
	if (gk_attention(b, &a, NULL) < 0 || mm(f, &ly->o, f->att, n, f->tmp) < 0 ||
	    gk_add(b, f->x, f->tmp, nd, NULL) < 0 ||
	    gk_rmsnorm(b, f->xn, f->x, ly->ffn_norm, n, hp->dim, hp->norm_eps, NULL) < 0 ||
	    mm(f, &ly->gate, f->xn, n, f->gate) < 0 || mm(f, &ly->up, f->xn, n, f->up) < 0 ||
	    gk_swiglu(b, f->gate, f->gate, f->up, nf, NULL) < 0 ||
	    mm(f, &ly->down, f->gate, n, f->tmp) < 0 || gk_add(b, f->x, f->tmp, nd, NULL) < 0)
		return -1;
	return 0;
}

int gl_fwd_layers(gl_fwd_t *f, const gl_batch_t *bt, gp_error_t *err)
{
	if (check_batch(f, bt, err) < 0 || prepare(f, bt, err) < 0)
		return -1;
	gl_weights_t *w = f->w;
	for (int l = w->first; l < w->last; l++)
		if (layer(f, bt, &w->layers[l - w->first], l - w->first) < 0)
			return kfail(f, "layer", err);
	return 0;
}

int gl_fwd_head(gl_fwd_t *f, const gl_batch_t *bt, float *logits, gp_error_t *err)
{
	if (check_batch(f, bt, err) < 0)
		return -1;
	if (!f->w->has_head) {
		errno = EINVAL;
		return gp_errprintf(err, "forward: this rank holds no head");
	}
	int nrows = 0;
	for (int j = 0, t = 0; j < bt->nseq; t += bt->n[j], j++)
		for (int i = bt->all_logits ? 0 : bt->n[j] - 1; i < bt->n[j]; i++)
			f->h_rows[nrows++] = t + i;
	size_t D = (size_t)f->hp.dim, V = (size_t)f->hp.n_vocab;
	/* the rows normed into xn: all of them straight from x, else gathered first by one
	 * kernel (gk_qget_rows of f32 rows; d_ids is free once the embedding is done) */
	const float *src = f->x;
	if (nrows < bt->ntok) {
		if (to_dev(f, f->d_ids, f->h_rows, (size_t)nrows * 4, err) < 0)
			return -1;
		if (gk_qget_rows(f->b, GK_Q_F32, f->x, bt->ntok, (int)D, f->d_ids, nrows, f->xn,
				 NULL) < 0)
			return kfail(f, "gather", err);
		src = f->xn;
	}
	if (gk_rmsnorm(f->b, f->xn, src, f->w->out_norm, nrows, (int)D, f->hp.norm_eps, NULL) < 0)
		return kfail(f, "output norm", err);
	int hr = f->max_tokens < HEAD_ROWS ? f->max_tokens : HEAD_ROWS;
	for (int r = 0; r < nrows; r += hr) {
		int n = nrows - r < hr ? nrows - r : hr;
		if (mm(f, &f->w->head, f->xn + (size_t)r * D, n, f->logits) < 0)
			return kfail(f, "head", err);
		if (gk_copy(f->b, logits + (size_t)r * V, f->logits, (size_t)n * V * 4, GK_D2H) < 0)
			return kfail(f, "copy", err);
	}
	return 0;
}
