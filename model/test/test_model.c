/* test_model: the model in memory (model/model.c) and the forward pass's mixed precision
 * (model/forward.c) on the kernels' cpu backend: parameter counts, refused shapes, the layout
 * of the parameters, the shape's text; an f16 forward pass equals an f32 one on weights and
 * inputs the type holds exactly. Plain asserts (libc and the kernels only). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/forward.h"
#include "model/model.h"
#include "model/test/check.h"

static void counts(void)
{
	CHECK(gm_nparams((int[]){3, 4, 2}, 3) == 3 * 4 + 4 + 4 * 2 + 2);
	CHECK(gm_nparams((int[]){784, 128, 10}, 3) == 784 * 128 + 128 + 128 * 10 + 10);
	CHECK(gm_nparams((int[]){3}, 1) == 0);
	CHECK(gm_nparams((int[]){3, 0, 2}, 3) == 0);
	CHECK(gm_nparams((int[]){3, GM_MAX_WIDTH + 1}, 2) == 0);
	/* 2^20 x 2^20 weights: more than GM_MAX_PARAMS */
	CHECK(gm_nparams((int[]){GM_MAX_WIDTH, GM_MAX_WIDTH}, 2) == 0);
	int many[GM_MAX_SIZES + 1];
	for (int i = 0; i <= GM_MAX_SIZES; i++)
		many[i] = 2;
	CHECK(gm_nparams(many, GM_MAX_SIZES) > 0);
	CHECK(gm_nparams(many, GM_MAX_SIZES + 1) == 0);
}

static void create(void)
{
	gp_error_t err = {{0}};
	errno = 0;
	CHECK(gm_model_create((int[]){5}, 1, 1.0f, &err) == NULL && errno == EINVAL);
	CHECK(strstr(err.text, "layer sizes") != NULL);
	gm_model_t *m = gm_model_create((int[]){3, 4, 2}, 3, 0.25f, &err);
	CHECK(m);
	CHECK(gm_model_nsizes(m) == 3 && gm_model_inputs(m) == 3 && gm_model_outputs(m) == 2);
	CHECK(gm_model_input_scale(m) == 0.25f);
	CHECK(strcmp(gm_model_shape(m), "3-4-2") == 0);
	CHECK(gm_model_nparams(m) == 26);
	CHECK(gm_model_layer_offset(m, 0) == 0 && gm_model_layer_offset(m, 1) == 16);
	CHECK(gm_model_layer_offset(m, 2) == 26);
	for (size_t i = 0; i < gm_model_nparams(m); i++)
		CHECK(gm_model_data(m)[i] == 0.0f);
	gm_model_destroy(&m);
	CHECK(m == NULL);
	gm_model_destroy(&m);
	gm_model_destroy(NULL);
}

/* y = W x + b through gm_forward, in f32 and with f16 rounding, on values f16 holds exactly
 * (small integers and halves): both give the hand-computed answer */
static void forward(void)
{
	gk_error_t ge;
	gp_error_t err = {{0}};
	gk_backend_t *b = gk_backend_open("cpu", &ge);
	CHECK(b);
	const int sizes[3] = {2, 2, 2};
	/* W0 = [[1, 2], [-3, 0.5]], b0 = [0.5, 1]; W1 = [[1, 1], [2, -1]], b1 = [0, -2] */
	const float params[12] = {1, 2, -3, 0.5f, 0.5f, 1, 1, 1, 2, -1, 0, -2};
	const float x[4] = {1, 1, 2, -1}; /* two rows */
	/* row 0: h = relu([3.5, -1.5]) = [3.5, 0]; y = [3.5, 5]
	 * row 1: h = relu([0.5, -5.5]) = [0.5, 0]; y = [0.5, -1] */
	const float want[4] = {3.5f, 5, 0.5f, -1};
	float *act[3], *dparams, got[4];
	uint16_t *scratch;
	for (int l = 0; l < 3; l++)
		CHECK(gk_dev_alloc(b, 4 * sizeof(float), (void **)&act[l]) == 0);
	CHECK(gk_dev_alloc(b, 8 * sizeof(uint16_t), (void **)&scratch) == 0);
	CHECK(gk_dev_alloc(b, sizeof(params), (void **)&dparams) == 0);
	CHECK(gk_copy(b, dparams, params, sizeof(params), GK_H2D) == 0);
	gm_round_t f16 = {GK_F16, scratch};
	const gm_round_t *rounds[2] = {NULL, &f16};
	for (int t = 0; t < 2; t++) {
		CHECK(gk_copy(b, act[0], x, sizeof(x), GK_H2D) == 0);
		CHECK(gm_forward(b, NULL, sizes, 3, dparams, act, 2, rounds[t], &err) == 0);
		CHECK(gk_stream_sync(b, NULL) == 0);
		CHECK(gk_copy(b, got, act[2], sizeof(got), GK_D2H) == 0);
		for (int i = 0; i < 4; i++)
			CHECK(got[i] == want[i]);
	}
	/* rounding to f16 changes what f16 cannot hold: 1/3 becomes 0.333251953125 */
	float third = 1.0f / 3.0f, back;
	CHECK(gk_copy(b, act[0], &third, sizeof(third), GK_H2D) == 0);
	CHECK(gm_round(b, &f16, act[0], 1, NULL, &err) == 0);
	CHECK(gk_stream_sync(b, NULL) == 0);
	CHECK(gk_copy(b, &back, act[0], sizeof(back), GK_D2H) == 0);
	CHECK(back != third && fabsf(back - third) < 1e-3f);
	CHECK(gm_forward(b, NULL, sizes, 3, dparams, act, 0, NULL, &err) == 0);
	for (int l = 0; l < 3; l++)
		gk_dev_free(b, act[l]);
	gk_dev_free(b, scratch);
	gk_dev_free(b, dparams);
	gk_backend_close(&b);
}

int main(void)
{
	counts();
	create();
	forward();
	printf("ok: model in memory, forward pass in f32 and f16\n");
	return 0;
}
