/* infer.c - a model answering batches (infer.h)
 *
 * A model stored in f16/bf16 is served in that type on a card: parameters and activations in
 * it, every layer one gk_gemm on the tensor cores with bias and ReLU in the epilogue, the
 * logits widened to f32 on the card. On the cpu backend every model runs in f32 (OpenBLAS),
 * on the same values (a f16/bf16 model's parameters are exact in f32). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/infer.h"
#include "model/softmax.h"

struct gm_infer {
	gk_backend_t *bk;
	gk_stream_t *s;
	int sizes[GM_MAX_SIZES], nsizes;
	float input_scale;
	size_t max_rows;
	gk_dtype_t t;		  /* the type the card computes in (f32 on the cpu) */
	float *params;		  /* on the device, in t */
	float *act[GM_MAX_SIZES]; /* act[l]: the two device buffers in turn (in t) */
	float *buf[2];		  /* device: [max_rows][widest] each */
	float *x32;		  /* typed: the f32 rows before their cast, then the logits */
	float *host;		  /* pinned: a batch's rows in, its logits out */
};

void gm_infer_destroy(gm_infer_t **dp)
{
	gm_infer_t *d = dp ? *dp : NULL;
	if (!d)
		return;
	gk_dev_free(d->bk, d->params);
	gk_dev_free(d->bk, d->buf[0]);
	gk_dev_free(d->bk, d->buf[1]);
	gk_dev_free(d->bk, d->x32);
	if (d->host)
		gk_host_free(d->bk, d->host);
	if (d->s)
		gk_stream_destroy(d->bk, &d->s);
	free(d);
	*dp = NULL;
}

gm_infer_t *gm_infer_create(gk_backend_t *bk, const gm_model_t *m, size_t max_rows, gp_error_t *err)
{
	gm_infer_t *d;
	if (!max_rows) {
		errno = EINVAL;
		gp_errprintf(err, "a batch of at most 0 rows");
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	d->bk = bk;
	d->nsizes = gm_model_nsizes(m);
	d->input_scale = gm_model_input_scale(m);
	d->max_rows = max_rows;
	size_t widest = 0, pb = gm_model_nparams(m) * sizeof(float);
	for (int l = 0; l < d->nsizes; l++) {
		d->sizes[l] = gm_model_sizes(m)[l];
		widest = (size_t)d->sizes[l] > widest ? (size_t)d->sizes[l] : widest;
	}
	size_t ab = max_rows * widest * sizeof(float);
	d->t = strcmp(gk_backend_name(bk), "cpu") ? (gk_dtype_t)gm_model_dtype(m) : GK_F32;
	void *staged = NULL; /* the parameters in d->t, on the host */
	if (d->t != GK_F32 && (staged = malloc(gm_model_nparams(m) * 2))) {
		const float *p = gm_model_data(m);
		uint16_t *h = staged;
		for (size_t i = 0; i < gm_model_nparams(m); i++)
			h[i] = d->t == GK_F16 ? gk_f32_to_f16(p[i]) : gk_f32_to_bf16(p[i]);
		pb = gm_model_nparams(m) * 2;
	}
	if (ab / sizeof(float) / widest != max_rows || (d->t != GK_F32 && !staged) ||
	    gk_stream_create(bk, &d->s) < 0 || gk_dev_alloc(bk, pb, (void **)&d->params) < 0 ||
	    gk_copy(bk, d->params, staged ? staged : (const void *)gm_model_data(m), pb, GK_H2D) <
		0 ||
	    (d->t != GK_F32 && gk_dev_alloc(bk, ab, (void **)&d->x32) < 0) ||
	    gk_dev_alloc(bk, ab, (void **)&d->buf[0]) < 0 ||
	    gk_dev_alloc(bk, ab, (void **)&d->buf[1]) < 0 ||
	    gk_host_alloc(bk, ab, (void **)&d->host) < 0) {
		gp_errprintf(err, "%s backend: %s", gk_backend_name(bk),
			     staged || d->t == GK_F32 ? gk_backend_error(bk) : "out of memory");
		free(staged);
		gm_infer_destroy(&d);
		errno = EIO;
		return NULL;
	}
	free(staged);
	for (int l = 0; l < d->nsizes; l++)
		d->act[l] = d->buf[l & 1];
	return d;
}

int gm_infer_run(gm_infer_t *d, const float *x, size_t n, float *probs)
{
	gp_error_t err;
	if (!n)
		return 0;
	if (n > d->max_rows) {
		errno = E2BIG;
		return -1;
	}
	size_t in0 = n * (size_t)d->sizes[0], k = (size_t)d->sizes[d->nsizes - 1];
	for (size_t i = 0; i < in0; i++)
		d->host[i] = x[i] * d->input_scale;
	int typed = d->t != GK_F32, rc;
	void *last = d->act[d->nsizes - 1];
	if (typed)
		rc = gk_copy_async(d->bk, d->x32, d->host, in0 * sizeof(float), GK_H2D, d->s) < 0 ||
		     gk_cast(d->bk, d->t, d->act[0], GK_F32, d->x32, in0, d->s) < 0 ||
		     gm_forward_ex(d->bk, d->s, d->sizes, d->nsizes, d->params, d->t,
				   (void *const *)d->act, n, GK_MATH_DEFAULT, &err) < 0 ||
		     gk_cast(d->bk, GK_F32, d->x32, d->t, last, n * k, d->s) < 0;
	else
		rc = gk_copy_async(d->bk, d->act[0], d->host, in0 * sizeof(float), GK_H2D, d->s) <
			 0 ||
		     gm_forward(d->bk, d->s, d->sizes, d->nsizes, d->params, d->act, n, NULL,
				&err) < 0;
	if (rc ||
	    gk_copy_async(d->bk, d->host, typed ? d->x32 : last, n * k * sizeof(float), GK_D2H,
			  d->s) < 0 ||
	    gk_stream_sync(d->bk, d->s) < 0) {
		errno = EIO;
		return -1;
	}
	memcpy(probs, d->host, n * k * sizeof(float));
	gm_softmax_rows(probs, n, k);
	return 0;
}
