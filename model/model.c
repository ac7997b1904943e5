/* model.c - the model in memory (model.h) */
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_scalar.h"
#include "model/model.h"

struct gm_model {
	int sizes[GM_MAX_SIZES];
	int nsizes;
	float input_scale;
	size_t off[GM_MAX_SIZES]; /* off[l]: W_l; off[nsizes - 1]: the total */
	float *params;
	gm_dtype_t dtype;
	char shape[GM_MAX_SIZES * 8 + 1];
};

size_t gm_nparams(const int *sizes, int nsizes)
{
	size_t n = 0;
	if (nsizes < 2 || nsizes > GM_MAX_SIZES)
		return 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] < 1 || sizes[i] > GM_MAX_WIDTH)
			return 0;
	for (int l = 0; l + 1 < nsizes; l++)
		n += (size_t)sizes[l] * (size_t)sizes[l + 1] + (size_t)sizes[l + 1];
	return n > GM_MAX_PARAMS ? 0 : n;
}

gm_model_t *gm_model_create(const int *sizes, int nsizes, float input_scale, gp_error_t *err)
{
	size_t n = gm_nparams(sizes, nsizes);
	gm_model_t *m;
	if (!n) {
		errno = EINVAL;
		gp_errprintf(err,
			     "a model needs 2 to %d layer sizes of 1..%d units, at most %llu "
			     "parameters",
			     GM_MAX_SIZES, GM_MAX_WIDTH, (unsigned long long)GM_MAX_PARAMS);
		return NULL;
	}
	if (!(m = calloc(1, sizeof(*m))) || !(m->params = calloc(n, sizeof(float)))) {
		free(m);
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	m->nsizes = nsizes;
	m->input_scale = input_scale;
	size_t sl = 0;
	for (int l = 0; l < nsizes; l++) {
		m->sizes[l] = sizes[l];
		if (l > 0)
			m->off[l] = m->off[l - 1] + (size_t)sizes[l - 1] * (size_t)sizes[l] +
				    (size_t)sizes[l];
		sl += (size_t)snprintf(m->shape + sl, sizeof(m->shape) - sl, "%s%d", l ? "-" : "",
				       sizes[l]);
	}
	return m;
}

void gm_model_destroy(gm_model_t **pm)
{
	if (!pm || !*pm)
		return;
	free((*pm)->params);
	free(*pm);
	*pm = NULL;
}

int gm_model_nsizes(const gm_model_t *m)
{
	return m->nsizes;
}

const int *gm_model_sizes(const gm_model_t *m)
{
	return m->sizes;
}

int gm_model_inputs(const gm_model_t *m)
{
	return m->sizes[0];
}

int gm_model_outputs(const gm_model_t *m)
{
	return m->sizes[m->nsizes - 1];
}

float gm_model_input_scale(const gm_model_t *m)
{
	return m->input_scale;
}

const char *gm_model_shape(const gm_model_t *m)
{
	return m->shape;
}

size_t gm_model_nparams(const gm_model_t *m)
{
	return m->off[m->nsizes - 1];
}

float *gm_model_params(gm_model_t *m)
{
	return m->params;
}

const float *gm_model_data(const gm_model_t *m)
{
	return m->params;
}

size_t gm_model_layer_offset(const gm_model_t *m, int l)
{
	return m->off[l];
}

static const char *const dtype_names[] = {"f32", "f16", "bf16"};

int gm_dtype_parse(const char *name, gm_dtype_t *t)
{
	for (int i = 0; i < 3; i++)
		if (name && !strcmp(name, dtype_names[i])) {
			*t = (gm_dtype_t)i;
			return 0;
		}
	errno = EINVAL;
	return -1;
}

const char *gm_dtype_name(gm_dtype_t t)
{
	return t >= GM_F32 && t <= GM_BF16 ? dtype_names[t] : "?";
}

gm_dtype_t gm_model_dtype(const gm_model_t *m)
{
	return m->dtype;
}

int gm_model_set_dtype(gm_model_t *m, gm_dtype_t t, gp_error_t *err)
{
	size_t n = gm_model_nparams(m), bad = 0;
	if (t < GM_F32 || t > GM_BF16) {
		errno = EINVAL;
		return gp_errprintf(err, "model: invalid storage type %d", (int)t);
	}
	for (size_t i = 0; t != GM_F32 && i < n; i++) {
		float v = t == GM_F16 ? gk_sw_f16_to_f32(gk_sw_f32_to_f16(m->params[i]))
				      : gk_sw_bf16_to_f32(gk_sw_f32_to_bf16(m->params[i]));
		bad += !isfinite(v);
		m->params[i] = v;
	}
	m->dtype = t;
	if (bad) {
		errno = EINVAL;
		return gp_errprintf(err, "model: %zu parameters overflow %s", bad,
				    gm_dtype_name(t));
	}
	return 0;
}
