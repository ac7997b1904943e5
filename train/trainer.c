/* trainer.c - the data-parallel training loop (trainer.h)
 *
 * One step: every rank takes its share of the same global batch (rows of the epoch's order),
 * runs forward and backward; each gradient bucket (a run of layers, last layer first) is
 * summed over the ranks by a non-blocking allreduce as soon as backward has produced it; then
 * the summed gradient (the global batch's mean: each rank divides by the global batch, not
 * its share) is checked for Inf/NaN, the step applied or skipped (loss scaling), and a small
 * allgather shares each rank's compute time, allreduce wait, rows, loss and hits: the progress
 * lines, the slow-rank diagnosis and the re-balancing of shares are made from it on every
 * rank alike. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/file.h"
#include "train/ckpt.h"
#include "train/data.h"
#include "train/mlp.h"
#include "train/shares.h"
#include "train/trainer_int.h"

void gt_conf_defaults(gt_conf_t *c)
{
	static const int digits[] = {64, 256, 256, 10};
	memset(c, 0, sizeof(*c));
	memcpy(c->sizes, digits, sizeof(digits));
	c->nsizes = 4;
	c->test_frac = 0.2;
	c->seed = 1;
	c->epochs = 20;
	c->global_batch = 192;
	c->opt = (gt_optim_conf_t){.kind = GT_ADAMW,
				   .lr = 2e-3f,
				   .momentum = 0.9f,
				   .beta1 = 0.9f,
				   .beta2 = 0.999f,
				   .eps = 1e-8f,
				   .weight_decay = 0.0f};
	c->compute = GK_F32;
	c->loss_scale = 65536.0;
	c->scale_window = 200;
	c->backend = "cpu";
	c->bucket_bytes = 64 << 10;
	c->overlap = -1;
	c->overlap_optimizer = -1;
	c->rebalance_every = 10;
	c->slow_factor = 2.0;
	c->ckpt_every = 50;
	c->throttle_rank = -1;
	c->blas_threads = 1;
}

/* OpenBLAS starts a thread per core by default; ranks that share a PC's cores and the
 * allreduce thread want one each. Set through dlsym: no link-time tie to OpenBLAS. */
static void set_blas_threads(int n)
{
	void (*set)(int);
	*(void **)&set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
	if (set && n > 0)
		set(n);
}

/* ---- evaluation (rank 0) ---- */

static int evaluate(tr_t *t, const gt_data_t *d, size_t *correct)
{
	size_t chunk = (size_t)t->c->global_batch;
	const float *xdev = d == &t->test ? t->test_dev : NULL;
	float *x = malloc(chunk * d->dim * sizeof(float));
	int32_t *y = malloc(chunk * sizeof(int32_t)), *pred = malloc(chunk * sizeof(int32_t));
	uint32_t *idx = malloc(chunk * sizeof(uint32_t));
	int rc = 0;
	*correct = 0;
	if (!x || !y || !pred || !idx)
		rc = gp_errprintf(t->err, "out of memory");
	for (size_t i = 0; rc == 0 && i < d->n; i += chunk) {
		size_t rows = d->n - i < chunk ? d->n - i : chunk;
		const int32_t *truth = d->y + i;
		if (xdev) { /* already on the card: one copy there, no host gather */
			if (gt_mlp_forward_dev(t->m, xdev + i * d->dim, NULL, rows, t->err) < 0)
				rc = -1;
		} else {
			for (size_t r = 0; r < rows; r++)
				idx[r] = (uint32_t)(i + r);
			gt_data_gather(d, idx, rows, t->input_scale, x, y);
			truth = y;
			if (gt_mlp_forward(t->m, x, y, rows, t->err) < 0)
				rc = -1;
		}
		if (rc == 0 && gt_mlp_outputs(t->m, NULL, pred, t->err) < 0)
			rc = -1;
		for (size_t r = 0; rc == 0 && r < rows; r++)
			*correct += pred[r] == truth[r];
	}
	free(x), free(y), free(pred), free(idx);
	return rc;
}

/* A card keeps the test set, scaled, in its memory: uploaded once before the clock (as a
 * PyTorch script keeps its tensors on the device), so that each epoch's evaluation copies
 * nothing from the host. Not on the cpu backend; not past 1 GiB, nor when the card is short
 * of memory: evaluation then gathers on the host, as before. */
static void upload_test(tr_t *t)
{
	const gt_data_t *d = &t->test;
	size_t bytes = d->n * d->dim * sizeof(float);
	if (t->rank != 0 || !d->n || !strcmp(gk_backend_name(t->b), "cpu") ||
	    bytes > ((size_t)1 << 30))
		return;
	float *x = malloc(bytes);
	int32_t *y = malloc(d->n * sizeof(int32_t));
	uint32_t *idx = malloc(d->n * sizeof(uint32_t));
	if (x && y && idx) {
		for (size_t i = 0; i < d->n; i++)
			idx[i] = (uint32_t)i;
		gt_data_gather(d, idx, d->n, t->input_scale, x, y);
		if (gk_dev_alloc(t->b, bytes, (void **)&t->test_dev) < 0)
			t->test_dev = NULL;
		else if (gk_copy(t->b, t->test_dev, x, bytes, GK_H2D) < 0) {
			gk_dev_free(t->b, t->test_dev);
			t->test_dev = NULL;
		}
	}
	free(x), free(y), free(idx);
}

/* The step's Inf/NaN check of the (summed) gradient: queued into t->dflag and its read-back
 * into t->hflag, so that the next wait on the backend covers it (no wait of its own) */
