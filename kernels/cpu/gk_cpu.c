/* gk_cpu.c - the cpu backend: plain C, synchronous, and the reference the GPU backends
 * are tested against. "Device" memory is host memory; streams and events are tokens. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/gk_backend.h"
#include "kernels/cpu/gk_cpu.h"
#include "kernels/gk_scalar.h"

#ifdef GK_HAVE_CBLAS
#include <cblas.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define GK_HAVE_F16C_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#define FMA_THREADS 256
#define FMA_CHAINS  16

typedef struct {
	char *err;
	int use_blas;
	volatile uint64_t sink;
} cpu_t;

/* x86 F16C converts 8 values an instruction, rounding as gk_sw_f32_to_f16 does (nearest
 * even, overflow to inf, NaN kept quiet with its top payload bits); chosen at open when
 * the processor has it, unless GPOOL_KERNELS_NO_F16C is set. */
static int use_f16c;

struct gk_event {
	struct timespec ts;
};

int gk_cpu_fail(void *ctx, int e, const char *fmt, ...)
{
	cpu_t *c = ctx;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, GK_ERRLEN, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static int cpu_open(int device, char *err, void **ctx)
{
	cpu_t *c;
	if (device != 0) {
		snprintf(err, GK_ERRLEN, "cpu backend has only device 0, not %d", device);
		errno = ENODEV;
		return -1;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		snprintf(err, GK_ERRLEN, "out of memory");
		return -1;
	}
	c->err = err;
#ifdef GK_HAVE_CBLAS
	c->use_blas = !getenv("GPOOL_KERNELS_NO_BLAS");
#endif
#ifdef GK_HAVE_F16C_PATH
	/* F16C from CPUID leaf 1 (clang 14's __builtin_cpu_supports has no "f16c"); "avx" also
	 * says the OS saves the AVX registers */
	unsigned int a, b, cx, d;
	use_f16c = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &cx, &d) &&
		   (cx & bit_F16C) && !getenv("GPOOL_KERNELS_NO_F16C");
#endif
	*ctx = c;
	return 0;
}

static void cpu_close(void *ctx)
{
	free(ctx);
}

/* What the kernel says can be had without swapping (MemAvailable), else the free pages. */
static size_t mem_available(size_t total)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb > 0)
		return (size_t)kb * 1024;
	long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	return pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : total;
}

