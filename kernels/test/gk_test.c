/* gk_test.c - correctness tests for one kernels backend against the cpu reference
 *
 * usage: gk-test BACKEND [--huge N]   (BACKEND: cpu, cuda, hip, auto)
 *        gk-test --skip REASON        (prints the reason, exits 77: ctest SKIP)
 *
 * Every kernel of BACKEND is run on random data and edge cases (NaN, Inf, denormals,
 * values that overflow f16, lengths 0, 1, odd and huge, unaligned offsets) and compared
 * with the cpu backend, which itself is checked against known answers and the
 * compiler's _Float16. A backend that cannot open for want of a driver or device exits
 * 77 with the reason. Exit 0: all checks passed; 1: a check failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gk_scalar.h"
#include "gpool/kernels.h"
#include "kernels/test/gk_test.h"

gk_backend_t *b;   /* under test */
gk_backend_t *ref; /* cpu */
int checks, failures;
static size_t huge_n = (1u << 24) + 3;

/* ---- random data ---- */

static uint64_t rng = 0x1234567;

uint64_t rnd(void)
{
	return gk_splitmix64(rng++);
}

double unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static float nice_f32(void)
{
	static const float scales[] = {1.0f, 1e-3f, 1e3f, 1e-6f, 3e4f, 1e-30f};
	return (float)((unit() * 2.0 - 1.0) * scales[rnd() % 6]);
}

static float special_f32(void)
{
	static const float sp[] = {NAN,	      INFINITY, -INFINITY,	0.0f,	  -0.0f,
				   1e-40f,    -1e-45f,	65504.0f,	65519.0f, 65520.0f,
				   -70000.0f, 1e6f,	6e-8f,		3e-8f,	  2.98023224e-8f,
				   FLT_MAX,   FLT_MIN,	1.00048828125f, 3.0e38f,  -5.96046448e-8f,
				   1.0f,      -1.0f};
	return sp[rnd() % (sizeof(sp) / sizeof(sp[0]))];
}

static void fill(gk_dtype_t t, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned r = rnd() % 16;
		float f = r == 0 ? special_f32() : nice_f32();
		switch (t) {
		case GK_F32:
			if (r <= 2)
				((uint32_t *)p)[i] = (uint32_t)rnd();
			else
				((float *)p)[i] = f;
			break;
		case GK_F16:
			((uint16_t *)p)[i] = r <= 3 ? (uint16_t)rnd() : gk_f32_to_f16(f);
			break;
		case GK_BF16:
			((uint16_t *)p)[i] = r <= 3 ? (uint16_t)rnd() : gk_f32_to_bf16(f);
			break;
		case GK_F64:
			if (r == 1)
				((uint64_t *)p)[i] = rnd();
			else
				((double *)p)[i] = r == 0 ? (double)f : (unit() * 2 - 1) * 1e5;
			break;
		case GK_I32:
			((int32_t *)p)[i] =
			    r <= 3 ? (int32_t)rnd() : (int32_t)(rnd() % 2001) - 1000;
			break;
		}
	}
}

/* finite, moderate values for optimizer state */
static void fill_finite(gk_dtype_t t, void *p, size_t n, float scale, int positive)
{
	for (size_t i = 0; i < n; i++) {
		float f = (float)((positive ? unit() : unit() * 2 - 1) * scale);
		if (t == GK_F16)
			((uint16_t *)p)[i] = gk_f32_to_f16(f);
		else if (t == GK_BF16)
			((uint16_t *)p)[i] = gk_f32_to_bf16(f);
		else
			((float *)p)[i] = f;
	}
}

/* ---- device buffers ---- */

typedef struct {
	void *base;
	char *p;
} dbuf_t;

static void dalloc(dbuf_t *d, size_t bytes, size_t off)
{
	d->base = NULL;
	d->p = NULL;
	OK(b, gk_dev_alloc(b, bytes + off + 16, &d->base));
	if (d->base) {
		d->p = (char *)d->base + off;
		OK(b, gk_memset(b, d->base, 0xff, bytes + off + 16, NULL)); /* poison: NaN / -1 */
	}
}

static void dup(dbuf_t *d, const void *host, size_t bytes, size_t off)
{
	dalloc(d, bytes, off);
	if (d->p && bytes)
		OK(b, gk_copy(b, d->p, host, bytes, GK_H2D));
}

static void ddown(const dbuf_t *d, void *host, size_t bytes)
{
	if (d->p && bytes) {
		OK(b, gk_stream_sync(b, NULL));
		OK(b, gk_copy(b, host, d->p, bytes, GK_D2H));
	}
}

static void dfree(dbuf_t *d)
{
	OK(b, gk_dev_free(b, d->base));
	d->base = d->p = NULL;
}

/* ---- comparison: bits equal, or both NaN ---- */

static double as_double(gk_dtype_t t, const void *p, size_t i)
{
	switch (t) {
	case GK_F32:
		return ((const float *)p)[i];
	case GK_F16:
		return gk_f16_to_f32(((const uint16_t *)p)[i]);
	case GK_BF16:
		return gk_bf16_to_f32(((const uint16_t *)p)[i]);
	case GK_F64:
		return ((const double *)p)[i];
	case GK_I32:
		return ((const int32_t *)p)[i];
	}
	return 0;
}

static size_t compare(const char *what, gk_dtype_t t, const void *got, const void *want, size_t n)
{
	size_t es = gk_dtype_size(t), bad = 0, first = 0;
	for (size_t i = 0; i < n; i++) {
		const char *g = (const char *)got + i * es, *w = (const char *)want + i * es;
		if (memcmp(g, w, es) == 0)
			continue;
		double gd = as_double(t, got, i), wd = as_double(t, want, i);
		if (t != GK_I32 && isnan(gd) && isnan(wd))
			continue;
		if (!bad++)
			first = i;
	}
	ASSERT(bad == 0, "%s: %zu of %zu differ, first at %zu: got %.9g want %.9g", what, bad, n,
	       first, bad ? as_double(t, got, first) : 0.0, bad ? as_double(t, want, first) : 0.0);
	return bad;
}

/* relative difference allowed for f32 optimizer state (contraction differences only) */
static void compare_close(const char *what, const float *got, const float *want, size_t n)
{
	size_t bad = 0, inexact = 0, first = 0;
	for (size_t i = 0; i < n; i++) {
		if (got[i] == want[i] || (isnan(got[i]) && isnan(want[i])))
			continue;
		inexact++;
		double d = fabs((double)got[i] - want[i]), m = fabs((double)want[i]);
		if (!(d <= 1e-6 * m + 1e-30) && !bad++)
			first = i;
	}
	ASSERT(bad == 0, "%s: %zu of %zu beyond 1e-6, first at %zu: got %.9g want %.9g", what, bad,
	       n, first, bad ? got[first] : 0.0, bad ? want[first] : 0.0);
	if (inexact)
		printf("  note: %s: %zu of %zu not bit-exact (within 1e-6)\n", what, inexact, n);
}

/* ---- reference self-checks (known answers, _Float16) ---- */

