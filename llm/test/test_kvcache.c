/* test_kvcache.c - the paged KV cache on the cpu backend: blocks taken as a sequence grows and
 * given back when it ends, ENOSPC leaving everything as it was, slots and block tables, the
 * pools' size. */
#include <errno.h>
#include <string.h>

#include "llm/kvcache.h"
#include "llm/test/eng_check.h"

int main(void)
{
	gk_error_t ge;
	gk_backend_t *b = gk_backend_open("cpu", &ge);
	CHECK(b);
	gp_error_t err;
	CHECK(gl_kv_create(b, 2, 0, 16, 8, GK_F32, 4, &err) == NULL && errno == EINVAL);
	CHECK(gl_kv_create(b, 2, 8, 16, 8, GK_I32, 4, &err) == NULL && errno == EINVAL);

	gl_kv_t *kv = gl_kv_create(b, 2, 8, 16, 8, GK_F16, 4, &err);
	CHECK(kv);
	CHECK(gl_kv_block_size(kv) == 16 && gl_kv_free_blocks(kv) == 8);
	CHECK(gl_kv_type(kv) == GK_F16);
	CHECK(gl_kv_k(kv, 0) && gl_kv_v(kv, 1) && gl_kv_k(kv, 0) != gl_kv_k(kv, 1));
	CHECK(gl_kv_k(kv, 2) == NULL);
	CHECK(gl_kv_slot_bytes(2, 8, GK_F16) == 2 * 2 * 8 * 2);
	/* the pools are writable over their whole length (n_blocks * block_size * row) */
	memset(gl_kv_v(kv, 1), 0x5a, 8 * 16 * 8 * 2);

	/* sequence 0 grows: 1 token takes a block, 16 still one, 17 two */
	CHECK(gl_kv_reserve(kv, 0, 1) == 0 && gl_kv_free_blocks(kv) == 7 && gl_kv_len(kv, 0) == 1);
	CHECK(gl_kv_reserve(kv, 0, 16) == 0 && gl_kv_free_blocks(kv) == 7);
	CHECK(gl_kv_reserve(kv, 0, 17) == 0 && gl_kv_free_blocks(kv) == 6);
	CHECK(gl_kv_reserve(kv, 2, 40) == 0 && gl_kv_free_blocks(kv) == 3);

	int32_t t0[8], t2[8];
	CHECK(gl_kv_blocks(kv, 0, t0, 8) == 2);
	CHECK(gl_kv_blocks(kv, 2, t2, 8) == 3);
	CHECK(gl_kv_blocks(kv, 2, t2, 2) == -1 && errno == ENOSPC);
	/* no block is in two tables */
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			CHECK(t0[i] != t2[j]);
	/* slots: position p is in block p / 16 of the sequence's table, place p % 16 */
	CHECK(gl_kv_slot(kv, 0, 0) == t0[0] * 16);
	CHECK(gl_kv_slot(kv, 0, 16) == t0[1] * 16);
	CHECK(gl_kv_slot(kv, 2, 39) == t2[2] * 16 + 7);

	/* more than is free: ENOSPC and nothing taken */
	CHECK(gl_kv_reserve(kv, 1, 16 * 4) == -1 && errno == ENOSPC);
	CHECK(gl_kv_free_blocks(kv) == 3 && gl_kv_len(kv, 1) == 0);
	CHECK(gl_kv_reserve(kv, 0, 16 * 5 + 1) == -1 && errno == ENOSPC);
	CHECK(gl_kv_len(kv, 0) == 17 && gl_kv_blocks(kv, 0, t0, 8) == 2);
	/* a sequence out of range, or more than the whole cache */
	CHECK(gl_kv_reserve(kv, 4, 1) == -1 && errno == EINVAL);
	CHECK(gl_kv_reserve(kv, 1, 8 * 16 + 1) == -1 && errno == ENOSPC);

	/* release gives every block back, and they serve another sequence */
	gl_kv_release(kv, 2);
	CHECK(gl_kv_free_blocks(kv) == 6 && gl_kv_len(kv, 2) == 0);
	CHECK(gl_kv_blocks(kv, 2, t2, 8) == 0);
	CHECK(gl_kv_reserve(kv, 3, 6 * 16) == 0 && gl_kv_free_blocks(kv) == 0);
	/* a shorter length gives back the blocks past it */
	CHECK(gl_kv_reserve(kv, 3, 16) == 0 && gl_kv_free_blocks(kv) == 5);
	gl_kv_release(kv, 0);
	gl_kv_release(kv, 3);
	CHECK(gl_kv_free_blocks(kv) == 8);
	gl_kv_destroy(&kv);
	CHECK(kv == NULL);
	gl_kv_destroy(&kv);
	gk_backend_close(&b);
	return 0;
}
