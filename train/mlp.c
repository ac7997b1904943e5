/* mlp.c - training an MLP classifier on a kernels backend (see mlp.h): its buffers, the
 * forward pass of model/forward.h keeping every layer's output, the loss and backward
 *
 * Two ways to run a step. The "typed" way (f16/bf16 on a card, and -p tf32): weights,
 * activations and gradients live in the compute type, every product is a gk_gemm on the
 * tensor cores with its epilogue fused (forward: bias + ReLU; weight gradient: the bias
 * gradient; input gradient: ReLU's gradient), the gradients come out of the products in the
 * compute type, and the optimizer writes the f32 master and the compute copy in one pass
 * (gt_optim_step_amp). The "rounding" way (f32 with IEEE products, and f16/bf16 on the cpu
 * backend): f32 buffers, f32 sgemm, values rounded to the compute type after each step.
 *
 * The GEMMs are column-major BLAS calls on row-major data: a row-major [rows][width] matrix is
 * a column-major width x rows one, and W_l ([out][in] row-major) is column-major in x out. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "train/mlp.h"

struct gt_mlp {
	gk_backend_t *b;
	int nsizes, nl;
	int sizes[GT_MAX_LAYERS + 1];
	size_t off[GT_MAX_LAYERS + 1]; /* off[l]: W_l; off[nl]: total */
	size_t nparams, max_rows, rows, maxw;
	gk_dtype_t ct;
	gk_math_t math;
	int typed;	     /* the typed way (see the top) */
	gk_stream_t *s;	     /* every kernel of the model runs here (graph capture) */
	const gk_amp_t *amp; /* device loss scale, or NULL (the scale argument) */
	int ready_late;	     /* backward's READY after the layer's input gradient */
	float *w;	     /* master weights (f32) */
	float *wc;	     /* compute copy: == w for f32, rounded to ct, or ct (typed) */
	float *g32;	     /* gradients as the GEMMs produce them (not typed) */
	void *gt;	     /* gradients in ct (== g32 for f32) */
	float *act[GT_MAX_LAYERS + 1]; /* act[0] input, act[l+1] output of layer l (typed: ct) */
	float *x32;    /* typed: the f32 input before its cast, and the f32 logits */
	float *logits; /* the f32 logits: act[nl], or typed x32 */
	float *dz32;   /* typed: the f32 loss gradient */
	float *dz[2];  /* gradient ping-pong, max_rows * maxw (typed: ct) */
	int32_t *labels;
	float *loss;	    /* per row */
	uint16_t *tmp16;    /* rounding scratch */
	float *host_logits; /* read-back buffers, pinned on a card (gk_host_alloc) */
	float *host_loss;
};

static int berr(gt_mlp_t *m, gp_error_t *err, const char *what)
{
	int e = errno;
	gp_errprintf(err, "%s: %s", what, gk_backend_error(m->b));
	errno = e;
	return -1;
}

#define K(call, what)                                                                              \
	do {                                                                                       \
		if ((call) < 0)                                                                    \
			return berr(m, err, what);                                                 \
	} while (0)

/* round n floats of p to the compute type and back, in place (n never exceeds the scratch:
 * it holds the larger of the parameters and an activation) */
static int round_ct(gt_mlp_t *m, float *p, size_t n, gp_error_t *err)
{
	gm_round_t r = {m->ct, m->tmp16};
	return gm_round(m->b, &r, p, n, m->s, err);
}

gt_mlp_t *gt_mlp_create(gk_backend_t *b, const int *sizes, int nsizes, size_t max_rows,
			gk_dtype_t compute, gp_error_t *err)
{
	return gt_mlp_create_ex(b, sizes, nsizes, max_rows, compute, GK_MATH_DEFAULT, err);
}

