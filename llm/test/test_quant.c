/* test_quant: rows into GGUF's weight types and back (llm/quant.c). Properties: f32 is exact,
 * f16 and bf16 give back every finite value of their own type bit for bit; q8_0 and q4_0 give
 * ggml's reference blocks on rows worked out by hand; every type's relative RMS error on normal
 * random rows (three scales) stays under the bound llm/quant.h states; the q-types' blocks are
 * valid (finite f16 scales, q6_K's scales and values in range); an all-zero row comes back
 * zero; a length not a multiple of the block or an unknown type is refused (EINVAL). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_qblock.h"
#include "kernels/gk_scalar.h"
#include "llm/quant.h"
#include "llm/test/gguf_check.h"

#define N (64 * 1024)

static const gk_qtype_t all_types[] = {GK_Q_F32,  GK_Q_F16,  GK_Q_BF16, GK_Q_Q8_0,
				       GK_Q_Q4_0, GK_Q_Q4_K, GK_Q_Q6_K};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
	rng = gk_splitmix64(rng);
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static float normal(void)
{
	return (float)(sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()));
}

static double rel_rms(gk_qtype_t t, const float *x, size_t n)
{
	void *q = malloc(gk_qtype_row_bytes(t, n));
	float *y = malloc(n * sizeof *y);
	CHECK(q && y);
	CHECK(gl_quantize_row(t, x, q, n) == 0);
	CHECK(gl_dequantize_row(t, q, y, n) == 0);
	double e = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(isfinite(y[i]));
		e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		s += (double)x[i] * x[i];
	}
	free(q);
	free(y);
	return sqrt(e / s);
}

static void error_bounds(void)
{
	float *x = malloc(N * sizeof *x);
	static const float scales[] = {1.0f, 0.02f, 300.0f};
	for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
		for (size_t i = 0; i < N; i++)
			x[i] = normal() * scales[k];
		for (size_t i = 0; i < NTYPES; i++) {
			double r = rel_rms(all_types[i], x, N),
			       bound = gl_quant_rms_bound(all_types[i]);
			printf("%-5s scale %-6g rel. rms %.5f (bound %.4f)\n",
			       gk_qtype_name(all_types[i]), (double)scales[k], r, bound);
			CHECK(r <= bound);
			if (all_types[i] == GK_Q_F32)
				CHECK(r == 0);
		}
	}
	free(x);
	CHECK(gl_quant_rms_bound((gk_qtype_t)3) < 0);
}

static void exact_plain(void)
{
	/* every finite f16 and bf16 pattern comes back as itself */
	float *x = malloc(65536 * sizeof *x);
	uint16_t *h = malloc(65536 * sizeof *h);
	size_t n = 0;
	for (uint32_t u = 0; u < 65536; u++)
		if (!gk_f16_bits_nonfinite((uint16_t)u))
			x[n++] = gk_sw_f16_to_f32((uint16_t)u);
	n -= n % 2;
	CHECK(gl_quantize_row(GK_Q_F16, x, h, n) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(gk_sw_f16_to_f32(h[i]) == x[i] &&
		      (x[i] != 0 || h[i] == gk_sw_f32_to_f16(x[i])));
	n = 0;
	for (uint32_t u = 0; u < 65536; u++)
		if (!gk_bf16_bits_nonfinite((uint16_t)u))
			x[n++] = gk_sw_bf16_to_f32((uint16_t)u);
	float *y = malloc(65536 * sizeof *y);
	CHECK(gl_quantize_row(GK_Q_BF16, x, h, n) == 0);
	CHECK(gl_dequantize_row(GK_Q_BF16, h, y, n) == 0);
	CHECK(memcmp(x, y, n * sizeof *x) == 0);
	CHECK(gl_quantize_row(GK_Q_F32, x, y, n) == 0 && memcmp(x, y, n * sizeof *x) == 0);
	free(x);
	free(y);
	free(h);
}