static int cpu_device_info(void *ctx, gk_device_info_t *info)
{
	cpu_t *c = ctx;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	snprintf(info->backend, sizeof(info->backend), "cpu");
	snprintf(info->name, sizeof(info->name), "cpu");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(info->name, sizeof(info->name), "%s", colon + 2);
			info->name[strcspn(info->name, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
	info->multiprocessors = (int)sysconf(_SC_NPROCESSORS_ONLN);
	info->total_mem = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
	info->free_mem = mem_available(info->total_mem);
	snprintf(info->gemm_impl, sizeof(info->gemm_impl), "%s",
		 c->use_blas ? "openblas" : "c-loop");
	return 0;
}

static int cpu_alloc(void *ctx, size_t bytes, void **p)
{
	int rc = posix_memalign(p, 256, bytes);
	if (rc)
		return gk_cpu_fail(ctx, rc, "cannot allocate %zu bytes", bytes);
	return 0;
}

static int cpu_free(void *ctx, void *p)
{
	(void)ctx;
	free(p);
	return 0;
}

static int cpu_memset(void *ctx, void *dst, int byte, size_t bytes, gk_stream_t *s)
{
	(void)ctx, (void)s;
	memset(dst, byte, bytes);
	return 0;
}

static int cpu_stream_create(void *ctx, gk_stream_t **s)
{
	if (!(*s = malloc(1)))
		return gk_cpu_fail(ctx, ENOMEM, "out of memory");
	return 0;
}

static int cpu_stream_destroy(void *ctx, gk_stream_t *s)
{
	(void)ctx;
	free(s);
	return 0;
}

static int cpu_stream_sync(void *ctx, gk_stream_t *s)
{
	(void)ctx, (void)s;
	return 0;
}

static int cpu_event_create(void *ctx, gk_event_t **e)
{
	if (!(*e = calloc(1, sizeof(**e))))
		return gk_cpu_fail(ctx, ENOMEM, "out of memory");
	return 0;
}

static int cpu_event_destroy(void *ctx, gk_event_t *e)
{
	(void)ctx;
	free(e);
	return 0;
}

static int cpu_event_record(void *ctx, gk_event_t *e, gk_stream_t *s)
{
	(void)ctx, (void)s;
	clock_gettime(CLOCK_MONOTONIC, &e->ts);
	return 0;
}

static int cpu_event_query(void *ctx, gk_event_t *e)
{
	(void)ctx;
	(void)e;
	return 1; /* every call on the cpu backend is synchronous */
}

static int cpu_is_device_ptr(void *ctx, const void *p)
{
	(void)ctx;
	(void)p;
	return 0;
}

static int cpu_event_sync(void *ctx, gk_event_t *e)
{
	(void)ctx, (void)e;
	return 0;
}

static int cpu_wait_event(void *ctx, gk_stream_t *s, gk_event_t *e)
{
	(void)ctx, (void)s, (void)e;
	return 0;
}

static int cpu_elapsed(void *ctx, gk_event_t *a, gk_event_t *b, float *ms)
{
	(void)ctx;
	*ms = (float)((double)(b->ts.tv_sec - a->ts.tv_sec) * 1e3 +
		      (double)(b->ts.tv_nsec - a->ts.tv_nsec) / 1e6);
	return 0;
}

static int cpu_copy(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind)
{
	(void)ctx, (void)kind;
	memmove(dst, src, bytes);
	return 0;
}

static int cpu_copy_async(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind,
			  gk_stream_t *s)
{
	(void)s;
	return cpu_copy(ctx, dst, src, bytes, kind);
}

/* ---- elementwise ---- */

/* Blocks of BLK elements: each dtype and op switch is taken once a block, and the inner
 * loops are simple enough for the compiler to vectorize. Reading every source's block
 * before storing the destination's keeps in-place calls correct. */
#define BLK 1024

#ifdef GK_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static void f16c_to_f32(const uint16_t *h, float *out, size_t m)
{
	size_t j = 0;
	for (; j + 8 <= m; j += 8)
		_mm256_storeu_ps(out + j,
				 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + j))));
	for (; j < m; j++)
		out[j] = gk_sw_f16_to_f32(h[j]);
}

