/* gpool/kernels.h - compute kernels behind one interface, for CUDA, HIP and the CPU
 *
 * A backend is opened by name: "cpu" (plain C, always present, also the reference the
 * GPU backends are tested against), "cuda" (libgpool-kernels-cuda.so), "hip"
 * (libgpool-kernels-hip.so) or "auto" (cuda, then hip, then cpu). The GPU backends are
 * shared objects loaded with dlopen() at run time, so one build of gpool runs on a PC
 * with an NVIDIA card, an AMD card, or none.
 *
 * Conventions: functions return 0 on success and -1 with errno set on failure (or a
 * pointer / NULL); a longer, lowercase message is kept in the backend and read with
 * gk_backend_error(). A failing call has no side effects on its outputs unless the
 * device itself failed mid-way.
 *
 * Memory: "device" pointers come from gk_dev_alloc() (for the cpu backend they are plain
 * host memory). Kernels take device pointers only. Every kernel is enqueued on a stream
 * (NULL = the backend's default stream) and may return before it has run; call
 * gk_stream_sync() before reading results on the host. On the cpu backend every call
 * is synchronous.
 *
 * Element types: f16 and bf16 are passed as raw 16-bit patterns (uint16_t) on the host.
 */
#ifndef GPOOL_KERNELS_H
#define GPOOL_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gk_backend gk_backend_t;
typedef struct gk_stream gk_stream_t; /* a CUDA/HIP stream; NULL is the default stream */
typedef struct gk_event gk_event_t;

typedef struct {
	char text[256];
} gk_error_t;

typedef enum {
	GK_F32 = 0,
	GK_F16 = 1,
	GK_BF16 = 2,
	GK_F64 = 3,
	GK_I32 = 4,
} gk_dtype_t;

typedef enum {
	GK_SUM = 0,
	GK_MAX = 1, /* NaN in any input gives NaN */
	GK_MIN = 2,
	GK_AVG = 3, /* sum / nsrc; i32 truncates toward zero */
} gk_redop_t;

typedef enum {
	GK_H2D = 0,
	GK_D2H = 1,
	GK_D2D = 2,
} gk_copy_kind_t;

typedef enum {
	GK_MT_WALKING_ONES = 0, /* 32 passes, word i holds 1 << ((i + pass) % 32) */
	GK_MT_MOVING_INV = 1,	/* pattern, check + write inverse, check inverse */
	GK_MT_ADDRESS = 2,	/* each 32-bit word holds its own index */
	GK_MT_RANDOM = 3,	/* seeded random words (splitmix64 of seed and index) */
} gk_memtest_t;

#define GK_REDUCE_MAX_SRCS 16

typedef struct {
	char backend[8];  /* "cpu", "cuda", "hip" */
	char name[256];	  /* device name */
	int device;	  /* index */
	int major, minor; /* compute capability (cuda), gfx major/minor (hip), 0 (cpu) */
	int multiprocessors;
	int runtime_version; /* cudaRuntimeGetVersion / hipRuntimeGetVersion, 0 on cpu */
	int driver_version;
	size_t total_mem;
	size_t free_mem;    /* free now: cudaMemGetInfo / hipMemGetInfo; MemAvailable on cpu */
	char gemm_impl[32]; /* "cublas", "rocblas", "openblas", "gpool-tiled", "c-loop" */
} gk_device_info_t;

/* ---- backends ---- */

/* Open backend NAME ("cpu", "cuda", "hip", "auto") on device 0.
 * Fails with ENOENT (backend library not found or not loadable), ENODEV (no driver or no
 * device), EINVAL (unknown name); ERR (may be NULL) receives the reason. */
gk_backend_t *gk_backend_open(const char *name, gk_error_t *err);
/* Same, on device DEVICE (an index into the devices the runtime sees). */
gk_backend_t *gk_backend_open_device(const char *name, int device, gk_error_t *err);
/* Destroy *B (NULL allowed) and set it to NULL. */
void gk_backend_close(gk_backend_t **b);
const char *gk_backend_name(const gk_backend_t *b);
/* Message of the last failing call on B (empty if none). */
const char *gk_backend_error(const gk_backend_t *b);
int gk_device_info(gk_backend_t *b, gk_device_info_t *info);

