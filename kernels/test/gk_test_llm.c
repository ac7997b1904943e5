/* gk_test_llm.c - gk-test's checks of the language-model layers (gpool/kernels.h)
 *
 * Two kinds: the cpu reference against naive formulas written here (every weight dequantized
 * with gk_qblock.h's value functions then a plain double dot; softmax attention with the whole
 * score matrix in double), and the backend under test against the cpu reference. Errors are
 * the largest absolute difference divided by the largest magnitude of the wanted output (the
 * output's scale), against the bounds docs/kernels.md states:
 *   qmatmul 1e-4 (f32 sums of up to 4096 terms in another order), attention 1e-4,
 *   rmsnorm / rope / swiglu 1e-5, get_rows, add, add_bias, kv_write bit for bit,
 *   a cache written as f16 against attention over the f32 values 2e-3 (f16's rounding).
 * Each test prints the worst error it saw per kernel, so a run on a card shows the margins. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_qblock.h"
#include "kernels/test/gk_test.h"

#define BOUND_QMM   1e-4
#define BOUND_ATTN  1e-4
#define BOUND_SMALL 1e-5
#define BOUND_F16KV 2e-3

static const gk_qtype_t qtypes[] = {GK_Q_F32,  GK_Q_F16,  GK_Q_BF16, GK_Q_Q4_0,
				    GK_Q_Q8_0, GK_Q_Q4_K, GK_Q_Q6_K};
#define NQTYPES (sizeof qtypes / sizeof qtypes[0])

/* ---- helpers ---- */

static float sym(float scale)
{
	return (float)((unit() * 2.0 - 1.0) * scale);
}

static float *frand(size_t n, float scale)
{
	float *p = malloc(n * sizeof(float) + 4);
	for (size_t i = 0; i < n; i++)
		p[i] = sym(scale);
	return p;
}

static void *dnew(const void *host, size_t bytes)
{
	void *d = NULL;
	OK(b, gk_dev_alloc(b, bytes + 64, &d));
	if (d) /* poison: 0xff bytes are NaN floats and -1 ints */
		OK(b, gk_memset(b, d, 0xff, bytes + 64, NULL));
	if (d && host)
		OK(b, gk_copy(b, d, host, bytes, GK_H2D));
	return d;
}

static void dget(void *host, const void *d, size_t bytes)
{
	OK(b, gk_stream_sync(b, NULL));
	if (d)
		OK(b, gk_copy(b, host, d, bytes, GK_D2H));
}

static void dfree(void *d)
{
	OK(b, gk_dev_free(b, d));
}

/* max |x - ref| / max |ref|; *nan counts places where one is NaN and the other is not */
static double scaled_err(const float *x, const float *ref, size_t n, int *nan)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i]) || isnan(ref[i])) {
			*nan += isnan(x[i]) != isnan(ref[i]);
			continue;
		}
		double d = fabs((double)x[i] - ref[i]);
		double r = fabs((double)ref[i]);
		num = d > num ? d : num;
		den = r > den ? r : den;
	}
	return den > 0 ? num / den : num;
}

static size_t bits_differ(const float *got, const float *want, size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t a, b; /* bits, not values: -0 and 0 differ, as the copies must not */
		memcpy(&a, &got[i], 4);
		memcpy(&b, &want[i], 4);
		bad += a != b && !(isnan(got[i]) && isnan(want[i]));
	}
	return bad;
}

static void worst(double *w, double e)
{
	if (e > *w)
		*w = e;
}

/* Random weights of type WT: finite values near [-1, 1] (block scales of a few hundredths
 * times the quantized integers). */
static void *make_weights(gk_qtype_t wt, int rows, int cols)
{
	size_t rb = gk_qtype_row_bytes(wt, (size_t)cols), nb = rb * rows;
	uint8_t *w = malloc(nb + 1);
	for (size_t i = 0; i < nb; i++)
		w[i] = (uint8_t)rnd();
	size_t bb = gk_qtype_block_bytes(wt), nblk = nb / bb;
	for (size_t k = 0; k < nblk; k++) {
		uint8_t *p = w + k * bb;
		uint16_t h;
		switch (wt) {
		case GK_Q_F32: {
			float f = sym(1.0f);
			memcpy(p, &f, 4);
			break;
		}
		case GK_Q_F16:
		case GK_Q_BF16:
			h = wt == GK_Q_F16 ? gk_f32_to_f16(sym(1.0f)) : gk_f32_to_bf16(sym(1.0f));
			memcpy(p, &h, 2);
			break;
		case GK_Q_Q4_0:
		case GK_Q_Q8_0:
			h = gk_f32_to_f16(sym(wt == GK_Q_Q4_0 ? 0.12f : 0.008f));
			memcpy(p, &h, 2); /* d first */
			break;
		case GK_Q_Q4_K:
			h = gk_f32_to_f16(0.002f + (float)unit() * 0.002f);
			memcpy(p, &h, 2);
			h = gk_f32_to_f16(0.002f + (float)unit() * 0.004f);
			memcpy(p + 2, &h, 2);
			break;
		case GK_Q_Q6_K: {
			gk_block_q6_K_t *q = (gk_block_q6_K_t *)p;
			for (int s = 0; s < 16; s++)
				q->scales[s] = (int8_t)((int)(rnd() % 129) - 64);
			q->d = gk_f32_to_f16(sym(0.0005f));
			break;
		}
		}
	}
	return w;
}

