/* loader.c - opens kernels backends (the built-in cpu one, GPU ones with dlopen) and
 * checks arguments before calling through their function table */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gk_backend.h"
#include "kernels/gk_loader.h"
#include "kernels/gk_scalar.h"

#ifndef GK_BUILD_DIR
#define GK_BUILD_DIR ""
#endif
#ifndef GK_INSTALL_DIR
#define GK_INSTALL_DIR ""
#endif
#ifndef GK_INSTALL_RELDIR
#define GK_INSTALL_RELDIR ""
#endif

static int errf(char *buf, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, GK_ERRLEN, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

int gk_fail(gk_backend_t *b, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static void set_err(gk_error_t *err, const char *text)
{
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", text);
}

/* The install directory as seen from the running program (BIN/../lib/gpool): a package
 * installs under another prefix than the build was configured with (/usr, not /usr/local),
 * and its programs are in BIN. dir is left empty when it cannot be found. */
static void exe_relative_dir(char *dir, size_t len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	dir[0] = '\0';
	if (n <= 0 || !GK_INSTALL_RELDIR[0])
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	if ((size_t)snprintf(dir, len, "%s/../%s", exe, GK_INSTALL_RELDIR) >= len)
		dir[0] = '\0';
}

/* Finds libgpool-kernels-NAME.so: $GPOOL_KERNELS_DIR, the install directory beside the
 * running program (an installed program takes its own installation's modules, not those of
 * a build tree that happens to be at the configured path), the build tree, the configured
 * install directory, then the dynamic loader's own search path. A library that exists but
 * fails to load (a missing driver runtime, say) is reported as such. */
static void *load_plugin(const char *name, char *err)
{
	char beside[4096];
	exe_relative_dir(beside, sizeof(beside));
	const char *dirs[] = {getenv("GPOOL_KERNELS_DIR"), beside, GK_BUILD_DIR, GK_INSTALL_DIR};
	char file[64], path[4096 + 64];
	void *dl;

	snprintf(file, sizeof(file), "libgpool-kernels-%s.so", name);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i] || !dirs[i][0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirs[i], file);
		if (access(path, R_OK) != 0)
			continue;
		if ((dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
			return dl;
		errf(err, ENOENT, "cannot load '%s': %s", path, dlerror());
		return NULL;
	}
	if ((dl = dlopen(file, RTLD_NOW | RTLD_LOCAL)))
		return dl;
	errf(err, ENOENT, "backend '%s' not built or not found: %s", name, dlerror());
	return NULL;
}

static gk_backend_t *open_one(const char *name, int device, gk_error_t *err)
{
	gk_backend_t *b = calloc(1, sizeof(*b));
	const struct gk_ops *ops;

	if (!b) {
		set_err(err, "out of memory");
		return NULL;
	}
	snprintf(b->name, sizeof(b->name), "%s", name);
	if (!strcmp(name, "cpu")) {
		ops = &gk_cpu_ops;
	} else {
		gk_plugin_f get;
		if (!(b->dl = load_plugin(name, b->err)))
			goto fail;
		*(void **)&get = dlsym(b->dl, GK_PLUGIN_SYMBOL);
		if (!get) {
			errf(b->err, ENOENT, "backend '%s' lacks symbol '%s'", name,
			     GK_PLUGIN_SYMBOL);
			goto fail;
		}
		ops = get();
		if (!ops || ops->abi != GK_ABI_VERSION) {
			errf(b->err, ENOENT, "backend '%s' has abi %d, expected %d", name,
			     ops ? ops->abi : -1, GK_ABI_VERSION);
			goto fail;
		}
	}
	b->ops = ops;
	if (ops->open(device, b->err, &b->ctx) < 0)
		goto fail;
	b->err[0] = '\0';
	return b;
fail : {
	int e = errno;
	set_err(err, b->err);
	if (b->dl)
		dlclose(b->dl);
	free(b);
	errno = e;
	return NULL;
}
}

gk_backend_t *gk_backend_open_device(const char *name, int device, gk_error_t *err)
{
	if (!name || device < 0) {
		set_err(err, "invalid argument");
		errno = EINVAL;
		return NULL;
	}
	if (!strcmp(name, "auto")) {
		const char *order[] = {"cuda", "hip", "cpu"};
		for (size_t i = 0; i < 3; i++) {
			gk_backend_t *b = open_one(order[i], device, err);
			if (b)
				return b;
		}
		return NULL;
	}
	if (strcmp(name, "cpu") && strcmp(name, "cuda") && strcmp(name, "hip")) {
		char text[GK_ERRLEN];
		snprintf(text, sizeof(text), "unknown backend '%s'", name);
		set_err(err, text);
		errno = EINVAL;
		return NULL;
	}
	return open_one(name, device, err);
}

gk_backend_t *gk_backend_open(const char *name, gk_error_t *err)
{
	return gk_backend_open_device(name, 0, err);
}

void gk_backend_close(gk_backend_t **pb)
{
	if (!pb || !*pb)
		return;
	gk_backend_t *b = *pb;
	int e = errno;
	b->ops->close(b->ctx);
	/* The plugin's runtime may have registered exit handlers; unloading it would leave
	 * them dangling, so a GPU backend's library stays mapped (as libcuda does). */
	free(b);
	*pb = NULL;
	errno = e;
}

const char *gk_backend_name(const gk_backend_t *b)
{
	return b ? b->name : "";
}

const char *gk_backend_error(const gk_backend_t *b)
{
	return b ? b->err : "";
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			return gk_fail(b, EINVAL, __VA_ARGS__);                                    \
	} while (0)

static int valid_dtype(gk_dtype_t t)
{
	return t == GK_F32 || t == GK_F16 || t == GK_BF16 || t == GK_F64 || t == GK_I32;
}

static int float_grad(gk_dtype_t t)
{
	return t == GK_F32 || t == GK_F16 || t == GK_BF16;
}

int gk_device_info(gk_backend_t *b, gk_device_info_t *info)
{
	if (!b || !info)
		return errno = EINVAL, -1;
	memset(info, 0, sizeof(*info));
	return b->ops->device_info(b->ctx, info);
}

int gk_dev_alloc(gk_backend_t *b, size_t bytes, void **p)
{
	if (!b || !p)
		return errno = EINVAL, -1;
	*p = NULL;
	return b->ops->dev_alloc(b->ctx, bytes ? bytes : 1, p);
}

int gk_dev_free(gk_backend_t *b, void *p)
{
	if (!b)
		return errno = EINVAL, -1;
	return p ? b->ops->dev_free(b->ctx, p) : 0;
}

int gk_host_alloc(gk_backend_t *b, size_t bytes, void **p)
{
	if (!b || !p)
		return errno = EINVAL, -1;
	*p = NULL;
	return b->ops->host_alloc(b->ctx, bytes ? bytes : 1, p);
}

int gk_host_free(gk_backend_t *b, void *p)
{
	if (!b)
		return errno = EINVAL, -1;
	return p ? b->ops->host_free(b->ctx, p) : 0;
}

int gk_memset(gk_backend_t *b, void *dst, int byte, size_t bytes, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!bytes)
		return 0;
	CHECK(dst, "memset: null pointer");
	return b->ops->memset(b->ctx, dst, byte, bytes, s);
}

int gk_stream_create(gk_backend_t *b, gk_stream_t **s)
{
	if (!b || !s)
		return errno = EINVAL, -1;
	return b->ops->stream_create(b->ctx, s);
}

int gk_stream_destroy(gk_backend_t *b, gk_stream_t **s)
{
	if (!b || !s)
		return errno = EINVAL, -1;
	if (!*s)
		return 0;
	int rc = b->ops->stream_destroy(b->ctx, *s);
	*s = NULL;
	return rc;
}

int gk_stream_sync(gk_backend_t *b, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	return b->ops->stream_sync(b->ctx, s);
}

int gk_event_create(gk_backend_t *b, gk_event_t **e)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	return b->ops->event_create(b->ctx, e);
}

