/* buckets.c - the gradient allreduce of a step: buckets of layers handed to libgcomm's
 * non-blocking allreduce while backward goes on (--overlap on), or one allreduce after it,
 * and the cost of a blocking allreduce that the summary compares with */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "train/trainer_int.h"

static int send_pending(tr_t *t)
{
	gk_dtype_t dt = gt_mlp_grad_dtype(t->m);
	size_t es = gk_dtype_size(dt);
	char *g = gt_mlp_grads_dev(t->m);
	if (!t->pending)
		return 0;
	if (gt_mlp_sync(t->m, t->err) < 0) /* the bucket must be computed before it is sent */
		return -1;
	if (gc_iallreduce(t->comm, GC_IN_PLACE, g + t->pend_lo * es, t->pend_hi - t->pend_lo,
			  (gc_dtype_t)dt, GC_SUM, &t->req[t->nreq]) < 0)
		return tr_fail_comm(t, "allreduce");
	t->nreq++;
	t->pending = 0;
	return 0;
}

int tr_grad_ready(void *arg, int layer)
{
	tr_t *t = arg;
	if (t->ov && gt_optover_ready(t->ov, layer) < 0) /* one rank: nothing to send */
		return -1;
	size_t lo = gt_mlp_layer_offset(t->m, layer), n = gt_mlp_layer_count(t->m, layer);
	if (!t->pending) {
		t->pend_hi = lo + n;
		t->pending = 1;
	}
	t->pend_lo = lo;
	if (t->size < 2 || !t->overlap)
		return 0;
	size_t bytes = (t->pend_hi - t->pend_lo) * gk_dtype_size(gt_mlp_grad_dtype(t->m));
	if (bytes >= t->c->bucket_bytes || layer == 0)
		return send_pending(t);
	return 0;
}

/* after backward: the rest of the buckets, then wait for all; returns ms waited */
int tr_finish_allreduce(tr_t *t, double *wait_ms)
{
	double t0 = tr_now_ms();
	*wait_ms = 0;
	if (t->size < 2) {
		t->pending = 0;
		return 0;
	}
	if (!t->overlap) {
		/* the baseline: one allreduce of everything after backward */
		t->pend_lo = 0;
		t->pend_hi = gt_mlp_nparams(t->m);
		t->pending = 1;
	}
	if (send_pending(t) < 0)
		return -1;
	int rc = 0;
	for (int i = 0; i < t->nreq; i++)
		if (gc_wait(&t->req[i]) < 0 && rc == 0)
			rc = tr_fail_comm(t, "allreduce");
	t->nreq = 0;
	*wait_ms = tr_now_ms() - t0;
	return rc;
}

/* one blocking allreduce of the whole gradient, the cost overlap hides (median of 5) */
double tr_blocking_cost(tr_t *t)
{
	double ms[5];
	if (t->size < 2)
		return 0;
	for (int i = 0; i < 5; i++) {
		double t0 = tr_now_ms();
		if (gc_allreduce(t->comm, GC_IN_PLACE, gt_mlp_grads_dev(t->m), gt_mlp_nparams(t->m),
				 (gc_dtype_t)gt_mlp_grad_dtype(t->m), GC_SUM) < 0)
			return -1;
		ms[i] = tr_now_ms() - t0;
	}
	for (int i = 0; i < 5; i++) /* sort 5 */
		for (int j = i + 1; j < 5; j++)
			if (ms[j] < ms[i]) {
				double x = ms[i];
				ms[i] = ms[j];
				ms[j] = x;
			}
	double med = ms[2];
	/* every rank reports the same figure: rank 0's */
	if (gc_broadcast(t->comm, &med, 1, GC_F64, 0) < 0)
		return -1;
	return med;
}