/* Element C of row R by gk_qblock.h's value functions (the definition) */
static float weight_value(gk_qtype_t wt, const void *w, int cols, int r, int c)
{
	const uint8_t *row = (const uint8_t *)w + (size_t)r * gk_qtype_row_bytes(wt, (size_t)cols);
	switch (wt) {
	case GK_Q_F32: {
		float f;
		memcpy(&f, row + 4 * (size_t)c, 4);
		return f;
	}
	case GK_Q_F16:
		return gk_f16_to_f32(((const uint16_t *)row)[c]);
	case GK_Q_BF16:
		return gk_bf16_to_f32(((const uint16_t *)row)[c]);
	case GK_Q_Q4_0:
		return gk_q4_0_value((const gk_block_q4_0_t *)row + c / 32, c % 32);
	case GK_Q_Q8_0:
		return gk_q8_0_value((const gk_block_q8_0_t *)row + c / 32, c % 32);
	case GK_Q_Q4_K:
		return gk_q4_K_value((const gk_block_q4_K_t *)row + c / 256, c % 256);
	case GK_Q_Q6_K:
		return gk_q6_K_value((const gk_block_q6_K_t *)row + c / 256, c % 256);
	}
	return NAN;
}

/* ---- dequantization and qmatmul ---- */

void t_llm_dequant_ref(void)
{
	for (size_t t = 0; t < NQTYPES; t++) {
		gk_qtype_t wt = qtypes[t];
		int rows = 5, cols = 512;
		void *w = make_weights(wt, rows, cols);
		int32_t ids[7] = {4, 0, 3, -1, 1, 5, 2};
		float *out = malloc(sizeof(float) * 7 * cols),
		      *want = malloc(sizeof(float) * 7 * cols);
		for (int i = 0; i < 7; i++)
			for (int c = 0; c < cols; c++)
				want[(size_t)i * cols + c] =
				    ids[i] < 0 || ids[i] >= rows
					? NAN
					: weight_value(wt, w, cols, ids[i], c);
		OK(ref, gk_qget_rows(ref, wt, w, rows, cols, ids, 7, out, NULL));
		size_t bad = bits_differ(out, want, (size_t)7 * cols);
		ASSERT(bad == 0, "cpu dequant %s: %zu of %d values differ from gk_qblock.h's",
		       gk_qtype_name(wt), bad, 7 * cols);
		ASSERT(isnan(out[3 * cols]) && isnan(out[5 * cols + cols - 1]),
		       "cpu get_rows %s: an id out of range is not a NaN row", gk_qtype_name(wt));
		/* the products against plain double dots of the dequantized matrix: 3 tokens (the
		 * vector path's per-token dots) and 7 (its tiles of 4 rows by 3 tokens, the rest)
		 */
		for (int n = 3; n <= 7; n += 4) {
			int rr = 37, cc = 4096;
			void *w2 = make_weights(wt, rr, cc);
			float *x = frand((size_t)n * cc, 1.0f), *y = malloc(sizeof(float) * n * rr),
			      *yw = malloc(sizeof(float) * n * rr);
			for (int i = 0; i < n; i++)
				for (int r = 0; r < rr; r++) {
					double s = 0;
					for (int c = 0; c < cc; c++)
						s += (double)weight_value(wt, w2, cc, r, c) *
						     x[(size_t)i * cc + c];
					yw[(size_t)i * rr + r] = (float)s;
				}
			OK(ref, gk_qmatmul(ref, wt, w2, rr, cc, x, n, y, rr, NULL));
			int nan = 0;
			double e = scaled_err(y, yw, (size_t)n * rr, &nan);
			ASSERT(!nan && e < BOUND_QMM,
			       "cpu qmatmul %s n=%d against double dots: err %.3g",
			       gk_qtype_name(wt), n, e);
			printf("  cpu qmatmul %-5s n=%d vs naive double: err %.2e (bound %.0e)\n",
			       gk_qtype_name(wt), n, e, BOUND_QMM);
			free(w2), free(x), free(y), free(yw);
		}
		free(w), free(out), free(want);
	}
}

/* One product on both backends: Y gets LDY = rows + 3, whose padding must stay untouched.
 * XOFF floats before x on the device take away its 16-byte alignment (the cards' fallback). */
static double qmm_case(gk_qtype_t wt, int rows, int cols, int n, int xoff)
{
	int ldy = rows + 3;
	size_t ny = (size_t)n * ldy, wb = gk_qtype_row_bytes(wt, (size_t)cols) * rows;
	void *w = make_weights(wt, rows, cols);
	float *x = frand((size_t)n * cols, 1.0f), *want = malloc(ny * 4), *got = malloc(ny * 4);
	memset(want, 0xff, ny * 4);
	OK(ref, gk_qmatmul(ref, wt, w, rows, cols, x, n, want, ldy, NULL));
	void *dw = dnew(w, wb), *dx = dnew(NULL, (size_t)(n * cols + xoff) * 4),
	     *dy = dnew(NULL, ny * 4);
	float *dxo = (float *)dx + xoff;
	if (dx)
		OK(b, gk_copy(b, dxo, x, (size_t)n * cols * 4, GK_H2D));
	OK(b, gk_qmatmul(b, wt, dw, rows, cols, dxo, n, dy, ldy, NULL));
	dget(got, dy, ny * 4);
	int nan = 0, pad = 0;
	double e = scaled_err(got, want, ny, &nan);
	for (int i = 0; i < n; i++)
		for (int r = rows; r < ldy; r++)
			pad += !isnan(got[(size_t)i * ldy + r]);
	ASSERT(!nan && e < BOUND_QMM, "qmatmul %s %dx%d n=%d x+%d: err %.3g (bound %.0e), %d NaN",
	       gk_qtype_name(wt), rows, cols, n, xoff, e, BOUND_QMM, nan);
	ASSERT(pad == 0, "qmatmul %s %dx%d n=%d: %d values written past rows in ldy",
	       gk_qtype_name(wt), rows, cols, n, pad);
	dfree(dw), dfree(dx), dfree(dy);
	free(w), free(x), free(want), free(got);
	return e;
}

