/* rank.c - a rank's way from the model file to its running share (rank.h). Every rank sends
 * what it has to every other (an allgather of fixed records); rank 0 plans and broadcasts
 * the layer ranges, or its reason for refusing, so that every rank acts on one decision. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gllm/rank.h"
#include "gllm/lazyload.h"

#define BLOCK 16 /* KV cache tokens a block */

void gllm_opts_default(gllm_opts_t *o)
{
	*o = (gllm_opts_t){.backend = "auto",
			   .parallel = 8,
			   .max_batch_tokens = 512,
			   .wire = GL_WIRE_F32,
			   .timeout_ms = 60000};
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* "12G", "512M", "1000000": bytes; 0 if not a size. */
static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mul = *end == 'G' || *end == 'g'	  ? 1073741824.0
		     : *end == 'M' || *end == 'm' ? 1048576.0
		     : *end == 'K' || *end == 'k' ? 1024.0
						  : 1.0;
	return v > 0 ? (size_t)(v * mul) : 0;
}

/* GB/s of reading memory: the host's (summing 64 MiB a few times) or the card's (copies on
 * it, each byte read once and written once). Weights are read once a token: this bounds a
 * decode step. */
static double measure_speed(gk_backend_t *b, int card)
{
	size_t n = 64u << 20;
	double best = 0;
	if (card) {
		void *s = NULL, *d = NULL;
		if (gk_dev_alloc(b, n, &s) == 0 && gk_dev_alloc(b, n, &d) == 0) {
			for (int i = 0; i < 4; i++) {
				double t = now_s();
				if (gk_copy(b, d, s, n, GK_D2D) < 0)
					break;
				double gbs = 2.0 * (double)n / (now_s() - t) / 1e9;
				best = gbs > best ? gbs : best;
			}
		}
		gk_dev_free(b, s);
		gk_dev_free(b, d);
		return best > 0 ? best : 100;
	}
	uint64_t *p = malloc(n);
	if (!p)
		return 1;
	memset(p, 1, n);
	volatile uint64_t sink = 0;
	for (int i = 0; i < 3; i++) {
		double t = now_s();
		uint64_t acc = 0;
		for (size_t k = 0; k < n / 8; k += 4)
			acc += p[k] + p[k + 1] + p[k + 2] + p[k + 3];
		sink += acc;
		double gbs = (double)n / (now_s() - t) / 1e9;
		best = gbs > best ? gbs : best;
	}
	(void)sink;
	free(p);
	return best;
}

int gllm_probe(gk_backend_t *b, gl_plan_rank_t *me, gp_error_t *err)
{
	memset(me, 0, sizeof(*me));
	const char *h = getenv("GCOMM_HOST");
	if (h && *h)
		snprintf(me->host, sizeof(me->host), "%s", h);
	else if (gethostname(me->host, sizeof(me->host) - 1) < 0)
		snprintf(me->host, sizeof(me->host), "?");
	gk_device_info_t info;
	if (gk_device_info(b, &info) < 0)
		return gp_errprintf(err, "device info: %s", gk_backend_error(b));
	me->has_card = strcmp(info.backend, "cpu") != 0;
	if (me->has_card) {
		snprintf(me->device, sizeof(me->device), "%.7s:%d %.40s", info.backend, info.device,
			 info.name);
		/* free now (others' processes counted), less room for the BLAS workspace */
		me->mem_free = info.free_mem / 20 * 19;
	} else {
		snprintf(me->device, sizeof(me->device), "cpu");
		me->mem_free = info.free_mem / 10 * 8; /* the PC's owner keeps some */
	}
	const char *m = getenv("GLLM_MEM"), *s = getenv("GLLM_SPEED");
	if (m && parse_size(m))
		me->mem_free = parse_size(m);
	me->speed_gbs = s && atof(s) > 0 ? atof(s) : measure_speed(b, me->has_card);
	return 0;
}

/* ---- the plan, agreed ---- */

/* A rank's record on the wire (every rank runs this build: host byte order). */
typedef struct {
	char host[64];
	char device[64];
	int32_t has_card, pad;
	uint64_t mem_free;
	double speed_gbs;
} rec_t;

