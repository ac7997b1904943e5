/* optover.c - AdamW layer by layer on a second stream beside backward (optover.h). */
#include <errno.h>
#include <stdlib.h>

#include "train/optover.h"

struct gt_optover {
	gk_backend_t *b;
	gt_mlp_t *m;
	gt_optim_t *o;
	gk_amp_t *amp;
	gk_stream_t *side;
	gk_event_t *ready[GT_MAX_LAYERS]; /* layer l done with on the model's stream */
	gk_event_t *done;		  /* the side stream's work of the step */
	gp_error_t *err;		  /* where gt_optover_ready reports: the creator's */
};

gt_optover_t *gt_optover_create(gk_backend_t *b, gt_mlp_t *m, gt_optim_t *o, gk_amp_t *amp,
				gp_error_t *err)
{
	gt_optover_t *x = calloc(1, sizeof(*x));
	if (!x) {
		gp_errprintf(err, "overlapped optimizer: out of memory");
		return NULL;
	}
	x->b = b, x->m = m, x->o = o, x->amp = amp, x->err = err;
	int ok = gk_stream_create(b, &x->side) == 0 && gk_event_create(b, &x->done) == 0;
	for (int l = 0; ok && l < gt_mlp_nlayers(m); l++)
		ok = gk_event_create(b, &x->ready[l]) == 0;
	if (!ok) {
		gp_errprintf(err, "overlapped optimizer: %s", gk_backend_error(b));
		gt_optover_destroy(&x);
		return NULL;
	}
	gt_mlp_set_ready_late(m, 1);
	return x;
}

void gt_optover_destroy(gt_optover_t **px)
{
	gt_optover_t *x = *px;
	if (!x)
		return;
	gt_mlp_set_ready_late(x->m, 0);
	for (int l = 0; l < GT_MAX_LAYERS; l++)
		if (x->ready[l])
			gk_event_destroy(x->b, &x->ready[l]);
	if (x->done)
		gk_event_destroy(x->b, &x->done);
	if (x->side)
		gk_stream_destroy(x->b, &x->side);
	free(x);
	*px = NULL;
}

int gt_optover_ready(void *arg, int layer)
{
	gt_optover_t *x = arg;
	gt_mlp_t *m = x->m;
	if (layer < 0 || layer >= gt_mlp_nlayers(m)) {
		errno = EINVAL;
		return gp_errprintf(x->err, "overlapped optimizer: no layer %d", layer);
	}
	gk_dtype_t ct = gt_mlp_grad_dtype(m);
	size_t off = gt_mlp_layer_offset(m, layer), n = gt_mlp_layer_count(m, layer);
	const char *g = (const char *)gt_mlp_grads_dev(m) + off * gk_dtype_size(ct);
	if (gk_event_record(x->b, x->ready[layer], gt_mlp_stream(m)) < 0 ||
	    gk_stream_wait_event(x->b, x->side, x->ready[layer]) < 0 ||
	    gk_find_nonfinite(x->b, ct, g, n, &x->amp->found, x->side) < 0)
		return gp_errprintf(x->err, "overlapped optimizer: %s", gk_backend_error(x->b));
	return gt_optim_step_amp_part(x->o, off, n, gt_mlp_params_dev(m), x->amp, ct,
				      gt_mlp_compute_copy(m), ct, gt_mlp_grads_dev(m), x->side,
				      x->err);
}

int gt_optover_finish(gt_optover_t *x, gp_error_t *err)
{
	gk_stream_t *s = gt_mlp_stream(x->m);
	if (gk_event_record(x->b, x->done, x->side) < 0 ||
	    gk_stream_wait_event(x->b, s, x->done) < 0)
		return gp_errprintf(err, "overlapped optimizer: %s", gk_backend_error(x->b));
	if (gt_optim_amp_update(x->o, x->amp, s, err) < 0)
		return -1;
	if (!gt_mlp_compute_copy(x->m) && gt_mlp_grad_dtype(x->m) != GK_F32)
		return gt_mlp_weights_changed(x->m, err);
	return 0;
}