static void t_conversions(void)
{
	struct {
		float f;
		uint16_t h;
	} f16[] = {{1.0f, 0x3c00},	     {65504.0f, 0x7bff},       {65519.0f, 0x7bff},
		   {65520.0f, 0x7c00},	     {1e10f, 0x7c00},	       {-INFINITY, 0xfc00},
		   {5.96046448e-8f, 0x0001}, {4.47034836e-8f, 0x0001}, {2.98023224e-8f, 0x0000},
		   {1e-8f, 0x0000},	     {-0.0f, 0x8000},	       {0.1f, 0x2e66},
		   {1.00048828125f, 0x3c00}, {1.00146484375f, 0x3c02}, {6.103515625e-05f, 0x0400},
		   {-2.0f, 0xc000}};
	for (size_t i = 0; i < sizeof(f16) / sizeof(f16[0]); i++)
		ASSERT(gk_f32_to_f16(f16[i].f) == f16[i].h, "f16(%g) = 0x%04x, want 0x%04x",
		       (double)f16[i].f, gk_f32_to_f16(f16[i].f), f16[i].h);
	ASSERT((gk_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (gk_f32_to_f16(NAN) & 0x3ff),
	       "f16(NaN) is not NaN");
	struct {
		uint32_t f;
		uint16_t h;
	} bf[] = {{0x3f800000u, 0x3f80}, {0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82},
		  {0x7f7fffffu, 0x7f80}, {0xff800000u, 0xff80}, {0x00000001u, 0x0000},
		  {0x00008001u, 0x0001}, {0x3f80ffffu, 0x3f81}};
	for (size_t i = 0; i < sizeof(bf) / sizeof(bf[0]); i++)
		ASSERT(gk_f32_to_bf16(gk_bits_f32(bf[i].f)) == bf[i].h,
		       "bf16(0x%08x) = 0x%04x, want 0x%04x", bf[i].f,
		       gk_f32_to_bf16(gk_bits_f32(bf[i].f)), bf[i].h);
	ASSERT(isnan(gk_bf16_to_f32(gk_f32_to_bf16(gk_bits_f32(0x7f800001u)))),
	       "bf16 of a NaN with low payload is not NaN");
	/* every f16 round-trips through f32 */
	size_t bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = gk_f16_to_f32((uint16_t)h);
		int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
		if (nan ? !isnan(f) || !isnan(gk_f16_to_f32(gk_f32_to_f16(f)))
			: gk_f32_to_f16(f) != h)
			bad++;
	}
	ASSERT(bad == 0, "%zu f16 values do not round-trip", bad);
#ifdef __FLT16_MAX__
	/* against the compiler's own conversion (round to nearest even) */
	bad = 0;
	for (int i = 0; i < 2000000; i++) {
		uint32_t u = (uint32_t)rnd();
		if (i & 1) /* concentrate near f16's range */
			u = (u & 0x807fffffu) | ((uint32_t)(100 + rnd() % 60) << 23);
		float f = gk_bits_f32(u);
		_Float16 hf = (_Float16)f;
		uint16_t h;
		memcpy(&h, &hf, 2);
		if (isnan(f) ? (gk_f32_to_f16(f) & 0x7c00) != 0x7c00 || !(gk_f32_to_f16(f) & 0x3ff)
			     : gk_f32_to_f16(f) != h)
			bad++;
	}
	ASSERT(bad == 0, "%zu of 2000000 f32->f16 differ from _Float16", bad);
#endif
}

/* the cpu backend's block conversions (F16C where present) against the scalar helpers */
static void t_cpu_cast_paths(void)
{
	size_t n = 65536 + 1000003;
	uint16_t *h = malloc(n * 2), *h2 = malloc(n * 2), *want_h = malloc(n * 2);
	float *f = malloc(n * 4), *f2 = malloc(n * 4), *want_f = malloc(n * 4);
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)rnd();
		if (i & 1) /* concentrate near f16's range */
			u = (u & 0x807fffffu) | ((uint32_t)(100 + rnd() % 60) << 23);
		h[i] = (uint16_t)(i < 65536 ? i : rnd());
		f[i] = gk_bits_f32(u);
		want_f[i] = gk_f16_to_f32(h[i]);
		want_h[i] = gk_f32_to_f16(f[i]);
	}
	OK(ref, gk_cast(ref, GK_F32, f2, GK_F16, h, n, NULL));
	compare("cpu cast f16->f32 vs scalar", GK_F32, f2, want_f, n);
	OK(ref, gk_cast(ref, GK_F16, h2, GK_F32, f, n, NULL));
	compare("cpu cast f32->f16 vs scalar", GK_F16, h2, want_h, n);
	free(h);
	free(h2);
	free(want_h);
	free(f);
	free(f2);
	free(want_f);
}

static void t_reference_known(void)
{
	float a[3] = {1.0f, NAN, -2.0f}, c[3] = {2.0f, 1.0f, -0.5f}, out[3];
	const void *srcs[2] = {a, c};
	OK(ref, gk_reduce(ref, GK_F32, GK_SUM, out, srcs, 2, 3, NULL));
	ASSERT(out[0] == 3.0f && isnan(out[1]) && out[2] == -2.5f, "cpu sum known answer");
	OK(ref, gk_reduce(ref, GK_F32, GK_MAX, out, srcs, 2, 3, NULL));
	ASSERT(out[0] == 2.0f && isnan(out[1]) && out[2] == -0.5f, "cpu max known answer");
	OK(ref, gk_reduce(ref, GK_F32, GK_AVG, out, srcs, 2, 3, NULL));
	ASSERT(out[0] == 1.5f && out[2] == -1.25f, "cpu avg known answer");
	int32_t i1[2] = {INT32_MAX, -7}, i2[2] = {1, 2}, io[2];
	const void *is[2] = {i1, i2};
	OK(ref, gk_reduce(ref, GK_I32, GK_SUM, io, is, 2, 2, NULL));
	ASSERT(io[0] == INT32_MIN && io[1] == -5, "cpu i32 sum wraps");
	OK(ref, gk_reduce(ref, GK_I32, GK_AVG, io, is, 2, 2, NULL));
	ASSERT(io[0] == 1073741824 && io[1] == -2, "cpu i32 avg in 64 bits, truncating");
}

/* ---- API misuse ---- */

static void t_api(void)
{
	gk_error_t err;
	gk_backend_t *x = gk_backend_open("bogus", &err);
	ASSERT(!x && errno == EINVAL && strstr(err.text, "unknown backend 'bogus'"),
	       "open bogus: errno %d '%s'", errno, err.text);
	float f[4] = {0};
	const void *srcs[1] = {f};
	ASSERT(gk_reduce(b, GK_F32, GK_SUM, f, srcs, 0, 4, NULL) == -1 && errno == EINVAL,
	       "reduce with 0 sources accepted");
	ASSERT(strstr(gk_backend_error(b), "reduce: 0 sources") != NULL, "message '%s'",
	       gk_backend_error(b));
	ASSERT(gk_reduce(b, GK_F32, GK_SUM, f, srcs, 17, 4, NULL) == -1 && errno == EINVAL,
	       "reduce with 17 sources accepted");
	ASSERT(gk_cast(b, GK_F16, f, GK_F64, f, 4, NULL) == -1 && errno == ENOTSUP,
	       "cast f64->f16 accepted");
	ASSERT(gk_scale(b, GK_I32, f, f, 2.0, 4, NULL) == -1 && errno == ENOTSUP,
	       "scale i32 accepted");
	ASSERT(gk_reduce(b, (gk_dtype_t)9, GK_SUM, f, srcs, 1, 4, NULL) == -1 && errno == EINVAL,
	       "bad dtype accepted");
	gk_adamw_t ap = {0};
	ASSERT(gk_adamw(b, &ap, f, f, f, GK_F32, f, 4, NULL) == -1 && errno == EINVAL,
	       "adamw step 0 accepted");
	/* length 0 is a no-op even with NULL buffers */
	OK(b, gk_reduce(b, GK_F32, GK_SUM, NULL, srcs, 1, 0, NULL));
	OK(b, gk_cast(b, GK_F16, NULL, GK_F32, NULL, 0, NULL));
	gk_backend_close(NULL);
	gk_backend_t *y = gk_backend_open("cpu", NULL);
	ASSERT(y != NULL, "open cpu");
	gk_backend_close(&y);
	ASSERT(y == NULL, "close does not clear the handle");
	gk_device_info_t info;
	OK(b, gk_device_info(b, &info));
	printf("  device: %s '%s' cc %d.%d, %d units, %.1f GiB (%.1f free), runtime %d, driver %d, "
	       "gemm %s\n",
	       info.backend, info.name, info.major, info.minor, info.multiprocessors,
	       (double)info.total_mem / (1u << 30), (double)info.free_mem / (1u << 30),
	       info.runtime_version, info.driver_version, info.gemm_impl);
	ASSERT(info.total_mem > 0, "no total memory");
	ASSERT(info.free_mem > 0 && info.free_mem <= info.total_mem,
	       "free memory %zu not in (0, total %zu]", info.free_mem, info.total_mem);
}

/* ---- elementwise ---- */

static void reduce_case(gk_dtype_t t, gk_redop_t op, int nsrc, size_t n, size_t off, int inplace)
{
	size_t es = gk_dtype_size(t), bytes = n * es;
	void *hs[GK_REDUCE_MAX_SRCS], *want = malloc(bytes + 8), *got = malloc(bytes + 8);
	dbuf_t ds[GK_REDUCE_MAX_SRCS], dd;
	const void *dsrc[GK_REDUCE_MAX_SRCS];
	char what[128];

	for (int k = 0; k < nsrc; k++) {
		hs[k] = malloc(bytes + 8);
		fill(t, hs[k], n);
		dup(&ds[k], hs[k], bytes, off * es + (size_t)k * es * (off ? 1 : 0));
		dsrc[k] = ds[k].p;
	}
	OK(ref, gk_reduce(ref, t, op, want, (const void *const *)hs, nsrc, n, NULL));
	if (inplace) {
		dd = ds[0];
	} else {
		dalloc(&dd, bytes, off ? 3 * es : 0);
	}
	OK(b, gk_reduce(b, t, op, dd.p, dsrc, nsrc, n, NULL));
	ddown(&dd, got, bytes);
	snprintf(what, sizeof(what), "reduce %s op %d nsrc %d n %zu off %zu%s", gk_dtype_name(t),
		 (int)op, nsrc, n, off, inplace ? " in place" : "");
	compare(what, t, got, want, n);
	for (int k = 0; k < nsrc; k++) {
		dfree(&ds[k]);
		free(hs[k]);
	}
	if (!inplace)
		dfree(&dd);
	free(want);
	free(got);
}

