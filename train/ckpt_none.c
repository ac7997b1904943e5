/* ckpt_none.c - ckpt.h in a standalone build without jansson or zlib (train/CMakeLists.txt):
 * the parameter count only; model files and checkpoints fail with a plain message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static int none(const char *what, gp_error_t *err)
{
	errno = ENOTSUP;
	return gp_errprintf(err, "%s: this gtrain was built without jansson and zlib", what);
}

int gt_model_write(const char *path, const gt_model_t *m, gp_error_t *err)
{
	return none("model file", err);
}

int gt_model_parse(const void *buf, size_t len, gt_model_t *m, gp_error_t *err)
{
	memset(m, 0, sizeof(*m));
	return none("model file", err);
}

int gt_model_read(const char *path, gt_model_t *m, gp_error_t *err)
{
	memset(m, 0, sizeof(*m));
	return none("model file", err);
}

void gt_model_free(gt_model_t *m)
{
	if (m) {
		free(m->params);
		m->params = NULL;
	}
}

int gt_ckpt_write(const char *path, const gt_ckpt_t *c, gp_error_t *err)
{
	return none("checkpoint", err);
}

int gt_ckpt_parse(const void *buf, size_t len, gt_ckpt_t *c, gp_error_t *err)
{
	memset(c, 0, sizeof(*c));
	return none("checkpoint", err);
}

int gt_ckpt_read(const char *path, gt_ckpt_t *c, gp_error_t *err)
{
	memset(c, 0, sizeof(*c));
	return none("checkpoint", err);
}

void gt_ckpt_free(gt_ckpt_t *c)
{
	if (c) {
		gt_model_free(&c->model);
		free(c->state[0]);
		free(c->state[1]);
		c->state[0] = c->state[1] = NULL;
	}
}