void t_llm_qmatmul(void)
{
	static const struct {
		int rows, cols, n;
	} shapes[] = {{1, 256, 1},    {67, 256, 1},   {67, 512, 3},    {130, 768, 8},
		      {64, 4096, 1},  {129, 4096, 2}, {33, 1024, 9},   {100, 512, 17},
		      {200, 256, 64}, {97, 4096, 64}, {300, 1024, 130}};
	for (size_t t = 0; t < NQTYPES; t++) {
		double w = 0;
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			worst(&w,
			      qmm_case(qtypes[t], shapes[s].rows, shapes[s].cols, shapes[s].n, 0));
		worst(&w, qmm_case(qtypes[t], 45, 512, 1, 1)); /* x not 16-byte aligned */
		if (gk_qtype_block(qtypes[t]) == 1)	       /* rows of an odd length */
			worst(&w, qmm_case(qtypes[t], 37, 100, 3, 0));
		printf("  qmatmul %-5s: max err %.2e (bound %.0e)\n", gk_qtype_name(qtypes[t]), w,
		       BOUND_QMM);
	}
}

void t_llm_get_rows(void)
{
	for (size_t t = 0; t < NQTYPES; t++) {
		gk_qtype_t wt = qtypes[t];
		int rows = 50, cols = 768, n = 9;
		int32_t ids[9] = {0, 49, 7, -3, 50, 12, 12, 2000000000, 31};
		size_t wb = gk_qtype_row_bytes(wt, (size_t)cols) * rows, no = (size_t)n * cols;
		void *w = make_weights(wt, rows, cols);
		float *want = malloc(no * 4), *got = malloc(no * 4);
		OK(ref, gk_qget_rows(ref, wt, w, rows, cols, ids, n, want, NULL));
		void *dw = dnew(w, wb), *di = dnew(ids, sizeof ids), *dout = dnew(NULL, no * 4);
		OK(b, gk_qget_rows(b, wt, dw, rows, cols, di, n, dout, NULL));
		dget(got, dout, no * 4);
		size_t bad = bits_differ(got, want, no);
		ASSERT(bad == 0, "get_rows %s: %zu of %zu values differ from the cpu's",
		       gk_qtype_name(wt), bad, no);
		ASSERT(isnan(got[3 * cols]) && isnan(got[4 * cols + 5]) && isnan(got[7 * cols]),
		       "get_rows %s: ids out of range do not give NaN rows", gk_qtype_name(wt));
		dfree(dw), dfree(di), dfree(dout);
		free(w), free(want), free(got);
	}
	printf("  get_rows: bit for bit on every type\n");
}

/* ---- rmsnorm, rope, the elementwise layers ---- */

static double rmsnorm_case(int n, int dim, int inplace)
{
	size_t nx = (size_t)n * dim;
	float *x = frand(nx, 3.0f), *w = frand((size_t)dim, 1.5f), *want = malloc(nx * 4),
	      *got = malloc(nx * 4), *naive = malloc(nx * 4);
	float eps = 1e-5f;
	for (int i = 0; i < n; i++) {
		double ss = 0;
		for (int c = 0; c < dim; c++)
			ss += (double)x[(size_t)i * dim + c] * x[(size_t)i * dim + c];
		double sc = 1.0 / sqrt(ss / dim + eps);
		for (int c = 0; c < dim; c++)
			naive[(size_t)i * dim + c] = (float)(x[(size_t)i * dim + c] * sc * w[c]);
	}
	OK(ref, gk_rmsnorm(ref, want, x, w, n, dim, eps, NULL));
	int nan = 0;
	double e = scaled_err(want, naive, nx, &nan);
	ASSERT(!nan && e < BOUND_SMALL, "cpu rmsnorm %dx%d against double: err %.3g", n, dim, e);
	float *dx = dnew(x, nx * 4), *dw = dnew(w, (size_t)dim * 4);
	float *dy = inplace ? dx : dnew(NULL, nx * 4);
	OK(b, gk_rmsnorm(b, dy, dx, dw, n, dim, eps, NULL));
	dget(got, dy, nx * 4);
	e = scaled_err(got, want, nx, &nan);
	ASSERT(!nan && e < BOUND_SMALL, "rmsnorm %dx%d%s: err %.3g (bound %.0e)", n, dim,
	       inplace ? " in place" : "", e, BOUND_SMALL);
	dfree(dx), dfree(dw);
	if (!inplace)
		dfree(dy);
	free(x), free(w), free(want), free(got), free(naive);
	return e;
}

