/* fuzz_predict: the JSON decoder of gserve's POST /v1/predict (serve/predict.c), for a model
 * of 4 inputs, and the answer's encoder. Properties: a decoded request has 1..max rows of
 * finite floats; a failure leaves nothing allocated and says why; the encoded answer of the
 * decoded rows (used as probabilities) parses back as JSON with one class per row. */
#include <jansson.h>
#include <math.h>

#include "tests/fuzz/fuzz.h"
#include "serve/predict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	float *x = (float *)1;
	size_t rows = 99;
	if (gs_predict_decode((const char *)data, size, 4, 64, &x, &rows, &err) < 0) {
		FUZZ_CHECK(x == NULL && rows == 0 && err.text[0]);
		return 0;
	}
	FUZZ_CHECK(x && rows >= 1 && rows <= 64);
	for (size_t i = 0; i < rows * 4; i++)
		FUZZ_CHECK(isfinite(x[i]));
	size_t len = 0;
	char *js = gs_predict_encode(x, rows, 4, &len);
	FUZZ_CHECK(js && len == strlen(js));
	json_error_t je;
	json_t *d = json_loadb(js, len, 0, &je);
	FUZZ_CHECK(d && json_array_size(json_object_get(d, "classes")) == rows);
	FUZZ_CHECK(json_array_size(json_object_get(d, "probabilities")) == rows);
	json_decref(d);
	free(js);
	free(x);
	return 0;
}