typedef struct {
	int32_t ok, nranks;
	int32_t first[GL_PLAN_MAX_RANKS], last[GL_PLAN_MAX_RANKS];
	char why[512];
} decision_t;

static int gather(gllm_rank_t *r, const gl_plan_rank_t *me, gp_error_t *err)
{
	if (!r->comm) {
		r->ranks[0] = *me;
		return 0;
	}
	rec_t mine = {0}, *all = calloc((size_t)r->size, sizeof(rec_t));
	if (!all)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	memcpy(mine.host, me->host, sizeof(mine.host));
	memcpy(mine.device, me->device, sizeof(mine.device));
	mine.has_card = me->has_card;
	mine.mem_free = me->mem_free;
	mine.speed_gbs = me->speed_gbs;
	if (gc_allgather(r->comm, &mine, all, sizeof(rec_t) / 4, GC_I32) < 0) {
		free(all);
		return gp_errprintf(err, "exchanging the ranks' resources: %s", gc_error(r->comm));
	}
	for (int i = 0; i < r->size; i++) {
		gl_plan_rank_t *x = &r->ranks[i];
		memcpy(x->host, all[i].host, sizeof(x->host));
		memcpy(x->device, all[i].device, sizeof(x->device));
		x->host[sizeof(x->host) - 1] = x->device[sizeof(x->device) - 1] = 0;
		x->has_card = all[i].has_card;
		x->mem_free = all[i].mem_free;
		x->speed_gbs = all[i].speed_gbs;
	}
	free(all);
	return 0;
}

static void plan_model(gllm_rank_t *r)
{
	const gl_hparams_t *hp = &r->hp;
	gk_dtype_t kt = r->o.kv_f16 ? GK_F16 : GK_F32;
	size_t mt = (size_t)r->o.max_batch_tokens;
	r->pm = (gl_plan_model_t){
	    .name = hp->name,
	    .n_layers = hp->n_layers,
	    .layer_bytes = r->layer_bytes,
	    .embed_bytes = gl_embed_bytes(r->g),
	    .head_bytes = gl_head_bytes(r->g),
	    .kv_bytes_token_layer = gl_kv_slot_bytes(1, hp->n_kv_heads * hp->head_dim, kt),
	    .kv_tokens = (long long)r->o.n_ctx * r->o.parallel,
	    /* a batch's activations, q/k/v, scores and feed-forward, in f32 */
	    .workspace_bytes = mt * (size_t)(8 * hp->dim + 3 * hp->n_ff) * 4 +
			       (size_t)r->o.parallel * (size_t)hp->n_vocab * 4,
	};
}

/* Rank 0 decides; every rank gets the decision. */
static int agree(gllm_rank_t *r, int ok, FILE *plan_out, gp_error_t *err)
{
	decision_t d = {0};
	if (r->rank == 0 && !ok) {
		snprintf(d.why, sizeof(d.why), "rank 0: %.480s", err->text);
	} else if (r->rank == 0) {
		gp_error_t e = {{0}};
		d.ok = gl_plan_make(&r->pm, r->ranks, r->size, &r->plan, &e) == 0;
		d.nranks = r->size;
		snprintf(d.why, sizeof(d.why), "%s", e.text);
		for (int i = 0; d.ok && i < r->size; i++) {
			d.first[i] = r->plan.slot[i].first;
			d.last[i] = r->plan.slot[i].last;
		}
		if (d.ok && plan_out)
			gl_plan_print(plan_out, &r->pm, r->ranks, &r->plan);
	}
	if (r->comm && gc_broadcast(r->comm, &d, sizeof(d) / 4, GC_I32, 0) < 0)
		return gp_errprintf(err, "receiving the plan: %s", gc_error(r->comm));
	if (!d.ok) {
		d.why[sizeof(d.why) - 1] = 0;
		errno = ENOSPC;
		return gp_errprintf(err, "%s", d.why);
	}
	r->plan.nranks = r->size;
	for (int i = 0; i < r->size; i++) {
		r->plan.slot[i].first = d.first[i];
		r->plan.slot[i].last = d.last[i];
	}
	return 0;
}