int gk_event_destroy(gk_backend_t *b, gk_event_t **e)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	if (!*e)
		return 0;
	int rc = b->ops->event_destroy(b->ctx, *e);
	*e = NULL;
	return rc;
}

int gk_event_record(gk_backend_t *b, gk_event_t *e, gk_stream_t *s)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	return b->ops->event_record(b->ctx, e, s);
}

int gk_event_sync(gk_backend_t *b, gk_event_t *e)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	return b->ops->event_sync(b->ctx, e);
}

int gk_event_query(gk_backend_t *b, gk_event_t *e)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	return b->ops->event_query(b->ctx, e);
}

int gk_is_device_ptr(gk_backend_t *b, const void *p)
{
	if (!b || !p)
		return 0;
	return b->ops->is_device_ptr(b->ctx, p);
}

int gk_stream_wait_event(gk_backend_t *b, gk_stream_t *s, gk_event_t *e)
{
	if (!b || !e)
		return errno = EINVAL, -1;
	return b->ops->stream_wait_event(b->ctx, s, e);
}

int gk_event_elapsed(gk_backend_t *b, gk_event_t *start, gk_event_t *end, float *ms)
{
	if (!b || !start || !end || !ms)
		return errno = EINVAL, -1;
	return b->ops->event_elapsed(b->ctx, start, end, ms);
}