void t_llm_rmsnorm(void)
{
	static const int dims[] = {33, 64, 896, 4096, 5120};
	static const int ns[] = {1, 3, 17};
	double w = 0;
	for (size_t d = 0; d < 5; d++)
		for (size_t k = 0; k < 3; k++)
			worst(&w, rmsnorm_case(ns[k], dims[d], (int)(d + k) & 1));
	printf("  rmsnorm: max err %.2e (bound %.0e)\n", w, BOUND_SMALL);
}

static double rope_case(int n, int nheads, int hd, int rot, float scale, int neox)
{
	size_t nx = (size_t)n * nheads * hd;
	float *x = frand(nx, 2.0f), *want = malloc(nx * 4), *got = malloc(nx * 4),
	      *naive = malloc(nx * 4);
	int32_t *pos = malloc((size_t)n * 4);
	float base = 10000.0f;
	for (int i = 0; i < n; i++)
		pos[i] = i == 0 ? 0 : (int32_t)(rnd() % 6000);
	memcpy(naive, x, nx * 4);
	for (int i = 0; i < n; i++)
		for (int h = 0; h < nheads; h++)
			for (int j = 0; j < rot / 2; j++) {
				float *v = naive + ((size_t)i * nheads + h) * hd;
				int a = neox ? j : 2 * j, c = neox ? j + rot / 2 : 2 * j + 1;
				double th = pos[i] * (double)scale * pow(base, -2.0 * j / rot);
				double x0 = x[(v - naive) + a], x1 = x[(v - naive) + c];
				v[a] = (float)(x0 * cos(th) - x1 * sin(th));
				v[c] = (float)(x0 * sin(th) + x1 * cos(th));
			}
	memcpy(want, x, nx * 4);
	OK(ref, gk_rope(ref, want, pos, n, nheads, hd, rot, base, scale, neox, NULL));
	int nan = 0;
	double e = scaled_err(want, naive, nx, &nan);
	ASSERT(!nan && e < BOUND_SMALL, "cpu rope neox %d rot %d/%d against double: err %.3g", neox,
	       rot, hd, e);
	float *dx = dnew(x, nx * 4);
	int32_t *dp = dnew(pos, (size_t)n * 4);
	OK(b, gk_rope(b, dx, dp, n, nheads, hd, rot, base, scale, neox, NULL));
	dget(got, dx, nx * 4);
	e = scaled_err(got, want, nx, &nan);
	ASSERT(!nan && e < BOUND_SMALL, "rope n %d heads %d neox %d rot %d/%d: err %.3g", n, nheads,
	       neox, rot, hd, e);
	dfree(dx), dfree(dp);
	free(x), free(want), free(got), free(naive), free(pos);
	return e;
}

void t_llm_rope(void)
{
	double w = 0;
	for (int neox = 0; neox < 2; neox++) {
		worst(&w, rope_case(1, 32, 128, 128, 1.0f, neox));
		worst(&w, rope_case(17, 8, 64, 64, 1.0f, neox));
		worst(&w, rope_case(5, 3, 128, 64, 0.25f, neox)); /* partial rotation */
		worst(&w, rope_case(64, 2, 80, 80, 1.0f, neox));
	}
	printf("  rope: max err %.2e (bound %.0e)\n", w, BOUND_SMALL);
}

void t_llm_elementwise(void)
{
	size_t lens[] = {1, 7, 4096, 11008 * 3 + 5};
	double w = 0;
	for (size_t k = 0; k < 4; k++) {
		size_t n = lens[k];
		float *g = frand(n, 8.0f), *u = frand(n, 2.0f), *want = malloc(n * 4),
		      *got = malloc(n * 4);
		g[0] = -100.0f; /* silu's far tail: exp overflow must give 0, not NaN */
		OK(ref, gk_swiglu(ref, want, g, u, n, NULL));
		int nan = 0;
		for (size_t i = 0; i < n; i++) { /* the reference against the formula */
			double sg = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
			nan += fabs(sg - want[i]) > 1e-6 * (fabs(sg) + 1e-30) + 1e-37;
		}
		ASSERT(nan == 0, "cpu swiglu n %zu: %d values off the double formula", n, nan);
		float *dg = dnew(g, n * 4), *du = dnew(u, n * 4);
		OK(b, gk_swiglu(b, dg, dg, du, n, NULL)); /* in place over the gate */
		dget(got, dg, n * 4);
		double e = scaled_err(got, want, n, &nan);
		worst(&w, e);
		ASSERT(!nan && e < BOUND_SMALL, "swiglu n %zu: err %.3g", n, e);
		/* the residual add, bit for bit */
		for (size_t i = 0; i < n; i++)
			want[i] = u[i] + g[i];
		dfree(dg);
		dg = dnew(g, n * 4);
		OK(b, gk_add(b, du, dg, n, NULL));
		dget(got, du, n * 4);
		ASSERT(bits_differ(got, want, n) == 0, "add n %zu differs", n);
		dfree(dg), dfree(du);
		free(g), free(u), free(want), free(got);
	}
	printf("  swiglu: max err %.2e (bound %.0e); add bit for bit\n", w, BOUND_SMALL);
	int rows = 5, cols = 896;
	float *x = frand((size_t)rows * cols, 3.0f), *bias = frand((size_t)cols, 1.0f);
	float *want = malloc((size_t)rows * cols * 4), *got = malloc((size_t)rows * cols * 4);
	memcpy(want, x, (size_t)rows * cols * 4);
	OK(ref, gk_add_bias(ref, want, bias, rows, cols, NULL));
	ASSERT(want[cols + 3] == x[cols + 3] + bias[3], "cpu add_bias");
	float *dx = dnew(x, (size_t)rows * cols * 4), *db = dnew(bias, (size_t)cols * 4);
	OK(b, gk_add_bias(b, dx, db, rows, cols, NULL));
	dget(got, dx, (size_t)rows * cols * 4);
	ASSERT(bits_differ(got, want, (size_t)rows * cols) == 0, "add_bias differs");
	dfree(dx), dfree(db);
	free(x), free(bias), free(want), free(got);
}

