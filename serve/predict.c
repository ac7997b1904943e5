/* predict.c: decoding predict requests and encoding their answers (jansson). */
#include "serve/predict.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_predict_decode(const char *body, size_t len, uint32_t width, size_t max_rows, float **x,
		      size_t *rows, gp_error_t *err)
{
	*x = NULL;
	*rows = 0;
	json_error_t je;
	json_t *d = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!d) {
		errno = EINVAL;
		return gp_errprintf(err, "malformed JSON: %s (line %d)", je.text, je.line);
	}
	int rc = -1;
	json_t *in = json_is_object(d) ? json_object_get(d, "inputs") : NULL;
	size_t n = json_array_size(in);
	if (!json_is_array(in) || n == 0) {
		gp_errprintf(err, "'inputs' must be a non-empty array of rows");
		goto out;
	}
	if (n > max_rows) {
		gp_errprintf(err, "too many rows (%zu, at most %zu)", n, max_rows);
		goto out;
	}
	float *v = malloc(n * width * sizeof(float));
	if (!v) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < n; r++) {
		json_t *row = json_array_get(in, r);
		if (!json_is_array(row) || json_array_size(row) != width) {
			gp_errprintf(err, "row %zu must be an array of %u numbers", r, width);
			free(v);
			goto out;
		}
		for (uint32_t c = 0; c < width; c++) {
			json_t *e = json_array_get(row, c);
			double f = json_number_value(e);
			if (!json_is_number(e) || !isfinite(f) || fabs(f) > 3.4e38) {
				gp_errprintf(err, "row %zu, column %u is not a finite number", r,
					     c);
				free(v);
				goto out;
			}
			v[r * width + c] = (float)f;
		}
	}
	*x = v;
	*rows = n;
	rc = 0;
out:
	json_decref(d);
	if (rc < 0)
		errno = EINVAL;
	return rc;
}

char *gs_predict_encode(const float *probs, size_t rows, uint32_t k, size_t *len)
{
	/* written by hand: jansson's tree costs more than the model for small batches */
	size_t cap = rows * (k * 16 + 16) + 64;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	size_t n = (size_t)snprintf(s, cap, "{\"probabilities\":[");
	for (size_t r = 0; r < rows; r++) {
		s[n++] = r ? ',' : '[';
		if (r)
			s[n++] = '[';
		for (uint32_t c = 0; c < k; c++)
			n += (size_t)snprintf(s + n, cap - n, "%s%.6g", c ? "," : "",
					      (double)probs[r * k + c]);
		s[n++] = ']';
	}
	n += (size_t)snprintf(s + n, cap - n, "],\"classes\":[");
	for (size_t r = 0; r < rows; r++) {
		uint32_t best = 0;
		for (uint32_t c = 1; c < k; c++)
			if (probs[r * k + c] > probs[r * k + best])
				best = c;
		n += (size_t)snprintf(s + n, cap - n, "%s%u", r ? "," : "", best);
	}
	n += (size_t)snprintf(s + n, cap - n, "]}\n");
	*len = n;
	return s;
}
