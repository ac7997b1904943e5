/* le.h: unsigned integers stored little-endian in byte buffers, whatever the host's order (the
 * lazy-staging requests of common/lazy.c, gllm's pipeline frames). Header-only: each is a few
 * shifts the compiler folds into one load or store. */
#ifndef GP_COMMON_LE_H
#define GP_COMMON_LE_H

#include <stdint.h>

static inline void gp_le_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void gp_le_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t gp_le_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t gp_le_get64(const uint8_t *p)
{
	return (uint64_t)gp_le_get32(p) | (uint64_t)gp_le_get32(p + 4) << 32;
}

#endif