static const size_t lens[] = {0, 1, 3, 8, 17, 1023, 65537};
#define NLENS (sizeof(lens) / sizeof(lens[0]))

static void t_reduce(void)
{
	const int nsrcs[] = {1, 2, 3, 16};
	for (int t = GK_F32; t <= GK_I32; t++)
		for (int op = GK_SUM; op <= GK_AVG; op++)
			for (size_t l = 0; l < NLENS; l++)
				for (int s = 0; s < 4; s++)
					for (size_t off = 0; off <= 1; off++)
						reduce_case((gk_dtype_t)t, (gk_redop_t)op, nsrcs[s],
							    lens[l], off, 0);
	for (int t = GK_F32; t <= GK_I32; t++)
		reduce_case((gk_dtype_t)t, GK_AVG, 3, 4099, 0, 1);
	for (int t = GK_F32; t <= GK_BF16; t++) {
		reduce_case((gk_dtype_t)t, GK_SUM, 2, huge_n, 0, 0);
		reduce_case((gk_dtype_t)t, GK_SUM, 2, huge_n, 1, 1);
	}
	reduce_case(GK_F32, GK_MAX, 5, huge_n / 4, 0, 0);
}

static void cast_case(gk_dtype_t dt, gk_dtype_t st, size_t n, size_t soff, size_t doff)
{
	size_t sb = n * gk_dtype_size(st), db = n * gk_dtype_size(dt);
	void *hs = malloc(sb + 8), *want = malloc(db + 8), *got = malloc(db + 8);
	dbuf_t ds, dd;
	char what[96];
	fill(st, hs, n);
	dup(&ds, hs, sb, soff * gk_dtype_size(st));
	dalloc(&dd, db, doff * gk_dtype_size(dt));
	OK(ref, gk_cast(ref, dt, want, st, hs, n, NULL));
	OK(b, gk_cast(b, dt, dd.p, st, ds.p, n, NULL));
	ddown(&dd, got, db);
	snprintf(what, sizeof(what), "cast %s->%s n %zu off %zu/%zu", gk_dtype_name(st),
		 gk_dtype_name(dt), n, soff, doff);
	compare(what, dt, got, want, n);
	dfree(&ds);
	dfree(&dd);
	free(hs);
	free(want);
	free(got);
}

static void t_cast(void)
{
	const gk_dtype_t pairs[4][2] = {
	    {GK_F16, GK_F32}, {GK_BF16, GK_F32}, {GK_F32, GK_F16}, {GK_F32, GK_BF16}};
	for (int p = 0; p < 4; p++) {
		for (size_t l = 0; l < NLENS; l++) {
			cast_case(pairs[p][0], pairs[p][1], lens[l], 0, 0);
			cast_case(pairs[p][0], pairs[p][1], lens[l], 1, 0);
			cast_case(pairs[p][0], pairs[p][1], lens[l], 0, 3);
		}
		cast_case(pairs[p][0], pairs[p][1], huge_n, 0, 0);
	}
}

static void scale_case(gk_dtype_t t, double alpha, size_t n, size_t off, int inplace)
{
	size_t bytes = n * gk_dtype_size(t);
	void *hs = malloc(bytes + 8), *want = malloc(bytes + 8), *got = malloc(bytes + 8);
	dbuf_t ds, dd;
	char what[96];
	fill(t, hs, n);
	dup(&ds, hs, bytes, off * gk_dtype_size(t));
	if (inplace)
		dd = ds;
	else
		dalloc(&dd, bytes, 0);
	OK(ref, gk_scale(ref, t, want, hs, alpha, n, NULL));
	OK(b, gk_scale(b, t, dd.p, ds.p, alpha, n, NULL));
	ddown(&dd, got, bytes);
	snprintf(what, sizeof(what), "scale %s by %g n %zu off %zu%s", gk_dtype_name(t), alpha, n,
		 off, inplace ? " in place" : "");
	compare(what, t, got, want, n);
	dfree(&ds);
	if (!inplace)
		dfree(&dd);
	free(hs);
	free(want);
	free(got);
}

static void t_scale(void)
{
	const double alphas[] = {0.5, -3.0, 1e30, 0.0, 1.0 / 65536};
	for (int t = GK_F32; t <= GK_F64; t++)
		for (int a = 0; a < 5; a++)
			for (size_t l = 0; l < NLENS; l++) {
				scale_case((gk_dtype_t)t, alphas[a], lens[l], 0, 0);
				scale_case((gk_dtype_t)t, alphas[a], lens[l], 1, a == 0);
			}
	scale_case(GK_F16, 0.25, huge_n, 0, 1);
}

static void nonfinite_case(gk_dtype_t t, size_t n, size_t off, long at, int kind)
{
	size_t es = gk_dtype_size(t), bytes = n * es;
	void *h = malloc(bytes + 8);
	dbuf_t d;
	int found = -1;
	fill_finite(t, h, n, 100.0f, 0);
	if (t == GK_F64)
		for (size_t i = 0; i < n; i++)
			((double *)h)[i] = (double)i * 0.5 - 3.0;
	if (at >= 0) {
		float v = kind ? NAN : -INFINITY;
		if (t == GK_F32)
			((float *)h)[at] = v;
		else if (t == GK_F16)
			((uint16_t *)h)[at] = gk_f32_to_f16(v);
		else if (t == GK_BF16)
			((uint16_t *)h)[at] = gk_f32_to_bf16(v);
		else
			((double *)h)[at] = v;
	}
	dup(&d, h, bytes, off * es);
	OK(b, gk_has_nonfinite(b, t, d.p, n, &found));
	ASSERT(found == (at >= 0), "nonfinite %s n %zu off %zu at %ld: found %d", gk_dtype_name(t),
	       n, off, at, found);
	dfree(&d);
	free(h);
}

static void t_nonfinite(void)
{
	for (int t = GK_F32; t <= GK_F64; t++)
		for (size_t l = 1; l < NLENS; l++)
			for (size_t off = 0; off <= 1; off++) {
				size_t n = lens[l];
				nonfinite_case((gk_dtype_t)t, n, off, -1, 0);
				nonfinite_case((gk_dtype_t)t, n, off, 0, 0);
				nonfinite_case((gk_dtype_t)t, n, off, (long)n - 1, 1);
				nonfinite_case((gk_dtype_t)t, n, off, (long)(n / 2), (int)(n & 1));
			}
	nonfinite_case(GK_F16, huge_n, 0, (long)huge_n - 2, 0);
	nonfinite_case(GK_BF16, huge_n, 1, -1, 0);
	/* f16 overflow: 70000 cast to f16 becomes inf and is caught */
	float big[5] = {1, 2, 70000.0f, 4, 5};
	dbuf_t df, dh;
	int found = 0;
	dup(&df, big, sizeof(big), 0);
	dalloc(&dh, 10, 0);
	OK(b, gk_cast(b, GK_F16, dh.p, GK_F32, df.p, 5, NULL));
	OK(b, gk_has_nonfinite(b, GK_F16, dh.p, 5, &found));
	ASSERT(found == 1, "f16 overflow not flagged");
	/* the async flag accumulates over buffers and is never cleared */
	uint32_t *flag, hflag = 7;
	OK(b, gk_dev_alloc(b, 4, (void **)&flag));
	OK(b, gk_memset(b, flag, 0, 4, NULL));
	OK(b, gk_find_nonfinite(b, GK_F32, df.p, 5, flag, NULL));
	OK(b, gk_find_nonfinite(b, GK_F16, dh.p, 5, flag, NULL));
	OK(b, gk_find_nonfinite(b, GK_F32, df.p, 5, flag, NULL));
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_copy(b, &hflag, flag, 4, GK_D2H));
	ASSERT(hflag == 1, "accumulated flag %u", hflag);
	OK(b, gk_dev_free(b, flag));
	dfree(&df);
	dfree(&dh);
}

/* ---- optimizers ---- */

