/* runtime.cu - the GPU backend's entry: device, memory, streams, events, copies and the
 * function table the loader finds with dlsym (one source for CUDA and HIP) */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu/gk_gpu.h"

int gk_gpu_fail(gpu_t *g, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err, GK_ERRLEN, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

int gk_gpu_check(gpu_t *g, gkError_t rc, const char *what)
{
	if (rc == gkSuccess)
		return 0;
	(void)gkGetLastError(); /* clear a sticky launch error so the next call starts clean */
	return gk_gpu_fail(g, rc == gkErrorMemoryAllocation ? ENOMEM : EIO, GK_API ": %s: %s", what,
			   gkGetErrorString(rc));
}

int gk_gpu_launched(gpu_t *g, const char *what)
{
	return gk_gpu_check(g, gkGetLastError(), what);
}

unsigned gk_gpu_blocks(gpu_t *g, size_t n, unsigned threads)
{
	size_t need = (n + threads - 1) / threads;
	size_t wave = (size_t)g->sms * (size_t)(g->max_threads_per_sm / threads) * g->waves;
	if (need > wave)
		need = wave;
	return need ? (unsigned)need : 1u;
}

static int use(gpu_t *g)
{
	return gk_gpu_check(g, gkSetDevice(g->device), "set device");
}

void gk_gpu_blas_close(gpu_t *g);
void gk_gpu_lt_close(gpu_t *g);

static void gpu_close(void *ctx)
{
	gpu_t *g = (gpu_t *)ctx;
	if (!g)
		return;
	/* teardown: nothing useful to do with a failure here */
	(void)gkSetDevice(g->device);
	gk_gpu_lt_close(g);
	gk_gpu_blas_close(g);
	gk_gpu_llm_close(g);
	if (g->counter)
		(void)gkFree(g->counter);
	if (g->sink)
		(void)gkFree(g->sink);
	free(g);
}

static int gpu_open(int device, char *err, void **ctx)
{
	gpu_t *g = (gpu_t *)calloc(1, sizeof(*g));
	int count = 0;
	gkDeviceProp prop;
	gkError_t rc;
	const char *w;

	if (!g) {
		snprintf(err, GK_ERRLEN, "out of memory");
		errno = ENOMEM;
		return -1;
	}
	g->err = err;
	g->device = device;
	g->waves = 1;
	if ((w = getenv("GPOOL_KERNELS_WAVES")) && atoi(w) > 0)
		g->waves = atoi(w);
	g->no_blas = getenv("GPOOL_KERNELS_NO_BLAS") != NULL;
	if ((rc = gkGetDeviceCount(&count)) != gkSuccess || count == 0) {
		gk_gpu_fail(g, ENODEV, "no " GK_API " device: %s",
			    rc != gkSuccess ? gkGetErrorString(rc) : "the runtime sees none");
		free(g);
		return -1;
	}
	if (device >= count) {
		gk_gpu_fail(g, ENODEV, "no " GK_API " device %d (%d present)", device, count);
		free(g);
		return -1;
	}
	if (use(g) < 0 || gk_gpu_check(g, gkGetDeviceProperties(&prop, device), "properties") < 0) {
		free(g);
		errno = ENODEV;
		return -1;
	}
	g->sms = prop.multiProcessorCount;
	g->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
	if (gk_gpu_check(g, gkMalloc((void **)&g->counter, sizeof(*g->counter)), "alloc") < 0 ||
	    gk_gpu_check(g, gkMalloc((void **)&g->sink, 16), "alloc") < 0) {
		int e = errno;
		gpu_close(g);
		errno = e;
		return -1;
	}
	*ctx = g;
	return 0;
}

int gk_gpu_blas_load(gpu_t *g);

static int gpu_device_info(void *ctx, gk_device_info_t *info)
{
	gpu_t *g = (gpu_t *)ctx;
	gkDeviceProp prop;
	if (use(g) < 0 || gk_gpu_check(g, gkGetDeviceProperties(&prop, g->device), "properties"))
		return -1;
	snprintf(info->backend, sizeof(info->backend), GK_API);
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->device = g->device;
	info->major = prop.major;
	info->minor = prop.minor;
	info->multiprocessors = prop.multiProcessorCount;
	info->total_mem = prop.totalGlobalMem;
	size_t free_b = 0, total_b = 0;
	if (gk_gpu_check(g, gkMemGetInfo(&free_b, &total_b), "memory info") < 0)
		return -1;
	info->free_mem = free_b;
	if (gk_gpu_check(g, gkRuntimeGetVersion(&info->runtime_version), "runtime version") < 0 ||
	    gk_gpu_check(g, gkDriverGetVersion(&info->driver_version), "driver version") < 0)
		return -1;
	snprintf(info->gemm_impl, sizeof(info->gemm_impl), "%s",
		 gk_gpu_blas_load(g) == 0 ? (GK_CUDA_OR_HIP("cublas", "rocblas")) : "gpool-tiled");
	return 0;
}

static int gpu_dev_alloc(void *ctx, size_t bytes, void **p)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkMalloc(p, bytes), "device alloc");
}

static int gpu_dev_free(void *ctx, void *p)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkFree(p), "device free");
}

static int gpu_host_alloc(void *ctx, size_t bytes, void **p)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkMallocHost(p, bytes), "pinned alloc");
}

static int gpu_host_free(void *ctx, void *p)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkFreeHost(p), "pinned free");
}

static int gpu_memset(void *ctx, void *dst, int byte, size_t bytes, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0
		   ? -1
		   : gk_gpu_check(g, gkMemsetAsync(dst, byte, bytes, GK_STREAM(s)), "memset");
}

