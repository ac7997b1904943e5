/* gk_cpu_qdot.c - qmatmul on x86-64's AVX2, FMA and F16C units, chosen at run time: the backend
 * is built for baseline x86-64 so that one build runs anywhere (llama.cpp ships one build per
 * processor family for the same reason), and the reference loop's SSE2 sums without fused
 * multiply-adds left the CPU rank several times behind llama.cpp (docs/benchmarks.md).
 *
 * Few tokens (decode): each weight block is widened in registers and dotted with the
 * activations there, so a token reads every weight byte once from memory and writes no
 * dequantized copy (decode is bound by that read). Many tokens (prefill): a tile of 8 rows is
 * widened once (by the vector loops where a type has one, else the reference dequantizer), then a
 * kernel of 4 rows by 3 tokens (12 sums in registers, 7 loads for 12 fused multiply-adds) runs over
 * it. Weight values are exactly the reference's (gk_qblock.h); only the order of the f32 sums and
 * their fused rounding differ, well inside the bound gk-test holds qmatmul to (1e-4 of the output's
 * scale). GPOOL_KERNELS_VEC=0 turns the path off (the reference loop runs), to compare the two. */
#include "kernels/cpu/gk_cpu_qdot.h"

#include "kernels/gk_qblock.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define VEC	__attribute__((target("avx2,fma,f16c")))
#define INLINE	__attribute__((always_inline)) inline
#define SMALL_N 4 /* up to this many tokens: fused dots, the row re-read from L1 per token */
#define TILE	8 /* rows widened together for many tokens (BUF's size) */

static int vec_ok;
static pthread_once_t vec_once = PTHREAD_ONCE_INIT;

static void vec_probe(void)
{
	const char *e = getenv("GPOOL_KERNELS_VEC"); /* 0: the reference loop (comparisons) */
	unsigned a, b, c, d;
	/* F16C by cpuid (leaf 1, ECX bit 29): clang's __builtin_cpu_supports has no "f16c" */
	int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
	__builtin_cpu_init();
	vec_ok = !(e && !strcmp(e, "0")) && f16c && __builtin_cpu_supports("avx2") &&
		 __builtin_cpu_supports("fma");
}

static VEC INLINE float hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* eight signed bytes widened to f32 and scaled by D: (float)q * d, as the reference */
static VEC INLINE __m256 widen8(__m128i q, __m256 d)
{
	return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
}

typedef float (*dot_f)(const void *w, const float *x, int cols);

/* the nibbles of a q4_0 block as four vectors of 8 (values 0-7, 8-15, 16-23, 24-31), minus 8,
 * widened and scaled by D: two widening loads (not a shuffle per 8 values: shuffles bound it) */
static VEC INLINE void q4_0_widen(const gk_block_q4_0_t *bl, __m256 d, __m256 w[4])
{
	const __m256i m4 = _mm256_set1_epi32(0xF), e8 = _mm256_set1_epi32(8);
	__m256i b0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)bl->qs));
	__m256i b1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(bl->qs + 8)));
	w[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(b0, m4), e8)), d);
	w[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(b1, m4), e8)), d);
	w[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b0, 4), e8)), d);
	w[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(b1, 4), e8)), d);
}

static VEC float dot_q4_0(const void *w, const float *x, int cols)
{
	const gk_block_q4_0_t *bl = w;
	__m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
		       _mm256_setzero_ps()};
	for (int b = 0; b < cols / GK_QK4_0; b++, x += GK_QK4_0) {
		__m256 v[4];
		q4_0_widen(&bl[b], _mm256_set1_ps(_cvtsh_ss(bl[b].d)), v);
		for (int k = 0; k < 4; k++)
			a[k] = _mm256_fmadd_ps(v[k], _mm256_loadu_ps(x + 8 * k), a[k]);
	}
	return hsum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
}

