/* model.c: loading the model file and the forward pass (OpenBLAS sgemm). */
#include "serve/model.h"

#include <cblas.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/softmax.h"

#define MAGIC	   "GPMODEL1\n"
#define MAX_HEADER 65536

struct gs_model {
	uint32_t nl; /* weight layers */
	uint32_t width[GS_MODEL_MAX_LAYERS + 1];
	float *w[GS_MODEL_MAX_LAYERS], *b[GS_MODEL_MAX_LAYERS];
	float *params;
	float input_scale;
	uint32_t widest;
	char shape[GS_MODEL_MAX_LAYERS * 7 + 8];
};

void gs_model_destroy(gs_model_t **p)
{
	if (!p || !*p)
		return;
	free((*p)->params);
	free(*p);
	*p = NULL;
}

static gs_model_t *bad(gs_model_t *m, gp_error_t *err, const char *fmt, const char *a)
{
	gs_model_destroy(&m);
	errno = EINVAL;
	gp_errprintf(err, fmt, a);
	return NULL;
}

static float le_float(const uint8_t *p)
{
	uint32_t u =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The header line's keys into m. 0 / -1 with err set. */
static int header(gs_model_t *m, const char *line, size_t len, gp_error_t *err)
{
	json_error_t je;
	json_t *h = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!h || !json_is_object(h)) {
		json_decref(h);
		return gp_errprintf(err, "model header is not a JSON object (%s)", je.text);
	}
	int rc = -1;
	const char *kind = json_string_value(json_object_get(h, "kind"));
	const char *act = json_string_value(json_object_get(h, "activation"));
	const char *dtype = json_string_value(json_object_get(h, "dtype"));
	json_t *layers = json_object_get(h, "layers");
	json_t *scale = json_object_get(h, "input_scale");
	if (!kind || strcmp(kind, "mlp") != 0) {
		gp_errprintf(err, "model kind '%s' is not supported (only 'mlp')",
			     kind ? kind : "");
		goto out;
	}
	if (act && strcmp(act, "relu") != 0) {
		gp_errprintf(err, "activation '%s' is not supported (only 'relu')", act);
		goto out;
	}
	if (!dtype || strcmp(dtype, "f32") != 0) {
		gp_errprintf(err, "dtype '%s' is not supported (only 'f32')", dtype ? dtype : "");
		goto out;
	}
	size_t n = json_array_size(layers);
	if (n < 2 || n > GS_MODEL_MAX_LAYERS + 1) {
		gp_errprintf(err, "model layers must list 2 to %d widths", GS_MODEL_MAX_LAYERS + 1);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(layers, i);
		json_int_t w = json_is_integer(v) ? json_integer_value(v) : 0;
		if (w < 1 || w > GS_MODEL_MAX_WIDTH) {
			gp_errprintf(err, "layer width %zu is not an integer in 1..%d", i,
				     GS_MODEL_MAX_WIDTH);
			goto out;
		}
		m->width[i] = (uint32_t)w;
	}
	m->nl = (uint32_t)n - 1;
	m->input_scale = 1.0f;
	if (scale) {
		if (!json_is_number(scale) || !isfinite(json_number_value(scale))) {
			gp_errprintf(err, "input_scale is not a finite number");
			goto out;
		}
		m->input_scale = (float)json_number_value(scale);
	}
	rc = 0;
out:
	json_decref(h);
	return rc;
}

