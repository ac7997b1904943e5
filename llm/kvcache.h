/* kvcache.h - the paged KV cache of one rank's layers: a pool of blocks of BLOCK_SIZE token
 * slots per layer (gpool/kernels.h's gk_kv_write and gk_attention read it), and on the host
 * each sequence's list of blocks. A sequence takes blocks as it grows and gives them all back
 * when it ends, so memory follows the tokens actually held, not a fixed context per request. */
#ifndef GL_KVCACHE_H
#define GL_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"

typedef struct gl_kv gl_kv_t;

/* N_LAYERS layers, N_BLOCKS blocks of BLOCK_SIZE slots of ROW values (n_kv_heads * head_dim)
 * of type KV_T, for sequences 0..MAX_SEQS-1. */
gl_kv_t *gl_kv_create(gk_backend_t *b, int n_layers, int n_blocks, int block_size, int row,
		      gk_dtype_t kv_t, int max_seqs, gp_error_t *err);
void gl_kv_destroy(gl_kv_t **kv);
/* Bytes the cache needs per token slot on all its layers (K and V). */
size_t gl_kv_slot_bytes(int n_layers, int row, gk_dtype_t kv_t);

int gl_kv_block_size(const gl_kv_t *kv);
int gl_kv_free_blocks(const gl_kv_t *kv);
/* Grow sequence SEQ to hold LEN tokens in all (blocks taken as needed): 0, or -1 with ENOSPC
 * (no blocks left: nothing taken) or EINVAL. */
int gl_kv_reserve(gl_kv_t *kv, int seq, int len);
/* Tokens sequence SEQ holds (what the last reserve asked for). */
int gl_kv_len(const gl_kv_t *kv, int seq);
/* Give back all of SEQ's blocks. */
void gl_kv_release(gl_kv_t *kv, int seq);
/* Sequence SEQ's blocks (host) into TABLE (room for MAX): the count, -1 (ENOSPC) if more. */
int gl_kv_blocks(const gl_kv_t *kv, int seq, int32_t *table, int max);
/* The slot of SEQ's token at position POS (< its len). */
int32_t gl_kv_slot(const gl_kv_t *kv, int seq, int pos);
/* Layer L's pools (device). */
void *gl_kv_k(gl_kv_t *kv, int l);
void *gl_kv_v(gl_kv_t *kv, int l);
gk_dtype_t gl_kv_type(const gl_kv_t *kv);

#endif