static void opt_case(int adam, gk_dtype_t gt, size_t n, size_t off, int variant)
{
	size_t gb = n * gk_dtype_size(gt), fb = n * 4;
	float *w = malloc(fb + 4), *m = malloc(fb + 4), *v = malloc(fb + 4);
	float *gw = malloc(fb + 4), *gm = malloc(fb + 4), *gv = malloc(fb + 4);
	void *g = malloc(gb + 4);
	dbuf_t dw, dm, dv, dg;
	char what[96];
	gk_sgd_t sp = {0.01f, 0.9f, variant ? 1e-4f : 0.0f, variant ? 1.0f / 1024 : 1.0f, variant};
	gk_adamw_t ap = {1e-3f,
			 0.9f,
			 0.999f,
			 1e-8f,
			 variant ? 0.01f : 0.0f,
			 variant ? 1.0f / 1024 : 1.0f,
			 1 + variant * 99};
	fill_finite(GK_F32, w, n, 1.0f, 0);
	fill_finite(GK_F32, m, n, 0.1f, 0);
	fill_finite(GK_F32, v, n, 0.01f, 1);
	fill_finite(gt, g, n, variant ? 100.0f : 1.0f, 0);
	dup(&dw, w, fb, off * 4);
	dup(&dm, m, fb, off * 4);
	dup(&dv, v, fb, off * 4);
	dup(&dg, g, gb, off * gk_dtype_size(gt));
	for (int step = 0; step < 3; step++) {
		if (adam) {
			ap.step += step;
			OK(ref, gk_adamw(ref, &ap, w, m, v, gt, g, n, NULL));
			OK(b, gk_adamw(b, &ap, (float *)dw.p, (float *)dm.p, (float *)dv.p, gt,
				       dg.p, n, NULL));
		} else {
			OK(ref, gk_sgd_momentum(ref, &sp, w, v, gt, g, n, NULL));
			OK(b, gk_sgd_momentum(b, &sp, (float *)dw.p, (float *)dv.p, gt, dg.p, n,
					      NULL));
		}
	}
	ddown(&dw, gw, fb);
	ddown(&dm, gm, fb);
	ddown(&dv, gv, fb);
	snprintf(what, sizeof(what), "%s grad %s n %zu off %zu variant %d w",
		 adam ? "adamw" : "sgd", gk_dtype_name(gt), n, off, variant);
	compare_close(what, gw, w, n);
	what[strlen(what) - 1] = 'v';
	compare_close(what, gv, v, n);
	if (adam) {
		what[strlen(what) - 1] = 'm';
		compare_close(what, gm, m, n);
	}
	dfree(&dw);
	dfree(&dm);
	dfree(&dv);
	dfree(&dg);
	free(w);
	free(m);
	free(v);
	free(gw);
	free(gm);
	free(gv);
	free(g);
}

static void t_optimizers(void)
{
	for (int adam = 0; adam <= 1; adam++)
		for (int gt = GK_F32; gt <= GK_BF16; gt++)
			for (size_t l = 1; l < NLENS; l++)
				for (int variant = 0; variant <= 1; variant++)
					opt_case(adam, (gk_dtype_t)gt, lens[l], (size_t)variant,
						 variant);
	opt_case(1, GK_BF16, huge_n / 4, 0, 1);
}

/* ---- memory test ---- */

static void t_memtest(void)
{
	const char *names[] = {"walking ones", "moving inversions", "address", "random"};
	size_t sizes[] = {4 * 262147, (size_t)64 << 20};
	for (int s = 0; s < 2; s++) {
		size_t bytes = sizes[s], words = bytes / 4;
		void *buf;
		OK(b, gk_dev_alloc(b, bytes, &buf));
		for (int p = GK_MT_WALKING_ONES; p <= GK_MT_RANDOM; p++) {
			if (s == 1 && p == GK_MT_WALKING_ONES)
				continue; /* 33 passes: the small buffer covers it */
			uint64_t errors = 0;
			OK(b, gk_memtest(b, (gk_memtest_t)p, buf, bytes, 42, &errors));
			ASSERT(errors == 0, "memtest %s on %zu bytes: %llu errors on good memory",
			       names[p], bytes, (unsigned long long)errors);
			size_t at[] = {0, words / 2 + 7, words - 1};
			for (int i = 0; i < 3; i++) {
				errors = 0;
				OK(b, gk_memtest_inject_fault(b, at[i], 1u << ((i * 13 + p) % 32)));
				OK(b, gk_memtest(b, (gk_memtest_t)p, buf, bytes, 42, &errors));
				ASSERT(errors == 1,
				       "memtest %s: flipped bit in word %zu gave %llu errors",
				       names[p], at[i], (unsigned long long)errors);
			}
		}
		OK(b, gk_memtest_inject_fault(b, words, 1));
		uint64_t errors = 0;
		ASSERT(gk_memtest(b, GK_MT_ADDRESS, buf, bytes, 1, &errors) == -1 &&
			   errno == EINVAL,
		       "fault outside the buffer accepted");
		OK(b, gk_dev_free(b, buf));
	}
}

/* ---- bandwidth, fma ---- */

static void t_bw_fma(void)
{
	size_t bytes = (size_t)16 << 20;
	char *h = malloc(bytes), *back = malloc(bytes);
	void *src, *dst, *scratch;
	double flops = 0;
	for (size_t i = 0; i < bytes; i++)
		h[i] = (char)rnd();
	OK(b, gk_dev_alloc(b, bytes, &src));
	OK(b, gk_dev_alloc(b, bytes, &dst));
	OK(b, gk_copy(b, src, h, bytes, GK_H2D));
	OK(b, gk_bw_copy(b, dst, src, bytes, NULL));
	OK(b, gk_bw_read(b, src, bytes, NULL));
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_copy(b, back, dst, bytes, GK_D2H));
	ASSERT(memcmp(back, h, bytes) == 0, "bw_copy copied wrong bytes");
	OK(b, gk_bw_write(b, dst, bytes, NULL));
	OK(b, gk_stream_sync(b, NULL));
	ASSERT(gk_bw_copy(b, (char *)dst + 4, src, 64, NULL) == -1 && errno == EINVAL,
	       "unaligned bw_copy accepted");
	OK(b, gk_dev_alloc(b, gk_fma_scratch_bytes(b), &scratch));
	OK(b, gk_fma(b, GK_F32, scratch, 64, &flops, NULL));
	ASSERT(flops > 0, "fma f32 counted no flops");
	OK(b, gk_fma(b, GK_F16, scratch, 64, &flops, NULL));
	ASSERT(flops > 0, "fma f16 counted no flops");
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_dev_free(b, scratch));
	OK(b, gk_dev_free(b, src));
	OK(b, gk_dev_free(b, dst));
	free(h);
	free(back);
}

/* ---- streams, events, pinned memory, async copies ---- */

static void t_streams(void)
{
	size_t n = (size_t)4 << 20, bytes = n * 4;
	gk_stream_t *s1 = NULL, *s2 = NULL;
	gk_event_t *e0 = NULL, *e1 = NULL, *e2 = NULL;
	float *pin, *pin2, *dev;
	float ms = -1;
	OK(b, gk_stream_create(b, &s1));
	OK(b, gk_stream_create(b, &s2));
	OK(b, gk_event_create(b, &e0));
	OK(b, gk_event_create(b, &e1));
	OK(b, gk_event_create(b, &e2));
	OK(b, gk_host_alloc(b, bytes, (void **)&pin));
	OK(b, gk_host_alloc(b, bytes, (void **)&pin2));
	OK(b, gk_dev_alloc(b, bytes, (void **)&dev));
	for (size_t i = 0; i < n; i++)
		pin[i] = (float)(i % 1000);
	OK(b, gk_event_record(b, e0, s1));
	OK(b, gk_copy_async(b, dev, pin, bytes, GK_H2D, s1));
	OK(b, gk_event_record(b, e1, s1));
	OK(b, gk_stream_wait_event(b, s2, e1));
	OK(b, gk_scale(b, GK_F32, dev, dev, 2.0, n, s2));
	OK(b, gk_copy_async(b, pin2, dev, bytes, GK_D2H, s2));
	OK(b, gk_event_record(b, e2, s2));
	OK(b, gk_event_sync(b, e2));
	OK(b, gk_stream_sync(b, s2));
	OK(b, gk_event_elapsed(b, e0, e2, &ms));
	ASSERT(ms >= 0, "elapsed %g ms", (double)ms);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += pin2[i] != 2.0f * (float)(i % 1000);
	ASSERT(bad == 0, "stream pipeline: %zu wrong", bad);
	/* d2d, synchronous */
	float *dev2;
	OK(b, gk_dev_alloc(b, bytes, (void **)&dev2));
	OK(b, gk_copy(b, dev2, dev, bytes, GK_D2D));
	OK(b, gk_copy(b, pin, dev2, bytes, GK_D2H));
	ASSERT(memcmp(pin, pin2, bytes) == 0, "d2d copy differs");
	OK(b, gk_dev_free(b, dev2));
	OK(b, gk_dev_free(b, dev));
	OK(b, gk_host_free(b, pin));
	OK(b, gk_host_free(b, pin2));
	OK(b, gk_event_destroy(b, &e0));
	OK(b, gk_event_destroy(b, &e1));
	OK(b, gk_event_destroy(b, &e2));
	OK(b, gk_stream_destroy(b, &s1));
	OK(b, gk_stream_destroy(b, &s2));
	ASSERT(s1 == NULL && e0 == NULL, "destroy does not clear handles");
}