static int queue_check(tr_t *t)
{
	if (gk_memset(t->b, t->dflag, 0, sizeof(uint32_t), NULL) < 0 ||
	    gk_find_nonfinite(t->b, gt_mlp_grad_dtype(t->m), gt_mlp_grads_dev(t->m),
			      gt_mlp_nparams(t->m), t->dflag, NULL) < 0 ||
	    gk_copy_async(t->b, t->hflag, t->dflag, sizeof(uint32_t), GK_D2H, NULL) < 0)
		return gp_errprintf(t->err, "gradient check: %s", gk_backend_error(t->b));
	return 0;
}

/* AdamW: the loss scaler lives on the card (gk_amp_t), seeded from t->sc and the optimizer's
 * step count (fresh or resumed); its read-back is mirrored into them after each wait */
static int amp_start(tr_t *t)
{
	gk_amp_t a;
	if (t->c->opt.kind != GT_ADAMW)
		return 0;
	gk_amp_init(&a, (float)t->sc.scale, t->sc.dynamic, t->sc.window, t->c->opt.beta1,
		    t->c->opt.beta2);
	a.scale = (float)t->sc.scale;
	a.good = t->sc.good;
	a.skipped = (int32_t)t->sc.skipped;
	a.steps = (int32_t)gt_optim_steps(t->o);
	a.bc1 = (float)(1.0 - pow((double)a.beta1, (double)(a.steps + 1)));
	a.bc2 = (float)(1.0 - pow((double)a.beta2, (double)(a.steps + 1)));
	if (gk_dev_alloc(t->b, sizeof(a), (void **)&t->amp) < 0 ||
	    gk_host_alloc(t->b, sizeof(a), (void **)&t->hamp) < 0 ||
	    gk_copy(t->b, t->amp, &a, sizeof(a), GK_H2D) < 0)
		return gp_errprintf(t->err, "loss scaler: %s", gk_backend_error(t->b));
	*t->hamp = a;
	gt_mlp_set_amp(t->m, t->amp);
	return 0;
}

/* the whole step after the gradient, queued on the model's stream: the Inf/NaN check into
 * amp->found, AdamW (skipped on the card if found), the scaler's update, the read-back */
static int amp_queue_step(tr_t *t)
{
	gk_stream_t *s = gt_mlp_stream(t->m);
	void *wc = gt_mlp_compute_copy(t->m);
	gk_dtype_t ct = gt_mlp_grad_dtype(t->m);
	if (t->ov) /* checked and stepped layer by layer during backward: join, update */
		return gt_optover_finish(t->ov, t->err) < 0 ||
			       gk_copy_async(t->b, t->hamp, t->amp, sizeof(gk_amp_t), GK_D2H, s) < 0
			   ? gp_errprintf(t->err, "loss scaler: %s", gk_backend_error(t->b))
			   : 0;
	if (gk_find_nonfinite(t->b, ct, gt_mlp_grads_dev(t->m), gt_mlp_nparams(t->m),
			      &t->amp->found, s) < 0)
		return gp_errprintf(t->err, "gradient check: %s", gk_backend_error(t->b));
	if (gt_optim_step_amp(t->o, gt_mlp_params_dev(t->m), t->amp, ct, wc, ct,
			      gt_mlp_grads_dev(t->m), s, t->err) < 0)
		return -1;
	if (!wc && ct != GK_F32 && gt_mlp_weights_changed(t->m, t->err) < 0)
		return -1;
	if (gk_copy_async(t->b, t->hamp, t->amp, sizeof(gk_amp_t), GK_D2H, s) < 0)
		return gp_errprintf(t->err, "loss scaler: %s", gk_backend_error(t->b));
	return 0;
}

/* after the wait that covered amp_queue_step: 1 if that step was skipped */
static int amp_mirror(tr_t *t)
{
	const gk_amp_t *a = t->hamp;
	int skipped = a->skipped > t->sc.skipped;
	t->sc.scale = a->scale;
	t->sc.good = a->good;
	t->sc.skipped = a->skipped;
	gt_optim_set_steps(t->o, a->steps);
	return skipped;
}

/* ---- GTRAIN_PROFILE: where a step's time goes ----
 * With the variable set, the loop waits for the backend after each phase and adds the wall
 * time since the last mark to that phase; the first step (start-up: the card's kernels load
 * on first use) is reported apart. The waits serialise what otherwise overlaps (the next
 * rows' gather with the card's work), so the total is a little above an unprofiled step. */
enum { PH_FWD, PH_BWD, PH_GATHER, PH_READ, PH_OPT, PH_REST, PH_N };
static const char *const ph_name[PH_N] = {"forward",	     "backward",  "gather next rows",
					  "check+read-back", "optimizer", "host rest"};

typedef struct {
	double ms[PH_N], last, first_step, eval;
	long steps, evals;
} tr_prof_t;

static void prof_mark(tr_t *t, tr_prof_t *p, int ph)
{
	if (!t->prof)
		return;
	(void)gk_stream_sync(t->b, NULL);
	double now = tr_now_ms();
	if (ph >= 0 && p->steps > 0)
		p->ms[ph] += now - p->last;
	p->last = now;
}

static void prof_print(tr_t *t, const tr_prof_t *p)
{
	if (!t->prof || t->rank != 0 || p->steps < 2)
		return;
	double n = (double)(p->steps - 1), sum = 0;
	fprintf(t->out,
		"gtrain: profile: first step %.2f ms; steps 2-%ld, ms a step:", p->first_step,
		p->steps);
	for (int i = 0; i < PH_N; i++) {
		fprintf(t->out, " %s %.3f;", ph_name[i], p->ms[i] / n);
		sum += p->ms[i] / n;
	}
	fprintf(t->out, " total %.3f; evaluation %.2f ms each (%ld)\n", sum,
		p->evals ? p->eval / (double)p->evals : 0.0, p->evals);
}