static void by_hand(void)
{
	float x[32];
	gk_block_q8_0_t b8;
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j - 16) * 0.5f; /* -8 .. 7.5: d = 8 / 127 */
	CHECK(gl_quantize_row(GK_Q_Q8_0, x, &b8, 32) == 0);
	CHECK(b8.d == gk_sw_f32_to_f16(8.0f / 127));
	CHECK(b8.qs[0] == -127 && b8.qs[16] == 0 && b8.qs[17] == 8 /* 0.5 * 127 / 8 = 7.94 */);
	gk_block_q4_0_t b4;
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j % 16) - 8.0f; /* largest magnitude -8: d = 1 */
	x[5] = 7.9f;			       /* 7.9 + 8.5 = 16.4: capped at 15 */
	CHECK(gl_quantize_row(GK_Q_Q4_0, x, &b4, 32) == 0);
	CHECK(b4.d == gk_sw_f32_to_f16(1.0f));
	/* d = -8 / -8 = 1: q = trunc(x + 8.5), value j low nibble, j + 16 high */
	CHECK(b4.qs[0] == (0 | (0 << 4)) && b4.qs[3] == (3 | (3 << 4)) && (b4.qs[5] & 0xF) == 15);
	for (int j = 0; j < 32; j++)
		if (j != 5)
			CHECK(gk_q4_0_value(&b4, j) == x[j]);
	/* the sign: a largest positive value makes d negative */
	for (int j = 0; j < 32; j++)
		x[j] = j == 0 ? 8.0f : 1.0f;
	CHECK(gl_quantize_row(GK_Q_Q4_0, x, &b4, 32) == 0);
	CHECK(gk_sw_f16_to_f32(b4.d) == -1.0f && gk_q4_0_value(&b4, 0) == 8.0f);
}

static void valid_blocks(void)
{
	float x[1024];
	for (int i = 0; i < 1024; i++)
		x[i] = normal() * (i < 512 ? 0.01f : 5.0f);
	x[7] = 40; /* an outlier */
	gk_block_q4_K_t k4[4];
	gk_block_q6_K_t k6[4];
	CHECK(gl_quantize_row(GK_Q_Q4_K, x, k4, 1024) == 0);
	CHECK(gl_quantize_row(GK_Q_Q6_K, x, k6, 1024) == 0);
	for (int b = 0; b < 4; b++) {
		CHECK(!gk_f16_bits_nonfinite(k4[b].d) && !gk_f16_bits_nonfinite(k4[b].dmin));
		CHECK(!gk_f16_bits_nonfinite(k6[b].d));
		for (int i = 0; i < 256; i++)
			CHECK(isfinite(gk_q4_K_value(&k4[b], i)) &&
			      isfinite(gk_q6_K_value(&k6[b], i)));
	}
	/* the outlier survives within its sub-block's step */
	CHECK(fabsf(gk_q6_K_value(&k6[0], 7) - 40) < 40 * 0.05f);
	CHECK(fabsf(gk_q4_K_value(&k4[0], 7) - 40) < 40 * 0.1f);
	/* zeros */
	float z[256] = {0}, y[256];
	for (size_t i = 0; i < NTYPES; i++) {
		uint8_t q[1024];
		CHECK(gl_quantize_row(all_types[i], z, q, 256) == 0);
		CHECK(gl_dequantize_row(all_types[i], q, y, 256) == 0);
		for (int j = 0; j < 256; j++)
			CHECK(y[j] == 0);
	}
}

static void refused(void)
{
	float x[64] = {0};
	uint8_t q[512];
	CHECK(gl_quantize_row(GK_Q_Q4_0, x, q, 48) < 0 && errno == EINVAL);
	CHECK(gl_dequantize_row(GK_Q_Q6_K, q, x, 64) < 0 && errno == EINVAL);
	CHECK(gl_quantize_row((gk_qtype_t)3, x, q, 32) < 0 && errno == EINVAL);
	CHECK(gl_dequantize_row((gk_qtype_t)99, q, x, 32) < 0 && errno == EINVAL);
}

int main(void)
{
	error_bounds();
	exact_plain();
	by_hand();
	valid_blocks();
	refused();
	printf("test_quant: ok\n");
	return 0;
}
