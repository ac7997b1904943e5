/* test_infer: the model's forward pass on the kernels backend as gserve runs it (model/infer.c
 * over model/forward.c) against a plain C forward pass of the same random MLP: probabilities
 * within 1e-5, each row summing to 1, batches of 1..max rows, a batch over max refused, the
 * model freed once it is on the backend. GS_TEST_BACKEND picks the backend (default cpu: every
 * machine; cuda on the GPU machine, where it is built with only the CUDA toolkit). Plain
 * asserts, no cmocka: it builds there too. Then the same model stored as bf16 and as f16
 * (gm_model_set_dtype): served in that type on a card (tensor cores), in f32 on the cpu,
 * against the reference on the rounded weights: probabilities within 2e-2 (bf16: 8 bits of
 * mantissa in every activation) and 4e-3 (f16), and the cost of a batch of 1 and 64. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/infer.h"
#include "model/model.h"
#include "model/softmax.h"
#include "model/test/check.h"

static float frand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* the reference: y = a W^T + b, ReLU between layers, softmax at the end, in double */
static void reference(uint32_t nl, const uint32_t *width, float *const *w, float *const *b,
		      float scale, const float *x, size_t n, float *probs)
{
	uint32_t widest = 0;
	for (uint32_t l = 0; l <= nl; l++)
		widest = width[l] > widest ? width[l] : widest;
	double *a = malloc(widest * sizeof(double)), *y = malloc(widest * sizeof(double));
	CHECK(a && y);
	for (size_t r = 0; r < n; r++) {
		for (uint32_t i = 0; i < width[0]; i++)
			a[i] = (double)x[r * width[0] + i] * scale;
		for (uint32_t l = 0; l < nl; l++) {
			for (uint32_t o = 0; o < width[l + 1]; o++) {
				double s = b[l][o];
				for (uint32_t i = 0; i < width[l]; i++)
					s += (double)w[l][(size_t)o * width[l] + i] * a[i];
				y[o] = l + 1 < nl && s < 0 ? 0 : s;
			}
			memcpy(a, y, width[l + 1] * sizeof(double));
		}
		for (uint32_t o = 0; o < width[nl]; o++)
			probs[r * width[nl] + o] = (float)a[o];
	}
	gm_softmax_rows(probs, n, width[nl]);
	free(a);
	free(y);
}