/* ---- setup ---- */

static int load_data(tr_t *t)
{
	const gt_conf_t *c = t->c;
	gt_data_t all;
	if (gt_data_load(c->data, &all, t->err) < 0)
		return -1;
	if (c->test_data) {
		t->train = all;
		if (gt_data_load(c->test_data, &t->test, t->err) < 0)
			return -1;
		if (t->test.dim != t->train.dim)
			return gp_errprintf(t->err, "test set has %zu features, training set %zu",
					    t->test.dim, t->train.dim);
	} else {
		int rc = gt_data_split(&all, c->test_frac, c->seed, &t->train, &t->test, t->err);
		gt_data_free(&all);
		if (rc < 0)
			return -1;
	}
	if (t->train.dim != (size_t)c->sizes[0]) {
		errno = EINVAL;
		return gp_errprintf(t->err, "the data has %zu features, the first layer %d",
				    t->train.dim, c->sizes[0]);
	}
	if (t->train.classes > c->sizes[c->nsizes - 1] ||
	    t->test.classes > c->sizes[c->nsizes - 1]) {
		errno = EINVAL;
		return gp_errprintf(t->err, "the data has %d classes, the last layer %d",
				    t->train.classes > t->test.classes ? t->train.classes
								       : t->test.classes,
				    c->sizes[c->nsizes - 1]);
	}
	t->input_scale = c->input_scale > 0	? (float)c->input_scale
			 : t->train.max_abs > 0 ? 1.0f / t->train.max_abs
						: 1.0f;
	return 0;
}

static void host_names(tr_t *t)
{
	char mine[64] = {0};
	const char *env = getenv("GPOOL_NODENAME");
	if (env && *env)
		snprintf(mine, sizeof(mine), "%s", env);
	else if (gethostname(mine, sizeof(mine) - 1) < 0)
		snprintf(mine, sizeof(mine), "?");
	if (t->size < 2 || gc_allgather(t->comm, mine, t->hosts, sizeof(mine) / 4, GC_I32) < 0)
		memcpy(t->hosts[0], mine, sizeof(mine));
	for (int r = 0; r < t->size; r++)
		t->hosts[r][63] = '\0';
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void shares_line(tr_t *t, const int *count, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int r = 0; r < t->size && o + 16 < size; r++)
		o += (size_t)snprintf(buf + o, size - o, "%s%d", r ? "/" : "", count[r]);
}

/* One rank's step as a graph: the rows' copy (outside: new rows each step), then, captured
 * once at the second step (the first makes the products' plans) and replayed after,
 * forward, backward, the card-side scaler and AdamW, the loss and logits read-backs. A
 * capture that fails leaves the step eager (said once). */
static int graph_step(tr_t *t, gk_graph_t **g, const float *x, const int32_t *y, size_t rows,
		      float scale, int capture)
{
	gk_stream_t *s = gt_mlp_stream(t->m);
	if (gt_mlp_stage_pinned(t->m, x, y, rows, t->err) < 0)
		return -1;
	if (*g) {
		gt_mlp_set_rows(t->m, rows);
		return gk_graph_launch(t->b, *g, s) < 0
			   ? gp_errprintf(t->err, "graph: %s", gk_backend_error(t->b))
			   : 0;
	}
	int capturing = capture && t->graph_ok && gk_graph_begin(t->b, s) == 0;
	int rc = gt_mlp_forward_staged(t->m, rows, t->err) < 0 ||
			 gt_mlp_backward(t->m, scale, tr_grad_ready, t, t->err) < 0 ||
			 amp_queue_step(t) < 0 || gt_mlp_outputs_queue(t->m, 1, 1, t->err) < 0
		     ? -1
		     : 0;
	if (!capturing)
		return rc;
	int ended = gk_graph_end(t->b, s, g); /* always: it ends the capture */
	if (rc < 0 || ended < 0) {
		gk_graph_destroy(t->b, g);
		if (t->rank == 0 && !t->c->quiet)
			fprintf(t->out,
				"gtrain: the step cannot be captured as a graph (%s): eager\n",
				rc < 0 ? t->err->text : gk_backend_error(t->b));
		t->graph_ok = 0;
		*g = NULL;
		/* what the capture recorded never ran: run the step now */
		return gt_mlp_forward_staged(t->m, rows, t->err) < 0 ||
			       gt_mlp_backward(t->m, scale, tr_grad_ready, t, t->err) < 0 ||
			       amp_queue_step(t) < 0 || gt_mlp_outputs_queue(t->m, 1, 1, t->err) < 0
			   ? -1
			   : 0;
	}
	if (t->rank == 0 && !t->c->quiet)
		fprintf(t->out,
			"gtrain: one rank, fixed shapes: the step is replayed as one graph\n");
	return gk_graph_launch(t->b, *g, s) < 0
		   ? gp_errprintf(t->err, "graph: %s", gk_backend_error(t->b))
		   : 0;
}

/* ---- the loop ---- */

