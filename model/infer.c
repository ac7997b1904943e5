/* infer.c - a model answering batches (infer.h) */
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
	float *params;		  /* on the device */
	float *act[GM_MAX_SIZES]; /* act[l]: the two device buffers in turn */
	float *buf[2];		  /* device: [max_rows][widest] each */
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
	if (ab / sizeof(float) / widest != max_rows || gk_stream_create(bk, &d->s) < 0 ||
	    gk_dev_alloc(bk, pb, (void **)&d->params) < 0 ||
	    gk_copy(bk, d->params, gm_model_data(m), pb, GK_H2D) < 0 ||
	    gk_dev_alloc(bk, ab, (void **)&d->buf[0]) < 0 ||
	    gk_dev_alloc(bk, ab, (void **)&d->buf[1]) < 0 ||
	    gk_host_alloc(bk, ab, (void **)&d->host) < 0) {
		gp_errprintf(err, "%s backend: %s", gk_backend_name(bk), gk_backend_error(bk));
		gm_infer_destroy(&d);
		errno = EIO;
		return NULL;
	}
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
	if (gk_copy_async(d->bk, d->act[0], d->host, in0 * sizeof(float), GK_H2D, d->s) < 0 ||
	    gm_forward(d->bk, d->s, d->sizes, d->nsizes, d->params, d->act, n, NULL, &err) < 0 ||
	    gk_copy_async(d->bk, d->host, d->act[d->nsizes - 1], n * k * sizeof(float), GK_D2H,
			  d->s) < 0 ||
	    gk_stream_sync(d->bk, d->s) < 0) {
		errno = EIO;
		return -1;
	}
	memcpy(probs, d->host, n * k * sizeof(float));
	gm_softmax_rows(probs, n, k);
	return 0;
}
