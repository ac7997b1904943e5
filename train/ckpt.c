/* ckpt.c - model files and checkpoints (ckpt.h) */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "train/ckpt.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gtrain writes its files as the host's floats: little-endian hosts only"
#endif

#define MODEL_MAGIC "GPMODEL1\n"
#define CKPT_MAGIC  "GPCKPT1\n"
#define MAX_JSON    65536

/* ---- writing ---- */

typedef struct {
	FILE *f;
	char tmp[4200];
	const char *path;
} out_t;

static int out_open(out_t *o, const char *path, gp_error_t *err)
{
	int fd;
	o->path = path;
	snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%d", path, (int)getpid());
	if ((fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    !(o->f = fdopen(fd, "wb"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		errno = e;
		return gp_errprintf(err, "cannot write '%s': %s", o->tmp, strerror(e));
	}
	return 0;
}

static int out_close(out_t *o, int ok, gp_error_t *err)
{
	int e = 0;
	if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
		ok = 0, e = errno;
	if (fclose(o->f) != 0 && ok)
		ok = 0, e = errno;
	if (ok && rename(o->tmp, o->path) != 0)
		ok = 0, e = errno;
	if (!ok) {
		unlink(o->tmp);
		errno = e ? e : EIO;
		return gp_errprintf(err, "cannot write '%s': %s", o->path, strerror(errno));
	}
	return 0;
}

static json_t *sizes_json(const int *sizes, int n)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer(sizes[i]));
	return a;
}

/* one line of JSON with the keys in the order given (the model format's line is fixed) */
static int put_json_line(FILE *f, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	int ok = s && fputs(s, f) >= 0 && fputc('\n', f) != EOF;
	free(s);
	return ok;
}

int gt_model_write(const char *path, const gt_model_t *m, gp_error_t *err)
{
	out_t o;
	size_t n = gt_model_nparams(m->sizes, m->nsizes);
	if (!n || n != m->nparams) {
		errno = EINVAL;
		return gp_errprintf(err, "model: %zu parameters do not fit its layer sizes",
				    m->nparams);
	}
	if (out_open(&o, path, err) < 0)
		return -1;
	json_t *j = json_object();
	json_object_set_new(j, "kind", json_string("mlp"));
	json_object_set_new(j, "layers", sizes_json(m->sizes, m->nsizes));
	json_object_set_new(j, "activation", json_string("relu"));
	json_object_set_new(j, "dtype", json_string("f32"));
	json_object_set_new(j, "input_scale", json_real(m->input_scale));
	int ok = fputs(MODEL_MAGIC, o.f) >= 0 && put_json_line(o.f, j) &&
		 fwrite(m->params, sizeof(float), n, o.f) == n;
	json_decref(j);
	return out_close(&o, ok, err);
}

int gt_ckpt_write(const char *path, const gt_ckpt_t *c, gp_error_t *err)
{
	out_t o;
	size_t n = c->model.nparams;
	if (!n || n != gt_model_nparams(c->model.sizes, c->model.nsizes) || c->nstate < 0 ||
	    c->nstate > 2) {
		errno = EINVAL;
		return gp_errprintf(err, "checkpoint: inconsistent state");
	}
	uLong crc = crc32(0L, Z_NULL, 0);
	crc = crc32(crc, (const Bytef *)c->model.params, (uInt)(n * sizeof(float)));
	for (int i = 0; i < c->nstate; i++)
		crc = crc32(crc, (const Bytef *)c->state[i], (uInt)(n * sizeof(float)));
	if (out_open(&o, path, err) < 0)
		return -1;
	json_t *j = json_object();
	json_object_set_new(j, "kind", json_string("mlp"));
	json_object_set_new(j, "layers", sizes_json(c->model.sizes, c->model.nsizes));
	json_object_set_new(j, "input_scale", json_real(c->model.input_scale));
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
	int ok = fputs(CKPT_MAGIC, o.f) >= 0 && put_json_line(o.f, j) &&
		 fwrite(c->model.params, sizeof(float), n, o.f) == n;
	for (int i = 0; ok && i < c->nstate; i++)
		ok = fwrite(c->state[i], sizeof(float), n, o.f) == n;
	ok = ok && fwrite(tail, 1, 4, o.f) == 4;
	json_decref(j);
	return out_close(&o, ok, err);
}

/* ---- parsing ---- */

static int bad(gp_error_t *err, const char *what)
{
	errno = EINVAL;
	return gp_errprintf(err, "%s", what);
}

/* magic, then the JSON line: *body points after its newline */
static json_t *header(const void *buf, size_t len, const char *magic, const char *what,
		      const unsigned char **body, gp_error_t *err)
{
	const unsigned char *p = buf;
	size_t ml = strlen(magic);
	if (len < ml || memcmp(p, magic, ml) != 0) {
		gp_errprintf(err, "not a gtrain %s (bad magic)", what);
		errno = EINVAL;
		return NULL;
	}
	size_t lim = len - ml < MAX_JSON ? len - ml : MAX_JSON;
	const unsigned char *nl = memchr(p + ml, '\n', lim);
	if (!nl) {
		gp_errprintf(err, "%s: no header line", what);
		errno = EINVAL;
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb((const char *)p + ml, (size_t)(nl - p - ml), 0, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		gp_errprintf(err, "%s: header is not a JSON object", what);
		errno = EINVAL;
		return NULL;
	}
	*body = nl + 1;
	return j;
}

static int get_sizes(json_t *j, int *sizes, int *nsizes, gp_error_t *err)
{
	json_t *a = json_object_get(j, "layers");
	size_t i;
	json_t *v;
	if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > GT_CKPT_MAX_SIZES)
		return bad(err, "header: 'layers' must be an array of 2 to 17 sizes");
	json_array_foreach(a, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1 << 20)
			return bad(err, "header: a layer size is not an integer 1..1048576");
		sizes[i] = (int)json_integer_value(v);
	}
	*nsizes = (int)json_array_size(a);
	return 0;
}

