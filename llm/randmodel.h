/* randmodel.h - GGUF files of real language models' shapes with random weights, for tests and
 * benchmarks (no model can be downloaded here). A file has the metadata an engine reads
 * (llm/model.h: general.architecture, ARCH.context_length, embedding_length, block_count,
 * feed_forward_length, attention.head_count, head_count_kv, rope.freq_base,
 * attention.layer_norm_rms_epsilon, rope.dimension_count) and a SentencePiece-style vocabulary
 * (tokenizer.ggml.model "llama": <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then
 * made-up pieces with descending scores up to the shape's vocabulary; bos 1, eos 2, unknown 0).
 *
 * Weights are deterministic in (shape, seed): every matrix (token_embd, attention, feed-forward,
 * output) in the type asked, roughly normal values of standard deviation 0.02; norm weights
 * f32 around 1 (1 + 0.1 x normal); qwen2's q/k/v biases f32 of deviation 0.02. Each tensor is
 * made and quantized a few MiB at a time while the file is written (gl_gguf_add_tensor's FILL),
 * on up to 16 threads, so a 7B shape in f16 (13.5 GB) needs no more memory than a small one:
 * llama2-7b in q4_0 (3.8 GB) took 45 s of CPU and 7 MB of memory (2 shared cores, 2026-12-07).
 * The K-quants cost about 100 ns a value of CPU: a 7B model in q4_K wants many cores. */
#ifndef GL_RANDMODEL_H
#define GL_RANDMODEL_H

#include <stdint.h>

#include "common/error.h"
#include "gpool/kernels.h"

typedef struct {
	const char *name; /* "llama2-7b" */
	const char *arch; /* "llama" or "qwen2" */
	int dim, n_layers, n_heads, n_kv_heads, n_ff, n_vocab, n_ctx;
	float rope_base, norm_eps;
	int qkv_bias;	 /* attn_{q,k,v}.bias (qwen2) */
	int tied_output; /* no output.weight: the head is token_embd */
} gl_randmodel_t;

/* The named shapes: llama2-7b, llama3-8b, mistral-7b, tinyllama-1.1b, qwen2-0.5b, and the small
 * test-llama, test-qwen2 and test-kquant (a dim of 256: every block type fits). */
const gl_randmodel_t *gl_randmodel_shapes(int *n);
/* By name; NULL (ENOENT) if none. */
const gl_randmodel_t *gl_randmodel_find(const char *name);

/* Bytes of the tensors' data SHAPE makes in WTYPE (0 if a matrix's rows are not whole blocks). */
uint64_t gl_randmodel_bytes(const gl_randmodel_t *shape, gk_qtype_t wtype);

/* Write SHAPE's model with weights of type WTYPE made from SEED to PATH. -1 with errno and ERR:
 * EINVAL when WTYPE is not a type or a matrix's rows (dim, n_ff, heads x head_dim) are not
 * whole blocks of it, or the shape is not consistent (dim a multiple of n_heads, n_heads of
 * n_kv_heads, a vocabulary of at least 259 tokens). */
int gl_randmodel_write(const char *path, const gl_randmodel_t *shape, gk_qtype_t wtype,
		       uint64_t seed, gp_error_t *err);

#endif