int main(void)
{
	const char *name = getenv("GS_TEST_BACKEND") ? getenv("GS_TEST_BACKEND") : "cpu";
	gk_error_t ge;
	gk_backend_t *bk = gk_backend_open(name, &ge);
	if (!bk) {
		printf("1..0 # SKIP no %s backend here: %s\n", name, ge.text);
		return 77;
	}
	const uint32_t nl = 3, width[4] = {64, 256, 256, 10};
	const int sizes[4] = {64, 256, 256, 10};
	const size_t max_rows = 64;
	unsigned seed = 7;
	gp_error_t err = {{0}};
	gm_model_t *m = gm_model_create(sizes, 4, 0.5f, &err);
	CHECK(m && gm_model_nparams(m) == gm_nparams(sizes, 4));
	float *w[3], *b[3];
	for (uint32_t l = 0; l < nl; l++) {
		size_t nw = (size_t)width[l + 1] * width[l];
		w[l] = malloc(nw * sizeof(float));
		b[l] = malloc(width[l + 1] * sizeof(float));
		CHECK(w[l] && b[l]);
		for (size_t i = 0; i < nw; i++)
			w[l][i] = frand(&seed) * 0.3f;
		for (uint32_t i = 0; i < width[l + 1]; i++)
			b[l][i] = frand(&seed) * 0.1f;
		float *p = gm_model_params(m) + gm_model_layer_offset(m, (int)l);
		memcpy(p, w[l], nw * sizeof(float));
		memcpy(p + nw, b[l], width[l + 1] * sizeof(float));
	}
	gm_infer_t *d = gm_infer_create(bk, m, max_rows, &err);
	if (!d)
		fprintf(stderr, "%s\n", err.text);
	CHECK(d);
	errno = 0;
	CHECK(!gm_infer_create(bk, m, 0, &err) && errno == EINVAL && err.text[0]);
	/* the backend holds its own copy: the model may go */
	gm_model_destroy(&m);
	CHECK(m == NULL);
	float *x = malloc(max_rows * width[0] * sizeof(float));
	float *got = malloc(max_rows * width[nl] * sizeof(float));
	float *want = malloc(max_rows * width[nl] * sizeof(float));
	CHECK(x && got && want);
	int checks = 0;
	static const size_t batches[] = {1, 2, 7, 32, 64};
	for (size_t t = 0; t < sizeof(batches) / sizeof(batches[0]); t++) {
		size_t n = batches[t];
		for (size_t i = 0; i < n * width[0]; i++)
			x[i] = frand(&seed) * 8;
		CHECK(gm_infer_run(d, x, n, got) == 0);
		reference(nl, width, w, b, 0.5f, x, n, want);
		for (size_t r = 0; r < n; r++) {
			double sum = 0;
			for (uint32_t o = 0; o < width[nl]; o++) {
				float g = got[r * width[nl] + o], e = want[r * width[nl] + o];
				if (fabsf(g - e) > 1e-5f)
					fprintf(stderr, "batch %zu row %zu class %u: %g, want %g\n",
						n, r, o, g, e);
				CHECK(fabsf(g - e) <= 1e-5f);
				sum += g;
				checks++;
			}
			CHECK(fabs(sum - 1.0) < 1e-4);
		}
	}
	errno = 0;
	CHECK(gm_infer_run(d, x, max_rows + 1, got) < 0 && errno == E2BIG);
	printf("ok: %s backend, %d probabilities within 1e-5 of the reference\n",
	       gk_backend_name(bk), checks);
	/* what a batch costs (not asserted: bench/serve/on-gpu.sh reports it) */
	static const size_t timed[] = {1, 32, 64};
	for (size_t t = 0; t < sizeof(timed) / sizeof(timed[0]); t++) {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 200; i++)
			CHECK(gm_infer_run(d, x, timed[t], got) == 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double us =
		    ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		    1e3 / 200;
		printf("# %s: a batch of %zu rows (64-256-256-10) %.1f us\n", gk_backend_name(bk),
		       timed[t], us);
	}
	gm_infer_destroy(&d);
	CHECK(d == NULL);
	static const gm_dtype_t types[] = {GM_BF16, GM_F16};
	for (int t = 0; t < 2; t++) {
		float bound = types[t] == GM_BF16 ? 2e-2f : 4e-3f, worst = 0;
		m = gm_model_create(sizes, 4, 0.5f, &err);
		CHECK(m);
		for (uint32_t l = 0; l < nl; l++) {
			size_t nw = (size_t)width[l + 1] * width[l];
			float *p = gm_model_params(m) + gm_model_layer_offset(m, (int)l);
			memcpy(p, w[l], nw * sizeof(float));
			memcpy(p + nw, b[l], width[l + 1] * sizeof(float));
		}
		CHECK(gm_model_set_dtype(m, types[t], &err) == 0);
		for (uint32_t l = 0; l < nl; l++) { /* the reference on the stored values */
			size_t nw = (size_t)width[l + 1] * width[l];
			const float *p = gm_model_data(m) + gm_model_layer_offset(m, (int)l);
			memcpy(w[l], p, nw * sizeof(float));
			memcpy(b[l], p + nw, width[l + 1] * sizeof(float));
		}
		d = gm_infer_create(bk, m, max_rows, &err);
		gm_model_destroy(&m);
		CHECK(d);
		for (size_t n = 1; n <= max_rows; n *= 4) {
			for (size_t i = 0; i < n * width[0]; i++)
				x[i] = frand(&seed) * 8;
			CHECK(gm_infer_run(d, x, n, got) == 0);
			reference(nl, width, w, b, 0.5f, x, n, want);
			for (size_t i = 0; i < n * width[nl]; i++) {
				float e = fabsf(got[i] - want[i]);
				worst = e > worst ? e : worst;
			}
		}
		printf("ok: %s backend, model stored %s: largest probability error %.2g (bound "
		       "%.0e)\n",
		       gk_backend_name(bk), gm_dtype_name(types[t]), (double)worst, (double)bound);
		CHECK(worst <= bound);
		static const size_t tb[] = {1, 64};
		for (size_t k = 0; k < 2; k++) {
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (int i = 0; i < 200; i++)
				CHECK(gm_infer_run(d, x, tb[k], got) == 0);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
				     (double)(t1.tv_nsec - t0.tv_nsec)) /
				    1e3 / 200;
			printf("# %s %s: a batch of %zu rows (64-256-256-10) %.1f us\n",
			       gk_backend_name(bk), gm_dtype_name(types[t]), tb[k], us);
		}
		gm_infer_destroy(&d);
	}
	gk_backend_close(&bk);
	for (uint32_t l = 0; l < nl; l++) {
		free(w[l]);
		free(b[l]);
	}
	free(x);
	free(got);
	free(want);
	return 0;
}
