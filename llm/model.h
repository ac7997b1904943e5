/* model.h - a llama-family language model: its shape from the GGUF metadata (llama: Llama 2 and
 * 3, Mistral, TinyLlama; qwen2) and its weights, or a contiguous range of its layers, loaded on
 * a kernels backend (a card, or the cpu one) in the file's own types.
 *
 * Tensor names are GGUF's: token_embd.weight, blk.N.{attn_norm, attn_q, attn_k, attn_v,
 * attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight (qwen2 also blk.N.attn_{q,k,v}.bias),
 * output_norm.weight, output.weight (absent: tied to token_embd). */
#ifndef GL_MODEL_H
#define GL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"
#include "llm/gguf.h"

typedef enum { GL_ARCH_LLAMA = 0, GL_ARCH_QWEN2 = 1 } gl_arch_t;

typedef struct {
	gl_arch_t arch;
	char name[64];	  /* general.name, or the architecture */
	int n_vocab;	  /* rows of token_embd */
	int n_ctx_train;  /* ARCH.context_length */
	int dim;	  /* ARCH.embedding_length */
	int n_layers;	  /* ARCH.block_count */
	int n_ff;	  /* ARCH.feed_forward_length */
	int n_heads;	  /* ARCH.attention.head_count */
	int n_kv_heads;	  /* ARCH.attention.head_count_kv (default n_heads) */
	int head_dim;	  /* dim / n_heads */
	int rot_dim;	  /* ARCH.rope.dimension_count (default head_dim) */
	float rope_base;  /* ARCH.rope.freq_base (default 10000) */
	float rope_scale; /* 1 / ARCH.rope.scaling.factor for linear scaling, else 1 */
	int rope_neox;	  /* qwen2: 1; llama: 0 */
	float norm_eps;	  /* ARCH.attention.layer_norm_rms_epsilon */
	int tied_output;  /* no output.weight: the head is token_embd */
} gl_hparams_t;

/* Read and check the shape (every tensor the architecture needs present, of the right dims and
 * a supported type). -1 with errno (EINVAL, ENOTSUP: another architecture) and ERR. */
int gl_hparams_read(const gl_gguf_t *g, gl_hparams_t *hp, gp_error_t *err);

/* Bytes of weights in the file: of layer L, of the embedding table, of the output norm + head. */
size_t gl_layer_bytes(const gl_gguf_t *g, int l);
size_t gl_embed_bytes(const gl_gguf_t *g);
size_t gl_head_bytes(const gl_gguf_t *g);

typedef struct gl_weights gl_weights_t;

/* Layers FIRST..LAST-1 on backend B (device memory), with the embedding table if WITH_EMBED and
 * the output norm and head if WITH_HEAD. Reads only those tensors' bytes. NULL with errno
 * (ENOMEM: the device is full) and ERR. */
gl_weights_t *gl_weights_load(gk_backend_t *b, const gl_gguf_t *g, const gl_hparams_t *hp,
			      int first, int last, int with_embed, int with_head, gp_error_t *err);
void gl_weights_destroy(gl_weights_t **w);
int gl_weights_first(const gl_weights_t *w);
int gl_weights_last(const gl_weights_t *w);
size_t gl_weights_device_bytes(const gl_weights_t *w);

#endif
