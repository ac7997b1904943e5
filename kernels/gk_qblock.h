/* gk_qblock.h - the block layouts of GGUF's quantized weight types and the value of one element
 * of a block, shared by the cpu backend and the GPU kernels (host and device code), so every
 * backend reads the same bytes the same way. The layouts are GGUF's (ggml's block_q4_0, ...):
 *   q4_0  32 values: f16 d, 16 bytes of 4-bit q; value = (q - 8) * d; byte j holds value j in
 *         its low nibble and value j + 16 in its high nibble
 *   q8_0  32 values: f16 d, 32 int8 q; value = q * d
 *   q4_K  256 values in 8 sub-blocks of 32: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
 *         128 bytes of 4-bit q; value = d * sc * q - dmin * m
 *   q6_K  256 values in 16 sub-blocks of 16: 128 bytes low 4 bits, 64 bytes high 2 bits, 16
 *         int8 scales, f16 d; value = d * scale * (q - 32)
 * Compiles as C99 and as CUDA/HIP device code. */
#ifndef GK_QBLOCK_H
#define GK_QBLOCK_H

#include <stdint.h>

#include "kernels/gk_scalar.h"

#define GK_QK4_0 32
#define GK_QK8_0 32
#define GK_QK_K	 256

typedef struct {
	uint16_t d;
	uint8_t qs[GK_QK4_0 / 2];
} gk_block_q4_0_t; /* 18 bytes */

typedef struct {
	uint16_t d;
	int8_t qs[GK_QK8_0];
} gk_block_q8_0_t; /* 34 bytes */

typedef struct {
	uint16_t d, dmin;
	uint8_t scales[12];
	uint8_t qs[GK_QK_K / 2];
} gk_block_q4_K_t; /* 144 bytes */

typedef struct {
	uint8_t ql[GK_QK_K / 2];
	uint8_t qh[GK_QK_K / 4];
	int8_t scales[GK_QK_K / 16];
	uint16_t d;
} gk_block_q6_K_t; /* 210 bytes */

/* q4_K's 6-bit scale and min of sub-block J (0..7) from its 12 packed bytes Q. */
GK_HD void gk_q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
	}
}

/* Element I (0..31) of a q4_0 block. */
GK_HD float gk_q4_0_value(const gk_block_q4_0_t *b, int i)
{
	int q = i < 16 ? (b->qs[i] & 0xF) : (b->qs[i - 16] >> 4);
	return (float)(q - 8) * gk_sw_f16_to_f32(b->d);
}

GK_HD float gk_q8_0_value(const gk_block_q8_0_t *b, int i)
{
	return (float)b->qs[i] * gk_sw_f16_to_f32(b->d);
}

/* Element I (0..255) of a q4_K block: 4 groups of 64 values, each 32 bytes of qs, the low
 * nibbles the first 32 values (sub-block 2g), the high nibbles the next 32 (sub-block 2g+1). */
GK_HD float gk_q4_K_value(const gk_block_q4_K_t *b, int i)
{
	int g = i / 64, r = i % 64, sub = 2 * g + (r >= 32);
	uint8_t byte = b->qs[32 * g + (r % 32)];
	int q = r < 32 ? (byte & 0xF) : (byte >> 4);
	uint8_t sc, m;
	gk_q4k_scale_min(sub, b->scales, &sc, &m);
	return gk_sw_f16_to_f32(b->d) * (float)sc * (float)q - gk_sw_f16_to_f32(b->dmin) * (float)m;
}

/* Element I (0..255) of a q6_K block: 2 halves of 128 values; in a half, value l + 32k
 * (l < 32, k < 4) takes its low 4 bits from ql[l + 32 (k & 1)] (low nibble for k < 2, high
 * for k >= 2) and its high 2 bits from qh[l] >> 2k; its scale is scales[l / 16 + 2k]. */
GK_HD float gk_q6_K_value(const gk_block_q6_K_t *b, int i)
{
	int h = i / 128, r = i % 128, k = r / 32, l = r % 32;
	const uint8_t *ql = b->ql + 64 * h;
	const uint8_t *qh = b->qh + 32 * h;
	const int8_t *sc = b->scales + 8 * h;
	int lo = (k & 2) ? (ql[l + 32 * (k & 1)] >> 4) : (ql[l + 32 * (k & 1)] & 0xF);
	int hi = (qh[l] >> (2 * k)) & 3;
	int q = (lo | (hi << 4)) - 32;
	return gk_sw_f16_to_f32(b->d) * (float)sc[l / 16 + 2 * k] * (float)q;
}

#endif