static VEC float dot_q8_0(const void *w, const float *x, int cols)
{
	const gk_block_q8_0_t *bl = w;
	__m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
		       _mm256_setzero_ps()};
	for (int b = 0; b < cols / GK_QK8_0; b++, x += GK_QK8_0) {
		__m256 d = _mm256_set1_ps(_cvtsh_ss(bl[b].d));
		for (int k = 0; k < 4; k++) {
			__m128i q = _mm_loadl_epi64((const __m128i *)(bl[b].qs + 8 * k));
			a[k] = _mm256_fmadd_ps(widen8(q, d), _mm256_loadu_ps(x + 8 * k), a[k]);
		}
	}
	return hsum(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])));
}

static VEC float dot_f16(const void *w, const float *x, int cols)
{
	const uint16_t *h = w;
	__m256 a0 = _mm256_setzero_ps(), a1 = a0;
	int c = 0;
	for (; c + 16 <= cols; c += 16) {
		a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + c))),
				     _mm256_loadu_ps(x + c), a0);
		a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + c + 8))),
				     _mm256_loadu_ps(x + c + 8), a1);
	}
	float s = hsum(_mm256_add_ps(a0, a1));
	for (; c < cols; c++)
		s += _cvtsh_ss(h[c]) * x[c];
	return s;
}

static VEC float dot_f32(const void *w, const float *x, int cols)
{
	const float *f = w;
	__m256 a0 = _mm256_setzero_ps(), a1 = a0;
	int c = 0;
	for (; c + 16 <= cols; c += 16) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(f + c), _mm256_loadu_ps(x + c), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(f + c + 8), _mm256_loadu_ps(x + c + 8), a1);
	}
	float s = hsum(_mm256_add_ps(a0, a1));
	for (; c < cols; c++)
		s += f[c] * x[c];
	return s;
}

/* Rows widened for the tile kernel: the reference's values (the same products), 8 at a time */
static VEC void deq_q4_0(const void *w, int cols, float *out)
{
	const gk_block_q4_0_t *bl = w;
	for (int b = 0; b < cols / GK_QK4_0; b++, out += GK_QK4_0) {
		__m256 v[4];
		q4_0_widen(&bl[b], _mm256_set1_ps(_cvtsh_ss(bl[b].d)), v);
		for (int k = 0; k < 4; k++)
			_mm256_storeu_ps(out + 8 * k, v[k]);
	}
}

static VEC void deq_q8_0(const void *w, int cols, float *out)
{
	const gk_block_q8_0_t *bl = w;
	for (int b = 0; b < cols / GK_QK8_0; b++, out += GK_QK8_0) {
		__m256 d = _mm256_set1_ps(_cvtsh_ss(bl[b].d));
		for (int k = 0; k < 4; k++)
			_mm256_storeu_ps(
			    out + 8 * k,
			    widen8(_mm_loadl_epi64((const __m128i *)(bl[b].qs + 8 * k)), d));
	}
}

static VEC void deq_f16(const void *w, int cols, float *out)
{
	const uint16_t *h = w;
	int c = 0;
	for (; c + 8 <= cols; c += 8)
		_mm256_storeu_ps(out + c,
				 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + c))));
	for (; c < cols; c++)
		out[c] = _cvtsh_ss(h[c]);
}

static const struct {
	gk_qtype_t t;
	dot_f dot;
	gk_cpu_deq_row_f deq; /* NULL: the reference's */
} fused[] = {
    {GK_Q_F32, dot_f32, NULL},
    {GK_Q_F16, dot_f16, deq_f16},
    {GK_Q_Q4_0, dot_q4_0, deq_q4_0},
    {GK_Q_Q8_0, dot_q8_0, deq_q8_0},
};

/* NR rows of f32 weights WR against NX tokens of X (COLS apart) into y[j * ldy + r]: NR * NX
 * sums held in registers (NR and NX are constants where it is inlined) */