static int gpu_stream_create(void *ctx, gk_stream_t **s)
{
	gpu_t *g = (gpu_t *)ctx;
	gkStream_t st;
	if (use(g) < 0 || gk_gpu_check(g, gkStreamCreate(&st), "stream create") < 0)
		return -1;
	*s = (gk_stream_t *)st;
	return 0;
}

static int gpu_stream_destroy(void *ctx, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkStreamDestroy(GK_STREAM(s)), "stream destroy");
}

static int gpu_stream_sync(void *ctx, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	return use(g) < 0 ? -1 : gk_gpu_check(g, gkStreamSynchronize(GK_STREAM(s)), "stream sync");
}

static int gpu_event_create(void *ctx, gk_event_t **e)
{
	gpu_t *g = (gpu_t *)ctx;
	gkEvent_t ev;
	if (use(g) < 0 || gk_gpu_check(g, gkEventCreate(&ev), "event create") < 0)
		return -1;
	*e = (gk_event_t *)ev;
	return 0;
}

static int gpu_event_destroy(void *ctx, gk_event_t *e)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g, gkEventDestroy((gkEvent_t)e), "event destroy");
}

static int gpu_event_record(void *ctx, gk_event_t *e, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g, gkEventRecord((gkEvent_t)e, GK_STREAM(s)), "event record");
}

static int gpu_event_sync(void *ctx, gk_event_t *e)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g, gkEventSynchronize((gkEvent_t)e), "event sync");
}

static int gpu_event_query(void *ctx, gk_event_t *e)
{
	gpu_t *g = (gpu_t *)ctx;
	gkError_t rc = gkEventQuery((gkEvent_t)e);
	if (rc == gkErrorNotReady)
		return 0;
	return gk_gpu_check(g, rc, "event query") < 0 ? -1 : 1;
}

static int gpu_is_device_ptr(void *ctx, const void *p)
{
	(void)ctx;
	gkPointerAttributes_t a;
	if (gkPointerGetAttributes(&a, p) != gkSuccess) {
		(void)gkGetLastError(); /* plain host memory: not an error to keep */
		return 0;
	}
	return GK_PTR_IS_DEVICE(a);
}

static int gpu_wait_event(void *ctx, gk_stream_t *s, gk_event_t *e)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g, gkStreamWaitEvent(GK_STREAM(s), (gkEvent_t)e, 0), "stream wait");
}

static int gpu_elapsed(void *ctx, gk_event_t *a, gk_event_t *b, float *ms)
{
	gpu_t *g = (gpu_t *)ctx;
	return gk_gpu_check(g, gkEventElapsedTime(ms, (gkEvent_t)a, (gkEvent_t)b), "elapsed time");
}

static int kind_of(gk_copy_kind_t k)
{
	switch (k) {
	case GK_H2D:
		return gkMemcpyHostToDevice;
	case GK_D2H:
		return gkMemcpyDeviceToHost;
	default:
		return gkMemcpyDeviceToDevice;
	}
}

static int gpu_copy_async(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind,
			  gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (use(g) < 0)
		return -1;
	return gk_gpu_check(
	    g, gkMemcpyAsync(dst, src, bytes, (gkMemcpyKind)kind_of(kind), GK_STREAM(s)), "copy");
}

static int gpu_copy(void *ctx, void *dst, const void *src, size_t bytes, gk_copy_kind_t kind)
{
	gpu_t *g = (gpu_t *)ctx;
	if (use(g) < 0 ||
	    gk_gpu_check(g, gkMemcpy(dst, src, bytes, (gkMemcpyKind)kind_of(kind)), "copy") < 0)
		return -1;
	/* a device-to-device copy may return before it finishes */
	return kind == GK_D2D ? gk_gpu_check(g, gkStreamSynchronize(0), "copy sync") : 0;
}

static const struct gk_ops gpu_ops = {
    GK_ABI_VERSION,
    GK_API,
    gpu_open,
    gpu_close,
    gpu_device_info,
    gpu_dev_alloc,
    gpu_dev_free,
    gpu_host_alloc,
    gpu_host_free,
    gpu_memset,
    gpu_stream_create,
    gpu_stream_destroy,
    gpu_stream_sync,
    gpu_event_create,
    gpu_event_destroy,
    gpu_event_record,
    gpu_event_sync,
    gpu_wait_event,
    gpu_elapsed,
    gpu_copy_async,
    gpu_copy,
    gk_gpu_reduce,
    gk_gpu_cast,
    gk_gpu_scale,
    gk_gpu_find_nonfinite,
    gk_gpu_sgd,
    gk_gpu_adamw,
    gk_gpu_mt_step,
    gk_gpu_bw_read,
    gk_gpu_bw_write,
    gk_gpu_bw_copy,
    gk_gpu_fma_scratch_bytes,
    gk_gpu_fma,
    gk_gpu_sgemm,
    gpu_event_query,
    gpu_is_device_ptr,
    gk_gpu_bias_act,
    gk_gpu_relu_grad,
    gk_gpu_bias_grad,
    gk_gpu_softmax_xent,
    gk_gpu_gemm,
    gk_gpu_amp_scale,
    gk_gpu_adamw_amp,
    gk_gpu_amp_update,
    gk_gpu_graph_begin,
    gk_gpu_graph_end,
    gk_gpu_graph_launch,
    gk_gpu_graph_destroy,
    gk_gpu_qmatmul,
    gk_gpu_qget_rows,
    gk_gpu_rmsnorm,
    gk_gpu_rope,
    gk_gpu_swiglu,
    gk_gpu_add,
    gk_gpu_add_bias,
    gk_gpu_kv_write,
    gk_gpu_attention,
};

extern "C" __attribute__((visibility("default"))) const struct gk_ops *gk_plugin_ops(void)
{
	return &gpu_ops;
}