static int get_scale(json_t *j, float *scale, gp_error_t *err)
{
	json_t *v = json_object_get(j, "input_scale");
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return bad(err, "header: 'input_scale' must be a finite number");
	*scale = (float)json_number_value(v);
	return 0;
}

static float *copy_floats(const unsigned char *p, size_t n)
{
	float *f = malloc(n * sizeof(float));
	if (f)
		memcpy(f, p, n * sizeof(float));
	return f;
}

int gt_model_parse(const void *buf, size_t len, gt_model_t *m, gp_error_t *err)
{
	const unsigned char *body;
	memset(m, 0, sizeof(*m));
	json_t *j = header(buf, len, MODEL_MAGIC, "model file", &body, err);
	if (!j)
		return -1;
	const char *kind = json_string_value(json_object_get(j, "kind"));
	const char *act = json_string_value(json_object_get(j, "activation"));
	const char *dt = json_string_value(json_object_get(j, "dtype"));
	int rc = -1;
	if (!kind || strcmp(kind, "mlp"))
		bad(err, "model file: 'kind' is not \"mlp\"");
	else if (!act || strcmp(act, "relu"))
		bad(err, "model file: 'activation' is not \"relu\"");
	else if (!dt || strcmp(dt, "f32"))
		bad(err, "model file: 'dtype' is not \"f32\"");
	else if (get_sizes(j, m->sizes, &m->nsizes, err) == 0 &&
		 get_scale(j, &m->input_scale, err) == 0) {
		size_t n = gt_model_nparams(m->sizes, m->nsizes);
		size_t have = len - (size_t)(body - (const unsigned char *)buf);
		if (n > (1ull << 31) || have != n * sizeof(float))
			gp_errprintf(err, "model file: %zu bytes of weights, expected %zu", have,
				     n * sizeof(float)),
			    errno = EINVAL;
		else if (!(m->params = copy_floats(body, n)))
			gp_errprintf(err, "out of memory"), errno = ENOMEM;
		else
			m->nparams = n, rc = 0;
	}
	json_decref(j);
	return rc;
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

int gt_ckpt_parse(const void *buf, size_t len, gt_ckpt_t *c, gp_error_t *err)
{
	const unsigned char *body;
	long long v[8];
	memset(c, 0, sizeof(*c));
	json_t *j = header(buf, len, CKPT_MAGIC, "checkpoint", &body, err);
	if (!j)
		return -1;
	json_t *ls = json_object_get(j, "loss_scale");
	int rc = -1;
	if (get_sizes(j, c->model.sizes, &c->model.nsizes, err) < 0 ||
	    get_scale(j, &c->model.input_scale, err) < 0 ||
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
		bad(err, "checkpoint: 'loss_scale' must be a positive number");
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
	size_t n = gt_model_nparams(c->model.sizes, c->model.nsizes);
	size_t have = len - (size_t)(body - (const unsigned char *)buf);
	size_t want = n * sizeof(float) * (size_t)(1 + c->nstate) + 4;
	if (n > (1ull << 30) || have != want) {
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
		bad(err, "checkpoint: checksum mismatch (a damaged file)");
		goto out;
	}
	c->model.nparams = n;
	if (!(c->model.params = copy_floats(body, n)))
		goto nomem;
	for (int i = 0; i < c->nstate; i++)
		if (!(c->state[i] = copy_floats(body + (size_t)(i + 1) * n * sizeof(float), n)))
			goto nomem;
	rc = 0;
	goto out;
nomem:
	gp_errprintf(err, "out of memory");
	errno = ENOMEM;
out:
	if (rc < 0)
		gt_ckpt_free(c);
	json_decref(j);
	return rc;
}

/* the whole file, at most 4 GiB */
static void *slurp(const char *path, size_t *len, gp_error_t *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;
	if (!f || fstat(fileno(f), &st) < 0) {
		int e = errno;
		if (f)
			fclose(f);
		errno = e;
		gp_errprintf(err, "cannot read '%s': %s", path, strerror(e));
		return NULL;
	}
	if (st.st_size > (off_t)4 << 30 || !(buf = malloc((size_t)st.st_size + 1))) {
		fclose(f);
		errno = ENOMEM;
		gp_errprintf(err, "'%s': too large", path);
		return NULL;
	}
	*len = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	return buf;
}

int gt_model_read(const char *path, gt_model_t *m, gp_error_t *err)
{
	size_t len = 0;
	void *buf = slurp(path, &len, err);
	if (!buf)
		return -1;
	int rc = gt_model_parse(buf, len, m, err);
	free(buf);
	return rc;
}

int gt_ckpt_read(const char *path, gt_ckpt_t *c, gp_error_t *err)
{
	size_t len = 0;
	void *buf = slurp(path, &len, err);
	if (!buf)
		return -1;
	int rc = gt_ckpt_parse(buf, len, c, err);
	free(buf);
	return rc;
}
