/* card_procs.c: the processes on a card and the memory each holds (see card_procs.h). */
#include "cards/card_procs.h"

#include <dlfcn.h>
#include <stdio.h>

#define NVML_NOT_AVAILABLE 0xffffffffffffffffULL /* NVML_VALUE_NOT_AVAILABLE */

typedef struct {
	unsigned int pid;
	unsigned long long used_memory;
	unsigned int gpu_instance_id, compute_instance_id;
} nvml_proc_t; /* nvmlProcessInfo_t of the _v3 calls */

typedef int (*nvml_init_f)(void);
typedef int (*nvml_by_bus_f)(const char *, void **);
typedef int (*nvml_procs_f)(void *, unsigned int *, nvml_proc_t *);

typedef struct {
	uint32_t process_id, pasid;
	uint64_t vram_usage, sdma_usage;
	uint32_t cu_occupancy;
} rsmi_proc_t; /* rsmi_process_info_t */

typedef int (*rsmi_init_f)(uint64_t);
typedef int (*rsmi_procs_f)(rsmi_proc_t *, uint32_t *);

/* Add (pid, bytes) to out[0..*k): a pid already there keeps the larger figure. */
static void put(struct gp_card_proc *out, size_t *k, size_t max, pid_t pid, uint64_t bytes)
{
	for (size_t i = 0; i < *k; i++)
		if (out[i].pid == pid) {
			if (bytes > out[i].bytes)
				out[i].bytes = bytes;
			return;
		}
	if (*k < max)
		out[(*k)++] = (struct gp_card_proc){pid, bytes};
}

int gp_card_procs_nvml(const char *pci_bus_id, struct gp_card_proc *out, size_t max)
{
	static void *dl;
	static nvml_by_bus_f by_bus;
	static nvml_procs_f compute, graphics;
	if (!dl) {
		void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!h)
			return -1;
		nvml_init_f init = (nvml_init_f)dlsym(h, "nvmlInit_v2");
		by_bus = (nvml_by_bus_f)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
		compute = (nvml_procs_f)dlsym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
		graphics = (nvml_procs_f)dlsym(h, "nvmlDeviceGetGraphicsRunningProcesses_v3");
		if (!init || !by_bus || !compute || init() != 0) {
			dlclose(h);
			return -1;
		}
		dl = h;
	}
	void *dev;
	if (!pci_bus_id || by_bus(pci_bus_id, &dev) != 0)
		return -1;
	size_t k = 0;
	nvml_procs_f lists[2] = {compute, graphics};
	for (int i = 0; i < 2; i++) {
		nvml_proc_t v[128];
		unsigned int n = 128;
		if (!lists[i] || lists[i](dev, &n, v) != 0)
			continue;
		for (unsigned int j = 0; j < n && j < 128; j++)
			put(out, &k, max, (pid_t)v[j].pid,
			    v[j].used_memory == NVML_NOT_AVAILABLE ? 0 : v[j].used_memory);
	}
	return (int)k;
}

int gp_card_procs_rocm(struct gp_card_proc *out, size_t max)
{
	static void *dl;
	static rsmi_procs_f procs;
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
	uint32_t n = 256;
	if (procs(v, &n) != 0)
		return -1;
	size_t k = 0;
	for (uint32_t j = 0; j < n && j < 256; j++)
		put(out, &k, max, (pid_t)v[j].process_id, v[j].vram_usage);
	return (int)k;
}

int gp_card_procs_fake(const char *path, struct gp_card_proc *out, size_t max)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long pid;
	unsigned long long b;
	size_t k = 0;
	while (k < max && fscanf(f, "%ld %llu", &pid, &b) == 2)
		if (pid > 0 && pid <= (1L << 22)) /* a line per allocation: a pid may repeat */
			out[k++] = (struct gp_card_proc){(pid_t)pid, b};
	fclose(f);
	return (int)k;
}

int gp_card_procs(int vendor, const char *pci_bus_id, struct gp_card_proc *out, size_t max)
{
	if (vendor == 1)
		return gp_card_procs_nvml(pci_bus_id, out, max);
	if (vendor == 2)
		return gp_card_procs_rocm(out, max);
	return -1;
}

uint64_t gp_card_procs_sum(const struct gp_card_proc *list, size_t n, const pid_t *pids,
			   size_t npids)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < npids; j++)
			if (list[i].pid == pids[j]) {
				sum += list[i].bytes;
				break;
			}
	return sum;
}