gt_mlp_t *gt_mlp_create_ex(gk_backend_t *b, const int *sizes, int nsizes, size_t max_rows,
			   gk_dtype_t compute, gk_math_t math, gp_error_t *err)
{
	gt_mlp_t *m;
	if (nsizes < 2 || nsizes > GT_MAX_LAYERS + 1 || !max_rows ||
	    !(compute == GK_F32 || compute == GK_F16 || compute == GK_BF16)) {
		errno = EINVAL;
		gp_errprintf(err, "an mlp needs 2 to %d layer sizes", GT_MAX_LAYERS + 1);
		return NULL;
	}
	if (!(m = calloc(1, sizeof(*m)))) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	m->b = b;
	m->nsizes = nsizes;
	m->nl = nsizes - 1;
	m->max_rows = max_rows;
	m->ct = compute;
	m->math = compute == GK_F32 ? math : GK_MATH_DEFAULT;
	/* the cpu backend keeps the rounding way: its products are f32 anyway (OpenBLAS) */
	m->typed = strcmp(gk_backend_name(b), "cpu") != 0 &&
		   (compute != GK_F32 || m->math == GK_MATH_TF32);
	for (int i = 0; i < nsizes; i++) {
		if (sizes[i] < 1 || sizes[i] > 1 << 20) {
			free(m);
			errno = EINVAL;
			gp_errprintf(err, "layer size %d out of range", sizes[i]);
			return NULL;
		}
		m->sizes[i] = sizes[i];
		m->maxw = (size_t)sizes[i] > m->maxw ? (size_t)sizes[i] : m->maxw;
	}
	for (int l = 0; l < m->nl; l++)
		m->off[l + 1] = m->off[l] + (size_t)sizes[l] * sizes[l + 1] + sizes[l + 1];
	m->nparams = m->off[m->nl];
	size_t es = m->typed ? gk_dtype_size(compute) : sizeof(float);
	size_t pb = m->nparams * sizeof(float), ab = max_rows * m->maxw * es;
	size_t big = m->nparams > max_rows * m->maxw ? m->nparams : max_rows * m->maxw;
	size_t xin = max_rows * (size_t)(sizes[0] > sizes[m->nl] ? sizes[0] : sizes[m->nl]);
	int ok = gk_stream_create(b, &m->s) == 0 && gk_dev_alloc(b, pb, (void **)&m->w) == 0 &&
		 gk_dev_alloc(b, ab, (void **)&m->dz[0]) == 0 &&
		 gk_dev_alloc(b, ab, (void **)&m->dz[1]) == 0 &&
		 gk_dev_alloc(b, max_rows * sizeof(int32_t), (void **)&m->labels) == 0 &&
		 gk_dev_alloc(b, max_rows * sizeof(float), (void **)&m->loss) == 0;
	for (int l = 0; ok && l < nsizes; l++)
		ok = gk_dev_alloc(b, max_rows * (size_t)sizes[l] * es, (void **)&m->act[l]) == 0;
	if (ok && m->typed)
		ok =
		    gk_dev_alloc(b, xin * sizeof(float), (void **)&m->x32) == 0 &&
		    gk_dev_alloc(b, max_rows * (size_t)sizes[m->nl] * sizeof(float),
				 (void **)&m->dz32) == 0 &&
		    (compute == GK_F32 || gk_dev_alloc(b, m->nparams * es, (void **)&m->wc) == 0) &&
		    gk_dev_alloc(b, m->nparams * es, &m->gt) == 0;
	else if (ok)
		ok = gk_dev_alloc(b, pb, (void **)&m->g32) == 0;
	if (ok && !m->typed && compute != GK_F32)
		ok = gk_dev_alloc(b, pb, (void **)&m->wc) == 0 &&
		     gk_dev_alloc(b, m->nparams * 2, &m->gt) == 0 &&
		     gk_dev_alloc(b, big * 2, (void **)&m->tmp16) == 0;
	if (ok)
		ok = gk_host_alloc(b, max_rows * (size_t)sizes[m->nl] * sizeof(float),
				   (void **)&m->host_logits) == 0 &&
		     gk_host_alloc(b, max_rows * sizeof(float), (void **)&m->host_loss) == 0;
	if (!ok) {
		gp_errprintf(err, "cannot allocate the model's buffers: %s", gk_backend_error(b));
		gt_mlp_destroy(&m);
		errno = ENOMEM;
		return NULL;
	}
	if (compute == GK_F32)
		m->wc = m->w;
	if (compute == GK_F32 && !m->typed)
		m->gt = m->g32;
	m->logits = m->typed ? m->x32 : m->act[m->nl];
	return m;
}