/* The checks gk_copy and gk_copy_async share: 1 when there is something to copy, 0 for zero
 * bytes, -1 with errno for bad arguments. */
static int copy_wanted(gk_backend_t *b, const void *dst, const void *src, size_t bytes,
		       gk_copy_kind_t kind)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!bytes)
		return 0;
	CHECK(dst && src, "copy: null pointer");
	CHECK(kind == GK_H2D || kind == GK_D2H || kind == GK_D2D, "copy: invalid kind %d",
	      (int)kind);
	return 1;
}

int gk_copy_async(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind,
		  gk_stream_t *s)
{
	int rc = copy_wanted(b, dst, src, bytes, kind);
	return rc <= 0 ? rc : b->ops->copy_async(b->ctx, dst, src, bytes, kind, s);
}

int gk_copy(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind)
{
	int rc = copy_wanted(b, dst, src, bytes, kind);
	return rc <= 0 ? rc : b->ops->copy(b->ctx, dst, src, bytes, kind);
}

int gk_reduce(gk_backend_t *b, gk_dtype_t t, gk_redop_t op, void *dst, const void *const *srcs,
	      int nsrc, size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(valid_dtype(t), "reduce: invalid dtype %d", (int)t);
	CHECK(op >= GK_SUM && op <= GK_AVG, "reduce: invalid op %d", (int)op);
	CHECK(nsrc >= 1 && nsrc <= GK_REDUCE_MAX_SRCS, "reduce: %d sources, expected 1 to %d", nsrc,
	      GK_REDUCE_MAX_SRCS);
	if (!n)
		return 0;
	CHECK(dst && srcs, "reduce: null pointer");
	for (int i = 0; i < nsrc; i++)
		CHECK(srcs[i], "reduce: source %d is null", i);
	return b->ops->reduce(b->ctx, t, op, dst, srcs, nsrc, n, s);
}

int gk_cast(gk_backend_t *b, gk_dtype_t dst_t, void *dst, gk_dtype_t src_t, const void *src,
	    size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	int ok = (src_t == GK_F32 && (dst_t == GK_F16 || dst_t == GK_BF16)) ||
		 (dst_t == GK_F32 && (src_t == GK_F16 || src_t == GK_BF16));
	if (!ok)
		return gk_fail(b, ENOTSUP, "cast: %s to %s is not supported", gk_dtype_name(src_t),
			       gk_dtype_name(dst_t));
	if (!n)
		return 0;
	CHECK(dst && src, "cast: null pointer");
	return b->ops->cast(b->ctx, dst_t, dst, src_t, src, n, s);
}

int gk_scale(gk_backend_t *b, gk_dtype_t t, void *dst, const void *src, double alpha, size_t n,
	     gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!(t == GK_F32 || t == GK_F16 || t == GK_BF16 || t == GK_F64))
		return gk_fail(b, ENOTSUP, "scale: dtype %s is not supported", gk_dtype_name(t));
	if (!n)
		return 0;
	CHECK(dst && src, "scale: null pointer");
	return b->ops->scale(b->ctx, t, dst, src, alpha, n, s);
}

