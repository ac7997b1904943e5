/* vram.c: the VRAM a job's processes use on a card (vram.h). */
#include "worker/node/vram.h"

#include <dlfcn.h>
#include <stdio.h>

typedef struct {
	uint32_t process_id, pasid;
	uint64_t vram_usage, sdma_usage;
	uint32_t cu_occupancy;
} rsmi_proc_t; /* rsmi_process_info_t */

typedef int (*rsmi_init_f)(uint64_t);
typedef int (*rsmi_procs_f)(rsmi_proc_t *, uint32_t *);

static int listed(const pid_t *pids, size_t n, long pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

int gp_vram_rocm(const pid_t *pids, size_t n, uint64_t *bytes)
{
	static void *dl;
	static rsmi_procs_f procs;
	*bytes = 0;
	if (!dl) {
		void *h = dlopen("librocm_smi64.so.5", RTLD_NOW | RTLD_LOCAL);
		if (!h && !(h = dlopen("librocm_smi64.so", RTLD_NOW | RTLD_LOCAL)))
			return -1;
		rsmi_init_f init = (rsmi_init_f)dlsym(h, "rsmi_init");
		procs = (rsmi_procs_f)dlsym(h, "rsmi_compute_process_info_get");
		if (!init || !procs || init(0) != 0) {
			dlclose(h);
			return -1;
		}
		dl = h;
	}
	rsmi_proc_t v[256];
	uint32_t m = 256;
	if (procs(v, &m) != 0)
		return -1;
	for (uint32_t j = 0; j < m && j < 256; j++)
		if (listed(pids, n, (long)v[j].process_id))
			*bytes += v[j].vram_usage;
	return 0;
}

int gp_vram_fake(const char *path, const pid_t *pids, size_t n, uint64_t *bytes)
{
	*bytes = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long pid;
	unsigned long long b;
	while (fscanf(f, "%ld %llu", &pid, &b) == 2)
		if (listed(pids, n, pid))
			*bytes += b;
	fclose(f);
	return 0;
}