/* ---- sgemm against a double-precision loop ---- */

static void gemm_case(gk_backend_t *be, int ta, int tb, int m, int n, int k, float beta)
{
	int lda = (ta ? k : m) + 3, ldb = (tb ? n : k) + 1, ldc = m + 2;
	size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n),
	       nc = (size_t)ldc * n;
	float *a = malloc(na * 4), *bm = malloc(nb * 4), *c = malloc(nc * 4), *got = malloc(nc * 4);
	float *da, *db, *dc;
	const float alpha = 1.5f;
	fill_finite(GK_F32, a, na, 1.0f, 0);
	fill_finite(GK_F32, bm, nb, 1.0f, 0);
	if (beta == 0.0f)
		for (size_t i = 0; i < nc; i++)
			c[i] = NAN; /* must not be read */
	else
		fill_finite(GK_F32, c, nc, 1.0f, 0);
	OK(be, gk_dev_alloc(be, na * 4, (void **)&da));
	OK(be, gk_dev_alloc(be, nb * 4, (void **)&db));
	OK(be, gk_dev_alloc(be, nc * 4, (void **)&dc));
	OK(be, gk_copy(be, da, a, na * 4, GK_H2D));
	OK(be, gk_copy(be, db, bm, nb * 4, GK_H2D));
	OK(be, gk_copy(be, dc, c, nc * 4, GK_H2D));
	OK(be, gk_sgemm(be, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc, NULL));
	OK(be, gk_stream_sync(be, NULL));
	OK(be, gk_copy(be, got, dc, nc * 4, GK_D2H));
	double num = 0, den = 0;
	int nan = 0;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double acc = 0;
			for (int l = 0; l < k; l++)
				acc +=
				    (double)(ta ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda]) *
				    (tb ? bm[j + (size_t)l * ldb] : bm[l + (size_t)j * ldb]);
			double want =
			    alpha * acc + (beta == 0.0f ? 0.0 : beta * c[i + (size_t)j * ldc]);
			double g = got[i + (size_t)j * ldc];
			nan += isnan(g);
			num += (g - want) * (g - want);
			den += want * want;
		}
	double rel = den > 0 ? sqrt(num / den) : sqrt(num);
	ASSERT(!nan && rel < 1e-5, "sgemm %s ta %d tb %d %dx%dx%d beta %g: rel err %.3g, %d NaN",
	       gk_backend_name(be), ta, tb, m, n, k, (double)beta, rel, nan);
	OK(be, gk_dev_free(be, da));
	OK(be, gk_dev_free(be, db));
	OK(be, gk_dev_free(be, dc));
	free(a);
	free(bm);
	free(c);
	free(got);
}

static void gemm_all(gk_backend_t *be)
{
	const int sz[][3] = {{1, 1, 1}, {17, 33, 9}, {64, 64, 64}, {100, 70, 130}, {257, 129, 65}};
	for (int s = 0; s < 5; s++)
		for (int t = 0; t < 4; t++)
			gemm_case(be, t & 1, t >> 1, sz[s][0], sz[s][1], sz[s][2],
				  (s + t) & 1 ? 0.5f : 0.0f);
}

static void t_gemm(void)
{
	gk_device_info_t info;
	gemm_all(b);
	/* the same products through the fallback path (own tiled kernel / plain C loop) */
	setenv("GPOOL_KERNELS_NO_BLAS", "1", 1);
	gk_backend_t *nb = gk_backend_open(gk_backend_name(b), NULL);
	unsetenv("GPOOL_KERNELS_NO_BLAS");
	ASSERT(nb != NULL, "reopen without blas");
	if (nb) {
		OK(nb, gk_device_info(nb, &info));
		printf("  sgemm again with '%s'\n", info.gemm_impl);
		gemm_all(nb);
		gk_backend_close(&nb);
	}
}

/* ---- neural-network layers against the cpu reference (and known answers) ---- */

/* ref: the cpu backend's result of the same call on host buffers */
static void nn_bias_act_case(size_t rows, size_t cols, gk_act_t act)
{
	size_t n = rows * cols;
	float *y = malloc((n + 1) * 4), *bias = malloc((cols + 1) * 4), *want = malloc((n + 1) * 4),
	      *got = malloc((n + 1) * 4);
	dbuf_t dy, db;
	fill(GK_F32, y, n); /* NaN, Inf, denormals included */
	fill(GK_F32, bias, cols);
	memcpy(want, y, n * 4);
	OK(ref, gk_bias_act(ref, want, bias, rows, cols, act, NULL));
	dup(&dy, y, n * 4, 0);
	dup(&db, bias, cols * 4, 4);
	OK(b, gk_bias_act(b, (float *)dy.p, (float *)db.p, rows, cols, act, NULL));
	ddown(&dy, got, n * 4);
	char what[64];
	snprintf(what, sizeof(what), "bias_act %zux%zu act %d", rows, cols, (int)act);
	compare(what, GK_F32, got, want, n);
	dfree(&dy);
	dfree(&db);
	free(y), free(bias), free(want), free(got);
}

static void nn_relu_grad_case(size_t n, size_t off)
{
	float *dy = malloc((n + 1) * 4), *y = malloc((n + 1) * 4), *want = malloc((n + 1) * 4),
	      *got = malloc((n + 1) * 4);
	dbuf_t ddy, dyy;
	fill(GK_F32, dy, n);
	fill(GK_F32, y, n);
	memcpy(want, dy, n * 4);
	OK(ref, gk_relu_grad(ref, want, y, n, NULL));
	dup(&ddy, dy, n * 4, off * 4); /* off counts floats: a card faults on a misaligned float */
	dup(&dyy, y, n * 4, 0);
	OK(b, gk_relu_grad(b, (float *)ddy.p, (float *)dyy.p, n, NULL));
	ddown(&ddy, got, n * 4);
	char what[64];
	snprintf(what, sizeof(what), "relu_grad n %zu off %zu", n, off);
	compare(what, GK_F32, got, want, n);
	dfree(&ddy);
	dfree(&dyy);
	free(dy), free(y), free(want), free(got);
}

static void nn_bias_grad_case(size_t rows, size_t cols, float alpha)
{
	size_t n = rows * cols;
	float *dy = malloc((n + 1) * 4), *want = malloc((cols + 1) * 4),
	      *got = malloc((cols + 1) * 4);
	dbuf_t ddy, ddb;
	fill_finite(GK_F32, dy, n, 3.0f, 0);
	OK(ref, gk_bias_grad(ref, dy, want, rows, cols, alpha, NULL));
	dup(&ddy, dy, n * 4, 0);
	dalloc(&ddb, cols * 4, 0);
	OK(b, gk_bias_grad(b, (float *)ddy.p, (float *)ddb.p, rows, cols, alpha, NULL));
	ddown(&ddb, got, cols * 4);
	char what[64];
	snprintf(what, sizeof(what), "bias_grad %zux%zu", rows, cols);
	compare(what, GK_F32, got, want, cols);
	/* and against a double-precision sum */
	size_t bad = 0;
	for (size_t c = 0; c < cols; c++) {
		double acc = 0, mag = 0;
		for (size_t r = 0; r < rows; r++)
			acc += dy[r * cols + c], mag += fabs((double)dy[r * cols + c]);
		bad += fabs(got[c] - alpha * acc) > 1e-5 * fabs((double)alpha) * (mag + 1);
	}
	ASSERT(bad == 0, "bias_grad %zux%zu: %zu columns off the double sum", rows, cols, bad);
	dfree(&ddy);
	dfree(&ddb);
	free(dy), free(want), free(got);
}

