/* file.c - the model file (file.h) */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_scalar.h"
#include "model/container.h"
#include "model/file.h"

#define MAGIC "GPMODEL1\n"
#define WHAT  "model file"

/* "kind", "activation", "dtype": what this reader runs (the storage type into *t) */
static int check_kind(json_t *j, gm_dtype_t *t, gp_error_t *err)
{
	const char *kind = json_string_value(json_object_get(j, "kind"));
	const char *act = json_string_value(json_object_get(j, "activation"));
	const char *dtype = json_string_value(json_object_get(j, "dtype"));
	errno = EINVAL;
	if (!kind || strcmp(kind, "mlp") != 0)
		return gp_errprintf(err, WHAT ": kind '%s' is not supported (only 'mlp')",
				    kind ? kind : "");
	if (json_object_get(j, "activation") && (!act || strcmp(act, "relu") != 0))
		return gp_errprintf(err, WHAT ": activation '%s' is not supported (only 'relu')",
				    act ? act : "");
	if (gm_dtype_parse(dtype, t) < 0)
		return gp_errprintf(err, WHAT ": dtype '%s' is not supported (f32, f16, bf16)",
				    dtype ? dtype : "");
	errno = 0;
	return 0;
}

/* N little-endian f16/bf16 at P widened into DST; -1 if one is not finite */
static int halves_read(float *dst, const unsigned char *p, size_t n, gm_dtype_t t)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
		dst[i] = t == GM_F16 ? gk_sw_f16_to_f32(h) : gk_sw_bf16_to_f32(h);
		if (!isfinite(dst[i]))
			return -1;
	}
	return 0;
}

gm_model_t *gm_model_parse(const void *buf, size_t len, gp_error_t *err)
{
	const unsigned char *body;
	int sizes[GM_MAX_SIZES], nsizes;
	float scale;
	gm_dtype_t t = GM_F32;
	gm_model_t *m = NULL;
	json_t *j = gm_header_parse(buf, len, MAGIC, WHAT, &body, err);
	if (!j)
		return NULL;
	if (check_kind(j, &t, err) < 0 || gm_header_sizes(j, WHAT, sizes, &nsizes, err) < 0 ||
	    gm_header_scale(j, WHAT, 1, &scale, err) < 0)
		goto out;
	size_t n = gm_nparams(sizes, nsizes);
	size_t have = len - (size_t)(body - (const unsigned char *)buf);
	if (!n) {
		errno = EINVAL;
		gp_errprintf(err, WHAT ": over %llu parameters", (unsigned long long)GM_MAX_PARAMS);
		goto out;
	}
	size_t es = t == GM_F32 ? sizeof(float) : 2;
	if (have / es != n || have % es) {
		errno = EINVAL;
		gp_errprintf(err, WHAT ": %zu bytes of parameters, the header needs %zu", have,
			     n * es);
		goto out;
	}
	if (!(m = gm_model_create(sizes, nsizes, scale, err)))
		goto out;
	if (gm_model_set_dtype(m, t, err) < 0) /* zeros: nothing to round, cannot fail */
		gm_model_destroy(&m);
	else if ((t == GM_F32 ? gm_floats_read(gm_model_params(m), body, n, 1)
			      : halves_read(gm_model_params(m), body, n, t)) < 0) {
		gm_model_destroy(&m);
		errno = EINVAL;
		gp_errprintf(err, WHAT ": parameters are not all finite");
	}
out:
	json_decref(j);
	return m;
}

gm_model_t *gm_model_read(const char *path, gp_error_t *err)
{
	size_t len = 0;
	void *buf = gm_slurp(path, &len, err);
	if (!buf)
		return NULL;
	gm_model_t *m = gm_model_parse(buf, len, err);
	int e = errno;
	free(buf);
	errno = e;
	return m;
}

int gm_model_write(const char *path, const gm_model_t *m, gp_error_t *err)
{
	gm_atomic_t o;
	size_t n = gm_model_nparams(m);
	if (gm_atomic_open(&o, path, err) < 0)
		return -1;
	json_t *j = json_object();
	json_object_set_new(j, "kind", json_string("mlp"));
	json_object_set_new(j, "layers", gm_header_sizes_json(m));
	json_object_set_new(j, "activation", json_string("relu"));
	gm_dtype_t t = gm_model_dtype(m);
	json_object_set_new(j, "dtype", json_string(gm_dtype_name(t)));
	json_object_set_new(j, "input_scale", json_real(gm_model_input_scale(m)));
	int ok = gm_put_header(o.f, MAGIC, j);
	if (t == GM_F32) {
		ok = ok && fwrite(gm_model_data(m), sizeof(float), n, o.f) == n;
	} else { /* little-endian 16-bit patterns; the values are exact in t (model.h) */
		const float *p = gm_model_data(m);
		for (size_t i = 0; ok && i < n; i++) {
			uint16_t h = t == GM_F16 ? gk_sw_f32_to_f16(p[i]) : gk_sw_f32_to_bf16(p[i]);
			unsigned char b[2] = {(unsigned char)h, (unsigned char)(h >> 8)};
			ok = fwrite(b, 1, 2, o.f) == 2;
		}
	}
	json_decref(j);
	return gm_atomic_close(&o, ok, err);
}
