/* qtype.c - the weight types of language models (GGUF's numbering): names and sizes, one table */
#include <stddef.h>

#include "kernels/gk_qblock.h"
#include "gpool/kernels.h"

static const struct {
	gk_qtype_t t;
	const char *name;
	int block;	    /* values in a block */
	size_t block_bytes; /* bytes in a block */
} qtypes[] = {
    {GK_Q_F32, "f32", 1, 4},
    {GK_Q_F16, "f16", 1, 2},
    {GK_Q_BF16, "bf16", 1, 2},
    {GK_Q_Q4_0, "q4_0", GK_QK4_0, sizeof(gk_block_q4_0_t)},
    {GK_Q_Q8_0, "q8_0", GK_QK8_0, sizeof(gk_block_q8_0_t)},
    {GK_Q_Q4_K, "q4_K", GK_QK_K, sizeof(gk_block_q4_K_t)},
    {GK_Q_Q6_K, "q6_K", GK_QK_K, sizeof(gk_block_q6_K_t)},
};

_Static_assert(sizeof(gk_block_q4_0_t) == 18, "q4_0 block");
_Static_assert(sizeof(gk_block_q8_0_t) == 34, "q8_0 block");
_Static_assert(sizeof(gk_block_q4_K_t) == 144, "q4_K block");
_Static_assert(sizeof(gk_block_q6_K_t) == 210, "q6_K block");

static int find(int t)
{
	for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++)
		if ((int)qtypes[i].t == t)
			return (int)i;
	return -1;
}

int gk_qtype_valid(int t)
{
	return find(t) >= 0;
}

const char *gk_qtype_name(gk_qtype_t t)
{
	int i = find((int)t);
	return i < 0 ? "unknown" : qtypes[i].name;
}

int gk_qtype_block(gk_qtype_t t)
{
	int i = find((int)t);
	return i < 0 ? 0 : qtypes[i].block;
}

size_t gk_qtype_block_bytes(gk_qtype_t t)
{
	int i = find((int)t);
	return i < 0 ? 0 : qtypes[i].block_bytes;
}

size_t gk_qtype_row_bytes(gk_qtype_t t, size_t n)
{
	int i = find((int)t);
	if (i < 0 || n % (size_t)qtypes[i].block)
		return 0;
	return n / (size_t)qtypes[i].block * qtypes[i].block_bytes;
}