/* ---- the paged cache and attention ---- */

void t_llm_kv_write(void)
{
	for (int f16 = 0; f16 < 2; f16++) {
		gk_dtype_t t = f16 ? GK_F16 : GK_F32;
		int nslots = 96, row = 256, n = 40;
		size_t es = f16 ? 2 : 4, cb = (size_t)nslots * row * es;
		int32_t slots[40];
		for (int i = 0; i < n; i++) /* distinct slots, a few padding rows */
			slots[i] = i % 9 == 4 ? -1 : (int32_t)((i * 37 + 5) % nslots);
		float *src = frand((size_t)n * row, 4.0f);
		src[0] = 70000.0f; /* past f16's range: inf */
		uint8_t *want = malloc(cb), *got = malloc(cb);
		memset(want, 0xff, cb);
		OK(ref, gk_kv_write(ref, t, want, slots, src, n, row, NULL));
		ASSERT(f16 ? ((uint16_t *)want)[(size_t)slots[0] * row] == 0x7c00
			   : ((float *)want)[(size_t)slots[0] * row] == 70000.0f,
		       "cpu kv_write %s: first value", gk_dtype_name(t));
		void *dc = dnew(NULL, cb), *ds = dnew(slots, sizeof slots),
		     *dsrc = dnew(src, (size_t)n * row * 4);
		OK(b, gk_kv_write(b, t, dc, ds, dsrc, n, row, NULL));
		dget(got, dc, cb);
		ASSERT(memcmp(got, want, cb) == 0, "kv_write %s: the cache differs from the cpu's",
		       gk_dtype_name(t));
		dfree(dc), dfree(ds), dfree(dsrc);
		free(src), free(want), free(got);
	}
	printf("  kv_write: bit for bit, f32 and f16\n");
}

typedef struct {
	int nseq, nq[8], ctx[8];
	int n_heads, n_kv_heads, head_dim, block_size;
} attn_shape_t;

typedef struct {
	gk_attn_t p; /* host pointers */
	int32_t *q_start, *ctx_len, *table;
	void *k, *v;
	float *q;
	size_t cache_bytes, nout;
	int nblocks;
} attn_host_t;

/* Random q and cache for shape S; blocks handed out in a shuffled order. */
static void attn_make(attn_host_t *h, const attn_shape_t *s, gk_dtype_t kv_t)
{
	memset(h, 0, sizeof(*h));
	int maxb = 0, total = 0, ntok = 0;
	for (int j = 0; j < s->nseq; j++) {
		int nb = (s->ctx[j] + s->block_size - 1) / s->block_size;
		maxb = nb > maxb ? nb : maxb;
		total += nb;
		ntok += s->nq[j];
	}
	maxb += 1; /* a spare column, never read */
	h->nblocks = total + 3;
	h->q_start = malloc(sizeof(int32_t) * (s->nseq + 1));
	h->ctx_len = malloc(sizeof(int32_t) * s->nseq);
	h->table = malloc(sizeof(int32_t) * s->nseq * maxb);
	int32_t *perm = malloc(sizeof(int32_t) * h->nblocks);
	for (int i = 0; i < h->nblocks; i++)
		perm[i] = i;
	for (int i = h->nblocks - 1; i > 0; i--) {
		int k = (int)(rnd() % (uint64_t)(i + 1)), t = perm[i];
		perm[i] = perm[k], perm[k] = t;
	}
	int next = 0;
	h->q_start[0] = 0;
	for (int j = 0; j < s->nseq; j++) {
		h->q_start[j + 1] = h->q_start[j] + s->nq[j];
		h->ctx_len[j] = s->ctx[j];
		for (int k = 0; k < maxb; k++)
			h->table[j * maxb + k] =
			    k * s->block_size < s->ctx[j] ? perm[next++] : (int32_t)-1;
	}
	free(perm);
	size_t row = (size_t)s->n_kv_heads * s->head_dim, es = gk_dtype_size(kv_t);
	size_t nval = (size_t)h->nblocks * s->block_size * row;
	h->cache_bytes = nval * es;
	h->k = malloc(h->cache_bytes);
	h->v = malloc(h->cache_bytes);
	for (size_t i = 0; i < nval; i++) {
		float kv = sym(1.0f), vv = sym(1.0f);
		if (kv_t == GK_F16)
			((uint16_t *)h->k)[i] = gk_f32_to_f16(kv),
				   ((uint16_t *)h->v)[i] = gk_f32_to_f16(vv);
		else
			((float *)h->k)[i] = kv, ((float *)h->v)[i] = vv;
	}
	h->nout = (size_t)ntok * s->n_heads * s->head_dim;
	h->q = frand(h->nout, 1.0f);
	h->p = (gk_attn_t){.nseq = s->nseq,
			   .ntok = ntok,
			   .q_start = h->q_start,
			   .ctx_len = h->ctx_len,
			   .block_table = h->table,
			   .max_blocks = maxb,
			   .block_size = s->block_size,
			   .n_heads = s->n_heads,
			   .n_kv_heads = s->n_kv_heads,
			   .head_dim = s->head_dim,
			   .scale = 1.0f / sqrtf((float)s->head_dim),
			   .kv_t = kv_t,
			   .k_cache = h->k,
			   .v_cache = h->v,
			   .q = h->q};
}