int gk_find_nonfinite(gk_backend_t *b, gk_dtype_t t, const void *buf, size_t n, uint32_t *dflag,
		      gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!(t == GK_F32 || t == GK_F16 || t == GK_BF16 || t == GK_F64))
		return gk_fail(b, ENOTSUP, "find_nonfinite: dtype %s is not supported",
			       gk_dtype_name(t));
	CHECK(dflag, "find_nonfinite: null flag");
	if (!n)
		return 0;
	CHECK(buf, "find_nonfinite: null pointer");
	return b->ops->find_nonfinite(b->ctx, t, buf, n, dflag, s);
}

int gk_has_nonfinite(gk_backend_t *b, gk_dtype_t t, const void *buf, size_t n, int *found)
{
	uint32_t *dflag = NULL, hflag = 0;
	int rc = -1, e;

	if (!b || !found)
		return errno = EINVAL, -1;
	if (gk_dev_alloc(b, sizeof(uint32_t), (void **)&dflag) < 0)
		return -1;
	if (gk_memset(b, dflag, 0, sizeof(uint32_t), NULL) == 0 &&
	    gk_find_nonfinite(b, t, buf, n, dflag, NULL) == 0 &&
	    gk_copy(b, &hflag, dflag, sizeof(hflag), GK_D2H) == 0) {
		*found = hflag != 0;
		rc = 0;
	}
	e = errno;
	gk_dev_free(b, dflag);
	errno = e;
	return rc;
}

int gk_sgd_momentum(gk_backend_t *b, const gk_sgd_t *p, float *w, float *v, gk_dtype_t gt,
		    const void *grad, size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(p, "sgd: null parameters");
	CHECK(float_grad(gt), "sgd: grads must be f32, f16 or bf16");
	if (!n)
		return 0;
	CHECK(w && v && grad, "sgd: null pointer");
	return b->ops->sgd(b->ctx, p, w, v, gt, grad, n, s);
}

int gk_adamw(gk_backend_t *b, const gk_adamw_t *p, float *w, float *m, float *v, gk_dtype_t gt,
	     const void *grad, size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(p, "adamw: null parameters");
	CHECK(p->step >= 1, "adamw: step %d, expected >= 1", p->step);
	CHECK(float_grad(gt), "adamw: grads must be f32, f16 or bf16");
	if (!n)
		return 0;
	CHECK(w && m && v && grad, "adamw: null pointer");
	/* bias corrections in double on the host, so every backend uses the same floats */
	double bc1 = pow(p->beta1, p->step), bc2 = pow(p->beta2, p->step);
	return b->ops->adamw(b->ctx, p, (float)(1.0 - bc1), (float)(1.0 - bc2), w, m, v, gt, grad,
			     n, s);
}

int gk_bw_read(gk_backend_t *b, const void *buf, size_t bytes, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(buf && bytes % 16 == 0 && (uintptr_t)buf % 16 == 0,
	      "bw_read: needs a 16-byte aligned buffer and size");
	return bytes ? b->ops->bw_read(b->ctx, buf, bytes, s) : 0;
}

int gk_bw_write(gk_backend_t *b, void *buf, size_t bytes, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(buf && bytes % 16 == 0 && (uintptr_t)buf % 16 == 0,
	      "bw_write: needs a 16-byte aligned buffer and size");
	return bytes ? b->ops->bw_write(b->ctx, buf, bytes, s) : 0;
}

int gk_bw_copy(gk_backend_t *b, void *dst, const void *src, size_t bytes, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(dst && src && bytes % 16 == 0 && (uintptr_t)dst % 16 == 0 && (uintptr_t)src % 16 == 0,
	      "bw_copy: needs 16-byte aligned buffers and size");
	return bytes ? b->ops->bw_copy(b->ctx, dst, src, bytes, s) : 0;
}

size_t gk_fma_scratch_bytes(gk_backend_t *b)
{
	return b ? b->ops->fma_scratch_bytes(b->ctx) : 0;
}

int gk_fma(gk_backend_t *b, gk_dtype_t t, void *buf, int iters, double *flops, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(t == GK_F32 || t == GK_F16, "fma: dtype must be f32 or f16");
	CHECK(buf && flops && iters > 0, "fma: invalid argument");
	return b->ops->fma(b->ctx, t, buf, iters, flops, s);
}