void gt_mlp_destroy(gt_mlp_t **pm)
{
	gt_mlp_t *m = pm ? *pm : NULL;
	if (!m)
		return;
	if (m->wc != m->w)
		gk_dev_free(m->b, m->wc);
	if (m->gt != m->g32)
		gk_dev_free(m->b, m->gt);
	gk_dev_free(m->b, m->w);
	gk_dev_free(m->b, m->g32);
	gk_dev_free(m->b, m->dz[0]);
	gk_dev_free(m->b, m->dz[1]);
	gk_dev_free(m->b, m->labels);
	gk_dev_free(m->b, m->loss);
	gk_dev_free(m->b, m->tmp16);
	for (int l = 0; l < m->nsizes; l++)
		gk_dev_free(m->b, m->act[l]);
	gk_dev_free(m->b, m->x32);
	gk_dev_free(m->b, m->dz32);
	gk_host_free(m->b, m->host_logits);
	gk_host_free(m->b, m->host_loss);
	gk_stream_destroy(m->b, &m->s);
	free(m);
	*pm = NULL;
}

int gt_mlp_nlayers(const gt_mlp_t *m)
{
	return m->nl;
}
size_t gt_mlp_nparams(const gt_mlp_t *m)
{
	return m->nparams;
}
size_t gt_mlp_layer_offset(const gt_mlp_t *m, int l)
{
	return m->off[l];
}
size_t gt_mlp_layer_count(const gt_mlp_t *m, int l)
{
	return m->off[l + 1] - m->off[l];
}
float *gt_mlp_params_dev(gt_mlp_t *m)
{
	return m->w;
}
void *gt_mlp_grads_dev(gt_mlp_t *m)
{
	return m->gt;
}
gk_dtype_t gt_mlp_grad_dtype(const gt_mlp_t *m)
{
	return m->ct;
}
gk_stream_t *gt_mlp_stream(gt_mlp_t *m)
{
	return m->s;
}
void *gt_mlp_compute_copy(gt_mlp_t *m)
{
	return m->typed && m->ct != GK_F32 ? (void *)m->wc : NULL;
}
void gt_mlp_set_ready_late(gt_mlp_t *m, int late)
{
	m->ready_late = late != 0;
}

void gt_mlp_set_amp(gt_mlp_t *m, const gk_amp_t *amp)
{
	m->amp = amp;
}

int gt_mlp_weights_changed(gt_mlp_t *m, gp_error_t *err)
{
	if (m->typed && m->ct != GK_F32) {
		K(gk_cast(m->b, m->ct, m->wc, GK_F32, m->w, m->nparams, m->s), "weights to ct");
		return 0;
	}
	if (m->ct == GK_F32)
		return 0;
	K(gk_copy(m->b, m->wc, m->w, m->nparams * sizeof(float), GK_D2D), "copy weights");
	return round_ct(m, m->wc, m->nparams, err);
}

int gt_mlp_set_params(gt_mlp_t *m, const float *host, gp_error_t *err)
{
	K(gk_copy(m->b, m->w, host, m->nparams * sizeof(float), GK_H2D), "copy weights");
	return gt_mlp_weights_changed(m, err);
}