static void attn_free(attn_host_t *h)
{
	free(h->q_start), free(h->ctx_len), free(h->table), free(h->k), free(h->v), free(h->q);
}

/* Plain softmax attention: the whole score row of every query in double. */
static void attn_naive(const attn_host_t *h, float *out)
{
	const gk_attn_t *p = &h->p;
	int hd = p->head_dim, g = p->n_heads / p->n_kv_heads;
	size_t row = (size_t)p->n_kv_heads * hd;
	double *sc = malloc(sizeof(double) * (size_t)p->max_blocks * p->block_size);
	for (int j = 0; j < p->nseq; j++) {
		int nq = h->q_start[j + 1] - h->q_start[j], ctx = h->ctx_len[j];
		for (int t = 0; t < nq; t++)
			for (int hh = 0; hh < p->n_heads; hh++) {
				const float *q =
				    h->q + ((size_t)(h->q_start[j] + t) * p->n_heads + hh) * hd;
				float *o =
				    out + ((size_t)(h->q_start[j] + t) * p->n_heads + hh) * hd;
				int last = ctx - nq + t, kvh = hh / g;
				double mx = -INFINITY, sum = 0;
				for (int k = 0; k <= last; k++) {
					int slot = h->table[j * p->max_blocks + k / p->block_size] *
						       p->block_size +
						   k % p->block_size;
					size_t at = (size_t)slot * row + (size_t)kvh * hd;
					double s = 0;
					for (int d = 0; d < hd; d++)
						s +=
						    (double)q[d] *
						    (p->kv_t == GK_F16
							 ? gk_f16_to_f32(((uint16_t *)h->k)[at + d])
							 : ((float *)h->k)[at + d]);
					sc[k] = s * p->scale;
					mx = sc[k] > mx ? sc[k] : mx;
				}
				double acc[256] = {0};
				for (int k = 0; k <= last; k++) {
					int slot = h->table[j * p->max_blocks + k / p->block_size] *
						       p->block_size +
						   k % p->block_size;
					size_t at = (size_t)slot * row + (size_t)kvh * hd;
					double e = exp(sc[k] - mx);
					sum += e;
					for (int d = 0; d < hd; d++)
						acc[d] +=
						    e *
						    (p->kv_t == GK_F16
							 ? gk_f16_to_f32(((uint16_t *)h->v)[at + d])
							 : ((float *)h->v)[at + d]);
				}
				for (int d = 0; d < hd; d++)
					o[d] = (float)(acc[d] / sum);
			}
	}
	free(sc);
}

/* Attention of shape S on both backends (and the cpu against the naive formula). */
static double attn_case(const attn_shape_t *s, gk_dtype_t kv_t, double *naive_err)
{
	attn_host_t h;
	attn_make(&h, s, kv_t);
	float *want = malloc(h.nout * 4), *got = malloc(h.nout * 4), *naive = malloc(h.nout * 4);
	h.p.out = want;
	OK(ref, gk_attention(ref, &h.p, NULL));
	attn_naive(&h, naive);
	int nan = 0;
	double e = scaled_err(want, naive, h.nout, &nan);
	ASSERT(!nan && e < BOUND_ATTN,
	       "cpu attention (%d seqs, %d/%d heads, hd %d, %s) vs naive: "
	       "err %.3g",
	       s->nseq, s->n_heads, s->n_kv_heads, s->head_dim, gk_dtype_name(kv_t), e);
	worst(naive_err, e);
	gk_attn_t dp = h.p;
	dp.q_start = dnew(h.q_start, sizeof(int32_t) * (s->nseq + 1));
	dp.ctx_len = dnew(h.ctx_len, sizeof(int32_t) * s->nseq);
	dp.block_table = dnew(h.table, sizeof(int32_t) * s->nseq * h.p.max_blocks);
	dp.k_cache = dnew(h.k, h.cache_bytes);
	dp.v_cache = dnew(h.v, h.cache_bytes);
	dp.q = dnew(h.q, h.nout * 4);
	dp.out = dnew(NULL, h.nout * 4);
	OK(b, gk_attention(b, &dp, NULL));
	dget(got, dp.out, h.nout * 4);
	e = scaled_err(got, want, h.nout, &nan);
	ASSERT(!nan && e < BOUND_ATTN,
	       "attention (%d seqs, first nq %d ctx %d, %d/%d heads, hd %d, block %d, %s): "
	       "err %.3g (bound %.0e), %d NaN",
	       s->nseq, s->nq[0], s->ctx[0], s->n_heads, s->n_kv_heads, s->head_dim, s->block_size,
	       gk_dtype_name(kv_t), e, BOUND_ATTN, nan);
	dfree((void *)dp.q_start), dfree((void *)dp.ctx_len), dfree((void *)dp.block_table);
	dfree((void *)dp.k_cache), dfree((void *)dp.v_cache), dfree((void *)dp.q), dfree(dp.out);
	free(want), free(got), free(naive);
	attn_free(&h);
	return e;
}