/* ---- memory ---- */
int gk_dev_alloc(gk_backend_t *b, size_t bytes, void **p);
int gk_dev_free(gk_backend_t *b, void *p);		    /* NULL allowed */
int gk_host_alloc(gk_backend_t *b, size_t bytes, void **p); /* pinned host memory */
int gk_host_free(gk_backend_t *b, void *p);
int gk_memset(gk_backend_t *b, void *dst, int byte, size_t bytes, gk_stream_t *s);

/* ---- streams, events, copies ---- */
int gk_stream_create(gk_backend_t *b, gk_stream_t **s);
int gk_stream_destroy(gk_backend_t *b, gk_stream_t **s);
int gk_stream_sync(gk_backend_t *b, gk_stream_t *s);
int gk_event_create(gk_backend_t *b, gk_event_t **e);
int gk_event_destroy(gk_backend_t *b, gk_event_t **e);
int gk_event_record(gk_backend_t *b, gk_event_t *e, gk_stream_t *s);
int gk_event_sync(gk_backend_t *b, gk_event_t *e);
/* 1 if E has completed, 0 if not yet, -1 on error (never blocks). */
int gk_event_query(gk_backend_t *b, gk_event_t *e);
/* 1 if P is device (or managed) memory of B's runtime, else 0 (host memory, NULL). */
int gk_is_device_ptr(gk_backend_t *b, const void *p);
/* Make stream S wait for E (recorded on another stream) without blocking the host. */
int gk_stream_wait_event(gk_backend_t *b, gk_stream_t *s, gk_event_t *e);
/* Milliseconds between two completed events. */
int gk_event_elapsed(gk_backend_t *b, gk_event_t *start, gk_event_t *end, float *ms);
/* Asynchronous copy on S (host memory must be pinned to overlap with work). */
int gk_copy_async(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind,
		  gk_stream_t *s);
/* Synchronous copy (any host memory). */
int gk_copy(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind);

/* ---- elementwise ---- */

/* dst[i] = op(srcs[0][i], ..., srcs[nsrc-1][i]) for i < n, 1 <= nsrc <= GK_REDUCE_MAX_SRCS.
 * dst may equal any source (in place). f16/bf16 accumulate in f32 in source order and
 * round once; f32 accumulates in f32, f64 in f64, i32 in 64-bit (sum wraps). */
int gk_reduce(gk_backend_t *b, gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs,
	      int nsrc, size_t n, gk_stream_t *s);
/* dst = cast(src): f32 -> f16/bf16 rounds to nearest even, overflows to inf, keeps NaN
 * a NaN (quiet); f16/bf16 -> f32 is exact. Supported pairs: f32<->f16, f32<->bf16. */
int gk_cast(gk_backend_t *b, gk_dtype_t dst_t, void *dst, gk_dtype_t src_t, const void *src,
	    size_t n, gk_stream_t *s);
/* dst[i] = alpha * src[i] (in place allowed); f16/bf16 compute in f32. */
int gk_scale(gk_backend_t *b, gk_dtype_t t, void *dst, const void *src, double alpha, size_t n,
	     gk_stream_t *s);
/* Sets *dflag (a device uint32_t) to 1 if any of the n elements is Inf or NaN; never
 * clears it, so several buffers can be checked into one flag. Floating types only. */
int gk_find_nonfinite(gk_backend_t *b, gk_dtype_t t, const void *buf, size_t n, uint32_t *dflag,
		      gk_stream_t *s);
/* Synchronous convenience: *found = 1 if buf holds Inf/NaN, else 0. */
int gk_has_nonfinite(gk_backend_t *b, gk_dtype_t t, const void *buf, size_t n, int *found);

/* ---- optimizer steps (f32 master weights, grads f32/f16/bf16) ---- */
typedef struct {
	float lr, momentum, weight_decay;
	float grad_scale; /* grads are multiplied by this first (1/loss_scale), 1 if unused */
	int nesterov;
} gk_sgd_t;
/* g = grad*grad_scale + wd*w; v = momentum*v + g; w -= lr * (nesterov ? g + momentum*v : v) */
int gk_sgd_momentum(gk_backend_t *b, const gk_sgd_t *p, float *w, float *v, gk_dtype_t grad_t,
		    const void *grad, size_t n, gk_stream_t *s);