gs_model_t *gs_model_parse(const uint8_t *buf, size_t len, gp_error_t *err)
{
	gs_model_t *m = calloc(1, sizeof(*m));
	if (!m) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	size_t ml = strlen(MAGIC);
	if (len < ml || memcmp(buf, MAGIC, ml) != 0)
		return bad(m, err, "not a gpool model file (no %s magic)", "GPMODEL1");
	const uint8_t *hl = buf + ml;
	size_t room = len - ml < MAX_HEADER ? len - ml : MAX_HEADER;
	const uint8_t *nl = memchr(hl, '\n', room);
	if (!nl)
		return bad(m, err, "model header line %s", "is missing or too long");
	if (header(m, (const char *)hl, (size_t)(nl - hl), err) < 0) {
		gs_model_destroy(&m);
		errno = EINVAL;
		return NULL;
	}
	uint64_t total = 0;
	for (uint32_t l = 0; l < m->nl; l++)
		total += (uint64_t)m->width[l + 1] * m->width[l] + m->width[l + 1];
	if (total > GS_MODEL_MAX_PARAMS)
		return bad(m, err, "model too large (%s)", "over 2^28 parameters");
	const uint8_t *p = nl + 1;
	size_t left = len - (size_t)(p - buf);
	if ((uint64_t)left != total * 4) {
		char what[96];
		snprintf(what, sizeof(what), "%zu bytes of parameters, the header needs %llu", left,
			 (unsigned long long)(total * 4));
		return bad(m, err, "model file has %s", what);
	}
	m->params = malloc(total ? total * sizeof(float) : 1);
	if (!m->params)
		return bad(m, err, "%s", "out of memory");
	for (uint64_t i = 0; i < total; i++) {
		m->params[i] = le_float(p + i * 4);
		if (!isfinite(m->params[i]))
			return bad(m, err, "model parameters %s", "are not all finite");
	}
	float *q = m->params;
	m->widest = m->width[0];
	size_t sl = 0;
	for (uint32_t l = 0; l <= m->nl; l++) {
		if (m->width[l] > m->widest)
			m->widest = m->width[l];
		sl += (size_t)snprintf(m->shape + sl, sizeof(m->shape) - sl, "%s%u", l ? "-" : "",
				       m->width[l]);
	}
	for (uint32_t l = 0; l < m->nl; l++) {
		m->w[l] = q;
		q += (size_t)m->width[l + 1] * m->width[l];
		m->b[l] = q;
		q += m->width[l + 1];
	}
	return m;
}

gs_model_t *gs_model_load(const char *path, gp_error_t *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		gp_errprintf(err, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			size_t nc = cap ? cap * 2 : 1 << 20;
			if (nc > (size_t)GS_MODEL_MAX_PARAMS * 4 + MAX_HEADER + 64) {
				free(buf);
				fclose(f);
				errno = EFBIG;
				gp_errprintf(err, "'%s' is too large for a model", path);
				return NULL;
			}
			uint8_t *nb = realloc(buf, nc);
			if (!nb) {
				free(buf);
				fclose(f);
				gp_errprintf(err, "out of memory");
				return NULL;
			}
			buf = nb;
			cap = nc;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	int rerr = ferror(f);
	fclose(f);
	if (rerr) {
		free(buf);
		errno = EIO;
		gp_errprintf(err, "cannot read '%s'", path);
		return NULL;
	}
	gs_model_t *m = gs_model_parse(buf, len, err);
	free(buf);
	return m;
}

uint32_t gs_model_inputs(const gs_model_t *m)
{
	return m->width[0];
}

uint32_t gs_model_outputs(const gs_model_t *m)
{
	return m->width[m->nl];
}

const char *gs_model_shape(const gs_model_t *m)
{
	return m->shape;
}

int gs_model_forward(const gs_model_t *m, const float *x, size_t n, float *probs)
{
	if (!n)
		return 0;
	float *a = malloc(n * m->widest * sizeof(float));
	float *b = malloc(n * m->widest * sizeof(float));
	if (!a || !b) {
		free(a);
		free(b);
		errno = ENOMEM;
		return -1;
	}
	size_t in0 = (size_t)n * m->width[0];
	for (size_t i = 0; i < in0; i++)
		a[i] = x[i] * m->input_scale;
	for (uint32_t l = 0; l < m->nl; l++) {
		int in = (int)m->width[l], out = (int)m->width[l + 1];
		float *y = l + 1 == m->nl ? probs : b;
		/* y[n][out] = a[n][in] . W[out][in]^T */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, out, in, 1.0f, a, in,
			    m->w[l], in, 0.0f, y, out);
		for (size_t r = 0; r < n; r++) {
			float *row = y + r * (size_t)out;
			for (int k = 0; k < out; k++) {
				row[k] += m->b[l][k];
				if (l + 1 < m->nl && row[k] < 0)
					row[k] = 0;
			}
		}
		if (l + 1 < m->nl) {
			float *t = a;
			a = b;
			b = t;
		}
	}
	gs_softmax_rows(probs, n, gs_model_outputs(m));
	free(a);
	free(b);
	return 0;
}

uint32_t gs_model_layers(const gs_model_t *m)
{
	return m->nl;
}

uint32_t gs_model_width(const gs_model_t *m, uint32_t i)
{
	return i <= m->nl ? m->width[i] : 0;
}

void gs_model_params(const gs_model_t *m, uint32_t l, const float **w, const float **b)
{
	*w = l < m->nl ? m->w[l] : NULL;
	*b = l < m->nl ? m->b[l] : NULL;
}

float gs_model_input_scale(const gs_model_t *m)
{
	return m->input_scale;
}
