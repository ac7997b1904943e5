/* devforward.c: the forward pass on the kernels backend (see devforward.h). */
#include "serve/devforward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/softmax.h"

#define MAX_LAYERS 16

struct gs_devfwd {
	gk_backend_t *bk;
	gk_stream_t *s;
	uint32_t nl, width[MAX_LAYERS + 1], widest;
	float input_scale;
	size_t max_rows;
	float *w[MAX_LAYERS], *b[MAX_LAYERS]; /* on the device */
	float *act[2];			      /* device: [max_rows][widest] each */
	float *host;			      /* pinned: a batch's rows in, its logits out */
};

void gs_devfwd_destroy(gs_devfwd_t **dp)
{
	gs_devfwd_t *d = *dp;
	if (!d)
		return;
	for (uint32_t l = 0; l < d->nl; l++) {
		gk_dev_free(d->bk, d->w[l]);
		gk_dev_free(d->bk, d->b[l]);
	}
	gk_dev_free(d->bk, d->act[0]);
	gk_dev_free(d->bk, d->act[1]);
	if (d->host)
		gk_host_free(d->bk, d->host);
	if (d->s)
		gk_stream_destroy(d->bk, &d->s);
	free(d);
	*dp = NULL;
}

gs_devfwd_t *gs_devfwd_create(gk_backend_t *bk, uint32_t nl, const uint32_t *width,
			      const float *const *w, const float *const *b, float input_scale,
			      size_t max_rows, char *why, size_t whylen)
{
	if (!nl || nl > MAX_LAYERS || !max_rows) {
		snprintf(why, whylen, "invalid model shape or batch size");
		errno = EINVAL;
		return NULL;
	}
	gs_devfwd_t *d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	d->bk = bk;
	d->nl = nl;
	d->input_scale = input_scale;
	d->max_rows = max_rows;
	for (uint32_t l = 0; l <= nl; l++) {
		d->width[l] = width[l];
		if (width[l] > d->widest)
			d->widest = width[l];
	}
	size_t act = max_rows * d->widest * sizeof(float);
	if (gk_stream_create(bk, &d->s) < 0 || gk_dev_alloc(bk, act, (void **)&d->act[0]) < 0 ||
	    gk_dev_alloc(bk, act, (void **)&d->act[1]) < 0 ||
	    gk_host_alloc(bk, act, (void **)&d->host) < 0)
		goto fail;
	for (uint32_t l = 0; l < nl; l++) {
		size_t nw = (size_t)width[l + 1] * width[l] * sizeof(float);
		size_t nb = (size_t)width[l + 1] * sizeof(float);
		if (gk_dev_alloc(bk, nw, (void **)&d->w[l]) < 0 ||
		    gk_dev_alloc(bk, nb, (void **)&d->b[l]) < 0 ||
		    gk_copy(bk, d->w[l], w[l], nw, GK_H2D) < 0 ||
		    gk_copy(bk, d->b[l], b[l], nb, GK_H2D) < 0)
			goto fail;
	}
	return d;
fail:
	snprintf(why, whylen, "%s backend: %s", gk_backend_name(bk), gk_backend_error(bk));
	gs_devfwd_destroy(&d);
	errno = EIO;
	return NULL;
}

int gs_devfwd_run(gs_devfwd_t *d, const float *x, size_t n, float *probs)
{
	if (!n)
		return 0;
	if (n > d->max_rows) {
		errno = E2BIG;
		return -1;
	}
	size_t in0 = n * d->width[0];
	for (size_t i = 0; i < in0; i++)
		d->host[i] = x[i] * d->input_scale;
	gk_backend_t *bk = d->bk;
	float *a = d->act[0], *y = d->act[1];
	if (gk_copy_async(bk, a, d->host, in0 * sizeof(float), GK_H2D, d->s) < 0)
		return -1;
	for (uint32_t l = 0; l < d->nl; l++) {
		int in = (int)d->width[l], out = (int)d->width[l + 1];
		/* row-major y[n][out] = a[n][in] . W[out][in]^T, as column-major y^T = W a^T */
		if (gk_sgemm(bk, 1, 0, out, (int)n, in, 1.0f, d->w[l], in, a, in, 0.0f, y, out,
			     d->s) < 0 ||
		    gk_bias_act(bk, y, d->b[l], n, (size_t)out,
				l + 1 < d->nl ? GK_ACT_RELU : GK_ACT_NONE, d->s) < 0)
			return -1;
		float *t = a;
		a = y;
		y = t;
	}
	uint32_t k = d->width[d->nl];
	if (gk_copy_async(bk, d->host, a, n * k * sizeof(float), GK_D2H, d->s) < 0 ||
	    gk_stream_sync(bk, d->s) < 0)
		return -1;
	memcpy(probs, d->host, n * k * sizeof(float));
	gs_softmax_rows(probs, n, k);
	return 0;
}