__attribute__((target("avx,f16c"))) static void f16c_from_f32(const float *in, uint16_t *h,
							      size_t m)
{
	size_t j = 0;
	for (; j + 8 <= m; j += 8)
		_mm_storeu_si128((__m128i *)(h + j),
				 _mm256_cvtps_ph(_mm256_loadu_ps(in + j),
						 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	for (; j < m; j++)
		h[j] = gk_sw_f32_to_f16(in[j]);
}
#endif

static void load_block(gk_dtype_t t, const void *p, size_t i0, size_t m, float *out)
{
	switch (t) {
	case GK_F16: {
		const uint16_t *h = (const uint16_t *)p + i0;
#ifdef GK_HAVE_F16C_PATH
		if (use_f16c) {
			f16c_to_f32(h, out, m);
			break;
		}
#endif
		for (size_t j = 0; j < m; j++)
			out[j] = gk_sw_f16_to_f32(h[j]);
		break;
	}
	case GK_BF16: {
		const uint16_t *h = (const uint16_t *)p + i0;
		for (size_t j = 0; j < m; j++)
			out[j] = gk_sw_bf16_to_f32(h[j]);
		break;
	}
	default:
		memcpy(out, (const float *)p + i0, m * sizeof(float));
		break;
	}
}

static void store_block(gk_dtype_t t, void *p, size_t i0, size_t m, const float *in)
{
	switch (t) {
	case GK_F16: {
		uint16_t *h = (uint16_t *)p + i0;
#ifdef GK_HAVE_F16C_PATH
		if (use_f16c) {
			f16c_from_f32(in, h, m);
			break;
		}
#endif
		for (size_t j = 0; j < m; j++)
			h[j] = gk_sw_f32_to_f16(in[j]);
		break;
	}
	case GK_BF16: {
		uint16_t *h = (uint16_t *)p + i0;
		for (size_t j = 0; j < m; j++)
			h[j] = gk_sw_f32_to_bf16(in[j]);
		break;
	}
	default:
		memcpy((float *)p + i0, in, m * sizeof(float));
		break;
	}
}

static void reduce_f(gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs, int nsrc,
		     size_t n)
{
	float acc[BLK], in[BLK];
	for (size_t i0 = 0; i0 < n; i0 += BLK) {
		size_t m = n - i0 < BLK ? n - i0 : BLK;
		load_block(t, srcs[0], i0, m, acc);
		for (int k = 1; k < nsrc; k++) {
			load_block(t, srcs[k], i0, m, in);
			if (op == GK_SUM || op == GK_AVG)
				for (size_t j = 0; j < m; j++)
					acc[j] = acc[j] + in[j];
			else
				for (size_t j = 0; j < m; j++)
					acc[j] = gk_combine_f(op, acc[j], in[j]);
		}
		if (op == GK_AVG)
			for (size_t j = 0; j < m; j++)
				acc[j] = acc[j] / (float)nsrc;
		store_block(t, dst, i0, m, acc);
	}
}

static void reduce_d(gk_redop_t op, double *dst, const void *const *srcs, int nsrc, size_t n)
{
	double acc[BLK];
	for (size_t i0 = 0; i0 < n; i0 += BLK) {
		size_t m = n - i0 < BLK ? n - i0 : BLK;
		memcpy(acc, (const double *)srcs[0] + i0, m * sizeof(double));
		for (int k = 1; k < nsrc; k++) {
			const double *in = (const double *)srcs[k] + i0;
			if (op == GK_SUM || op == GK_AVG)
				for (size_t j = 0; j < m; j++)
					acc[j] = acc[j] + in[j];
			else
				for (size_t j = 0; j < m; j++)
					acc[j] = gk_combine_d(op, acc[j], in[j]);
		}
		if (op == GK_AVG)
			for (size_t j = 0; j < m; j++)
				acc[j] = acc[j] / (double)nsrc;
		memcpy(dst + i0, acc, m * sizeof(double));
	}
}

static void reduce_i(gk_redop_t op, int32_t *dst, const void *const *srcs, int nsrc, size_t n)
{
	long long acc[BLK];
	for (size_t i0 = 0; i0 < n; i0 += BLK) {
		size_t m = n - i0 < BLK ? n - i0 : BLK;
		const int32_t *s0 = (const int32_t *)srcs[0] + i0;
		for (size_t j = 0; j < m; j++)
			acc[j] = s0[j];
		for (int k = 1; k < nsrc; k++) {
			const int32_t *in = (const int32_t *)srcs[k] + i0;
			for (size_t j = 0; j < m; j++)
				acc[j] = gk_combine_i(op, acc[j], in[j]);
		}
		for (size_t j = 0; j < m; j++)
			dst[i0 + j] = gk_i64_to_i32_wrap(op == GK_AVG ? acc[j] / nsrc : acc[j]);
	}
}

static int cpu_reduce(void *ctx, gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs,
		      int nsrc, size_t n, gk_stream_t *s)
{
	(void)ctx, (void)s;
	if (t == GK_F32 && op == GK_SUM && nsrc == 2) {
		/* the allreduce's local step: straight through, no block conversion (the same
		 * single rounding as the general path) */
		float *d = dst;
		const float *a = srcs[0], *b = srcs[1];
		for (size_t i = 0; i < n; i++)
			d[i] = a[i] + b[i];
		return 0;
	}
	if (t == GK_F64)
		reduce_d(op, dst, srcs, nsrc, n);
	else if (t == GK_I32)
		reduce_i(op, dst, srcs, nsrc, n);
	else
		reduce_f(t, op, dst, srcs, nsrc, n);
	return 0;
}

static int cpu_cast(void *ctx, gk_dtype_t dt, void *dst, gk_dtype_t st, const void *src, size_t n,
		    gk_stream_t *s)
{
	float tmp[BLK];
	(void)ctx, (void)s;
	for (size_t i0 = 0; i0 < n; i0 += BLK) {
		size_t m = n - i0 < BLK ? n - i0 : BLK;
		load_block(st, src, i0, m, tmp);
		store_block(dt, dst, i0, m, tmp);
	}
	return 0;
}

static int cpu_scale(void *ctx, gk_dtype_t t, void *dst, const void *src, double alpha, size_t n,
		     gk_stream_t *s)
{
	float a = (float)alpha, tmp[BLK];
	(void)ctx, (void)s;
	if (t == GK_F64) {
		for (size_t i = 0; i < n; i++)
			((double *)dst)[i] = ((const double *)src)[i] * alpha;
		return 0;
	}
	for (size_t i0 = 0; i0 < n; i0 += BLK) {
		size_t m = n - i0 < BLK ? n - i0 : BLK;
		load_block(t, src, i0, m, tmp);
		for (size_t j = 0; j < m; j++)
			tmp[j] = tmp[j] * a;
		store_block(t, dst, i0, m, tmp);
	}
	return 0;
}

/* Whether any element of BUF is Inf or NaN, as gk_*_bits_nonfinite say: one pass a dtype
 * that ORs the tests (no early exit, so the compiler vectorizes it). */
#define NONFINITE_SCAN(type, test)                                                                 \
	do {                                                                                       \
		const type *u = buf;                                                               \
		for (size_t i = 0; i < n; i++)                                                     \
			bad |= test(u[i]);                                                         \
	} while (0)

static int cpu_find_nonfinite(void *ctx, gk_dtype_t t, const void *buf, size_t n, uint32_t *dflag,
			      gk_stream_t *s)
{
	(void)ctx, (void)s;
	int bad = 0;
	if (t == GK_F16)
		NONFINITE_SCAN(uint16_t, gk_f16_bits_nonfinite);
	else if (t == GK_BF16)
		NONFINITE_SCAN(uint16_t, gk_bf16_bits_nonfinite);
	else if (t == GK_F64)
		NONFINITE_SCAN(uint64_t, gk_f64_bits_nonfinite);
	else
		NONFINITE_SCAN(uint32_t, gk_f32_bits_nonfinite);
	if (bad)
		*dflag = 1;
	return 0;
}

static int cpu_sgd(void *ctx, const gk_sgd_t *p, float *w, float *v, gk_dtype_t gt,
		   const void *grad, size_t n, gk_stream_t *s)
{
	(void)ctx, (void)s;
	if (gt == GK_F32) { /* the common case, as a loop the compiler vectorizes */
		const float *g = grad;
		for (size_t i = 0; i < n; i++)
			gk_sgd_step(p->lr, p->momentum, p->weight_decay, p->grad_scale, p->nesterov,
				    g[i], &w[i], &v[i]);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		gk_sgd_step(p->lr, p->momentum, p->weight_decay, p->grad_scale, p->nesterov,
			    gk_cpu_ld(gt, grad, i), &w[i], &v[i]);
	return 0;
}

static int cpu_adamw(void *ctx, const gk_adamw_t *p, float bc1, float bc2, float *w, float *m,
		     float *v, gk_dtype_t gt, const void *grad, size_t n, gk_stream_t *s)
{
	(void)ctx, (void)s;
	if (gt == GK_F32) { /* vectorized: sqrtf without errno (-fno-math-errno), same bits */
		const float *g = grad;
		for (size_t i = 0; i < n; i++)
			gk_adamw_step(p->lr, p->beta1, p->beta2, p->eps, p->weight_decay,
				      p->grad_scale, bc1, bc2, g[i], &w[i], &m[i], &v[i]);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		gk_adamw_step(p->lr, p->beta1, p->beta2, p->eps, p->weight_decay, p->grad_scale,
			      bc1, bc2, gk_cpu_ld(gt, grad, i), &w[i], &m[i], &v[i]);
	return 0;
}

/* ---- memory test, bandwidth, throughput ---- */

static int cpu_mt_step(void *ctx, uint32_t *buf, size_t nwords, const gk_mt_word_t *check,
		       const gk_mt_word_t *write, uint64_t *errors)
{
	uint64_t bad = 0;
	(void)ctx;
	for (size_t i = 0; i < nwords; i++) {
		if (check &&
		    buf[i] != gk_mt_word(check->kind, check->value, check->seed, check->invert, i))
			bad++;
		if (write)
			buf[i] =
			    gk_mt_word(write->kind, write->value, write->seed, write->invert, i);
	}
	*errors += bad;
	return 0;
}

static int cpu_bw_read(void *ctx, const void *buf, size_t bytes, gk_stream_t *s)
{
	cpu_t *c = ctx;
	const uint64_t *p = buf;
	uint64_t acc = 0;
	(void)s;
	for (size_t i = 0; i < bytes / 8; i++)
		acc ^= p[i];
	c->sink = acc;
	return 0;
}

static int cpu_bw_write(void *ctx, void *buf, size_t bytes, gk_stream_t *s)
{
	(void)ctx, (void)s;
	memset(buf, 0x5a, bytes);
	return 0;
}

static int cpu_bw_copy(void *ctx, void *dst, const void *src, size_t bytes, gk_stream_t *s)
{
	(void)ctx, (void)s;
	memcpy(dst, src, bytes);
	return 0;
}

static size_t cpu_fma_scratch_bytes(void *ctx)
{
	(void)ctx;
	return FMA_THREADS * FMA_CHAINS * sizeof(float);
}

static int cpu_fma(void *ctx, gk_dtype_t t, void *buf, int iters, double *flops, gk_stream_t *s)
{
	float *out = buf;
	(void)ctx, (void)s, (void)t;
	for (int th = 0; th < FMA_THREADS; th++) {
		float x[FMA_CHAINS];
		const float a = 0.999f, b = 0.001f * (float)(th + 1);
		for (int j = 0; j < FMA_CHAINS; j++)
			x[j] = (float)j;
		for (int it = 0; it < iters; it++)
			for (int j = 0; j < FMA_CHAINS; j++)
				x[j] = x[j] * a + b;
		for (int j = 0; j < FMA_CHAINS; j++)
			out[th * FMA_CHAINS + j] = x[j];
	}
	*flops = 2.0 * FMA_THREADS * FMA_CHAINS * (double)iters;
	return 0;
}

int gk_cpu_sgemm(void *ctx, int ta, int tb, int m, int n, int k, float alpha, const float *a,
		 int lda, const float *b, int ldb, float beta, float *c, int ldc, gk_stream_t *s)
{
	cpu_t *cp = ctx;
	(void)s, (void)cp;
#ifdef GK_HAVE_CBLAS
	if (cp->use_blas) {
		cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans,
			    tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
			    ldc);
		return 0;
	}
#endif
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			double acc = 0;
			for (int l = 0; l < k; l++) {
				float av = ta ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
				float bv = tb ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];
				acc += (double)av * bv;
			}
			float *cij = &c[i + (size_t)j * ldc];
			*cij = alpha * (float)acc + (beta == 0.0f ? 0.0f : beta * *cij);
		}
	}
	return 0;
}