/* Rows whose ctx_len cannot hold them get NaN (and nothing else is disturbed). */
static void attn_bad_ctx(int nq0)
{
	attn_shape_t s = {2, {nq0, 1}, {nq0 + 7, 20}, 4, 2, 64, 16};
	attn_host_t h;
	attn_make(&h, &s, GK_F32);
	h.ctx_len[0] = nq0 - 1; /* fewer than its rows */
	float *got = malloc(h.nout * 4);
	gk_attn_t dp = h.p;
	dp.q_start = dnew(h.q_start, sizeof(int32_t) * 3);
	dp.ctx_len = dnew(h.ctx_len, sizeof(int32_t) * 2);
	dp.block_table = dnew(h.table, sizeof(int32_t) * 2 * h.p.max_blocks);
	dp.k_cache = dnew(h.k, h.cache_bytes);
	dp.v_cache = dnew(h.v, h.cache_bytes);
	dp.q = dnew(h.q, h.nout * 4);
	dp.out = dnew(NULL, h.nout * 4);
	OK(b, gk_attention(b, &dp, NULL));
	dget(got, dp.out, h.nout * 4);
	size_t per_row = (size_t)s.n_heads * s.head_dim, nan0 = 0, nan1 = 0, nb = nq0 * per_row;
	for (size_t i = 0; i < nb; i++)
		nan0 += isnan(got[i]) != 0;
	for (size_t i = nb; i < nb + per_row; i++)
		nan1 += isnan(got[i]) != 0;
	ASSERT(nan0 == nb && nan1 == 0,
	       "attention with ctx_len < %d rows: %zu of %zu NaN in the bad sequence, %zu in the "
	       "good",
	       nq0, nan0, nb, nan1);
	dfree((void *)dp.q_start), dfree((void *)dp.ctx_len), dfree((void *)dp.block_table);
	dfree((void *)dp.k_cache), dfree((void *)dp.v_cache), dfree((void *)dp.q), dfree(dp.out);
	free(got);
	attn_free(&h);
}

/* K and V written as f16 by gk_kv_write, against attention over the f32 values: the bound is
 * f16's rounding of the cache. */
static double attn_f16_rounding(void)
{
	attn_shape_t s = {2, {5, 1}, {40, 77}, 8, 2, 128, 16};
	attn_host_t h32, h16;
	attn_make(&h32, &s, GK_F32);
	attn_make(&h16, &s, GK_F16);
	size_t nval = h32.cache_bytes / 4, row = (size_t)s.n_kv_heads * s.head_dim;
	int n = (int)(nval / row);
	int32_t *slots = malloc(sizeof(int32_t) * n);
	for (int i = 0; i < n; i++)
		slots[i] = i;
	float *want = malloc(h32.nout * 4), *got = malloc(h32.nout * 4);
	h32.p.out = want;
	OK(ref, gk_attention(ref, &h32.p, NULL));
	void *dk = dnew(NULL, nval * 2), *dv = dnew(NULL, nval * 2),
	     *ds = dnew(slots, 4 * (size_t)n);
	void *dk32 = dnew(h32.k, nval * 4), *dv32 = dnew(h32.v, nval * 4);
	OK(b, gk_kv_write(b, GK_F16, dk, ds, dk32, n, (int)row, NULL));
	OK(b, gk_kv_write(b, GK_F16, dv, ds, dv32, n, (int)row, NULL));
	gk_attn_t dp = h32.p;
	dp.kv_t = GK_F16;
	dp.q_start = dnew(h32.q_start, sizeof(int32_t) * 3);
	dp.ctx_len = dnew(h32.ctx_len, sizeof(int32_t) * 2);
	dp.block_table = dnew(h32.table, sizeof(int32_t) * 2 * h32.p.max_blocks);
	dp.k_cache = dk, dp.v_cache = dv;
	dp.q = dnew(h32.q, h32.nout * 4);
	dp.out = dnew(NULL, h32.nout * 4);
	OK(b, gk_attention(b, &dp, NULL));
	dget(got, dp.out, h32.nout * 4);
	int nan = 0;
	double e = scaled_err(got, want, h32.nout, &nan);
	ASSERT(!nan && e < BOUND_F16KV, "attention over an f16 cache vs f32: err %.3g (bound %.0e)",
	       e, BOUND_F16KV);
	dfree(dk), dfree(dv), dfree(ds), dfree(dk32), dfree(dv32);
	dfree((void *)dp.q_start), dfree((void *)dp.ctx_len), dfree((void *)dp.block_table);
	dfree((void *)dp.q), dfree(dp.out);
	free(slots), free(want), free(got);
	attn_free(&h32), attn_free(&h16);
	return e;
}

