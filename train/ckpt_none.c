/* ckpt_none.c - ckpt.h in a standalone build without jansson or zlib (train/CMakeLists.txt):
 * checkpoints fail with a plain message (ckpt_free.c frees; the model file is model/'s). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "train/ckpt.h"

static int none(const char *what, gp_error_t *err)
{
	errno = ENOTSUP;
	return gp_errprintf(err, "%s: this gtrain was built without jansson or zlib", what);
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
