/* predict.h: the JSON of POST /v1/predict.
 * Request:  {"inputs": [[f, f, ...], ...]}  (each row exactly the model's input width)
 * Answer:   {"probabilities": [[p, ...], ...], "classes": [argmax, ...]}
 */
#ifndef GPOOL_SERVE_PREDICT_H
#define GPOOL_SERVE_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Decode a request body into *x (rows x width floats, malloc'd) and *rows. At most max_rows
 * rows. 0 / -1 with err set (the text goes back to the client with 400). */
int gs_predict_decode(const char *body, size_t len, uint32_t width, size_t max_rows, float **x,
		      size_t *rows, gp_error_t *err);
/* Encode the answer for rows x k probabilities; a malloc'd string (NULL: out of memory). */
char *gs_predict_encode(const float *probs, size_t rows, uint32_t k, size_t *len);

#endif
