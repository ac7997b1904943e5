/* optim.c - SGD-momentum / AdamW steps through the kernels, and the loss scaler (optim.h) */
#include <errno.h>
#include <stdlib.h>

#include "train/optim.h"

struct gt_optim {
	gk_backend_t *b;
	gt_optim_conf_t c;
	size_t n;
	float *state[2];
	long steps;
};

const char *gt_optim_name(gt_optim_kind_t k)
{
	return k == GT_ADAMW ? "adamw" : "sgd";
}

gt_optim_t *gt_optim_create(gk_backend_t *b, const gt_optim_conf_t *conf, size_t n, gp_error_t *err)
{
	gt_optim_t *o = calloc(1, sizeof(*o));
	if (!o) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	o->b = b;
	o->c = *conf;
	o->n = n;
	for (int i = 0; i < gt_optim_nstate(o); i++) {
		if (gk_dev_alloc(b, n * sizeof(float), (void **)&o->state[i]) < 0 ||
		    gk_memset(b, o->state[i], 0, n * sizeof(float), NULL) < 0) {
			gp_errprintf(err, "optimizer state: %s", gk_backend_error(b));
			gt_optim_destroy(&o);
			errno = ENOMEM;
			return NULL;
		}
	}
	return o;
}

void gt_optim_destroy(gt_optim_t **po)
{
	gt_optim_t *o = po ? *po : NULL;
	if (!o)
		return;
	for (int i = 0; i < 2; i++)
		gk_dev_free(o->b, o->state[i]);
	free(o);
	*po = NULL;
}

int gt_optim_nstate(const gt_optim_t *o)
{
	return o->c.kind == GT_ADAMW ? 2 : 1;
}

float *gt_optim_state_dev(gt_optim_t *o, int i)
{
	return i >= 0 && i < gt_optim_nstate(o) ? o->state[i] : NULL;
}

long gt_optim_steps(const gt_optim_t *o)
{
	return o->steps;
}

void gt_optim_set_steps(gt_optim_t *o, long steps)
{
	o->steps = steps;
}

int gt_optim_step(gt_optim_t *o, float *w, gk_dtype_t gt, const void *g, float grad_scale,
		  gp_error_t *err)
{
	int rc;
	if (o->c.kind == GT_ADAMW) {
		gk_adamw_t p = {.lr = o->c.lr,
				.beta1 = o->c.beta1,
				.beta2 = o->c.beta2,
				.eps = o->c.eps,
				.weight_decay = o->c.weight_decay,
				.grad_scale = grad_scale,
				.step = (int)(o->steps + 1)};
		rc = gk_adamw(o->b, &p, w, o->state[0], o->state[1], gt, g, o->n, NULL);
	} else {
		gk_sgd_t p = {.lr = o->c.lr,
			      .momentum = o->c.momentum,
			      .weight_decay = o->c.weight_decay,
			      .grad_scale = grad_scale,
			      .nesterov = 0};
		rc = gk_sgd_momentum(o->b, &p, w, o->state[0], gt, g, o->n, NULL);
	}
	if (rc < 0)
		return gp_errprintf(err, "optimizer step: %s", gk_backend_error(o->b));
	o->steps++;
	return 0;
}

static int amp_part(gt_optim_t *o, size_t off, size_t n, float *w, gk_amp_t *amp, gk_dtype_t wc_t,
		    void *wc, gk_dtype_t gt, const void *g, gk_stream_t *s, gp_error_t *err)
{
	if (o->c.kind != GT_ADAMW) {
		errno = ENOTSUP;
		return gp_errprintf(err, "optimizer step: the card-side loss scaler needs adamw");
	}
	if (off > o->n || n > o->n - off) {
		errno = EINVAL;
		return gp_errprintf(err, "optimizer step: part %zu+%zu outside %zu parameters", off,
				    n, o->n);
	}
	gk_adamw_t p = {.lr = o->c.lr,
			.beta1 = o->c.beta1,
			.beta2 = o->c.beta2,
			.eps = o->c.eps,
			.weight_decay = o->c.weight_decay,
			.grad_scale = 1.0f,
			.step = 1};
	if (gk_adamw_amp(o->b, &p, amp, w + off, o->state[0] + off, o->state[1] + off, wc_t,
			 wc ? (char *)wc + off * gk_dtype_size(wc_t) : NULL, gt,
			 (const char *)g + off * gk_dtype_size(gt), n, s) < 0)
		return gp_errprintf(err, "optimizer step: %s", gk_backend_error(o->b));
	return 0;
}

int gt_optim_step_amp_part(gt_optim_t *o, size_t off, size_t n, float *w, gk_amp_t *amp,
			   gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *g, gk_stream_t *s,
			   gp_error_t *err)
{
	return amp_part(o, off, n, w, amp, wc_t, wc, gt, g, s, err);
}

int gt_optim_amp_update(gt_optim_t *o, gk_amp_t *amp, gk_stream_t *s, gp_error_t *err)
{
	if (gk_amp_update(o->b, amp, s) < 0)
		return gp_errprintf(err, "optimizer step: %s", gk_backend_error(o->b));
	return 0;
}

int gt_optim_step_amp(gt_optim_t *o, float *w, gk_amp_t *amp, gk_dtype_t wc_t, void *wc,
		      gk_dtype_t gt, const void *g, gk_stream_t *s, gp_error_t *err)
{
	if (amp_part(o, 0, o->n, w, amp, wc_t, wc, gt, g, s, err) < 0)
		return -1;
	return gt_optim_amp_update(o, amp, s, err);
}

void gt_scaler_init(gt_scaler_t *s, double initial, int window, int dynamic)
{
	s->dynamic = dynamic;
	s->scale = dynamic ? initial : 1.0;
	s->min = 1.0 / 65536.0;
	s->max = 16777216.0; /* 2^24 */
	s->window = window > 0 ? window : 200;
	s->good = 0;
	s->skipped = 0;
}

int gt_scaler_update(gt_scaler_t *s, int overflow)
{
	if (overflow) {
		s->skipped++;
		s->good = 0;
		if (s->dynamic && s->scale / 2 >= s->min)
			s->scale /= 2;
		return 0;
	}
	if (s->dynamic && ++s->good >= s->window) {
		s->good = 0;
		if (s->scale * 2 <= s->max)
			s->scale *= 2;
	}
	return 1;
}