int gk_sgemm(gk_backend_t *b, int ta, int tb, int m, int n, int k, float alpha, const float *a,
	     int lda, const float *bm, int ldb, float beta, float *c, int ldc, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(m >= 0 && n >= 0 && k >= 0, "sgemm: negative size");
	CHECK(ldc >= (m > 1 ? m : 1), "sgemm: ldc %d too small", ldc);
	CHECK(lda >= ((ta ? k : m) > 1 ? (ta ? k : m) : 1), "sgemm: lda %d too small", lda);
	CHECK(ldb >= ((tb ? n : k) > 1 ? (tb ? n : k) : 1), "sgemm: ldb %d too small", ldb);
	if (!m || !n)
		return 0;
	CHECK(c && (k == 0 || (a && bm)), "sgemm: null pointer");
	return b->ops->sgemm(b->ctx, ta != 0, tb != 0, m, n, k, alpha, a, lda, bm, ldb, beta, c,
			     ldc, s);
}

int gk_bias_act(gk_backend_t *b, float *y, const float *bias, size_t rows, size_t cols,
		gk_act_t act, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(act == GK_ACT_NONE || act == GK_ACT_RELU, "bias_act: invalid activation %d",
	      (int)act);
	if (!rows || !cols)
		return 0;
	CHECK(y && bias, "bias_act: null pointer");
	return b->ops->bias_act(b->ctx, y, bias, rows, cols, act, s);
}

int gk_relu_grad(gk_backend_t *b, float *dy, const float *y, size_t n, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!n)
		return 0;
	CHECK(dy && y, "relu_grad: null pointer");
	return b->ops->relu_grad(b->ctx, dy, y, n, s);
}

int gk_bias_grad(gk_backend_t *b, const float *dy, float *db, size_t rows, size_t cols, float alpha,
		 gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!cols)
		return 0;
	CHECK(db, "bias_grad: null pointer");
	if (!rows) /* an empty shard: its gradient is zero */
		return gk_memset(b, db, 0, cols * sizeof(float), s);
	CHECK(dy, "bias_grad: null pointer");
	return b->ops->bias_grad(b->ctx, dy, db, rows, cols, alpha, s);
}

int gk_softmax_xent(gk_backend_t *b, const float *z, const int32_t *labels, size_t rows,
		    size_t cols, float scale, float *loss, float *dz, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(cols >= 1, "softmax_xent: no classes");
	if (!rows)
		return 0;
	CHECK(z && labels, "softmax_xent: null pointer");
	CHECK(loss || dz, "softmax_xent: neither loss nor gradient asked for");
	return b->ops->softmax_xent(b->ctx, z, labels, rows, cols, scale, loss, dz, s);
}

/* ---- mixed precision (gpool/kernels.h) ---- */

int gk_gemm(gk_backend_t *b, const gk_gemm_t *p, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(p, "gemm: null parameters");
	CHECK(float_grad(p->ab_t), "gemm: inputs must be f32, f16 or bf16");
	CHECK(p->c_t == GK_F32 || p->c_t == p->ab_t, "gemm: output must be f32 or %s",
	      gk_dtype_name(p->ab_t));
	CHECK(p->epi >= GK_EPI_NONE && p->epi <= GK_EPI_DRELU, "gemm: invalid epilogue %d",
	      (int)p->epi);
	CHECK(p->math == GK_MATH_DEFAULT || p->math == GK_MATH_TF32, "gemm: invalid math mode %d",
	      (int)p->math);
	CHECK(p->m >= 0 && p->n >= 0 && p->k >= 0, "gemm: negative size");
	int ra = p->trans_a ? p->k : p->m, rb = p->trans_b ? p->n : p->k;
	CHECK(p->ldc >= (p->m > 1 ? p->m : 1), "gemm: ldc %d too small", p->ldc);
	CHECK(p->lda >= (ra > 1 ? ra : 1), "gemm: lda %d too small", p->lda);
	CHECK(p->ldb >= (rb > 1 ? rb : 1), "gemm: ldb %d too small", p->ldb);
	if (!p->m || !p->n)
		return 0;
	CHECK(p->c && (p->k == 0 || (p->a && p->b)), "gemm: null pointer");
	CHECK(!(p->epi == GK_EPI_BIAS || p->epi == GK_EPI_RELU_BIAS || p->epi == GK_EPI_BGRADB) ||
		  p->bias,
	      "gemm: the epilogue needs a bias pointer");
	CHECK(p->epi != GK_EPI_DRELU || p->aux, "gemm: drelu needs the activation (aux)");
	CHECK(p->epi != GK_EPI_BGRADB || p->k > 0, "gemm: bgradb with k = 0");
	if (!b->ops->gemm)
		return gk_fail(b, ENOTSUP, "gemm: not provided by backend '%s'", b->ops->name);
	return b->ops->gemm(b->ctx, p, s);
}