/* What the loop carries from step to step. */
struct loop {
	long spe, total; /* steps an epoch, steps in all */
	double w[GT_MAX_RANKS];
	int count[GT_MAX_RANKS]; /* this step's rows, by rank */
	/* per-row compute times of the window's steps, by rank: medians, not sums, so that one
	 * step a busy machine stalled does not move the shares */
	int window, win_n;
	double *win;
	double ep_wait[GT_MAX_RANKS], ep_comp[GT_MAX_RANKS];
	double ep_loss, ep_hits, ep_rows, exposed_sum;
	long steps_done, slow_named;
	uint32_t *perm;
	/* the batch's inputs in pinned memory: a card copies them in without a staging copy.
	 * Two of each: the next step's rows are gathered while the card computes this one */
	float *xs[2], *loss;
	int32_t *ys[2], *pred;
	/* what the other buffer holds: step pre_s's rows from pre_first, pre_rows of them */
	long pre_s;
	int pre_first, cur;
	size_t pre_rows;
	double t_start, rows_done;
	long cur_epoch;
	tr_prof_t prof;
	gk_graph_t *graph;
	int graphable;
};

/* One step's rows and times. */
struct step {
	long s, epoch, pos;
	int first;
	size_t rows;
	float *x;
	int32_t *y;
	float scale;
	double used_scale, t0, t1, wait_ms;
};

/* The loop's buffers, the optimizer beside backward, the first line; -1 with t->err set. */
static int loop_open(tr_t *t, struct loop *lp, gt_result_t *res)
{
	const gt_conf_t *c = t->c;
	const int n = t->size, B = c->global_batch;
	const size_t ntrain = t->train.n, dim = t->train.dim;
	memset(lp, 0, sizeof(*lp));
	lp->spe = (long)(ntrain / (size_t)B);
	lp->total = lp->spe * c->epochs;
	lp->window = c->rebalance_every > 0 ? c->rebalance_every : (int)lp->spe;
	lp->win = malloc((size_t)lp->window * n * sizeof(double));
	lp->slow_named = -1;
	lp->perm = malloc(ntrain * sizeof(uint32_t));
	lp->loss = malloc((size_t)B * sizeof(float));
	lp->pred = malloc((size_t)B * sizeof(int32_t));
	lp->pre_s = -1;
	lp->t_start = tr_now_ms();
	lp->cur_epoch = -1;
	/* CUDA Graphs / HIP graphs: one rank on a card with the scaler there (AdamW), nothing that
	 * waits mid-step (profiling, a throttle); GTRAIN_NO_GRAPH=1 turns it off */
	t->graph_ok = 1;
	lp->graphable = n == 1 && t->amp && strcmp(gk_backend_name(t->b), "cpu") != 0 && !t->prof &&
			c->throttle_rank != 0 &&
			!(getenv("GTRAIN_NO_GRAPH") && *getenv("GTRAIN_NO_GRAPH"));
	/* AdamW beside backward: one rank, the scaler on the card and not dynamic (auto: off
	 * until measured faster on a card, docs/benchmarks.md) */
	if (c->overlap_optimizer > 0 && n == 1 && t->amp && !t->sc.dynamic &&
	    !(t->ov = gt_optover_create(t->b, t->m, t->o, t->amp, t->err)))
		return -1;
	res->optimizer_overlapped = t->ov != NULL;
	if (c->overlap_optimizer > 0 && !t->ov && t->rank == 0)
		fprintf(stderr, "gtrain: --overlap-optimizer on: only for one rank with adamw, not "
				"f16 (its step must see the whole gradient): off\n");
	for (int i = 0; i < 2; i++)
		if (gk_host_alloc(t->b, (size_t)B * dim * sizeof(float), (void **)&lp->xs[i]) < 0 ||
		    gk_host_alloc(t->b, (size_t)B * sizeof(int32_t), (void **)&lp->ys[i]) < 0)
			lp->xs[i] = NULL;
	if (gk_dev_alloc(t->b, sizeof(uint32_t), (void **)&t->dflag) < 0 ||
	    gk_host_alloc(t->b, sizeof(uint32_t), (void **)&t->hflag) < 0)
		t->hflag = NULL;
	if (!lp->perm || !lp->xs[0] || !lp->xs[1] || !lp->loss || !lp->ys[0] || !lp->ys[1] ||
	    !lp->pred || !lp->win || !t->hflag)
		return gp_errprintf(t->err, "out of memory");
	for (int r = 0; r < n; r++)
		lp->w[r] = c->scores[r] > 0 ? c->scores[r] : 1.0;
	if (t->rank == 0 && !c->quiet)
		fprintf(
		    t->out,
		    "gtrain: %zu training rows, %zu test rows, %d features, %d classes; %d rank%s, "
		    "global batch %d, %ld steps/epoch, %s, %s compute, backend %s\n",
		    ntrain, t->test.n, (int)dim, c->sizes[c->nsizes - 1], n, n > 1 ? "s" : "", B,
		    lp->spe, gt_optim_name(c->opt.kind), tr_dtype_name(c->compute),
		    gk_backend_name(t->b));
	return 0;
}

static void loop_close(tr_t *t, struct loop *lp)
{
	for (int i = 0; i < 2; i++) {
		gk_host_free(t->b, lp->xs[i]);
		gk_host_free(t->b, lp->ys[i]);
	}
	gk_graph_destroy(t->b, &lp->graph);
	gt_optover_destroy(&t->ov);
	gk_host_free(t->b, t->hflag);
	gk_dev_free(t->b, t->dflag);
	if (t->amp) {
		gk_host_free(t->b, t->hamp);
		gk_dev_free(t->b, t->amp);
		t->amp = NULL, t->hamp = NULL;
	}
	t->hflag = NULL, t->dflag = NULL;
	free(lp->perm), free(lp->loss), free(lp->pred), free(lp->win);
}