typedef struct {
	float lr, beta1, beta2, eps, weight_decay;
	float grad_scale;
	int step; /* 1-based, for bias correction */
} gk_adamw_t;
/* w -= lr*wd*w; m = b1*m + (1-b1)g; v = b2*v + (1-b2)g^2;
 * w -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps) */
int gk_adamw(gk_backend_t *b, const gk_adamw_t *p, float *w, float *m, float *v, gk_dtype_t grad_t,
	     const void *grad, size_t n, gk_stream_t *s);

/* ---- neural-network layers (f32; activations row-major: ROWS samples of COLS values) ----
 * The pieces of an MLP's forward and backward pass around gk_sgemm. All in place where
 * named so; every one of them may run on a stream like the other kernels. */

typedef enum {
	GK_ACT_NONE = 0,
	GK_ACT_RELU = 1,
} gk_act_t;

/* y[r*cols+c] = act(y[r*cols+c] + bias[c]) for r < rows, c < cols (in place). */
int gk_bias_act(gk_backend_t *b, float *y, const float *bias, size_t rows, size_t cols,
		gk_act_t act, gk_stream_t *s);
/* ReLU's gradient from its output: dy[i] = y[i] > 0 ? dy[i] : 0 (in place). */
int gk_relu_grad(gk_backend_t *b, float *dy, const float *y, size_t n, gk_stream_t *s);
/* db[c] = alpha * sum over r of dy[r*cols+c], summed in row order (the same bits on
 * every backend). */
int gk_bias_grad(gk_backend_t *b, const float *dy, float *db, size_t rows, size_t cols, float alpha,
		 gk_stream_t *s);
/* Softmax cross-entropy of ROWS rows of COLS logits against labels (int32, 0..cols-1):
 * loss[r] = log(sum_c exp(z[r][c] - max_r)) - (z[r][label] - max_r) (loss may be NULL),
 * dz[r][c] = scale * (softmax(z[r])[c] - (c == label)) (dz may equal z; NULL: no
 * gradient). A label out of range gives loss NaN and a NaN gradient row, never a
 * memory access outside the row. Uses expf/logf: results agree between backends to a
 * few ulp, not bit for bit. */
int gk_softmax_xent(gk_backend_t *b, const float *z, const int32_t *labels, size_t rows,
		    size_t cols, float scale, float *loss, float *dz, gk_stream_t *s);

/* ---- memory test, bandwidth, throughput ---- */

/* Runs pattern PAT over BYTES (rounded down to 4-byte words) of device memory BUF and
 * adds the number of mismatching words to *errors. Synchronous. */
int gk_memtest(gk_backend_t *b, gk_memtest_t pat, void *buf, size_t bytes, uint64_t seed,
	       uint64_t *errors);
/* Test only: the next gk_memtest on B flips BITMASK in 32-bit word WORD after writing its
 * first pattern and before checking it, so that call counts exactly one error. The fault
 * is consumed by the next call; one whose buffer does not hold WORD fails with EINVAL. */
int gk_memtest_inject_fault(gk_backend_t *b, size_t word, uint32_t bitmask);

/* Read BYTES from BUF (result kept in an internal sink), write BYTES, copy BYTES by a
 * kernel (not the copy engine). Bytes must be a multiple of 16, pointers 16-aligned. */
int gk_bw_read(gk_backend_t *b, const void *buf, size_t bytes, gk_stream_t *s);
int gk_bw_write(gk_backend_t *b, void *buf, size_t bytes, gk_stream_t *s);
int gk_bw_copy(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_stream_t *s);
/* FMA throughput kernel, t = GK_F32 or GK_F16; BUF is a device scratch of at least
 * gk_fma_scratch_bytes(); *flops receives the floating-point operations it performs. */
size_t gk_fma_scratch_bytes(gk_backend_t *b);
int gk_fma(gk_backend_t *b, gk_dtype_t t, void *buf, int iters, double *flops, gk_stream_t *s);

/* ---- matrix product (column-major, as BLAS) ----
 * C = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T; f32 only. */
int gk_sgemm(gk_backend_t *b, int trans_a, int trans_b, int m, int n, int k, float alpha,
	     const float *a, int lda, const float *bm, int ldb, float beta, float *c, int ldc,
	     gk_stream_t *s);