int gt_mlp_get_params(gt_mlp_t *m, float *host, gp_error_t *err)
{
	K(gk_stream_sync(m->b, m->s), "sync");
	K(gk_copy(m->b, host, m->w, m->nparams * sizeof(float), GK_D2H), "copy weights");
	return 0;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int gt_mlp_init(gt_mlp_t *m, uint64_t seed, gp_error_t *err)
{
	float *h = calloc(m->nparams, sizeof(float));
	uint64_t s = mix(seed ^ 0x6a09e667f3bcc909ull);
	if (!h)
		return gp_errprintf(err, "out of memory");
	for (int l = 0; l < m->nl; l++) {
		size_t in = (size_t)m->sizes[l], out = (size_t)m->sizes[l + 1];
		double lim = sqrt(6.0 / (double)in);
		for (size_t i = 0; i < in * out; i++) {
			s = mix(s);
			double u = (double)(s >> 11) / 9007199254740992.0;
			h[m->off[l] + i] = (float)((2.0 * u - 1.0) * lim);
		}
	}
	int rc = gt_mlp_set_params(m, h, err);
	free(h);
	return rc;
}

/* where forward's input comes from: pageable host memory (a synchronous copy), pinned host
 * memory (queued) or backend memory (a queued copy on the card) */
enum { IN_HOST, IN_PINNED, IN_DEV };

static int forward(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, int from,
		   gp_error_t *err)
{
	if (rows > m->max_rows) {
		errno = EINVAL;
		return gp_errprintf(err, "batch of %zu rows, at most %zu", rows, m->max_rows);
	}
	m->rows = rows;
	if (!rows)
		return 0;
	size_t xb = rows * (size_t)m->sizes[0] * sizeof(float), yb = rows * sizeof(int32_t);
	float *in = m->typed ? m->x32 : m->act[0];
	if (from == IN_HOST) {
		K(gk_stream_sync(m->b, m->s), "sync");
		K(gk_copy(m->b, in, x, xb, GK_H2D), "copy input");
		if (y)
			K(gk_copy(m->b, m->labels, y, yb, GK_H2D), "copy labels");
	} else {
		gk_copy_kind_t kind = from == IN_DEV ? GK_D2D : GK_H2D;
		K(gk_copy_async(m->b, in, x, xb, kind, m->s), "copy input");
		if (y)
			K(gk_copy_async(m->b, m->labels, y, yb, kind, m->s), "copy labels");
	}
	return gt_mlp_forward_staged(m, rows, err);
}

void gt_mlp_set_rows(gt_mlp_t *m, size_t rows)
{
	m->rows = rows;
}

int gt_mlp_forward_staged(gt_mlp_t *m, size_t rows, gp_error_t *err)
{
	m->rows = rows;
	if (!rows)
		return 0;
	if (!m->typed) {
		gm_round_t r = {m->ct, m->tmp16};
		return gm_forward(m->b, m->s, m->sizes, m->nsizes, m->wc, m->act, rows, &r, err);
	}
	size_t nin = rows * (size_t)m->sizes[0], nout = rows * (size_t)m->sizes[m->nl];
	if (m->ct == GK_F32)
		K(gk_copy_async(m->b, m->act[0], m->x32, nin * sizeof(float), GK_D2D, m->s),
		  "input");
	else
		K(gk_cast(m->b, m->ct, m->act[0], GK_F32, m->x32, nin, m->s), "input to ct");
	if (gm_forward_ex(m->b, m->s, m->sizes, m->nsizes, m->wc, m->ct, (void *const *)m->act,
			  rows, m->math, err) < 0)
		return -1;
	if (m->ct == GK_F32)
		K(gk_copy_async(m->b, m->logits, m->act[m->nl], nout * sizeof(float), GK_D2D, m->s),
		  "logits");
	else
		K(gk_cast(m->b, GK_F32, m->logits, m->ct, m->act[m->nl], nout, m->s), "logits");
	return 0;
}

int gt_mlp_stage_dev(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err)
{
	if (rows > m->max_rows) {
		errno = EINVAL;
		return gp_errprintf(err, "batch of %zu rows, at most %zu", rows, m->max_rows);
	}
	float *in = m->typed ? m->x32 : m->act[0];
	K(gk_copy_async(m->b, in, x, rows * (size_t)m->sizes[0] * sizeof(float), GK_D2D, m->s),
	  "copy input");
	if (y)
		K(gk_copy_async(m->b, m->labels, y, rows * sizeof(int32_t), GK_D2D, m->s),
		  "copy labels");
	return 0;
}

int gt_mlp_forward(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err)
{
	return forward(m, x, y, rows, IN_HOST, err);
}

int gt_mlp_forward_pinned(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows,
			  gp_error_t *err)
{
	return forward(m, x, y, rows, IN_PINNED, err);
}

int gt_mlp_forward_dev(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err)
{
	return forward(m, x, y, rows, IN_DEV, err);
}

int gt_mlp_stage_pinned(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows, gp_error_t *err)
{
	if (rows > m->max_rows) {
		errno = EINVAL;
		return gp_errprintf(err, "batch of %zu rows, at most %zu", rows, m->max_rows);
	}
	float *in = m->typed ? m->x32 : m->act[0];
	K(gk_copy_async(m->b, in, x, rows * (size_t)m->sizes[0] * sizeof(float), GK_H2D, m->s),
	  "copy input");
	K(gk_copy_async(m->b, m->labels, y, rows * sizeof(int32_t), GK_H2D, m->s), "copy labels");
	return 0;
}

/* the loss kernel and both read-backs are queued, then one wait covers them and whatever
 * the caller queued before (on a card: one drain of the stream a step) */
int gt_mlp_outputs(gt_mlp_t *m, float *loss, int32_t *pred, gp_error_t *err)
{
	if (gt_mlp_outputs_queue(m, loss != NULL, pred != NULL, err) < 0)
		return -1;
	return gt_mlp_outputs_read(m, loss, pred, err);
}

int gt_mlp_outputs_queue(gt_mlp_t *m, int loss, int pred, gp_error_t *err)
{
	size_t rows = m->rows, k = (size_t)m->sizes[m->nl];
	if (!rows)
		return 0;
	if (loss) {
		K(gk_softmax_xent(m->b, m->logits, m->labels, rows, k, 1.0f, m->loss, NULL, m->s),
		  "loss");
		K(gk_copy_async(m->b, m->host_loss, m->loss, rows * sizeof(float), GK_D2H, m->s),
		  "copy loss");
	}
	if (pred)
		K(gk_copy_async(m->b, m->host_logits, m->logits, rows * k * sizeof(float), GK_D2H,
				m->s),
		  "copy logits");
	return 0;
}

int gt_mlp_outputs_read(gt_mlp_t *m, float *loss, int32_t *pred, gp_error_t *err)
{
	size_t rows = m->rows, k = (size_t)m->sizes[m->nl];
	if (!rows)
		return 0;
	K(gk_stream_sync(m->b, NULL), "sync");
	K(gk_stream_sync(m->b, m->s), "sync");
	if (loss)
		memcpy(loss, m->host_loss, rows * sizeof(float));
	if (pred) {
		for (size_t r = 0; r < rows; r++) {
			const float *z = m->host_logits + r * k;
			size_t best = 0;
			for (size_t c = 1; c < k; c++)
				if (z[c] > z[best])
					best = c;
			pred[r] = (int32_t)best;
		}
	}
	return 0;
}

int gt_mlp_sync(gt_mlp_t *m, gp_error_t *err)
{
	K(gk_stream_sync(m->b, m->s), "sync");
	K(gk_stream_sync(m->b, NULL), "sync");
	return 0;
}

/* the typed way's backward: dz in ct; each layer's weight gradient with its bias gradient
 * fused (BGRADB), the input gradient with ReLU's gradient (DRELU against the activation) */
static int backward_typed(gt_mlp_t *m, gt_grad_ready_f ready, void *arg, gp_error_t *err)
{
	size_t rows = m->rows, es = gk_dtype_size(m->ct);
	int cur = 0;
	for (int l = m->nl - 1; l >= 0; l--) {
		int in = m->sizes[l], out = m->sizes[l + 1];
		char *gW = (char *)m->gt + m->off[l] * es;
		void *dZ = m->dz[cur], *dA = m->dz[cur ^ 1];
		gk_gemm_t w = {.trans_a = 0,
			       .trans_b = 1,
			       .m = in,
			       .n = out,
			       .k = (int)rows,
			       .ab_t = m->ct,
			       .c_t = m->ct,
			       .alpha = 1.0f,
			       .a = m->act[l],
			       .lda = in,
			       .b = dZ,
			       .ldb = out,
			       .c = gW,
			       .ldc = in,
			       .epi = GK_EPI_BGRADB,
			       .bias = gW + (size_t)in * out * es,
			       .math = m->math};
		K(gk_gemm(m->b, &w, m->s), "weight gradient gemm");
		if (ready && (!m->ready_late || l == 0) && ready(arg, l) < 0)
			return -1;
		if (l == 0)
			break;
		gk_gemm_t x = {.trans_a = 0,
			       .trans_b = 0,
			       .m = in,
			       .n = (int)rows,
			       .k = out,
			       .ab_t = m->ct,
			       .c_t = m->ct,
			       .alpha = 1.0f,
			       .a = (char *)m->wc + m->off[l] * es,
			       .lda = in,
			       .b = dZ,
			       .ldb = out,
			       .c = dA,
			       .ldc = in,
			       .epi = GK_EPI_DRELU,
			       .aux = m->act[l],
			       .math = m->math};
		K(gk_gemm(m->b, &x, m->s), "input gradient gemm");
		if (ready && m->ready_late && ready(arg, l) < 0)
			return -1;
		cur ^= 1;
	}
	return 0;
}

int gt_mlp_backward(gt_mlp_t *m, float scale, gt_grad_ready_f ready, void *arg, gp_error_t *err)
{
	size_t rows = m->rows;
	int cur = 0;
	if (!rows) { /* an empty share still takes part in the allreduce, with zeros */
		K(gk_memset(m->b, m->gt, 0, m->nparams * gk_dtype_size(m->ct), m->s), "zero grads");
		for (int l = m->nl - 1; l >= 0; l--)
			if (ready && ready(arg, l) < 0)
				return -1;
		return 0;
	}
	size_t nout = rows * (size_t)m->sizes[m->nl];
	float *dz32 = m->typed ? m->dz32 : m->dz[0];
	K(gk_softmax_xent(m->b, m->logits, m->labels, rows, (size_t)m->sizes[m->nl], scale, NULL,
			  dz32, m->s),
	  "loss gradient");
	if (m->amp)
		K(gk_amp_scale(m->b, GK_F32, dz32, nout, m->amp, m->s), "loss scale");
	if (m->typed) {
		if (m->ct == GK_F32)
			K(gk_copy_async(m->b, m->dz[0], dz32, nout * sizeof(float), GK_D2D, m->s),
			  "loss gradient");
		else
			K(gk_cast(m->b, m->ct, m->dz[0], GK_F32, dz32, nout, m->s),
			  "loss gradient");
		return backward_typed(m, ready, arg, err);
	}
	if (round_ct(m, m->dz[0], nout, err) < 0)
		return -1;
	for (int l = m->nl - 1; l >= 0; l--) {
		int in = m->sizes[l], out = m->sizes[l + 1];
		float *gW = m->g32 + m->off[l], *gb = gW + (size_t)in * out;
		float *dZ = m->dz[cur], *dA = m->dz[cur ^ 1];
		K(gk_sgemm(m->b, 0, 1, in, out, (int)rows, 1.0f, m->act[l], in, dZ, out, 0.0f, gW,
			   in, m->s),
		  "weight gradient gemm");
		K(gk_bias_grad(m->b, dZ, gb, rows, (size_t)out, 1.0f, m->s), "bias gradient");
		if (m->ct != GK_F32)
			K(gk_cast(m->b, m->ct, (uint16_t *)m->gt + m->off[l], GK_F32, gW,
				  gt_mlp_layer_count(m, l), m->s),
			  "gradient to compute type");
		if (ready && (!m->ready_late || l == 0) && ready(arg, l) < 0)
			return -1;
		if (l == 0)
			break;
		K(gk_sgemm(m->b, 0, 0, in, (int)rows, out, 1.0f, m->wc + m->off[l], in, dZ, out,
			   0.0f, dA, in, m->s),
		  "input gradient gemm");
		K(gk_relu_grad(m->b, dA, m->act[l], rows * (size_t)in, m->s), "relu gradient");
		if (round_ct(m, dA, rows * (size_t)in, err) < 0)
			return -1;
		if (ready && m->ready_late && ready(arg, l) < 0)
			return -1;
		cur ^= 1;
	}
	return 0;
}