/* Step s's rows: the epoch's order, this rank's share of the split, gathered now or taken
 * from what the last step gathered. */
static void step_rows(tr_t *t, struct loop *lp, struct step *sp, long s)
{
	const int B = t->c->global_batch;
	sp->s = s;
	sp->epoch = s / lp->spe, sp->pos = s % lp->spe;
	if (sp->epoch != lp->cur_epoch) {
		gt_data_order(t->train.n, t->c->seed, (uint64_t)sp->epoch, lp->perm);
		lp->cur_epoch = sp->epoch;
	}
	gt_shares_split(B, t->size, lp->w, lp->count);
	sp->first = 0;
	for (int r = 0; r < t->rank; r++)
		sp->first += lp->count[r];
	sp->rows = (size_t)lp->count[t->rank];
	if (lp->pre_s == s && lp->pre_first == sp->first && lp->pre_rows == sp->rows) {
		lp->cur ^= 1; /* gathered during the last step, with the same split */
		sp->x = lp->xs[lp->cur], sp->y = lp->ys[lp->cur];
	} else {
		sp->x = lp->xs[lp->cur], sp->y = lp->ys[lp->cur];
		gt_data_gather(&t->train, lp->perm + (size_t)sp->pos * B + sp->first, sp->rows,
			       t->input_scale, sp->x, sp->y);
	}
	lp->pre_s = -1;
}

/* The next step's rows into the other buffer, in this epoch's order and with this step's
 * split (used only if the split is still the same then). */
static void step_prefetch(tr_t *t, struct loop *lp, const struct step *sp)
{
	const int B = t->c->global_batch;
	if (sp->pos + 1 < lp->spe && sp->s + 1 < lp->total) {
		gt_data_gather(&t->train, lp->perm + (size_t)(sp->pos + 1) * B + sp->first,
			       sp->rows, t->input_scale, lp->xs[lp->cur ^ 1], lp->ys[lp->cur ^ 1]);
		lp->pre_s = sp->s + 1, lp->pre_first = sp->first, lp->pre_rows = sp->rows;
	}
}

static void say_overflow(tr_t *t, const struct step *sp)
{
	fprintf(t->out,
		"gtrain: step %ld: gradient overflow (Inf/NaN) at loss scale %g: step skipped, "
		"scale now %g\n",
		sp->s + 1, sp->used_scale, t->sc.scale);
}

/* One rank, fixed shapes: the step after its rows' copy is one graph. */
static int step_graphed(tr_t *t, struct loop *lp, struct step *sp, long start)
{
	if (graph_step(t, &lp->graph, sp->x, sp->y, sp->rows, sp->scale, sp->s > start) < 0)
		return -1;
	step_prefetch(t, lp, sp);
	if (gt_mlp_outputs_read(t->m, lp->loss, lp->pred, t->err) < 0)
		return -1;
	sp->t1 = tr_now_ms();
	if (amp_mirror(t) && !t->c->quiet)
		say_overflow(t, sp);
	return 0;
}

/* The step pass by pass: forward, backward (the allreduce of each bucket as it is ready),
 * the next rows, the outputs, the summed gradient checked and the optimizer's step. */
static int step_eager(tr_t *t, struct loop *lp, struct step *sp)
{
	const gt_conf_t *c = t->c;
	prof_mark(t, &lp->prof, -1);
	/* x and y are pinned, and not written again before this step's wait */
	if (gt_mlp_forward_pinned(t->m, sp->x, sp->y, sp->rows, t->err) < 0)
		return -1;
	prof_mark(t, &lp->prof, PH_FWD);
	if (t->rank == c->throttle_rank && c->throttle_ms_per_row > 0) {
		double extra = c->throttle_ms_per_row * (double)sp->rows;
		struct timespec ts = {(time_t)(extra / 1e3), (long)(fmod(extra, 1e3) * 1e6)};
		nanosleep(&ts, NULL);
	}
	/* the loss and predictions read back after backward is queued (it leaves the logits
	 * alone): on a card the one wait then covers both passes, no drain in between */
	if (gt_mlp_backward(t->m, sp->scale, tr_grad_ready, t, t->err) < 0)
		return -1;
	prof_mark(t, &lp->prof, PH_BWD);
	/* while the card runs both passes: the next step's rows */
	step_prefetch(t, lp, sp);
	prof_mark(t, &lp->prof, PH_GATHER);
	/* one rank has nothing to sum: its gradient is final once backward has run, so the
	 * Inf/NaN check is queued now and read by the outputs' one wait. Several ranks
	 * check the sum, after the allreduce (a second, short wait). */
	const int check_early = t->size < 2;
	if (check_early && (t->amp ? amp_queue_step(t) : queue_check(t)) < 0)
		return -1;
	if (gt_mlp_outputs(t->m, lp->loss, lp->pred, t->err) < 0)
		return -1;
	sp->t1 = tr_now_ms();
	if (tr_finish_allreduce(t, &sp->wait_ms) < 0)
		return -1;
	if (!check_early &&
	    ((t->amp ? amp_queue_step(t) : queue_check(t)) < 0 || gt_mlp_sync(t->m, t->err) < 0))
		return -1;
	prof_mark(t, &lp->prof, PH_READ);
	if (t->amp) {
		if (amp_mirror(t) && t->rank == 0 && !c->quiet)
			say_overflow(t, sp);
	} else if (gt_scaler_update(&t->sc, *t->hflag != 0)) {
		if (gt_optim_step(t->o, gt_mlp_params_dev(t->m), gt_mlp_grad_dtype(t->m),
				  gt_mlp_grads_dev(t->m), (float)(1.0 / sp->used_scale),
				  t->err) < 0 ||
		    gt_mlp_weights_changed(t->m, t->err) < 0)
			return -1;
	} else if (t->rank == 0 && !c->quiet) {
		say_overflow(t, sp);
	}
	prof_mark(t, &lp->prof, PH_OPT);
	return 0;
}