/* ---- mixed precision: products on tensor cores, fused epilogues, loss scaling ----
 * gk_gemm is gk_sgemm generalised: A and B of type ab_t (f32, f16 or bf16), C of type c_t
 * (f32, or ab_t), accumulation in f32 always, and an epilogue applied to the product before
 * it is stored. On a card: cuBLASLt (libcublasLt, dlopen) with the epilogue fused into the
 * product where cuBLASLt has it, cuBLAS sgemm for plain f32; on AMD rocBLAS gemm_ex and
 * epilogue kernels; on the cpu the f32 product of the exactly widened inputs (OpenBLAS) and
 * the epilogue in C, rounded once to c_t: the reference. */
typedef enum {
	GK_EPI_NONE = 0,
	GK_EPI_BIAS = 1,      /* C[i][j] = C[i][j] + bias[i] (bias: m values of c_t) */
	GK_EPI_RELU_BIAS = 2, /* C[i][j] = max(C[i][j] + bias[i], 0) */
	GK_EPI_BGRADB = 3,    /* also bias[j] = sum over k of op(B)[k][j] (n values of c_t) */
	GK_EPI_DRELU = 4,     /* C[i][j] = aux[i][j] > 0 ? C[i][j] : 0 (aux: m x n, ldc, c_t) */
} gk_epilogue_t;

typedef enum {
	GK_MATH_DEFAULT = 0, /* f32: IEEE f32 products (PyTorch's default) */
	GK_MATH_TF32 = 1,    /* f32 inputs rounded to TF32 on the tensor cores (cpu: f32) */
} gk_math_t;

typedef struct {
	int trans_a, trans_b, m, n, k; /* column-major, as gk_sgemm */
	gk_dtype_t ab_t, c_t;
	float alpha, beta;
	const void *a;
	int lda;
	const void *b;
	int ldb;
	void *c;
	int ldc;
	gk_epilogue_t epi;
	void *bias;	 /* BIAS, RELU_BIAS (read), BGRADB (written) */
	const void *aux; /* DRELU: the forward's activation, m x n with leading dimension ldc */
	gk_math_t math;
} gk_gemm_t;

/* C = epilogue(alpha * op(A) op(B) + beta * C). 0 / -1 (ENOTSUP: a type pair or epilogue the
 * backend cannot do, e.g. half types on a card whose cuBLASLt is missing). */
int gk_gemm(gk_backend_t *b, const gk_gemm_t *p, gk_stream_t *s);

/* Loss scaling on the device (PyTorch's GradScaler, with no read-back): one of these in
 * device memory (gk_dev_alloc, set with gk_copy) is read and written only by kernels. */
typedef struct {
	float scale;	 /* the loss scale S: the loss gradient is multiplied by it */
	uint32_t found;	 /* set by gk_find_nonfinite(..., &amp->found), cleared by gk_amp_update */
	int32_t good;	 /* good steps in a row */
	int32_t steps;	 /* optimizer steps applied (AdamW's t) */
	int32_t skipped; /* steps skipped for Inf/NaN */
	int32_t window;	 /* good steps before S doubles */
	int32_t dynamic; /* 0: S never changes (bf16, f32) */
	float min, max;	 /* bounds of S */
	float beta1, beta2; /* AdamW's, for: */
	float bc1, bc2;	    /* 1 - beta^(steps+1), kept by gk_amp_update (gk_amp_init sets) */
} gk_amp_t;

/* A fresh state (host copy): scale INITIAL, dynamic or not, WINDOW, AdamW's betas. */
void gk_amp_init(gk_amp_t *amp, float initial, int dynamic, int window, float beta1, float beta2);

/* buf[i] *= amp->scale (t f32, f16 or bf16; in place). */
int gk_amp_scale(gk_backend_t *b, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
		 gk_stream_t *s);
/* One fused AdamW step over the whole flat parameter vector (every layer's tensors in one
 * launch) with the gradient times p->grad_scale / amp->scale, bias corrections from
 * t = amp->steps + 1, skipped entirely while amp->found is set; writes the
 * f32 master W, M, V and, when WC is not NULL, the compute copy WC (type wc_t: f16 or bf16)
 * rounded from the new W. p->step is not used: t is amp->steps + 1 (amp->bc1, amp->bc2). */