/* The ring of ranks with layers (rank 0 always) and this rank's neighbours in it. */
static void make_ring(gllm_rank_t *r)
{
	r->nring = 0;
	for (int i = 0; i < r->size; i++)
		if (i == 0 || r->plan.slot[i].last > r->plan.slot[i].first)
			r->ring[r->nring++] = i;
	r->prev = 0;
	r->next = -1;
	for (int k = 0; k < r->nring; k++)
		if (r->ring[k] == r->rank && r->rank != 0) {
			r->prev = r->ring[k - 1];
			r->next = r->ring[(k + 1) % r->nring];
		}
	r->lim = (gl_stage_limits_t){.max_seqs = r->o.parallel,
				     .max_tokens = r->o.max_batch_tokens,
				     .dim = r->hp.dim,
				     .n_ctx = r->o.n_ctx};
}

static int check_opts(gllm_rank_t *r, gp_error_t *err)
{
	gllm_opts_t *o = &r->o;
	if (o->n_ctx <= 0)
		o->n_ctx =
		    r->hp.n_ctx_train > 0 && r->hp.n_ctx_train < 4096 ? r->hp.n_ctx_train : 4096;
	if (o->parallel < 1 || o->parallel > GL_MAX_BATCH_SEQS || o->max_batch_tokens < 1 ||
	    o->max_batch_tokens > 65536 || o->n_ctx > (1 << 20)) {
		errno = EINVAL;
		return gp_errprintf(err,
				    "--parallel %d (1..%d), --max-batch-tokens %d (1..65536), "
				    "--ctx %d",
				    o->parallel, GL_MAX_BATCH_SEQS, o->max_batch_tokens, o->n_ctx);
	}
	if (r->size > GL_PLAN_MAX_RANKS) {
		errno = EINVAL;
		return gp_errprintf(err, "%d ranks: at most %d", r->size, GL_PLAN_MAX_RANKS);
	}
	return 0;
}

static int open_model(gllm_rank_t *r, gp_error_t *err)
{
	gk_error_t ge;
	if (!(r->b = gk_backend_open(r->o.backend, &ge)))
		return gp_errprintf(err, "backend '%s': %s", r->o.backend, ge.text);
	/* a lazily staged file: its header now, this rank's layers once the plan says which */
	if ((r->lazy = gllm_lazy_header(r->o.model, err)) < 0)
		return -1;
	if (!(r->g = gl_gguf_open(r->o.model, err)) || gl_hparams_read(r->g, &r->hp, err) < 0)
		return -1;
	if (!(r->layer_bytes = calloc((size_t)r->hp.n_layers, sizeof(size_t))))
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	for (int l = 0; l < r->hp.n_layers; l++)
		r->layer_bytes[l] = gl_layer_bytes(r->g, l);
	if (r->rank == 0 && !(r->tok = gl_tok_from_gguf(r->g, err)))
		return -1;
	return check_opts(r, err);
}

/* This rank's layers, its cache and its executor. */
static int load(gllm_rank_t *r, gp_error_t *err)
{
	int first = r->plan.slot[r->rank].first, last = r->plan.slot[r->rank].last;
	int head = r->rank == 0, nl = last - first;
	if (!head && nl == 0)
		return 0; /* a rank too small to help: it only waits for the end */
	if (r->lazy > 0 && gllm_lazy_layers(r->o.model, r->g, first, last, head, err) < 0)
		return -1;
	if (!(r->w = gl_weights_load(r->b, r->g, &r->hp, first, last, head, head, err)))
		return -1;
	int row = r->hp.n_kv_heads * r->hp.head_dim;
	int nblocks = (int)((r->pm.kv_tokens + BLOCK - 1) / BLOCK);
	if (!(r->kv = gl_kv_create(r->b, nl > 0 ? nl : 1, nblocks, BLOCK, row,
				   r->o.kv_f16 ? GK_F16 : GK_F32, r->o.parallel, err)))
		return -1;
	if (!head)
		return 0;
	if (r->nring == 1) {
		if (!(r->local = gl_exec_local_create(r->b, &r->hp, r->w, r->kv,
						      r->o.max_batch_tokens, err)))
			return -1;
		r->ops = &gl_exec_local_ops;
		r->exec = r->local;
		return 0;
	}
	gl_pipe_opts_t po = {.comm = r->comm,
			     .ring = r->ring,
			     .nring = r->nring,
			     .lim = r->lim,
			     .wire = r->o.wire,
			     .timeout_ms = r->o.timeout_ms};
	if (!(r->pipe = gl_pipe_create(r->b, &r->hp, r->w, r->kv, &po, err)))
		return -1;
	r->ops = &gl_pipe_ops;
	r->exec = r->pipe;
	return 0;
}