static void nn_xent_case(size_t rows, size_t cols, float zscale, int inplace)
{
	size_t n = rows * cols;
	float *z = malloc((n + 1) * 4), *dz = malloc((n + 1) * 4), *loss = malloc((rows + 1) * 4);
	float *gdz = malloc((n + 1) * 4), *gloss = malloc((rows + 1) * 4);
	int32_t *lab = malloc((rows + 1) * 4);
	dbuf_t dzb, ddz, dlab, dloss;
	fill_finite(GK_F32, z, n, zscale, 0);
	for (size_t r = 0; r < rows; r++)
		lab[r] = (int32_t)(rnd() % cols);
	if (rows > 2)
		lab[rows / 2] = (int32_t)cols; /* out of range: NaN row */
	OK(ref, gk_softmax_xent(ref, z, lab, rows, cols, 0.25f, loss, dz, NULL));
	dup(&dzb, z, n * 4, 0);
	dup(&dlab, lab, rows * 4, 0);
	dalloc(&dloss, rows * 4, 0);
	if (!inplace)
		dalloc(&ddz, n * 4, 4);
	float *out = inplace ? (float *)dzb.p : (float *)ddz.p;
	OK(b, gk_softmax_xent(b, (float *)dzb.p, (int32_t *)dlab.p, rows, cols, 0.25f,
			      (float *)dloss.p, out, NULL));
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_copy(b, gdz, out, n * 4, GK_D2H));
	ddown(&dloss, gloss, rows * 4);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(dz[i]) && isnan(gdz[i]))
			continue;
		bad += !(fabs((double)gdz[i] - dz[i]) <= 1e-5 * fabs((double)dz[i]) + 1e-7);
	}
	for (size_t r = 0; r < rows; r++) {
		if (isnan(loss[r]) && isnan(gloss[r]))
			continue;
		bad += !(fabs((double)gloss[r] - loss[r]) <= 1e-5 * fabs((double)loss[r]) + 1e-6);
	}
	ASSERT(bad == 0, "softmax_xent %zux%zu scale %g inplace %d: %zu values differ", rows, cols,
	       (double)zscale, inplace, bad);
	/* the reference against a double-precision formula; rows sum to zero */
	size_t rbad = 0;
	for (size_t r = 0; r < rows; r++) {
		if (lab[r] == (int32_t)cols) {
			rbad += !isnan(loss[r]);
			continue;
		}
		double m = -INFINITY, sum = 0, dsum = 0;
		for (size_t c = 0; c < cols; c++)
			m = fmax(m, z[r * cols + c]);
		for (size_t c = 0; c < cols; c++)
			sum += exp((double)z[r * cols + c] - m);
		double want = log(sum) - ((double)z[r * cols + (size_t)lab[r]] - m);
		rbad += fabs(loss[r] - want) > 1e-5 * (fabs(want) + 1);
		for (size_t c = 0; c < cols; c++) {
			double p = exp((double)z[r * cols + c] - m) / sum;
			double g = 0.25 * (p - (c == (size_t)lab[r]));
			rbad += fabs(dz[r * cols + c] - g) > 1e-6;
			dsum += dz[r * cols + c];
		}
		rbad += fabs(dsum) > 1e-5;
	}
	ASSERT(rbad == 0, "softmax_xent reference %zux%zu: %zu values off the double formula", rows,
	       cols, rbad);
	dfree(&dzb);
	dfree(&dlab);
	dfree(&dloss);
	if (!inplace)
		dfree(&ddz);
	free(z), free(dz), free(loss), free(gdz), free(gloss), free(lab);
}

static void t_nn(void)
{
	/* known answers of the reference */
	float y[6] = {-1.0f, 0.5f, 2.0f, 0.0f, -0.25f, 1.0f}, bias[3] = {0.5f, -1.0f, 0.0f};
	OK(ref, gk_bias_act(ref, y, bias, 2, 3, GK_ACT_RELU, NULL));
	ASSERT(y[0] == 0 && y[1] == 0 && y[2] == 2 && y[3] == 0.5f && y[4] == 0 && y[5] == 1,
	       "bias_act relu known answer: %g %g %g %g %g %g", y[0], y[1], y[2], y[3], y[4], y[5]);
	float db[3];
	float dy[6] = {1, 2, 3, 4, 5, 6};
	OK(ref, gk_bias_grad(ref, dy, db, 2, 3, 0.5f, NULL));
	ASSERT(db[0] == 2.5f && db[1] == 3.5f && db[2] == 4.5f, "bias_grad known answer");
	float z[2] = {0.0f, 0.0f}, l, g[2];
	int32_t lab = 1;
	OK(ref, gk_softmax_xent(ref, z, &lab, 1, 2, 1.0f, &l, g, NULL));
	ASSERT(fabsf(l - logf(2.0f)) < 1e-7f && g[0] == 0.5f && g[1] == -0.5f,
	       "softmax_xent known answer: loss %g grad %g %g", l, g[0], g[1]);
	ASSERT(gk_softmax_xent(ref, z, &lab, 1, 2, 1.0f, NULL, NULL, NULL) == -1 && errno == EINVAL,
	       "softmax_xent with no output accepted");
	ASSERT(gk_bias_act(ref, y, bias, 2, 3, (gk_act_t)7, NULL) == -1 && errno == EINVAL,
	       "bias_act with a bad activation accepted");

	const size_t shapes[][2] = {{1, 1}, {3, 10}, {17, 33}, {192, 256}, {64, 1023}, {1000, 10}};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		nn_bias_act_case(shapes[i][0], shapes[i][1], GK_ACT_NONE);
		nn_bias_act_case(shapes[i][0], shapes[i][1], GK_ACT_RELU);
		nn_bias_grad_case(shapes[i][0], shapes[i][1], i & 1 ? 1.0f : 0.125f);
		nn_xent_case(shapes[i][0], shapes[i][1], i & 1 ? 5.0f : 60.0f, (int)(i & 1));
	}
	for (size_t l = 1; l < NLENS; l++)
		nn_relu_grad_case(lens[l], l & 1);
	nn_relu_grad_case(huge_n / 4, 0);
}

/* ---- mixed precision: gk_gemm against the cpu reference, the device loss scaler ---- */

static void *hdup_t(gk_dtype_t t, size_t n, float scale, int positive)
{
	void *h = malloc(n * gk_dtype_size(t) + 1);
	fill_finite(t, h, n, scale, positive);
	return h;
}

static void *to_dev(gk_backend_t *be, const void *h, size_t bytes)
{
	void *d = NULL;
	OK(be, gk_dev_alloc(be, bytes + 16, &d));
	if (d)
		OK(be, gk_copy(be, d, h, bytes, GK_H2D));
	return d;
}

/* relative Frobenius error of N values of type T */
static double rel_err(gk_dtype_t t, const void *got, const void *want, size_t n, int *nan)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < n; i++) {
		double g = as_double(t, got, i), w = as_double(t, want, i);
		*nan += isnan(g) != isnan(w);
		if (isnan(g) || isnan(w))
			continue;
		num += (g - w) * (g - w), den += w * w;
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* the bound for products of K terms rounded once to CT: its half ulp plus the inputs' */
static double gemm_bound(gk_dtype_t ab, gk_dtype_t ct, gk_math_t math)
{
	double e = ct == GK_BF16 ? 8e-3 : ct == GK_F16 ? 2e-3 : 1e-5;
	if (ab == GK_F32 && math == GK_MATH_TF32)
		e = 2e-3; /* TF32 keeps 10 mantissa bits of the inputs */
	return e;
}

static void gemmx_case(gk_dtype_t ab, gk_dtype_t ct, gk_epilogue_t epi, gk_math_t math, int ta,
		       int tb, int m, int n, int k)
{
	int lda = ta ? k : m, ldb = tb ? n : k, ldc = m;
	size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n),
	       nc = (size_t)ldc * n;
	size_t es = gk_dtype_size(ct), nbias = epi == GK_EPI_BGRADB ? (size_t)n : (size_t)m;
	void *a = hdup_t(ab, na, 1.0f, 0), *bm = hdup_t(ab, nb, 1.0f, 0);
	void *aux = hdup_t(ct, nc, 1.0f, 0), *bias = hdup_t(ct, nbias, 1.0f, 0);
	void *got = malloc(nc * es), *want = calloc(nc, es), *gb = malloc(nbias * es),
	     *wb = malloc(nbias * es);
	gk_gemm_t p = {.trans_a = ta,
		       .trans_b = tb,
		       .m = m,
		       .n = n,
		       .k = k,
		       .ab_t = ab,
		       .c_t = ct,
		       .alpha = 1.0f,
		       .beta = 0.0f,
		       .lda = lda,
		       .ldb = ldb,
		       .ldc = ldc,
		       .epi = epi,
		       .math = math};
	/* the reference on host buffers (cpu) */
	p.a = a, p.b = bm, p.c = want, p.bias = wb, p.aux = aux;
	memcpy(wb, bias, nbias * es);
	OK(ref, gk_gemm(ref, &p, NULL));
	void *da = to_dev(b, a, na * gk_dtype_size(ab)),
	     *db = to_dev(b, bm, nb * gk_dtype_size(ab));
	void *dc = to_dev(b, want, nc * es), *dbias = to_dev(b, bias, nbias * es),
	     *daux = to_dev(b, aux, nc * es);
	p.a = da, p.b = db, p.c = dc, p.bias = dbias, p.aux = daux;
	OK(b, gk_gemm(b, &p, NULL));
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_copy(b, got, dc, nc * es, GK_D2H));
	OK(b, gk_copy(b, gb, dbias, nbias * es, GK_D2H));
	int nan = 0;
	double e = rel_err(ct, got, want, nc, &nan), bound = gemm_bound(ab, ct, math);
	ASSERT(!nan && e < bound,
	       "gemm %s->%s epi %d math %d ta %d tb %d %dx%dx%d: rel err %.3g (bound %.3g), %d NaN",
	       gk_dtype_name(ab), gk_dtype_name(ct), (int)epi, (int)math, ta, tb, m, n, k, e, bound,
	       nan);
	if (epi == GK_EPI_BGRADB) {
		/* a sum of k inputs: cuBLASLt adds them in its own order */
		double eb = rel_err(ct, gb, wb, nbias, &nan);
		ASSERT(!nan && eb < bound, "gemm bgradb %s->%s %dx%dx%d: bias rel err %.3g",
		       gk_dtype_name(ab), gk_dtype_name(ct), m, n, k, eb);
	}
	OK(b, gk_dev_free(b, da));
	OK(b, gk_dev_free(b, db));
	OK(b, gk_dev_free(b, dc));
	OK(b, gk_dev_free(b, dbias));
	OK(b, gk_dev_free(b, daux));
	free(a), free(bm), free(aux), free(bias), free(got), free(want), free(gb), free(wb);
}

