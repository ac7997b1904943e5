/* gk_qdot_check.cc - runs the cards' decode-product inner step (gpu/gk_qdot.h) on the cpu and
 * checks it against gk_qblock.h's value functions: the index arithmetic of each block format
 * (which byte and nibble a value comes from, its scale) is then tested on a machine with no
 * card. Random blocks of R = 2 rows against N = 3 tokens; each dot is compared with a double
 * sum of value(row, c) * x[c] (the same floats, another order of sums: 1e-5 of the scale).
 * Exit 0 pass, 1 fail. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_qblock.h"

/* what gk_port.h gives the header on a card */
#define __device__
struct float2 {
	float x, y;
};
static inline float gk_d_f16_to_f32(uint16_t h)
{
	return gk_sw_f16_to_f32(h);
}
#define gkFma(a, b, c) fmaf((a), (b), (c))

#include "kernels/gpu/gk_qdot.h"

static uint64_t seed = 42;
static uint32_t rnd(void)
{
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(seed >> 33);
}

static float value(gk_qtype_t t, const uint8_t *blk, int i)
{
	switch (t) {
	case GK_Q_Q4_0:
		return gk_q4_0_value((const gk_block_q4_0_t *)blk, i);
	case GK_Q_Q8_0:
		return gk_q8_0_value((const gk_block_q8_0_t *)blk, i);
	case GK_Q_Q4_K:
		return gk_q4_K_value((const gk_block_q4_K_t *)blk, i);
	default:
		return gk_q6_K_value((const gk_block_q6_K_t *)blk, i);
	}
}

/* one format: COLS values a row (a few blocks), blocks at BB-byte strides in a 2-aligned
 * buffer as the staging puts them, d fields made finite */
template <gk_qtype_t WT> static int check(int qb, int bb, int dpos)
{
	enum { N = 4, R = 2 };
	const int cols = 2 * qb, n = 3;
	uint16_t store[R][2 * 256]; /* 2 blocks of at most 210 bytes, 2-aligned */
	float x[N * 512], acc[R][N] = {{0}};
	for (int r = 0; r < R; r++) {
		uint8_t *p = (uint8_t *)store[r];
		for (int k = 0; k < 2 * bb; k++)
			p[k] = (uint8_t)rnd();
		for (int b = 0; b < 2; b++) {
			uint16_t d = gk_f32_to_f16(((int)(rnd() % 2001) - 1000) * 1e-4f);
			memcpy(p + b * bb + dpos, &d, 2);
			if (WT == GK_Q_Q4_K) { /* dmin too */
				d = gk_f32_to_f16((rnd() % 1000) * 1e-5f);
				memcpy(p + b * bb + 2, &d, 2);
			}
		}
	}
	for (int i = 0; i < n * cols; i++)
		x[i] = ((int)(rnd() % 2001) - 1000) * 1e-3f;
	for (int b = 0; b < 2; b++) {
		const uint16_t *blk[R];
		for (int r = 0; r < R; r++)
			blk[r] = (const uint16_t *)((const uint8_t *)store[r] + b * bb);
		qdot<WT, N, R>::run(blk, x + b * qb, cols, n, acc);
	}
	int bad = 0;
	for (int r = 0; r < R; r++)
		for (int i = 0; i < n; i++) {
			double want = 0, scale = 0;
			for (int c = 0; c < cols; c++) {
				double v = value(WT, (const uint8_t *)store[r] + (c / qb) * bb, c % qb);
				want += v * x[i * cols + c];
				scale += fabs(v * x[i * cols + c]);
			}
			if (!(fabs(acc[r][i] - want) <= 1e-5 * scale + 1e-30)) {
				fprintf(stderr, "FAIL %s row %d token %d: got %.9g want %.9g\n",
					gk_qtype_name(WT), r, i, acc[r][i], want);
				bad++;
			}
		}
	for (int r = 0; r < R; r++)
		if (acc[r][3] != 0.0f) {
			fprintf(stderr, "FAIL %s: the unused fourth token was summed\n",
				gk_qtype_name(WT));
			bad++;
		}
	return bad;
}

int main(void)
{
	int bad = 0;
	for (int rep = 0; rep < 200; rep++) {
		bad += check<GK_Q_Q4_0>(32, 18, 0);
		bad += check<GK_Q_Q8_0>(32, 34, 0);
		bad += check<GK_Q_Q4_K>(256, 144, 0);
		bad += check<GK_Q_Q6_K>(256, 210, 208);
	}
	printf("gk-qdot-check: %s (%d failures)\n", bad ? "FAILED" : "ok", bad);
	return bad ? 1 : 0;
}
