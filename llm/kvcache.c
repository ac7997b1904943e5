/* kvcache.c - the paged KV cache: per layer one device pool for K and one for V, and on the host
 * a stack of free blocks and each sequence's blocks in order. Slot s of a pool is block
 * s / block_size, place s % block_size (gpool/kernels.h), so a token's slot is its sequence's
 * block for pos / block_size times block_size plus pos % block_size. */
#include "llm/kvcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int len;      /* tokens held */
	int nblocks;  /* blocks held */
	int32_t *blk; /* n_blocks entries of room: no growth, no allocation while running */
} kv_seq_t;

struct gl_kv {
	gk_backend_t *b;
	int n_layers, n_blocks, block_size, row, max_seqs;
	gk_dtype_t kv_t;
	void **k, **v; /* n_layers pools each */
	int32_t *free; /* a stack of free block ids */
	int nfree;
	kv_seq_t *seqs;
	int32_t *blk_mem; /* max_seqs x n_blocks: the sequences' block lists */
};

size_t gl_kv_slot_bytes(int n_layers, int row, gk_dtype_t kv_t)
{
	return 2 * (size_t)n_layers * (size_t)row * gk_dtype_size(kv_t);
}

static size_t pool_bytes(const gl_kv_t *kv)
{
	return (size_t)kv->n_blocks * (size_t)kv->block_size * (size_t)kv->row *
	       gk_dtype_size(kv->kv_t);
}

gl_kv_t *gl_kv_create(gk_backend_t *b, int n_layers, int n_blocks, int block_size, int row,
		      gk_dtype_t kv_t, int max_seqs, gp_error_t *err)
{
	if (n_layers < 0 || n_blocks <= 0 || block_size <= 0 || row <= 0 || max_seqs <= 0 ||
	    (kv_t != GK_F32 && kv_t != GK_F16) || (int64_t)n_blocks * block_size > INT32_MAX) {
		errno = EINVAL;
		gp_errprintf(err,
			     "kv cache: bad shape (%d layers, %d blocks of %d, row %d, %d seqs)",
			     n_layers, n_blocks, block_size, row, max_seqs);
		return NULL;
	}
	gl_kv_t *kv = calloc(1, sizeof *kv);
	if (!kv)
		goto nomem;
	*kv = (gl_kv_t){.b = b,
			.n_layers = n_layers,
			.n_blocks = n_blocks,
			.block_size = block_size,
			.row = row,
			.max_seqs = max_seqs,
			.kv_t = kv_t};
	kv->k = calloc((size_t)n_layers + 1, sizeof *kv->k);
	kv->v = calloc((size_t)n_layers + 1, sizeof *kv->v);
	kv->free = malloc((size_t)n_blocks * sizeof *kv->free);
	kv->seqs = calloc((size_t)max_seqs, sizeof *kv->seqs);
	kv->blk_mem = malloc((size_t)max_seqs * (size_t)n_blocks * sizeof *kv->blk_mem);
	if (!kv->k || !kv->v || !kv->free || !kv->seqs || !kv->blk_mem)
		goto nomem;
	for (int i = 0; i < max_seqs; i++)
		kv->seqs[i].blk = kv->blk_mem + (size_t)i * (size_t)n_blocks;
	/* the lowest ids on top: the first sequence gets blocks 0, 1, ... (easier to read) */
	for (int i = 0; i < n_blocks; i++)
		kv->free[i] = n_blocks - 1 - i;
	kv->nfree = n_blocks;
	for (int l = 0; l < n_layers; l++) {
		if (gk_dev_alloc(b, pool_bytes(kv), &kv->k[l]) < 0 ||
		    gk_dev_alloc(b, pool_bytes(kv), &kv->v[l]) < 0) {
			int e = errno;
			gp_errprintf(err, "kv cache: %zu bytes for layer %d: %s", pool_bytes(kv), l,
				     gk_backend_error(b));
			gl_kv_destroy(&kv);
			errno = e ? e : ENOMEM;
			return NULL;
		}
	}
	return kv;
nomem:
	gl_kv_destroy(&kv);
	errno = ENOMEM;
	gp_errprintf(err, "kv cache: out of memory");
	return NULL;
}

void gl_kv_destroy(gl_kv_t **kvp)
{
	if (!kvp || !*kvp)
		return;
	gl_kv_t *kv = *kvp;
	for (int l = 0; kv->k && kv->v && l < kv->n_layers; l++) {
		gk_dev_free(kv->b, kv->k[l]);
		gk_dev_free(kv->b, kv->v[l]);
	}
	free(kv->k);
	free(kv->v);
	free(kv->free);
	free(kv->seqs);
	free(kv->blk_mem);
	free(kv);
	*kvp = NULL;
}

int gl_kv_block_size(const gl_kv_t *kv)
{
	return kv->block_size;
}

int gl_kv_free_blocks(const gl_kv_t *kv)
{
	return kv->nfree;
}

int gl_kv_reserve(gl_kv_t *kv, int seq, int len)
{
	if (seq < 0 || seq >= kv->max_seqs || len < 0 ||
	    (int64_t)len > (int64_t)kv->n_blocks * kv->block_size) {
		errno = len > 0 && seq >= 0 && seq < kv->max_seqs ? ENOSPC : EINVAL;
		return -1;
	}
	kv_seq_t *s = &kv->seqs[seq];
	int need = (len + kv->block_size - 1) / kv->block_size;
	if (need - s->nblocks > kv->nfree) {
		errno = ENOSPC;
		return -1;
	}
	while (s->nblocks < need)
		s->blk[s->nblocks++] = kv->free[--kv->nfree];
	while (s->nblocks > need) /* a shorter length gives back the blocks past it */
		kv->free[kv->nfree++] = s->blk[--s->nblocks];
	s->len = len;
	return 0;
}

int gl_kv_len(const gl_kv_t *kv, int seq)
{
	return seq >= 0 && seq < kv->max_seqs ? kv->seqs[seq].len : 0;
}

void gl_kv_release(gl_kv_t *kv, int seq)
{
	if (seq >= 0 && seq < kv->max_seqs)
		gl_kv_reserve(kv, seq, 0);
}

int gl_kv_blocks(const gl_kv_t *kv, int seq, int32_t *table, int max)
{
	if (seq < 0 || seq >= kv->max_seqs) {
		errno = EINVAL;
		return -1;
	}
	const kv_seq_t *s = &kv->seqs[seq];
	if (s->nblocks > max) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(table, s->blk, (size_t)s->nblocks * sizeof *table);
	return s->nblocks;
}

int32_t gl_kv_slot(const gl_kv_t *kv, int seq, int pos)
{
	const kv_seq_t *s = &kv->seqs[seq];
	return s->blk[pos / kv->block_size] * kv->block_size + pos % kv->block_size;
}

void *gl_kv_k(gl_kv_t *kv, int l)
{
	return l >= 0 && l < kv->n_layers ? kv->k[l] : NULL;
}

void *gl_kv_v(gl_kv_t *kv, int l)
{
	return l >= 0 && l < kv->n_layers ? kv->v[l] : NULL;
}

gk_dtype_t gl_kv_type(const gl_kv_t *kv)
{
	return kv->kv_t;
}