int gk_amp_scale(gk_backend_t *b, gk_dtype_t t, void *buf, size_t n, const gk_amp_t *amp,
		 gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(float_grad(t), "amp_scale: dtype must be f32, f16 or bf16");
	CHECK(amp, "amp_scale: null state");
	if (!n)
		return 0;
	CHECK(buf, "amp_scale: null pointer");
	return b->ops->amp_scale(b->ctx, t, buf, n, amp, s);
}

int gk_adamw_amp(gk_backend_t *b, const gk_adamw_t *p, const gk_amp_t *amp, float *w, float *m,
		 float *v, gk_dtype_t wc_t, void *wc, gk_dtype_t gt, const void *grad, size_t n,
		 gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(p && amp, "adamw_amp: null parameters");
	CHECK(float_grad(gt), "adamw_amp: grads must be f32, f16 or bf16");
	CHECK(!wc || wc_t == GK_F16 || wc_t == GK_BF16, "adamw_amp: the copy must be f16 or bf16");
	if (!n)
		return 0;
	CHECK(w && m && v && grad, "adamw_amp: null pointer");
	return b->ops->adamw_amp(b->ctx, p, amp, w, m, v, wc_t, wc, gt, grad, n, s);
}

int gk_amp_update(gk_backend_t *b, gk_amp_t *amp, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(amp, "amp_update: null state");
	return b->ops->amp_update(b->ctx, amp, s);
}

void gk_amp_rule(gk_amp_t *amp)
{
	gk_amp_step(amp);
}

int gk_graph_begin(gk_backend_t *b, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(s, "graph: capture needs a stream of gk_stream_create");
	if (!b->ops->graph_begin)
		return gk_fail(b, ENOTSUP, "graph: not provided by backend '%s'", b->ops->name);
	return b->ops->graph_begin(b->ctx, s);
}

int gk_graph_end(gk_backend_t *b, gk_stream_t *s, gk_graph_t **g)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(s && g, "graph: null stream or result");
	if (!b->ops->graph_end)
		return gk_fail(b, ENOTSUP, "graph: not provided by backend '%s'", b->ops->name);
	return b->ops->graph_end(b->ctx, s, g);
}

int gk_graph_launch(gk_backend_t *b, gk_graph_t *g, gk_stream_t *s)
{
	if (!b)
		return errno = EINVAL, -1;
	CHECK(g, "graph: null graph");
	return b->ops->graph_launch(b->ctx, g, s);
}

int gk_graph_destroy(gk_backend_t *b, gk_graph_t **g)
{
	if (!b || !g)
		return errno = EINVAL, -1;
	if (!*g)
		return 0;
	int rc = b->ops->graph_destroy(b->ctx, *g);
	*g = NULL;
	return rc;
}

void gk_amp_init(gk_amp_t *a, float initial, int dynamic, int window, float beta1, float beta2)
{
	memset(a, 0, sizeof(*a));
	a->dynamic = dynamic != 0;
	a->scale = dynamic ? initial : 1.0f;
	a->window = window > 0 ? window : 2000;
	a->min = 1.0f / 65536.0f;
	a->max = 16777216.0f;
	a->beta1 = beta1;
	a->beta2 = beta2;
	a->bc1 = (float)(1.0 - pow((double)beta1, 1.0));
	a->bc2 = (float)(1.0 - pow((double)beta2, 1.0));
}
