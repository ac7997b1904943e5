/* resume.c - checkpoints of a run: rank 0 writes them (ckpt.h format) and pushes them with
 * --ckpt-cmd; at start rank 0 fetches (--resume-cmd) and reads one and broadcasts weights,
 * optimizer state and counters to every rank, whatever their number */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "train/ckpt.h"
#include "train/trainer_int.h"

int tr_save_ckpt(tr_t *t, long step)
{
	const gt_conf_t *c = t->c;
	gt_ckpt_t k;
	int rc = -1;
	size_t n = gt_mlp_nparams(t->m);
	memset(&k, 0, sizeof(k));
	if (!(k.model = gm_model_create(c->sizes, c->nsizes, t->input_scale, t->err)))
		goto out;
	k.step = step;
	k.opt_steps = gt_optim_steps(t->o);
	k.global_batch = c->global_batch;
	k.seed = c->seed;
	snprintf(k.optimizer, sizeof(k.optimizer), "%s", gt_optim_name(c->opt.kind));
	snprintf(k.dtype, sizeof(k.dtype), "%s", tr_dtype_name(c->compute));
	k.loss_scale = t->sc.scale;
	k.scale_good = t->sc.good;
	k.skipped = t->sc.skipped;
	k.nstate = gt_optim_nstate(t->o);
	if (gt_mlp_get_params(t->m, gm_model_params(k.model), t->err) < 0)
		goto out;
	for (int i = 0; i < k.nstate; i++)
		if (!(k.state[i] = malloc(n * sizeof(float))) ||
		    gk_copy(t->b, k.state[i], gt_optim_state_dev(t->o, i), n * sizeof(float),
			    GK_D2H) < 0)
			goto out;
	if (gt_ckpt_write(c->ckpt, &k, t->err) < 0)
		goto out;
	if (c->ckpt_cmd && tr_run_hook(c->ckpt_cmd, "GTRAIN_CKPT", c->ckpt, step) < 0)
		fprintf(stderr,
			"gtrain: checkpoint command failed at step %ld (training goes on)\n", step);
	rc = 0;
out:
	gt_ckpt_free(&k);
	return rc;
}

/* The checkpoint to resume from, read by rank 0 and broadcast: returns the step to start
 * at (0: fresh). */
int tr_resume(tr_t *t, long *start)
{
	const gt_conf_t *c = t->c;
	const char *path = c->resume ? c->resume : c->fresh ? NULL : c->ckpt;
	gt_ckpt_t k;
	double hdr[6] = {0};
	size_t n = gt_mlp_nparams(t->m);
	int rc = 0;
	memset(&k, 0, sizeof(k));
	*start = 0;
	if (t->rank == 0 && path) {
		if (c->resume_cmd && !c->fresh &&
		    tr_run_hook(c->resume_cmd, "GTRAIN_CKPT", path, 0) < 0)
			fprintf(t->out,
				"gtrain: resume command found no checkpoint: starting fresh\n");
		struct stat st;
		if (stat(path, &st) == 0 || c->resume) {
			if (gt_ckpt_read(path, &k, t->err) < 0) {
				rc = -1;
			} else if (gm_model_nsizes(k.model) != c->nsizes ||
				   memcmp(gm_model_sizes(k.model), c->sizes,
					  sizeof(int) * (size_t)c->nsizes)) {
				gp_errprintf(t->err, "checkpoint '%s' is of other layer sizes",
					     path);
				rc = -1;
			} else if (k.global_batch != c->global_batch) {
				gp_errprintf(
				    t->err,
				    "checkpoint '%s' was trained with global batch %d, not %d",
				    path, k.global_batch, c->global_batch);
				rc = -1;
			} else if (strcmp(k.optimizer, gt_optim_name(c->opt.kind)) ||
				   k.nstate != gt_optim_nstate(t->o)) {
				gp_errprintf(t->err, "checkpoint '%s' is of optimizer '%s'", path,
					     k.optimizer);
				rc = -1;
			} else {
				hdr[0] = 1;
				hdr[1] = (double)k.step;
				hdr[2] = (double)k.opt_steps;
				hdr[3] = k.loss_scale;
				hdr[4] = k.scale_good;
				hdr[5] = (double)k.skipped;
			}
			if (rc < 0)
				hdr[0] = -1;
		}
	}
	if (t->size > 1 && gc_broadcast(t->comm, hdr, 6, GC_F64, 0) < 0) {
		gt_ckpt_free(&k);
		return tr_fail_comm(t, "broadcast");
	}
	if (hdr[0] < 0) {
		gt_ckpt_free(&k);
		if (t->rank != 0)
			gp_errprintf(t->err, "rank 0 could not read the checkpoint");
		errno = EINVAL;
		return -1;
	}
	if (hdr[0] == 0)
		return 0;
	float *buf = malloc(n * sizeof(float));
	if (!buf) {
		gt_ckpt_free(&k);
		return gp_errprintf(t->err, "out of memory");
	}
	for (int i = -1; i < gt_optim_nstate(t->o); i++) {
		if (t->rank == 0) /* the one that read the checkpoint */
			memcpy(buf, i < 0 ? gm_model_data(k.model) : k.state[i], n * sizeof(float));
		if (t->size > 1 && gc_broadcast(t->comm, buf, n, GC_F32, 0) < 0) {
			rc = tr_fail_comm(t, "broadcast");
			break;
		}
		if (i < 0)
			rc = gt_mlp_set_params(t->m, buf, t->err);
		else if (gk_copy(t->b, gt_optim_state_dev(t->o, i), buf, n * sizeof(float),
				 GK_H2D) < 0)
			rc = gp_errprintf(t->err, "%s", gk_backend_error(t->b));
		if (rc < 0)
			break;
	}
	free(buf);
	gt_ckpt_free(&k);
	if (rc < 0)
		return -1;
	*start = (long)hdr[1];
	gt_optim_set_steps(t->o, (long)hdr[2]);
	t->sc.scale = hdr[3];
	t->sc.good = (int)hdr[4];
	t->sc.skipped = (long)hdr[5];
	if (t->rank == 0)
		fprintf(t->out, "gtrain: resuming from %s at step %ld on %d rank%s\n", path, *start,
			t->size, t->size > 1 ? "s" : "");
	return 0;
}