/* ---- neural-network layers ---- */

static int cpu_bias_act(void *ctx, float *y, const float *bias, size_t rows, size_t cols,
			gk_act_t act, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t r = 0; r < rows; r++) {
		float *row = y + r * cols;
		for (size_t c = 0; c < cols; c++)
			row[c] = gk_bias_act_step(row[c], bias[c], act == GK_ACT_RELU);
	}
	return 0;
}

static int cpu_relu_grad(void *ctx, float *dy, const float *y, size_t n, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t i = 0; i < n; i++)
		dy[i] = gk_relu_grad_step(dy[i], y[i]);
	return 0;
}

static int cpu_bias_grad(void *ctx, const float *dy, float *db, size_t rows, size_t cols,
			 float alpha, gk_stream_t *s)
{
	(void)ctx, (void)s;
	/* column sums in the order of gk_scalar.h (runs of GK_BIAS_GRAD_CHUNK rows, then the
	 * runs' sums), as the GPU kernel adds them; a tile of columns at a time, rows inner so
	 * that the adds vectorize across columns */
	enum { TILE = 256 };
	float part[TILE];
	for (size_t c0 = 0; c0 < cols; c0 += TILE) {
		size_t w = cols - c0 < TILE ? cols - c0 : TILE;
		float *acc = db + c0;
		for (size_t c = 0; c < w; c++)
			acc[c] = 0.0f;
		for (size_t r0 = 0; r0 < rows; r0 += GK_BIAS_GRAD_CHUNK) {
			size_t r1 = rows - r0 < GK_BIAS_GRAD_CHUNK ? rows : r0 + GK_BIAS_GRAD_CHUNK;
			for (size_t c = 0; c < w; c++)
				part[c] = 0.0f;
			for (size_t r = r0; r < r1; r++) {
				const float *row = dy + r * cols + c0;
				for (size_t c = 0; c < w; c++)
					part[c] = part[c] + row[c];
			}
			for (size_t c = 0; c < w; c++)
				acc[c] = acc[c] + part[c];
		}
		for (size_t c = 0; c < w; c++)
			acc[c] = alpha * acc[c];
	}
	return 0;
}