static VEC INLINE void tile_kernel(const int NR, const int NX, const float *const *wr,
				   const float *x, int cols, float *y, int ldy)
{
	__m256 acc[4][3];
	for (int r = 0; r < NR; r++)
		for (int j = 0; j < NX; j++)
			acc[r][j] = _mm256_setzero_ps();
	int c = 0;
	for (; c + 8 <= cols; c += 8) {
		__m256 xv[3];
		for (int j = 0; j < NX; j++)
			xv[j] = _mm256_loadu_ps(x + (size_t)j * cols + c);
		for (int r = 0; r < NR; r++) {
			__m256 wv = _mm256_loadu_ps(wr[r] + c);
			for (int j = 0; j < NX; j++)
				acc[r][j] = _mm256_fmadd_ps(wv, xv[j], acc[r][j]);
		}
	}
	for (int r = 0; r < NR; r++)
		for (int j = 0; j < NX; j++) {
			float s = hsum(acc[r][j]);
			for (int k = c; k < cols; k++)
				s += wr[r][k] * x[(size_t)j * cols + k];
			y[(size_t)j * ldy + r] = s;
		}
}

/* rows of f32 weights WR (NR of them) against all N tokens */
static VEC void tile_rows(const float *const *wr, int nr, const float *x, int n, int cols, float *y,
			  int ldy)
{
	int r = 0;
	for (; r + 4 <= nr; r += 4) {
		int i = 0;
		for (; i + 3 <= n; i += 3)
			tile_kernel(4, 3, wr + r, x + (size_t)i * cols, cols,
				    y + (size_t)i * ldy + r, ldy);
		for (; i < n; i++)
			tile_kernel(4, 1, wr + r, x + (size_t)i * cols, cols,
				    y + (size_t)i * ldy + r, ldy);
	}
	for (; r < nr; r++)
		for (int i = 0; i < n; i++)
			tile_kernel(1, 1, wr + r, x + (size_t)i * cols, cols,
				    y + (size_t)i * ldy + r, ldy);
}

int gk_cpu_qmm_rows_vec(gk_qtype_t wt, gk_cpu_deq_row_f deq, const uint8_t *w, size_t row_bytes,
			int r0, int r1, int cols, const float *x, int n, float *y, int ldy,
			float *buf)
{
	pthread_once(&vec_once, vec_probe);
	if (!vec_ok || !deq)
		return -1;
	dot_f dot = NULL;
	for (size_t i = 0; i < sizeof fused / sizeof fused[0]; i++)
		if (fused[i].t == wt) {
			dot = fused[i].dot;
			deq = fused[i].deq ? fused[i].deq : deq;
		}
	if (n <= SMALL_N && dot) {
		for (int r = r0; r < r1; r++)
			for (int i = 0; i < n; i++)
				y[(size_t)i * ldy + r] =
				    dot(w + (size_t)r * row_bytes, x + (size_t)i * cols, cols);
		return 0;
	}
	for (int t0 = r0; t0 < r1; t0 += TILE) {
		int nr = r1 - t0 < TILE ? r1 - t0 : TILE;
		const float *wr[TILE];
		for (int r = 0; r < nr; r++) {
			const uint8_t *src = w + (size_t)(t0 + r) * row_bytes;
			if (wt == GK_Q_F32) { /* already f32: dot the weights where they are */
				wr[r] = (const float *)src;
				continue;
			}
			deq(src, cols, buf + (size_t)r * cols);
			wr[r] = buf + (size_t)r * cols;
		}
		tile_rows(wr, nr, x, n, cols, y + t0, ldy);
	}
	return 0;
}

#else /* no vector path on this processor family: the reference loop runs */

int gk_cpu_qmm_rows_vec(gk_qtype_t wt, gk_cpu_deq_row_f deq, const uint8_t *w, size_t row_bytes,
			int r0, int r1, int cols, const float *x, int n, float *y, int ldy,
			float *buf)
{
	(void)wt, (void)deq, (void)w, (void)row_bytes, (void)r0, (void)r1, (void)cols, (void)x;
	(void)n, (void)y, (void)ldy, (void)buf;
	return -1;
}

#endif