/* Every rank's compute time, wait, rows, loss and hits of the step, shared (an allgather) and
 * added to the window and the epoch; rank 0's diagnostic line every diag_every steps. */
static int step_account(tr_t *t, struct loop *lp, const struct step *sp)
{
	const gt_conf_t *c = t->c;
	const int n = t->size;
	double st[ST_N], all[GT_MAX_RANKS * ST_N];
	double lsum = 0, hits = 0;
	for (size_t r = 0; r < sp->rows; r++) {
		lsum += lp->loss[r];
		hits += lp->pred[r] == sp->y[r];
	}
	st[ST_COMPUTE] = sp->t1 - sp->t0;
	st[ST_WAIT] = sp->wait_ms;
	st[ST_ROWS] = (double)sp->rows;
	st[ST_LOSS] = lsum;
	st[ST_HITS] = hits;
	if (n > 1) {
		if (gc_allgather(t->comm, st, all, ST_N, GC_F64) < 0)
			return tr_fail_comm(t, "allgather");
	} else {
		memcpy(all, st, sizeof(st));
	}
	double slowest = 0;
	int slow_r = 0;
	for (int r = 0; r < n; r++) {
		const double *a = all + r * ST_N;
		lp->win[(size_t)lp->win_n * n + r] =
		    a[ST_ROWS] > 0 ? a[ST_COMPUTE] / a[ST_ROWS] : 0;
		lp->ep_comp[r] += a[ST_COMPUTE];
		lp->ep_wait[r] += a[ST_WAIT];
		lp->ep_loss += a[ST_LOSS];
		lp->ep_hits += a[ST_HITS];
		lp->ep_rows += a[ST_ROWS];
		if (a[ST_COMPUTE] > slowest)
			slowest = a[ST_COMPUTE], slow_r = r;
	}
	/* the wait of the rank that computed longest is the communication backward did
	 * not hide; the others' waits also hold the time they waited for that rank */
	lp->exposed_sum += all[slow_r * ST_N + ST_WAIT];
	lp->steps_done++;
	lp->rows_done += c->global_batch;
	if (t->rank == 0 && c->diag_every > 0 && (sp->s + 1) % c->diag_every == 0) {
		char sh[512], wl[1024];
		size_t o = 0;
		shares_line(t, lp->count, sh, sizeof(sh));
		for (int r = 0; r < n && o + 24 < sizeof(wl); r++)
			o += (size_t)snprintf(wl + o, sizeof(wl) - o, " r%d %.2f", r,
					      all[r * ST_N + ST_WAIT]);
		fprintf(t->out,
			"step %ld: slowest rank %d (%s) %.2f ms compute; allreduce wait ms:%s; "
			"shares %s\n",
			sp->s + 1, slow_r, t->hosts[slow_r], slowest, wl, sh);
	}
	return 0;
}

/* At the end of a window: name a slow rank, re-balance the shares (rebalance_every). */
static void window_end(tr_t *t, struct loop *lp)
{
	const gt_conf_t *c = t->c;
	const int n = t->size, B = c->global_batch;
	double med[GT_MAX_RANKS], ones[GT_MAX_RANKS];
	if (++lp->win_n == lp->window && n > 1) {
		double ratio = 0, col[1024];
		for (int r = 0; r < n; r++) {
			for (int k = 0; k < lp->win_n && k < 1024; k++)
				col[k] = lp->win[(size_t)k * n + r];
			med[r] = median(col, lp->win_n < 1024 ? lp->win_n : 1024);
			ones[r] = 1;
		}
		int slow = gt_shares_slow_rank(n, ones, med, c->slow_factor, &ratio);
		/* a rank is named only when it costs a step at least a millisecond at an
		 * equal share: below that the ratio is the noise of a busy machine */
		if (slow >= 0 && med[slow] * B / n < 1.0)
			slow = -1;
		if (slow >= 0 && t->rank == 0 && lp->slow_named != (long)slow && !c->quiet)
			fprintf(t->out,
				"gtrain: rank %d on %s is slow: %.3f ms a row, %.1fx the "
				"others' median%s\n",
				slow, t->hosts[slow], med[slow], ratio,
				c->rebalance_every > 0 ? " (its share shrinks)" : "");
		lp->slow_named = slow >= 0 ? slow : lp->slow_named;
		if (c->rebalance_every > 0)
			gt_shares_rebalance(n, lp->w, ones, med);
	}
	if (lp->win_n == lp->window)
		lp->win_n = 0;
}

/* At the end of an epoch (or of the run): rank 0 evaluates on the test rows and prints the
 * epoch's line; the epoch's sums start again. */