static void t_gemm_ex(void)
{
	const gk_dtype_t abs[] = {GK_BF16, GK_F16, GK_F32};
	const int sz[][3] = {{64, 32, 48}, {256, 128, 512}, {10, 96, 64}, {33, 17, 9}};
	for (int t = 0; t < 3; t++)
		for (int cf = 0; cf < 2; cf++) {
			gk_dtype_t ct = cf ? GK_F32 : abs[t];
			if (cf && abs[t] == GK_F32)
				continue;
			for (int e = GK_EPI_NONE; e <= GK_EPI_DRELU; e++)
				for (int s = 0; s < 4; s++) {
					int ta = e == GK_EPI_BGRADB ? 0 : (s & 1);
					int tb = e == GK_EPI_BGRADB ? 1 : (e + s) & 1;
					gemmx_case(abs[t], ct, (gk_epilogue_t)e,
						   abs[t] == GK_F32 ? GK_MATH_TF32
								    : GK_MATH_DEFAULT,
						   ta, tb, sz[s][0], sz[s][1], sz[s][2]);
				}
		}
	/* f32 with the default math: the sgemm path, then the epilogue */
	for (int e = GK_EPI_NONE; e <= GK_EPI_DRELU; e++)
		gemmx_case(GK_F32, GK_F32, (gk_epilogue_t)e, GK_MATH_DEFAULT, 1, 0, 100, 70, 130);
	/* the training shapes: forward (W^T a, bias+relu), weight gradient (bgradb), input
	 * gradient (drelu) of a 784-4096 layer at batch 64 */
	gemmx_case(GK_BF16, GK_BF16, GK_EPI_RELU_BIAS, GK_MATH_DEFAULT, 1, 0, 4096, 64, 784);
	gemmx_case(GK_BF16, GK_BF16, GK_EPI_BGRADB, GK_MATH_DEFAULT, 0, 1, 784, 4096, 64);
	gemmx_case(GK_F16, GK_F16, GK_EPI_DRELU, GK_MATH_DEFAULT, 0, 0, 784, 64, 4096);
	gk_gemm_t bad = {
	    .m = 1, .n = 1, .k = 1, .ab_t = GK_BF16, .c_t = GK_F16, .lda = 1, .ldb = 1, .ldc = 1};
	ASSERT(gk_gemm(b, &bad, NULL) < 0 && errno == EINVAL, "gemm bf16 -> f16 refused");
}

/* the scaler's rule on the host, step by step (what the kernel runs) */
static void t_amp_rule(void)
{
	gk_amp_t a;
	gk_amp_init(&a, 65536.0f, 1, 3, 0.9f, 0.999f);
	ASSERT(a.scale == 65536.0f && a.bc1 == (float)(1.0 - (double)0.9f), "init");
	a.found = 1;
	gk_amp_rule(&a);
	ASSERT(a.scale == 32768.0f && a.skipped == 1 && a.steps == 0 && !a.found && a.good == 0,
	       "overflow: scale %g skipped %d steps %d", (double)a.scale, a.skipped, a.steps);
	ASSERT(a.bc1 == (float)(1.0 - (double)0.9f), "a skipped step keeps the bias correction");
	for (int i = 0; i < 3; i++)
		gk_amp_rule(&a);
	ASSERT(a.scale == 65536.0f && a.steps == 3 && a.good == 0,
	       "window of 3 good steps doubles: scale %g steps %d", (double)a.scale, a.steps);
	ASSERT(a.bc1 == (float)(1.0 - pow(0.9f, 4)) && a.bc2 == (float)(1.0 - pow(0.999f, 4)),
	       "bias corrections for step 4");
	a.scale = a.min;
	a.found = 1;
	gk_amp_rule(&a);
	ASSERT(a.scale == a.min, "never below min");
	a.scale = a.max, a.good = 2;
	gk_amp_rule(&a);
	ASSERT(a.scale == a.max, "never above max");
	gk_amp_init(&a, 65536.0f, 0, 3, 0.9f, 0.999f);
	ASSERT(a.scale == 1.0f, "static scaler: 1");
	a.found = 1;
	gk_amp_rule(&a);
	ASSERT(a.scale == 1.0f && a.skipped == 1, "static scaler still skips, never scales");
}

/* A float's bits (the card's arithmetic must be the reference's, bit for bit). */
static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Two scaler states, field by field. */
static int amp_same(const gk_amp_t *a, const gk_amp_t *b)
{
	return fbits(a->scale) == fbits(b->scale) && fbits(a->min) == fbits(b->min) &&
	       fbits(a->max) == fbits(b->max) && fbits(a->beta1) == fbits(b->beta1) &&
	       fbits(a->beta2) == fbits(b->beta2) && fbits(a->bc1) == fbits(b->bc1) &&
	       fbits(a->bc2) == fbits(b->bc2) && a->found == b->found && a->good == b->good &&
	       a->steps == b->steps && a->skipped == b->skipped && a->window == b->window &&
	       a->dynamic == b->dynamic;
}

static void amp_adamw_case(gk_dtype_t gt, gk_dtype_t wt, size_t n, int overflow)
{
	float *w = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
	void *g = hdup_t(gt, n, 1000.0f, 0);
	fill_finite(GK_F32, w, n, 1.0f, 0);
	fill_finite(GK_F32, m, n, 0.1f, 0);
	fill_finite(GK_F32, v, n, 0.01f, 1);
	gk_amp_t a;
	gk_amp_init(&a, 1024.0f, 1, 2000, 0.9f, 0.999f);
	a.steps = 6;
	a.bc1 = (float)(1.0 - pow(0.9, 7)), a.bc2 = (float)(1.0 - pow(0.999, 7));
	a.found = (uint32_t)overflow;
	gk_adamw_t p = {.lr = 1e-3f,
			.beta1 = 0.9f,
			.beta2 = 0.999f,
			.eps = 1e-8f,
			.weight_decay = 0.01f,
			.grad_scale = 0.5f,
			.step = 1};
	size_t ws = gk_dtype_size(wt);
	float *rw = malloc(n * 4), *rm = malloc(n * 4), *rv = malloc(n * 4);
	void *rwc = calloc(n, ws), *gwc = calloc(n, ws);
	memcpy(rw, w, n * 4), memcpy(rm, m, n * 4), memcpy(rv, v, n * 4);
	gk_amp_t ra = a;
	OK(ref, gk_adamw_amp(ref, &p, &ra, rw, rm, rv, wt, rwc, gt, g, n, NULL));
	OK(ref, gk_amp_update(ref, &ra, NULL));
	float *dw = to_dev(b, w, n * 4), *dm = to_dev(b, m, n * 4), *dv = to_dev(b, v, n * 4);
	void *dg = to_dev(b, g, n * gk_dtype_size(gt)), *dwc = to_dev(b, gwc, n * ws);
	gk_amp_t *da = to_dev(b, &a, sizeof(a)), got;
	OK(b, gk_adamw_amp(b, &p, da, dw, dm, dv, wt, dwc, gt, dg, n, NULL));
	OK(b, gk_amp_update(b, da, NULL));
	OK(b, gk_stream_sync(b, NULL));
	float *gw = malloc(n * 4), *gm = malloc(n * 4), *gv = malloc(n * 4);
	OK(b, gk_copy(b, gw, dw, n * 4, GK_D2H));
	OK(b, gk_copy(b, gm, dm, n * 4, GK_D2H));
	OK(b, gk_copy(b, gv, dv, n * 4, GK_D2H));
	OK(b, gk_copy(b, gwc, dwc, n * ws, GK_D2H));
	OK(b, gk_copy(b, &got, da, sizeof(got), GK_D2H));
	compare_close("adamw_amp w", gw, rw, n);
	compare_close("adamw_amp m", gm, rm, n);
	compare_close("adamw_amp v", gv, rv, n);
	if (!overflow) /* the copy is the master rounded: the same bits where w is */
		compare("adamw_amp copy", wt, gwc, rwc, n);
	else
		ASSERT(!memcmp(gw, w, n * 4), "overflow: the step is skipped on the card");
	ASSERT(amp_same(&got, &ra), "amp state after update: scale %g/%g steps %d/%d skipped %d/%d",
	       (double)got.scale, (double)ra.scale, got.steps, ra.steps, got.skipped, ra.skipped);
	OK(b, gk_dev_free(b, dw));
	OK(b, gk_dev_free(b, dm));
	OK(b, gk_dev_free(b, dv));
	OK(b, gk_dev_free(b, dg));
	OK(b, gk_dev_free(b, dwc));
	OK(b, gk_dev_free(b, da));
	free(w), free(m), free(v), free(g), free(rw), free(rm), free(rv), free(rwc), free(gwc);
	free(gw), free(gm), free(gv);
}

