/* file_none.c - file.h in a build without jansson (the GPU machine's standalone train/ build,
 * model/CMakeLists.txt): the model file cannot be read or written, and says why. */
#include <errno.h>

#include "model/file.h"

static int none(gp_error_t *err)
{
	errno = ENOTSUP;
	return gp_errprintf(err, "model file: this build has no jansson");
}

gm_model_t *gm_model_parse(const void *buf, size_t len, gp_error_t *err)
{
	none(err);
	return NULL;
}

gm_model_t *gm_model_read(const char *path, gp_error_t *err)
{
	none(err);
	return NULL;
}

int gm_model_write(const char *path, const gm_model_t *m, gp_error_t *err)
{
	return none(err);
}
