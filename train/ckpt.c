/* ckpt.c - the checkpoint (ckpt.h), in the model file's frame (model/container.h) */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model/container.h"
#include "train/ckpt.h"

#define CKPT_MAGIC "GPCKPT1\n"
#define WHAT	   "checkpoint"

int gt_ckpt_write(const char *path, const gt_ckpt_t *c, gp_error_t *err)
{
	gm_atomic_t o;
	if (!c->model || c->nstate < 0 || c->nstate > 2) {
		errno = EINVAL;
		return gp_errprintf(err, "checkpoint: inconsistent state");
	}
	size_t n = gm_model_nparams(c->model);
	const float *params = gm_model_data(c->model);
	uLong crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, (const Bytef *)params, (uInt)(n * sizeof(float)));
	for (int i = 0; i < c->nstate; i++)
		crc = crc32(crc, (const Bytef *)c->state[i], (uInt)(n * sizeof(float)));
	if (gm_atomic_open(&o, path, err) < 0)
		return -1;
	json_t *j = json_object();
	json_object_set_new(j, "kind", json_string("mlp"));
	json_object_set_new(j, "layers", gm_header_sizes_json(c->model));
	json_object_set_new(j, "input_scale", json_real(gm_model_input_scale(c->model)));
	json_object_set_new(j, "step", json_integer(c->step));
	json_object_set_new(j, "opt_steps", json_integer(c->opt_steps));
	json_object_set_new(j, "global_batch", json_integer(c->global_batch));
	json_object_set_new(j, "seed", json_integer((json_int_t)c->seed));
	json_object_set_new(j, "optimizer", json_string(c->optimizer));
	json_object_set_new(j, "dtype", json_string(c->dtype));
	json_object_set_new(j, "loss_scale", json_real(c->loss_scale));
	json_object_set_new(j, "scale_good", json_integer(c->scale_good));
	json_object_set_new(j, "skipped", json_integer(c->skipped));
	json_object_set_new(j, "state_vectors", json_integer(c->nstate));
	json_object_set_new(j, "crc32", json_integer((json_int_t)crc));
	unsigned char tail[4] = {(unsigned char)crc, (unsigned char)(crc >> 8),
				 (unsigned char)(crc >> 16), (unsigned char)(crc >> 24)};
	int ok = gm_put_header(o.f, CKPT_MAGIC, j) && fwrite(params, sizeof(float), n, o.f) == n;
	for (int i = 0; ok && i < c->nstate; i++)
		ok = fwrite(c->state[i], sizeof(float), n, o.f) == n;
	ok = ok && fwrite(tail, 1, 4, o.f) == 4;
	json_decref(j);
	return gm_atomic_close(&o, ok, err);
}

static int get_int(json_t *j, const char *key, long long lo, long long hi, long long *v,
		   gp_error_t *err)
{
	json_t *x = json_object_get(j, key);
	if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi) {
		errno = EINVAL;
		return gp_errprintf(err, "checkpoint: '%s' missing or out of range", key);
	}
	*v = json_integer_value(x);
	return 0;
}

static int get_str(json_t *j, const char *key, char *out, size_t size, gp_error_t *err)
{
	const char *s = json_string_value(json_object_get(j, key));
	if (!s || strlen(s) >= size) {
		errno = EINVAL;
		return gp_errprintf(err, "checkpoint: '%s' missing or too long", key);
	}
	snprintf(out, size, "%s", s);
	return 0;
}

static float *copy_floats(const unsigned char *p, size_t n)
{
	float *f = malloc(n * sizeof(float));
	if (f)
		gm_floats_read(f, p, n, 0);
	return f;
}

int gt_ckpt_parse(const void *buf, size_t len, gt_ckpt_t *c, gp_error_t *err)
{
	const unsigned char *body;
	long long v[8] = {0};
	int sizes[GM_MAX_SIZES], nsizes;
	float scale;
	memset(c, 0, sizeof(*c));
	json_t *j = gm_header_parse(buf, len, CKPT_MAGIC, WHAT, &body, err);
	if (!j)
		return -1;
	json_t *ls = json_object_get(j, "loss_scale");
	int rc = -1;
	if (gm_header_sizes(j, WHAT, sizes, &nsizes, err) < 0 ||
	    gm_header_scale(j, WHAT, 0, &scale, err) < 0 ||
	    get_int(j, "step", 0, 1ll << 50, &v[0], err) < 0 ||
	    get_int(j, "opt_steps", 0, 1ll << 50, &v[1], err) < 0 ||
	    get_int(j, "global_batch", 1, 1 << 24, &v[2], err) < 0 ||
	    get_int(j, "seed", INT64_MIN, INT64_MAX, &v[3], err) < 0 ||
	    get_int(j, "scale_good", 0, 1 << 30, &v[4], err) < 0 ||
	    get_int(j, "skipped", 0, 1ll << 50, &v[5], err) < 0 ||
	    get_int(j, "state_vectors", 0, 2, &v[6], err) < 0 ||
	    get_int(j, "crc32", 0, 0xffffffffll, &v[7], err) < 0 ||
	    get_str(j, "optimizer", c->optimizer, sizeof(c->optimizer), err) < 0 ||
	    get_str(j, "dtype", c->dtype, sizeof(c->dtype), err) < 0)
		goto out;
	if (!json_is_number(ls) || !(json_number_value(ls) > 0) ||
	    !isfinite(json_number_value(ls))) {
		errno = EINVAL;
		gp_errprintf(err, "checkpoint: 'loss_scale' must be a positive number");
		goto out;
	}
	c->step = (long)v[0];
	c->opt_steps = (long)v[1];
	c->global_batch = (int)v[2];
	c->seed = (uint64_t)v[3];
	c->scale_good = (int)v[4];
	c->skipped = (long)v[5];
	c->nstate = (int)v[6];
	c->loss_scale = json_number_value(ls);
	size_t n = gm_nparams(sizes, nsizes);
	size_t have = len - (size_t)(body - (const unsigned char *)buf);
	size_t want = n * sizeof(float) * (size_t)(1 + c->nstate) + 4;
	if (!n || n > (1ull << 30) || have != want) {
		gp_errprintf(err, "checkpoint: %zu bytes after the header, expected %zu", have,
			     want);
		errno = EINVAL;
		goto out;
	}
	uLong crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, body, (uInt)(want - 4));
	const unsigned char *t = body + want - 4;
	uint32_t stored =
	    (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
	if (crc != stored || crc != (uLong)v[7]) {
		errno = EINVAL;
		gp_errprintf(err, "checkpoint: checksum mismatch (a damaged file)");
		goto out;
	}
	if (!(c->model = gm_model_create(sizes, nsizes, scale, err)))
		goto out;
	gm_floats_read(gm_model_params(c->model), body, n, 0);
	for (int i = 0; i < c->nstate; i++)
		if (!(c->state[i] = copy_floats(body + (size_t)(i + 1) * n * sizeof(float), n))) {
			gp_errprintf(err, "out of memory");
			errno = ENOMEM;
			goto out;
		}
	rc = 0;
out:
	if (rc < 0) {
		int e = errno;
		gt_ckpt_free(c);
		errno = e;
	}
	json_decref(j);
	return rc;
}

int gt_ckpt_read(const char *path, gt_ckpt_t *c, gp_error_t *err)
{
	size_t len = 0;
	memset(c, 0, sizeof(*c));
	void *buf = gm_slurp(path, &len, err);
	if (!buf)
		return -1;
	int rc = gt_ckpt_parse(buf, len, c, err);
	int e = errno;
	free(buf);
	errno = e;
	return rc;
}