/* an Inf in the gradient, found on the card, skips the step and halves the scale with no
 * read-back in between; amp_scale multiplies by the device scale */
static void t_amp(void)
{
	const gk_dtype_t gts[] = {GK_F32, GK_F16, GK_BF16};
	for (int i = 0; i < 3; i++)
		for (int o = 0; o < 2; o++) {
			amp_adamw_case(gts[i], GK_BF16, 1000003, o);
			amp_adamw_case(gts[i], GK_F16, 4099, o);
		}
	size_t n = 4096;
	uint16_t *g = hdup_t(GK_F16, n, 1.0f, 0);
	g[1234] = 0x7c00; /* +Inf */
	gk_amp_t a, got;
	gk_amp_init(&a, 65536.0f, 1, 2000, 0.9f, 0.999f);
	gk_amp_t *da = to_dev(b, &a, sizeof(a));
	uint16_t *dg = to_dev(b, g, n * 2);
	OK(b, gk_find_nonfinite(b, GK_F16, dg, n, &da->found, NULL));
	OK(b, gk_amp_update(b, da, NULL));
	OK(b, gk_amp_scale(b, GK_F16, dg, 4, da, NULL));
	OK(b, gk_stream_sync(b, NULL));
	OK(b, gk_copy(b, &got, da, sizeof(got), GK_D2H));
	ASSERT(got.scale == 32768.0f && got.skipped == 1 && got.steps == 0 && got.found == 0,
	       "overflow on the card: scale %g skipped %d", (double)got.scale, got.skipped);
	uint16_t back[4];
	OK(b, gk_copy(b, back, dg, sizeof(back), GK_D2H));
	ASSERT(gk_f16_to_f32(back[0]) ==
		   gk_f16_to_f32(gk_f32_to_f16(gk_f16_to_f32(g[0]) * 32768.0f)),
	       "amp_scale by the device scale");
	OK(b, gk_dev_free(b, da));
	OK(b, gk_dev_free(b, dg));
	free(g);
}

/* a captured graph replays the same work (cards); the cpu has none */
static void t_graph(void)
{
	gk_stream_t *s = NULL;
	gk_graph_t *gr = NULL;
	OK(b, gk_stream_create(b, &s));
	if (!strcmp(gk_backend_name(b), "cpu")) {
		ASSERT(gk_graph_begin(b, s) < 0 && errno == ENOTSUP, "cpu: no graphs");
		OK(b, gk_stream_destroy(b, &s));
		return;
	}
	size_t n = 1000;
	float *h = malloc(n * 4), *d;
	for (size_t i = 0; i < n; i++)
		h[i] = (float)i;
	d = to_dev(b, h, n * 4);
	OK(b, gk_graph_begin(b, s));
	OK(b, gk_scale(b, GK_F32, d, d, 2.0, n, s));
	OK(b, gk_scale(b, GK_F32, d, d, 3.0, n, s));
	OK(b, gk_graph_end(b, s, &gr));
	ASSERT(gr != NULL, "graph captured");
	if (gr) {
		OK(b, gk_graph_launch(b, gr, s));
		OK(b, gk_graph_launch(b, gr, s));
		OK(b, gk_stream_sync(b, s));
		OK(b, gk_copy(b, h, d, n * 4, GK_D2H));
		ASSERT(h[7] == 7.0f * 36.0f && h[999] == 999.0f * 36.0f, "graph replayed twice: %g",
		       (double)h[7]);
		OK(b, gk_graph_destroy(b, &gr));
	}
	OK(b, gk_dev_free(b, d));
	OK(b, gk_stream_destroy(b, &s));
	free(h);
}

typedef struct {
	const char *name;
	void (*fn)(void);
} test_t;

static const test_t tests[] = {
    {"conversions (reference)", t_conversions},
    {"reference known answers", t_reference_known},
    {"cpu cast paths", t_cpu_cast_paths},
    {"api", t_api},
    {"reduce", t_reduce},
    {"cast", t_cast},
    {"scale", t_scale},
    {"nonfinite", t_nonfinite},
    {"optimizers", t_optimizers},
    {"memtest", t_memtest},
    {"bandwidth+fma", t_bw_fma},
    {"streams", t_streams},
    {"sgemm", t_gemm},
    {"nn layers", t_nn},
    {"gemm (mixed precision)", t_gemm_ex},
    {"amp rule (host)", t_amp_rule},
    {"amp + fused adamw", t_amp},
    {"graphs", t_graph},
    {"llm: dequant (reference)", t_llm_dequant_ref},
    {"llm: qmatmul", t_llm_qmatmul},
    {"llm: get_rows", t_llm_get_rows},
    {"llm: rmsnorm", t_llm_rmsnorm},
    {"llm: rope", t_llm_rope},
    {"llm: elementwise", t_llm_elementwise},
    {"llm: kv_write", t_llm_kv_write},
    {"llm: attention", t_llm_attention},
    {"llm: api", t_llm_api},
};

int main(int argc, char **argv)
{
	gk_error_t err;
	const char *name;

	if (argc >= 2 && !strcmp(argv[1], "--skip")) {
		printf("SKIP: %s\n", argc >= 3 ? argv[2] : "no reason given");
		return 77;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: gk-test BACKEND [--huge N] | gk-test --skip REASON\n");
		return 2;
	}
	name = argv[1];
	if (argc >= 4 && !strcmp(argv[2], "--huge"))
		huge_n = strtoull(argv[3], NULL, 0);
	if (!(ref = gk_backend_open("cpu", &err))) {
		fprintf(stderr, "gk-test: cannot open the cpu backend: %s\n", err.text);
		return 1;
	}
	if (!(b = gk_backend_open(name, &err))) {
		if (strcmp(name, "cpu") && (errno == ENOENT || errno == ENODEV)) {
			printf("SKIP: backend '%s' unavailable: %s\n", name, err.text);
			return 77;
		}
		fprintf(stderr, "gk-test: cannot open backend '%s': %s\n", name, err.text);
		return 1;
	}
	printf("gk-test: backend '%s' against the cpu reference, huge length %zu\n",
	       gk_backend_name(b), huge_n);
	/* GK_TEST_ONLY=a,b: only the tests whose names contain one of these words */
	const char *only = getenv("GK_TEST_ONLY");
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int before = failures, cbefore = checks;
		if (only && *only) {
			char buf[256], *save = NULL;
			int hit = 0;
			snprintf(buf, sizeof(buf), "%s", only);
			for (char *w = strtok_r(buf, ",", &save); w && !hit;
			     w = strtok_r(NULL, ",", &save))
				hit = strstr(tests[i].name, w) != NULL;
			if (!hit)
				continue;
		}
		tests[i].fn();
		printf("%-26s %6d checks  %s\n", tests[i].name, checks - cbefore,
		       failures == before ? "ok" : "FAILED");
		fflush(stdout);
	}
	printf("gk-test %s: %d checks, %d failures\n", gk_backend_name(b), checks, failures);
	gk_backend_close(&b);
	gk_backend_close(&ref);
	return failures ? 1 : 0;
}
