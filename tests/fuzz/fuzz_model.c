/* fuzz_model: the model file (model/file.c), the one decoder of it that gtrain and gserve share,
 * on any bytes. Properties: a failure sets errno and says why; a model that loads has exactly
 * the parameters its layer sizes call for, all finite; it writes back to a file that reads
 * back equal (parse, write, parse again); and gserve's forward pass (model/infer.c on the
 * kernels' cpu backend) answers two rows with probabilities in [0, 1] that sum to 1 per row. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <unistd.h>

#include "model/file.h"
#include "model/infer.h"
#include "tests/fuzz/fuzz.h"

static void round_trip(const gm_model_t *m)
{
	gp_error_t err = {{0}};
	char path[64];
	snprintf(path, sizeof(path), "/tmp/fuzz_model.%d.gpm", (int)getpid());
	FUZZ_CHECK(gm_model_write(path, m, &err) == 0);
	gm_model_t *back = gm_model_read(path, &err);
	unlink(path);
	FUZZ_CHECK(back != NULL);
	FUZZ_CHECK(strcmp(gm_model_shape(back), gm_model_shape(m)) == 0);
	FUZZ_CHECK(gm_model_input_scale(back) == gm_model_input_scale(m));
	FUZZ_CHECK(gm_model_nparams(back) == gm_model_nparams(m));
	FUZZ_CHECK(memcmp((const void *)gm_model_data(back), (const void *)gm_model_data(m),
			  gm_model_nparams(m) * sizeof(float)) == 0);
	gm_model_destroy(&back);
}

static void answer(const gm_model_t *m)
{
	static gk_backend_t *bk;
	gk_error_t ge;
	gp_error_t err = {{0}};
	size_t in = (size_t)gm_model_inputs(m), k = (size_t)gm_model_outputs(m);
	if (!bk && !(bk = gk_backend_open("cpu", &ge)))
		abort();
	gm_infer_t *d = gm_infer_create(bk, m, 2, &err);
	FUZZ_CHECK(d != NULL);
	float *x = calloc(in * 2, sizeof(float)), *p = calloc(k * 2, sizeof(float));
	FUZZ_CHECK(x && p);
	for (size_t i = 0; i < in * 2; i++)
		x[i] = (float)(i % 7) - 3.0f;
	FUZZ_CHECK(gm_infer_run(d, x, 2, p) == 0);
	for (size_t r = 0; r < 2; r++) {
		double sum = 0;
		bool finite = true;
		for (size_t c = 0; c < k; c++) {
			float v = p[r * k + c];
			finite &= isfinite(v) != 0;
			sum += v;
		}
		/* huge finite weights may overflow to inf before softmax: then the row is NaN,
		 * which is the model's fault, not the loader's */
		if (finite)
			FUZZ_CHECK(fabs(sum - 1.0) < 1e-3);
	}
	free(x);
	free(p);
	gm_infer_destroy(&d);
	FUZZ_CHECK(d == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	errno = 0;
	gm_model_t *m = gm_model_parse(data, size, &err);
	if (!m) {
		FUZZ_CHECK(errno != 0 && err.text[0] != '\0');
		return 0;
	}
	int n = gm_model_nsizes(m);
	FUZZ_CHECK(n >= 2 && n <= GM_MAX_SIZES);
	FUZZ_CHECK(gm_model_nparams(m) == gm_nparams(gm_model_sizes(m), n));
	for (size_t i = 0; i < gm_model_nparams(m); i++)
		FUZZ_CHECK(isfinite(gm_model_data(m)[i]));
	round_trip(m);
	/* the widest layer times two rows, kept small: the pass itself is not what is fuzzed */
	size_t widest = 0;
	for (int i = 0; i < n; i++)
		widest =
		    (size_t)gm_model_sizes(m)[i] > widest ? (size_t)gm_model_sizes(m)[i] : widest;
	if (widest < (1u << 18))
		answer(m);
	gm_model_destroy(&m);
	FUZZ_CHECK(m == NULL);
	return 0;
}