void t_llm_attention(void)
{
	static const attn_shape_t shapes[] = {
	    {1, {37}, {37}, 4, 4, 64, 16},				   /* prefill, MHA */
	    {1, {1}, {1}, 8, 1, 128, 16},				   /* the first token */
	    {5, {1, 17, 1, 30, 1}, {100, 17, 1, 75, 513}, 16, 4, 128, 16}, /* mixed, GQA 4 */
	    {3, {1, 1, 1}, {2000, 1500, 33}, 16, 2, 128, 32},		   /* long decode, GQA 8 */
	    {2, {64, 3}, {200, 67}, 16, 2, 64, 16},			   /* chunked prefill */
	    {4, {1, 1, 1, 1}, {4097, 300, 70, 1024}, 8, 8, 64, 256},	   /* big blocks */
	    {2, {33, 1}, {33, 81}, 6, 3, 96, 7},			   /* odd everything */
	};
	/* the cards' two paths: prefill rows on their own kernel (the default), and every row on
	 * the decode kernel (GPOOL_KERNELS_ATTN=rowwise); the cpu has one */
	static const char *modes[] = {"auto", "rowwise"};
	for (int md = 0; md < 2; md++) {
		setenv("GPOOL_KERNELS_ATTN", modes[md], 1);
		double w32 = 0, w16 = 0, wn = 0;
		int before = failures;
		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
			worst(&w32, attn_case(&shapes[i], GK_F32, &wn));
			worst(&w16, attn_case(&shapes[i], GK_F16, &wn));
		}
		attn_bad_ctx(3);  /* a short sequence: the decode kernel */
		attn_bad_ctx(12); /* a long one: the prefill kernel */
		double er = attn_f16_rounding();
		printf(
		    "  attention (%s): max err f32 cache %.2e, f16 cache %.2e (bound %.0e); cpu vs "
		    "naive %.2e; f16 cache vs f32 values %.2e (bound %.0e)%s\n",
		    modes[md], w32, w16, BOUND_ATTN, wn, er, BOUND_F16KV,
		    failures > before ? " FAILED" : "");
	}
	unsetenv("GPOOL_KERNELS_ATTN");
}

/* ---- the loader's checks ---- */

void t_llm_api(void)
{
	float f[64] = {0};
	int32_t ids[4] = {0};
	ASSERT(gk_qmatmul(b, (gk_qtype_t)3, f, 1, 32, f, 1, f, 1, NULL) == -1 && errno == EINVAL,
	       "qmatmul with an unknown qtype accepted");
	ASSERT(gk_qmatmul(b, GK_Q_Q4_0, f, 1, 48, f, 1, f, 1, NULL) == -1 && errno == EINVAL &&
		   strstr(gk_backend_error(b), "not whole q4_0 blocks"),
	       "qmatmul with 48 q4_0 columns: '%s'", gk_backend_error(b));
	ASSERT(gk_qmatmul(b, GK_Q_F32, f, 4, 8, f, 1, f, 3, NULL) == -1 && errno == EINVAL,
	       "qmatmul with ldy < rows accepted");
	ASSERT(gk_qmatmul(b, GK_Q_F32, f, 4, 8, f, 0, f, 4, NULL) == 0, "qmatmul with n = 0");
	ASSERT(gk_qmatmul(b, GK_Q_F32, NULL, 4, 8, f, 1, f, 4, NULL) == -1 && errno == EINVAL,
	       "qmatmul with null weights accepted");
	ASSERT(gk_qget_rows(b, GK_Q_Q4_K, f, 1, 128, ids, 1, f, NULL) == -1 && errno == EINVAL,
	       "get_rows with a half q4_K block accepted");
	ASSERT(gk_rmsnorm(b, f, f, f, 1, 0, 1e-5f, NULL) == -1 && errno == EINVAL,
	       "rmsnorm with dim 0 accepted");
	ASSERT(gk_rope(b, f, ids, 1, 1, 8, 7, 1e4f, 1.0f, 0, NULL) == -1 && errno == EINVAL,
	       "rope with an odd rot_dim accepted");
	ASSERT(gk_rope(b, f, ids, 1, 1, 8, 10, 1e4f, 1.0f, 0, NULL) == -1 && errno == EINVAL,
	       "rope with rot_dim > head_dim accepted");
	ASSERT(gk_kv_write(b, GK_BF16, f, ids, f, 1, 8, NULL) == -1 && errno == EINVAL,
	       "kv_write to a bf16 cache accepted");
	gk_attn_t p = {.nseq = 1,
		       .ntok = 1,
		       .q_start = ids,
		       .ctx_len = ids,
		       .block_table = ids,
		       .max_blocks = 1,
		       .block_size = 16,
		       .n_heads = 6,
		       .n_kv_heads = 4,
		       .head_dim = 64,
		       .scale = 1.0f,
		       .kv_t = GK_F32,
		       .k_cache = f,
		       .v_cache = f,
		       .q = f,
		       .out = f};
	ASSERT(gk_attention(b, &p, NULL) == -1 && errno == EINVAL &&
		   strstr(gk_backend_error(b), "not a multiple"),
	       "attention with 6 heads over 4 kv heads: '%s'", gk_backend_error(b));
	p.n_heads = 8, p.head_dim = 257;
	ASSERT(gk_attention(b, &p, NULL) == -1 && errno == EINVAL, "attention with head_dim 257");
	p.head_dim = 64, p.kv_t = GK_BF16;
	ASSERT(gk_attention(b, &p, NULL) == -1 && errno == EINVAL, "attention over a bf16 cache");
	p.kv_t = GK_F32, p.out = NULL;
	ASSERT(gk_attention(b, &p, NULL) == -1 && errno == EINVAL, "attention with a null output");
}