gllm_rank_t *gllm_rank_open(gc_comm_t *c, const gllm_opts_t *o, int load_it, FILE *plan_out,
			    gp_error_t *err)
{
	gllm_rank_t *r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	r->comm = c && gc_size(c) > 1 ? c : NULL;
	r->rank = r->comm ? gc_rank(c) : 0;
	r->size = r->comm ? gc_size(c) : 1;
	r->o = *o;
	gl_plan_rank_t me;
	/* a rank that fails before the plan still joins the exchange, so no rank waits on it */
	int ok = open_model(r, err) == 0;
	if (ok)
		plan_model(r);
	if (ok && gllm_probe(r->b, &me, err) < 0)
		ok = 0;
	if (!ok)
		memset(&me, 0, sizeof(me)); /* mem 0: the plan leaves it out, or rank 0 refuses */
	gp_error_t mine = *err;
	if (gather(r, &me, ok ? err : NULL) < 0 || agree(r, ok, plan_out, ok ? err : &mine) < 0 ||
	    !ok) {
		if (!ok)
			*err = mine; /* this rank's own reason, not the plan's */
		goto fail;
	}
	make_ring(r);
	if (load_it) {
		/* every rank loaded, or every rank stops: a stage that could not load would
		 * otherwise be found out only by the first request */
		int32_t mine_ok = load(r, err) == 0 ? 1 : 0, all_ok = mine_ok;
		if (r->comm && gc_allreduce(r->comm, &mine_ok, &all_ok, 1, GC_I32, GC_MIN) < 0) {
			gp_errprintf(err, "agreeing that every rank loaded: %s", gc_error(r->comm));
			goto fail;
		}
		if (!all_ok) {
			if (mine_ok)
				gp_errprintf(err, "another rank could not load its layers (its log "
						  "says why)");
			errno = errno ? errno : EIO;
			goto fail;
		}
	}
	return r;
fail:;
	int e = errno ? errno : EIO;
	r->comm = NULL; /* the caller's, and no SHUTDOWN to send */
	gllm_rank_close(&r);
	errno = e;
	return NULL;
}

int gllm_rank_stage(gllm_rank_t *r, gp_error_t *err)
{
	return gl_stage_run(r->comm, r->b, &r->hp, r->w, r->kv, r->prev, r->next, &r->lim,
			    r->o.wire, err);
}

/* One rank's job without a pipe: every other rank waits for a SHUTDOWN header. */
static void shutdown_idle(gllm_rank_t *r)
{
	gl_stage_hdr_t h;
	uint8_t hb[GL_STAGE_HDR_SIZE];
	gl_stage_hdr_make(&h, GL_STAGE_SHUTDOWN, 0, NULL, r->hp.dim, r->o.wire);
	gl_stage_hdr_encode(&h, hb);
	for (int i = 1; i < r->size; i++)
		if (gc_send(r->comm, i, 1, hb, sizeof(hb)) < 0)
			return;
}

void gllm_rank_close(gllm_rank_t **rp)
{
	if (!rp || !*rp)
		return;
	gllm_rank_t *r = *rp;
	if (r->rank == 0 && r->comm && r->local)
		shutdown_idle(r);
	gl_pipe_destroy(&r->pipe);
	gl_exec_local_destroy(&r->local);
	gl_kv_destroy(&r->kv);
	gl_weights_destroy(&r->w);
	gl_tok_destroy(&r->tok);
	gl_gguf_close(&r->g);
	free(r->layer_bytes);
	gk_backend_close(&r->b);
	free(r);
	*rp = NULL;
}