static int epoch_end(tr_t *t, struct loop *lp, const struct step *sp, gt_result_t *res)
{
	const gt_conf_t *c = t->c;
	const int n = t->size;
	size_t tc = 0;
	if (t->rank == 0) {
		double e0 = tr_now_ms();
		if (evaluate(t, &t->test, &tc) < 0)
			return -1;
		lp->prof.eval += tr_now_ms() - e0;
		lp->prof.evals++;
		double el = tr_now_ms() - lp->t_start;
		char sh[512], wl[1024];
		size_t o = 0;
		shares_line(t, lp->count, sh, sizeof(sh));
		int slowest_ep = 0;
		for (int r = 0; r < n; r++) {
			if (lp->ep_comp[r] > lp->ep_comp[slowest_ep])
				slowest_ep = r;
			if (o + 24 < sizeof(wl))
				o +=
				    (size_t)snprintf(wl + o, sizeof(wl) - o, "%s%.2f", r ? "/" : "",
						     lp->ep_wait[r] / (double)(sp->pos + 1));
		}
		if (!c->quiet)
			fprintf(t->out,
				"epoch %3ld/%d  loss %.4f  train %5.1f%%  test "
				"%5.1f%%  "
				"%.0f samples/s  shares %s  slowest r%d (%s)  "
				"allreduce wait ms %s\n",
				sp->epoch + 1, c->epochs, lp->ep_loss / lp->ep_rows,
				100.0 * lp->ep_hits / lp->ep_rows,
				100.0 * (double)tc / (double)t->test.n, lp->rows_done / (el / 1e3),
				sh, slowest_ep, t->hosts[slowest_ep], wl);
		fflush(t->out);
		res->test_correct = tc;
		res->test_rows = t->test.n;
		res->test_acc = (double)tc / (double)t->test.n;
		res->last_loss = lp->ep_loss / lp->ep_rows;
	}
	lp->ep_loss = lp->ep_hits = lp->ep_rows = 0;
	memset(lp->ep_wait, 0, sizeof(lp->ep_wait));
	memset(lp->ep_comp, 0, sizeof(lp->ep_comp));
	return 0;
}

/* One step: its rows, the step itself (one graph or pass by pass), its account, the window,
 * a checkpoint, the epoch's end. *stop is set after the last step stop_after asks for. */
static int loop_step(tr_t *t, struct loop *lp, long start, long s, gt_result_t *res, int *stop)
{
	const gt_conf_t *c = t->c;
	struct step sp;
	memset(&sp, 0, sizeof(sp));
	step_rows(t, lp, &sp, s);
	sp.t0 = tr_now_ms();
	/* with the scaler on the card, backward multiplies by its scale there */
	sp.scale = (float)((t->amp ? 1.0 : t->sc.scale) / c->global_batch);
	sp.used_scale = t->sc.scale;
	if ((lp->graphable ? step_graphed(t, lp, &sp, start) : step_eager(t, lp, &sp)) < 0 ||
	    step_account(t, lp, &sp) < 0)
		return -1;
	window_end(t, lp);
	if (c->ckpt && c->ckpt_every > 0 && (s + 1) % c->ckpt_every == 0 && t->rank == 0 &&
	    tr_save_ckpt(t, s + 1) < 0)
		return -1;
	*stop = c->stop_after > 0 && s + 1 >= c->stop_after;
	prof_mark(t, &lp->prof, PH_REST);
	if (t->prof && ++lp->prof.steps == 1)
		lp->prof.first_step = lp->prof.last - sp.t0;
	if (sp.pos == lp->spe - 1 || s + 1 == lp->total || *stop)
		return epoch_end(t, lp, &sp, res);
	return 0;
}

static int train_loop(tr_t *t, long start, gt_result_t *res)
{
	struct loop lp;
	int rc = -1, stop = 0;
	if (loop_open(t, &lp, res) < 0)
		goto out;
	for (long s = start; s < lp.total && !stop; s++)
		if (loop_step(t, &lp, start, s, res, &stop) < 0)
			goto out;
	double el = tr_now_ms() - lp.t_start;
	res->steps = lp.steps_done;
	res->skipped = t->sc.skipped;
	res->samples_per_s = el > 0 ? lp.rows_done / (el / 1e3) : 0;
	res->exposed_ms = lp.steps_done ? lp.exposed_sum / (double)lp.steps_done : 0;
	res->final_scale = t->sc.scale;
	prof_print(t, &lp.prof);
	rc = 0;
out:
	loop_close(t, &lp);
	return rc;
}

/* The data, the backend, the model and its optimizer, the ranks' agreement on overlap, the
 * start-up done before the clock runs; -1 with t->err set. */
static int train_open(tr_t *t)
{
	const gt_conf_t *c = t->c;
	gk_error_t ge;
	if (load_data(t) < 0)
		return -1;
	if (t->train.n < (size_t)c->global_batch) {
		errno = EINVAL;
		return gp_errprintf(t->err, "%zu training rows, fewer than the global batch %d",
				    t->train.n, c->global_batch);
	}
	if (!(t->b = gk_backend_open(c->backend, &ge)))
		return gp_errprintf(t->err, "backend '%s': %s", c->backend, ge.text);
	if (!(t->m = gt_mlp_create_ex(t->b, c->sizes, c->nsizes, (size_t)c->global_batch,
				      c->compute, c->math, t->err)) ||
	    !(t->o = gt_optim_create(t->b, &c->opt, gt_mlp_nparams(t->m), t->err)) ||
	    gt_mlp_init(t->m, c->seed, t->err) < 0)
		return -1;
	/* Gradient buckets during backward (overlap) or one allreduce after it: every rank must
	 * make the same calls, so the ranks agree, overlapping only when each wants to (auto: a
	 * card rank does, a cpu rank does not; a job of card and cpu ranks does not overlap) */
	int32_t want = c->overlap >= 0 ? c->overlap : strcmp(gk_backend_name(t->b), "cpu") != 0;
	if (t->size > 1 && gc_allreduce(t->comm, GC_IN_PLACE, &want, 1, GC_I32, GC_MIN) < 0)
		return tr_fail_comm(t, "agreeing on overlap");
	t->overlap = want;
	t->prof = getenv("GTRAIN_PROFILE") && *getenv("GTRAIN_PROFILE");
	/* start-up before the clock: a card's BLAS library is loaded and its handle made here
	 * (gk_device_info loads it), not in the first step, and the test set is uploaded */
	gk_device_info_t di;
	if (gk_device_info(t->b, &di) < 0)
		return gp_errprintf(t->err, "backend '%s': %s", c->backend, gk_backend_error(t->b));
	upload_test(t);
	/* a dynamic scale for f16 only: bf16 has f32's range (PyTorch's GradScaler likewise) */
	gt_scaler_init(&t->sc, c->loss_scale, c->scale_window, c->compute == GK_F16);
	host_names(t);
	return 0;
}

