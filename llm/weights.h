/* weights.h - inside gl_weights_t (model.c loads it, forward.c reads it): each matrix as a
 * device pointer with its type and shape, the norms and biases as f32 device vectors. Private to
 * llm/. */
#ifndef GL_WEIGHTS_H
#define GL_WEIGHTS_H

#include "llm/model.h"

typedef struct {
	const void *w; /* device: ROWS rows of COLS values of type T */
	gk_qtype_t t;
	int rows, cols;
} gl_mat_t;

typedef struct {
	float *attn_norm, *ffn_norm; /* dim */
	float *bq, *bk, *bv;	     /* qwen2's biases, else NULL */
	gl_mat_t q, k, v, o, gate, up, down;
} gl_layer_t;

struct gl_weights {
	gk_backend_t *b;
	int first, last;
	gl_layer_t *layers; /* last - first */
	int has_embed, has_head;
	gl_mat_t embed; /* token_embd (also the head's when tied and this rank holds the head) */
	float *out_norm;
	gl_mat_t head;
	void **allocs; /* every device buffer, for destroy */
	int nallocs, cap;
	size_t bytes;
};

#endif