int gk_adamw_amp(gk_backend_t *b, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		 float *v, gk_dtype_t wc_t, void *wc, gk_dtype_t grad_t, const void *grad, size_t n,
		 gk_stream_t *s);
/* After the step: found -> skipped++, good = 0, S halved (dynamic, not below min); else
 * steps++, and after window good steps S doubled (not above max); found cleared. One
 * thread on a card. */
int gk_amp_update(gk_backend_t *b, gk_amp_t *amp, gk_stream_t *s);
/* The same rule on a host copy (what the kernel runs; for tests and the cpu backend). */
void gk_amp_rule(gk_amp_t *amp);

/* ---- graphs (CUDA Graphs / HIP graphs): the work queued on S between begin and end,
 * recorded once and replayed by one launch. S must be a stream of gk_stream_create (not
 * NULL). The cpu backend has none (ENOTSUP). */
typedef struct gk_graph gk_graph_t;
int gk_graph_begin(gk_backend_t *b, gk_stream_t *s);
int gk_graph_end(gk_backend_t *b, gk_stream_t *s, gk_graph_t **g);
int gk_graph_launch(gk_backend_t *b, gk_graph_t *g, gk_stream_t *s);
int gk_graph_destroy(gk_backend_t *b, gk_graph_t **g);

/* ---- language-model layers (docs/llm.md) ----
 * The pieces of a llama-family transformer's forward pass. Activations are f32, row-major,
 * one row per token. Weights keep the type they have in the GGUF file (gk_qtype_t: f32, f16,
 * bf16 or one of GGUF's block formats) and are dequantized in registers, never expanded in
 * memory. Layouts of the block formats: kernels/gk_qblock.h. Every call may run on a stream;
 * int arrays handed to these kernels (ids, positions, slots, block tables) are device memory.
 * Results agree with the cpu backend within the bounds docs/kernels.md states (sums are not in
 * the same order on a card), not bit for bit. */

/* Weight types, numbered as GGUF's ggml_type. */
typedef enum {
	GK_Q_F32 = 0,
	GK_Q_F16 = 1,
	GK_Q_Q4_0 = 2,
	GK_Q_Q8_0 = 8,
	GK_Q_Q4_K = 12,
	GK_Q_Q6_K = 14,
	GK_Q_BF16 = 30,
} gk_qtype_t;

/* 1 if T is one of the types above, else 0. */
int gk_qtype_valid(int t);
const char *gk_qtype_name(gk_qtype_t t); /* "f32", "q4_0", "q4_K", ... */
/* Values in one block (1 for f32/f16/bf16, 32 for q4_0/q8_0, 256 for q4_K/q6_K), bytes in one
 * block, and bytes in a row of N values (0 if N is not a multiple of the block). */
int gk_qtype_block(gk_qtype_t t);
size_t gk_qtype_block_bytes(gk_qtype_t t);
size_t gk_qtype_row_bytes(gk_qtype_t t, size_t n);

/* Y[i][r] = sum_c W[r][c] * X[i][c] for i < N tokens, r < ROWS: W is ROWS rows of COLS values of
 * type WT (row r at w + r * gk_qtype_row_bytes(WT, COLS)), X is N x COLS f32 (leading
 * dimension COLS), Y is N x ROWS f32 (leading dimension LDY >= ROWS). N = 1 is the decode
 * step's matrix-vector product; larger N the prefill's matrix-matrix product. COLS must be a
 * multiple of WT's block. */
int gk_qmatmul(gk_backend_t *b, gk_qtype_t wt, const void *w, int rows, int cols, const float *x,
	       int n, float *y, int ldy, gk_stream_t *s);
/* Rows of an embedding table: out[i][:] = dequant(W[ids[i]]) for i < N (W: ROWS rows of COLS
 * values of type WT). An id outside 0..ROWS-1 gives a row of NaN, never a read outside W. */
int gk_qget_rows(gk_backend_t *b, gk_qtype_t wt, const void *w, int rows, int cols,
		 const int32_t *ids, int n, float *out, gk_stream_t *s);