/* The run's last line: steps, accuracy, speed, and how much of the allreduce was hidden. */
static void say_done(tr_t *t, const gt_result_t *res, double blk)
{
	fprintf(t->out,
		"gtrain: done: %ld steps (%ld skipped), test accuracy %.2f%% (%zu/%zu), "
		"%.0f samples/s on %d rank%s",
		res->steps, res->skipped, 100.0 * res->test_acc, res->test_correct, res->test_rows,
		res->samples_per_s, t->size, t->size > 1 ? "s" : "");
	if (t->size > 1 && t->overlap)
		fprintf(t->out,
			"; allreduce %.2f ms a step exposed, %.2f ms blocking "
			"(overlapped): %.0f%% hidden behind backward",
			res->exposed_ms, blk,
			blk > 0 ? 100.0 * fmax(0, 1 - res->exposed_ms / blk) : 0.0);
	else if (t->size > 1)
		fprintf(t->out,
			"; allreduce %.2f ms a step after backward (not overlapped), "
			"%.2f ms blocking at start",
			res->exposed_ms, blk);
	fputc('\n', t->out);
}

/* The trained model into c->model (said with its host and size), then c->model_cmd. */
static int write_model(tr_t *t, long steps)
{
	const gt_conf_t *c = t->c;
	gm_model_t *md = gm_model_create(c->sizes, c->nsizes, t->input_scale, t->err);
	if (!md || gt_mlp_get_params(t->m, gm_model_params(md), t->err) < 0 ||
	    gm_model_set_dtype(md, (gm_dtype_t)c->model_dtype, t->err) < 0 ||
	    gm_model_write(c->model, md, t->err) < 0) {
		gm_model_destroy(&md);
		return -1;
	}
	gm_model_destroy(&md);
	struct stat sb;
	char cwd[4096];
	const char *shown = c->model;
	char full[8192];
	if (c->model[0] != '/' && getcwd(cwd, sizeof(cwd))) {
		snprintf(full, sizeof(full), "%s/%s", cwd, c->model);
		shown = full;
	}
	if (!c->quiet)
		fprintf(t->out, "gtrain: model written to %s:%s (%lld bytes)\n", t->hosts[0], shown,
			stat(c->model, &sb) == 0 ? (long long)sb.st_size : -1LL);
	if (c->model_cmd && tr_run_hook(c->model_cmd, "GTRAIN_MODEL", c->model, steps) < 0)
		fprintf(stderr, "gtrain: model command failed\n");
	return 0;
}

int gt_train(const gt_conf_t *c, gc_comm_t *comm, gt_result_t *res, gp_error_t *err)
{
	tr_t t;
	long start = 0;
	int rc = -1;

	memset(&t, 0, sizeof(t));
	memset(res, 0, sizeof(*res));
	t.c = c;
	t.comm = comm;
	t.err = err;
	t.rank = comm ? gc_rank(comm) : 0;
	t.size = comm ? gc_size(comm) : 1;
	t.out = c->out ? c->out : stdout;
	if (t.size > GT_MAX_RANKS) {
		errno = EINVAL;
		return gp_errprintf(err, "at most %d ranks", GT_MAX_RANKS);
	}
	if (c->global_batch < t.size) {
		errno = EINVAL;
		return gp_errprintf(err, "global batch %d is smaller than the %d ranks",
				    c->global_batch, t.size);
	}
	set_blas_threads(c->blas_threads);
	if (train_open(&t) < 0 || tr_resume(&t, &start) < 0 || amp_start(&t) < 0)
		goto out;
	double blk = tr_blocking_cost(&t);
	if (blk < 0) {
		tr_fail_comm(&t, "allreduce");
		goto out;
	}
	if (train_loop(&t, start, res) < 0)
		goto out;
	res->blocking_ms = blk;
	if (t.rank == 0) {
		if (!c->quiet)
			say_done(&t, res, blk);
		/* the end's checkpoint, unless the periodic one has just written this step */
		if (c->ckpt && (c->stop_after <= 0 || res->steps + start < c->stop_after) &&
		    (c->ckpt_every <= 0 || (start + res->steps) % c->ckpt_every != 0) &&
		    tr_save_ckpt(&t, start + res->steps) < 0)
			goto out;
		if (c->model && write_model(&t, start + res->steps) < 0)
			goto out;
		fflush(t.out);
	}
	rc = 0;
out:
	if (t.test_dev)
		gk_dev_free(t.b, t.test_dev);
	gt_optim_destroy(&t.o);
	gt_mlp_destroy(&t.m);
	gk_backend_close(&t.b);
	gt_data_free(&t.train);
	gt_data_free(&t.test);
	return rc;
}
