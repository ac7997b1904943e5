/* cudacheck.c: what a CUDA program in a container needs of the node, checked from inside one
 * (bench/container-gpu/run.sh): libcuda.so.1 found by the image's loader (the host's, bound
 * by gstepd), the card's device nodes usable, the driver's PTX JIT working. It loads libcuda
 * with dlopen (the image has no CUDA), names the visible cards, runs saxpy on 2^20 floats from
 * PTX on card 0 and checks every element. Prints one line per step; exit 0 only when all
 * passed. `cudacheck alloc MB` then also asks card 0 for MB MiB in one allocation: exit 2 when
 * refused (a --gpu-share slice's MPS budget below MB). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the PTX of saxpy.cu: bundle.sh compiles it in (xxd -i into saxpy_ptx.c) */
extern unsigned char saxpy_ptx[];
extern unsigned int saxpy_ptx_len;

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction;
typedef unsigned long long CUdeviceptr;

#define N (1 << 20)

static void *lib;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);
	if (!p) {
		printf("cudacheck: libcuda lacks %s\n", name);
		exit(1);
	}
	return p;
}

static void check(CUresult rc, const char *what)
{
	if (rc == 0)
		return;
	CUresult (*get_name)(CUresult, const char **) = sym("cuGetErrorName");
	const char *s = "?";
	get_name(rc, &s);
	printf("cudacheck: %s: %s (%d)\n", what, s, rc);
	exit(1);
}

int main(int argc, char **argv)
{
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		printf("cudacheck: %s\n", dlerror());
		return 1;
	}
	Dl_info di;
	if (dladdr(dlsym(lib, "cuInit"), &di) && di.dli_fname)
		printf("cudacheck: libcuda from %s\n", di.dli_fname);
	CUresult (*init)(unsigned) = sym("cuInit");
	CUresult (*drv_version)(int *) = sym("cuDriverGetVersion");
	CUresult (*count)(int *) = sym("cuDeviceGetCount");
	CUresult (*get)(CUdevice *, int) = sym("cuDeviceGet");
	CUresult (*name)(char *, int, CUdevice) = sym("cuDeviceGetName");
	CUresult (*total)(size_t *, CUdevice) = sym("cuDeviceTotalMem_v2");
	CUresult (*retain)(CUcontext *, CUdevice) = sym("cuDevicePrimaryCtxRetain");
	CUresult (*set_current)(CUcontext) = sym("cuCtxSetCurrent");
	CUresult (*load)(CUmodule *, const void *) = sym("cuModuleLoadData");
	CUresult (*function)(CUfunction *, CUmodule, const char *) = sym("cuModuleGetFunction");
	CUresult (*alloc)(CUdeviceptr *, size_t) = sym("cuMemAlloc_v2");
	CUresult (*htod)(CUdeviceptr, const void *, size_t) = sym("cuMemcpyHtoD_v2");
	CUresult (*dtoh)(void *, CUdeviceptr, size_t) = sym("cuMemcpyDtoH_v2");
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, void *, void **, void **) = sym("cuLaunchKernel");
	CUresult (*sync)(void) = sym("cuCtxSynchronize");

	check(init(0), "cuInit");
	int v = 0, n = 0;
	check(drv_version(&v), "cuDriverGetVersion");
	check(count(&n), "cuDeviceGetCount");
	printf("cudacheck: driver CUDA %d.%d, %d card(s) visible (CUDA_VISIBLE_DEVICES=%s)\n",
	       v / 1000, v % 1000 / 10, n,
	       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
	for (int i = 0; i < n; i++) {
		CUdevice d;
		char nm[128];
		size_t mem = 0;
		check(get(&d, i), "cuDeviceGet");
		check(name(nm, sizeof(nm), d), "cuDeviceGetName");
		check(total(&mem, d), "cuDeviceTotalMem");
		printf("cudacheck: card %d: %s, %zu MiB\n", i, nm, mem >> 20);
	}
	if (n < 1) {
		printf("cudacheck: no card\n");
		return 1;
	}
	CUdevice d;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	check(get(&d, 0), "cuDeviceGet");
	check(retain(&ctx, d), "cuDevicePrimaryCtxRetain");
	check(set_current(ctx), "cuCtxSetCurrent");
	char *ptx = malloc(saxpy_ptx_len + 1);
	memcpy(ptx, saxpy_ptx, saxpy_ptx_len);
	ptx[saxpy_ptx_len] = '\0';
	check(load(&mod, ptx), "cuModuleLoadData (the driver's PTX JIT)");
	check(function(&fn, mod, "saxpy"), "cuModuleGetFunction");
	float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
	for (int i = 0; i < N; i++) {
		x[i] = (float)i;
		y[i] = 1.0f;
	}
	CUdeviceptr dx, dy;
	check(alloc(&dx, N * sizeof(float)), "cuMemAlloc");
	check(alloc(&dy, N * sizeof(float)), "cuMemAlloc");
	check(htod(dx, x, N * sizeof(float)), "cuMemcpyHtoD");
	check(htod(dy, y, N * sizeof(float)), "cuMemcpyHtoD");
	int nn = N;
	float a = 2.0f;
	void *args[] = {&nn, &a, &dx, &dy};
	check(launch(fn, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL), "cuLaunchKernel");
	check(sync(), "cuCtxSynchronize");
	check(dtoh(y, dy, N * sizeof(float)), "cuMemcpyDtoH");
	int bad = 0;
	for (int i = 0; i < N; i++)
		if (fabsf(y[i] - (2.0f * (float)i + 1.0f)) > 0.0f)
			bad++;
	printf("cudacheck: saxpy of %d floats on card 0: %s (%d wrong)\n", N, bad ? "WRONG" : "ok",
	       bad);
	if (bad)
		return 1;
	if (argc == 3 && !strcmp(argv[1], "alloc")) {
		size_t mb = strtoull(argv[2], NULL, 10);
		CUdeviceptr big;
		CUresult rc = alloc(&big, mb << 20);
		const char *s = "?";
		CUresult (*get_name)(CUresult, const char **) = sym("cuGetErrorName");
		get_name(rc, &s);
		printf("cudacheck: %zu MiB in one allocation: %s\n", mb, rc ? s : "allocated");
		return rc ? 2 : 0;
	}
	return 0;
}