static int cpu_softmax_xent(void *ctx, const float *z, const int32_t *labels, size_t rows,
			    size_t cols, float scale, float *loss, float *dz, gk_stream_t *s)
{
	(void)ctx, (void)s;
	for (size_t r = 0; r < rows; r++) {
		float l = gk_softmax_xent_row(z + r * cols, labels[r], cols, scale,
					      dz ? dz + r * cols : NULL);
		if (loss)
			loss[r] = l;
	}
	return 0;
}

const struct gk_ops gk_cpu_ops = {
    .abi = GK_ABI_VERSION,
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .device_info = cpu_device_info,
    .dev_alloc = cpu_alloc,
    .dev_free = cpu_free,
    .host_alloc = cpu_alloc,
    .host_free = cpu_free,
    .memset = cpu_memset,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_sync = cpu_stream_sync,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_sync = cpu_event_sync,
    .stream_wait_event = cpu_wait_event,
    .event_elapsed = cpu_elapsed,
    .copy_async = cpu_copy_async,
    .copy = cpu_copy,
    .reduce = cpu_reduce,
    .cast = cpu_cast,
    .scale = cpu_scale,
    .find_nonfinite = cpu_find_nonfinite,
    .sgd = cpu_sgd,
    .adamw = cpu_adamw,
    .mt_step = cpu_mt_step,
    .bw_read = cpu_bw_read,
    .bw_write = cpu_bw_write,
    .bw_copy = cpu_bw_copy,
    .fma_scratch_bytes = cpu_fma_scratch_bytes,
    .fma = cpu_fma,
    .sgemm = gk_cpu_sgemm,
    .event_query = cpu_event_query,
    .is_device_ptr = cpu_is_device_ptr,
    .bias_act = cpu_bias_act,
    .relu_grad = cpu_relu_grad,
    .bias_grad = cpu_bias_grad,
    .softmax_xent = cpu_softmax_xent,
    .gemm = gk_cpu_gemm,
    .amp_scale = gk_cpu_amp_scale,
    .adamw_amp = gk_cpu_adamw_amp,
    .amp_update = gk_cpu_amp_update,
    .qmatmul = gk_cpu_qmatmul,
    .qget_rows = gk_cpu_qget_rows,
    .rmsnorm = gk_cpu_rmsnorm,
    .rope = gk_cpu_rope,
    .swiglu = gk_cpu_swiglu,
    .add = gk_cpu_add,
    .add_bias = gk_cpu_add_bias,
    .kv_write = gk_cpu_kv_write,
    .attention = gk_cpu_attention,
};
