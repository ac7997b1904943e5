/* model.c - the memory side of ckpt.h, the same with or without model files (ckpt.c,
 * ckpt_none.c): a model's parameter count and freeing what the readers allocated. */
#include <stdlib.h>

#include "train/ckpt.h"

size_t gt_model_nparams(const int *sizes, int nsizes)
{
	size_t n = 0;
	if (nsizes < 2 || nsizes > GT_CKPT_MAX_SIZES)
		return 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] < 1 || sizes[i] > 1 << 20)
			return 0;
	for (int l = 0; l + 1 < nsizes; l++)
		n += (size_t)sizes[l] * (size_t)sizes[l + 1] + (size_t)sizes[l + 1];
	return n;
}

void gt_model_free(gt_model_t *m)
{
	if (!m)
		return;
	free(m->params);
	m->params = NULL;
}

void gt_ckpt_free(gt_ckpt_t *c)
{
	if (!c)
		return;
	gt_model_free(&c->model);
	for (int i = 0; i < 2; i++) {
		free(c->state[i]);
		c->state[i] = NULL;
	}
}
