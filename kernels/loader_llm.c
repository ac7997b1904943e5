/* loader_llm.c - argument checks of the language-model layers (gpool/kernels.h) before the
 * call goes through the backend's table: the backends may then assume sizes > 0, non-NULL
 * pointers, a known weight type whose block divides cols, and a head layout the attention
 * kernels can hold. The int arrays (ids, positions, slots, block tables) are device memory
 * and are not read here; the kernels bound every index they take from them. */
#include <errno.h>
#include <stdint.h>

#include "kernels/gk_backend.h"
#include "kernels/gk_loader.h"

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			return gk_fail(b, EINVAL, __VA_ARGS__);                                    \
	} while (0)

/* A backend built before these layers (or one lacking one) says so instead of crashing. */
#define NEED(op, what)                                                                             \
	do {                                                                                       \
		if (!b->ops->op)                                                                   \
			return gk_fail(b, ENOTSUP, "%s: not provided by backend '%s'", what,       \
				       b->ops->name);                                              \
	} while (0)

/* A weight matrix: a known type, positive sizes, whole blocks in a row. */
static int check_weights(gk_backend_t *b, const char *what, gk_qtype_t wt, const void *w, int rows,
			 int cols)
{
	CHECK(gk_qtype_valid((int)wt), "%s: invalid weight type %d", what, (int)wt);
	CHECK(rows > 0 && cols > 0, "%s: %d x %d weights, sizes must be > 0", what, rows, cols);
	CHECK(cols % gk_qtype_block(wt) == 0, "%s: %d columns are not whole %s blocks of %d", what,
	      cols, gk_qtype_name(wt), gk_qtype_block(wt));
	CHECK(w, "%s: null weights", what);
	return 0;
}

int gk_qmatmul(gk_backend_t *b, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
	       int n, float *y, int ldy, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (check_weights(b, "qmatmul", wt, w, rows, cols) < 0)
		return -1;
	CHECK(n >= 0, "qmatmul: %d tokens", n);
	CHECK(ldy >= rows, "qmatmul: ldy %d < rows %d", ldy, rows);
	if (!n)
		return 0;
	CHECK(x && y, "qmatmul: null pointer");
	NEED(qmatmul, "qmatmul");
	return b->ops->qmatmul(b->ctx, wt, w, rows, cols, x, n, y, ldy, s);
}

int gk_qget_rows(gk_backend_t *b, gk_qtype_t wt, const void *w, int rows, int cols,
		 const int32_t *ids, int n, float *out, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (check_weights(b, "qget_rows", wt, w, rows, cols) < 0)
		return -1;
	CHECK(n >= 0, "qget_rows: %d ids", n);
	if (!n)
		return 0;
	CHECK(ids && out, "qget_rows: null pointer");
	NEED(qget_rows, "qget_rows");
	return b->ops->qget_rows(b->ctx, wt, w, rows, cols, ids, n, out, s);
}

int gk_rmsnorm(gk_backend_t *b, float *y, const float *x, const float *w, int n, int dim, float eps,
	       gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(n >= 0 && dim > 0, "rmsnorm: %d rows of %d, sizes must be > 0", n, dim);
	CHECK(eps >= 0.0f, "rmsnorm: negative eps");
	if (!n)
		return 0;
	CHECK(y && x && w, "rmsnorm: null pointer");
	NEED(rmsnorm, "rmsnorm");
	return b->ops->rmsnorm(b->ctx, y, x, w, n, dim, eps, s);
}

int gk_rope(gk_backend_t *b, float *x, const int32_t *pos, int n, int nheads, int head_dim,
	    int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(n >= 0 && nheads > 0 && head_dim > 0, "rope: %d tokens of %d heads of %d", n, nheads,
	      head_dim);
	CHECK(rot_dim > 0 && rot_dim % 2 == 0 && rot_dim <= head_dim,
	      "rope: rot_dim %d must be even and in 2..%d", rot_dim, head_dim);
	CHECK(freq_base > 0.0f && freq_scale > 0.0f, "rope: freq_base and freq_scale must be > 0");
	if (!n)
		return 0;
	CHECK(x && pos, "rope: null pointer");
	NEED(rope, "rope");
	return b->ops->rope(b->ctx, x, pos, n, nheads, head_dim, rot_dim, freq_base, freq_scale,
			    neox != 0, s);
}

int gk_swiglu(gk_backend_t *b, float *out, const float *gate, const float *up, size_t n,
	      gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!n)
		return 0;
	CHECK(out && gate && up, "swiglu: null pointer");
	NEED(swiglu, "swiglu");
	return b->ops->swiglu(b->ctx, out, gate, up, n, s);
}

int gk_add(gk_backend_t *b, float *y, const float *x, size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!n)
		return 0;
	CHECK(y && x, "add: null pointer");
	NEED(add, "add");
	return b->ops->add(b->ctx, y, x, n, s);
}

int gk_add_bias(gk_backend_t *b, float *x, const float *bias, int n, int cols, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(n >= 0 && cols > 0, "add_bias: %d rows of %d, sizes must be > 0", n, cols);
	if (!n)
		return 0;
	CHECK(x && bias, "add_bias: null pointer");
	NEED(add_bias, "add_bias");
	return b->ops->add_bias(b->ctx, x, bias, n, cols, s);
}

int gk_kv_write(gk_backend_t *b, gk_dtype_t kv_t, void *cache, const int32_t *slots,
		const float *src, int n, int row, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(kv_t == GK_F32 || kv_t == GK_F16, "kv_write: the cache must be f32 or f16");
	CHECK(n >= 0 && row > 0, "kv_write: %d rows of %d, sizes must be > 0", n, row);
	if (!n)
		return 0;
	CHECK(cache && slots && src, "kv_write: null pointer");
	NEED(kv_write, "kv_write");
	return b->ops->kv_write(b->ctx, kv_t, cache, slots, src, n, row, s);
}

int gk_attention(gk_backend_t *b, const gk_attn_t *p, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(p, "attention: null parameters");
	CHECK(p->kv_t == GK_F32 || p->kv_t == GK_F16, "attention: the cache must be f32 or f16");
	CHECK(p->nseq >= 0 && p->ntok >= 0, "attention: %d sequences, %d rows", p->nseq, p->ntok);
	CHECK(p->n_heads > 0 && p->n_kv_heads > 0 && p->n_heads % p->n_kv_heads == 0,
	      "attention: %d heads are not a multiple of %d kv heads", p->n_heads, p->n_kv_heads);
	CHECK(p->head_dim > 0 && p->head_dim <= GK_ATTN_MAX_HEAD_DIM,
	      "attention: head_dim %d, expected 1 to %d", p->head_dim, GK_ATTN_MAX_HEAD_DIM);
	CHECK(p->block_size > 0 && p->max_blocks > 0, "attention: block size %d, %d blocks",
	      p->block_size, p->max_blocks);
	CHECK((int64_t)p->block_size * p->max_blocks <= INT32_MAX,
	      "attention: %d blocks of %d exceed the positions an int holds", p->max_blocks,
	      p->block_size);
	if (!p->nseq || !p->ntok)
		return 0;
	CHECK(p->q_start && p->ctx_len && p->block_table && p->k_cache && p->v_cache && p->q &&
		  p->out,
	      "attention: null pointer");
	NEED(attention, "attention");
	return b->ops->attention(b->ctx, p, s);
}
