/* ckpt_free.c - freeing a checkpoint (ckpt.h), the same with or without the file format
 * (ckpt.c, ckpt_none.c) */
#include <stdlib.h>

#include "train/ckpt.h"

void gt_ckpt_free(gt_ckpt_t *c)
{
	if (!c)
		return;
	gm_model_destroy(&c->model);
	for (int i = 0; i < 2; i++) {
		free(c->state[i]);
		c->state[i] = NULL;
	}
}