/* y[i][:] = x[i][:] / sqrt(mean(x[i][:]^2) + eps) * w[:] for i < N rows of DIM (y may be x). */
int gk_rmsnorm(gk_backend_t *b, float *y, const float *x, const float *w, int n, int dim, float eps,
	       gk_stream_t *s);
/* Rotary position embedding in place on X: N tokens of NHEADS heads of HEAD_DIM values
 * (token i's heads at x + i * NHEADS * HEAD_DIM), token i at position POS[i]. The first
 * ROT_DIM values of each head rotate: pair j (j < ROT_DIM/2) by the angle
 * pos * FREQ_SCALE * FREQ_BASE^(-2j/ROT_DIM) (FREQ_SCALE: 1, or 1/factor for linear scaling). NEOX
 * 0: pairs are adjacent values (2j, 2j+1), llama's GGUF layout; 1: pairs are (j, j + rot_dim/2),
 * qwen2's and GPT-NeoX's. */
int gk_rope(gk_backend_t *b, float *x, const int32_t *pos, int n, int nheads, int head_dim,
	    int rot_dim, float freq_base, float freq_scale, int neox, gk_stream_t *s);
/* out[i] = silu(gate[i]) * up[i] for i < N (out may be gate or up). */
int gk_swiglu(gk_backend_t *b, float *out, const float *gate, const float *up, size_t n,
	      gk_stream_t *s);
/* y[i] += x[i] for i < N (the residual). */
int gk_add(gk_backend_t *b, float *y, const float *x, size_t n, gk_stream_t *s);
/* x[i][c] += bias[c] for i < N rows of COLS (qwen2's q/k/v biases). */
int gk_add_bias(gk_backend_t *b, float *x, const float *bias, int n, int cols, gk_stream_t *s);

/* The paged KV cache: a pool of blocks, each BLOCK_SIZE token slots of ROW values (n_kv_heads *
 * head_dim) of type KV_T (GK_F32 or GK_F16); slot s is at s * ROW elements (block s / BLOCK_SIZE,
 * place s % BLOCK_SIZE). One pool for K and one for V per layer. */
/* cache[slots[i]][:] = src[i][:] for i < N rows of ROW f32 values (rounded to KV_T); a
 * negative slot is skipped (a padding row). */
int gk_kv_write(gk_backend_t *b, gk_dtype_t kv_t, void *cache, const int32_t *slots,
		const float *src, int n, int row, gk_stream_t *s);

typedef struct {
	int nseq; /* sequences in the batch */
	int ntok; /* query rows in all: q_start[nseq] */
	const int32_t
	    *q_start; /* nseq + 1 values: sequence j's rows are q_start[j]..q_start[j+1]-1 */
	const int32_t *ctx_len;	    /* nseq values: tokens of sequence j in the cache, the new ones
				       included; row q_start[j] + t is at position
				       ctx_len[j] - (q_start[j+1] - q_start[j]) + t and sees the
				       positions up to its own (causal) */
	const int32_t *block_table; /* nseq x max_blocks: sequence j's blocks in order */
	int max_blocks;
	int block_size;
	int n_heads, n_kv_heads, head_dim; /* n_heads a multiple of n_kv_heads (grouped query) */
	float scale;			   /* usually 1/sqrt(head_dim) */
	gk_dtype_t kv_t;		   /* GK_F32 or GK_F16 */
	const void *k_cache, *v_cache;
	const float *q; /* ntok x n_heads x head_dim */
	float *out;	/* ntok x n_heads x head_dim */
} gk_attn_t;

/* Causal attention of every query row over its sequence's cached keys and values, in tiles
 * with an online softmax (no score matrix is ever stored): one kernel for prefill (many rows
 * of a sequence) and decode (one row each, many sequences). head_dim <= 256. A sequence whose
 * ctx_len is below its row count or above max_blocks * block_size gets rows of NaN, never a
 * read outside its block table. */
int gk_attention(gk_backend_t *b, const gk_attn_t *p, gk_stream_t *s);

/* ---- helpers (host, no backend) ---- */
size_t gk_dtype_size(gk_dtype_t t);
const char *gk_dtype_name(gk_dtype_t t);
uint16_t gk_f32_to_f16(float f);
float gk_f16_to_f32(uint16_t h);
uint16_t gk_f32_to_bf16(float f);
float gk_bf16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif
#endif
