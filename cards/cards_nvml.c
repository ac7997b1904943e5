/* cards_nvml.c: NVIDIA cards through NVML, loaded with dlopen.
 *
 * No NVML header is installed where gpool builds, so the few types and functions used are
 * declared here with the layouts that nvml.h documents. Optional functions (absent from
 * older drivers) are looked up one by one and skipped when missing.
 */
#include "cards/cards_backends.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS is 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS	     0
#define NVML_TEMPERATURE_GPU 0

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

/* nvmlMemory_v2_t: version = sizeof | 2 << 24 (NVML_STRUCT_VERSION(Memory, 2)) */
typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
	unsigned int sharedJpegCount, sharedOfaCount;
	unsigned int gpuInstanceSliceCount, computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/* The function table: name, and whether discovery fails without it. */
struct nvml {
	void *dl;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*count)(unsigned int *);
	nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t *);
	nvmlReturn_t (*driver_version)(char *, unsigned int);
	nvmlReturn_t (*cuda_version)(int *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
	nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*cc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*num_cores)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*attributes)(nvmlDevice_t, nvmlDeviceAttributes_t *);
	nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*enforced_limit)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int *);
	nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
	nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);
};

/* Each symbol: the names to try, newest first, and whether discovery needs it. */
static const struct {
	size_t off;
	const char *names[3];
	int required;
} nvml_syms[] = {
#define SYM(field, req, ...)                                                                       \
	{                                                                                          \
		offsetof(struct nvml, field), {__VA_ARGS__}, req                                   \
	}
    SYM(init, 1, "nvmlInit_v2", "nvmlInit"),
    SYM(shutdown, 1, "nvmlShutdown"),
    SYM(error_string, 0, "nvmlErrorString"),
    SYM(count, 1, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
    SYM(handle, 1, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
    SYM(driver_version, 0, "nvmlSystemGetDriverVersion"),
    SYM(cuda_version, 0, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"),
    SYM(name, 0, "nvmlDeviceGetName"),
    SYM(uuid, 0, "nvmlDeviceGetUUID"),
    /* _v3 and _v2 fill the same struct; v3 reads the bus id from the OS */
    SYM(pci, 0, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"),
    SYM(memory, 0, "nvmlDeviceGetMemoryInfo"),
    SYM(memory_v2, 0, "nvmlDeviceGetMemoryInfo_v2"),
    SYM(cc, 0, "nvmlDeviceGetCudaComputeCapability"),
    SYM(num_cores, 0, "nvmlDeviceGetNumGpuCores"),
    SYM(attributes, 0, "nvmlDeviceGetAttributes_v2"),
    SYM(power_limit, 0, "nvmlDeviceGetPowerManagementLimit"),
    SYM(enforced_limit, 0, "nvmlDeviceGetEnforcedPowerLimit"),
    SYM(temperature, 0, "nvmlDeviceGetTemperature"),
    SYM(utilization, 0, "nvmlDeviceGetUtilizationRates"),
    SYM(energy, 0, "nvmlDeviceGetTotalEnergyConsumption"),
    /* mW; on most cards averaged over about a second by the driver (nvml.h) */
    SYM(power, 0, "nvmlDeviceGetPowerUsage"),
    /* N of /dev/nvidia<N>: the driver's numbering, which need not follow NVML's index */
    SYM(minor, 0, "nvmlDeviceGetMinorNumber"),
#undef SYM
};

/* CUDA cores per SM by compute capability: the CUDA programming guide's table of
 * arithmetic instruction throughput (32-bit floating-point add per SM per clock). */
uint32_t gp_cuda_cores_per_sm(int major, int minor)
{
	switch (major) {
	case 6:
		return minor == 0 ? 64 : 128; /* GP100 64; GP10x (GTX 10xx) 128 */
	case 7:
		return 64; /* Volta 7.0/7.2, Turing 7.5 */
	case 8:
		return minor == 0 ? 64 : 128; /* A100 64; GA10x, Orin, Ada 128 */
	case 9:
		return 128; /* Hopper */
	case 10:
	case 11:
	case 12:
		return 128; /* Blackwell */
	default:
		return 0;
	}
}

int gp_cuda_own_kernels_ok(int major, int minor)
{
	return major > 7 || (major == 7 && minor >= 5);
}

static const char *nvml_err(const struct nvml *n, nvmlReturn_t r)
{
	static char buf[32];
	if (n->error_string)
		return n->error_string(r);
	snprintf(buf, sizeof(buf), "NVML error %d", r);
	return buf;
}

static void nvml_read(const struct nvml *n, nvmlDevice_t d, gp_card_reading_t *r)
{
	memset(r, 0, sizeof(*r));
	unsigned long long mj = 0;
	if (n->energy && n->energy(d, &mj) == NVML_SUCCESS) {
		r->energy_mj = mj;
		r->has_energy = 1;
	}
	unsigned int mw = 0;
	if (n->power && n->power(d, &mw) == NVML_SUCCESS) {
		r->power_mw = mw;
		r->has_power = 1;
	}
	unsigned int t = 0;
	nvmlUtilization_t u = {0};
	if (n->temperature && n->temperature(d, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS &&
	    n->utilization && n->utilization(d, &u) == NVML_SUCCESS) {
		r->temperature_c = t;
		r->utilization_pct = u.gpu;
		r->has_util = 1;
	}
}

static void nvml_card(const struct nvml *n, nvmlDevice_t d, const char *driver, const char *api,
		      gp_card_info_t *c)
{
	c->vendor = GP_CARD_NVIDIA;
	c->source = "nvml";
	snprintf(c->driver_version, sizeof(c->driver_version), "%s", driver);
	snprintf(c->api_version, sizeof(c->api_version), "%s", api);
	if (n->name && n->name(d, c->name, sizeof(c->name)) != NVML_SUCCESS)
		c->name[0] = '\0';
	if (n->uuid && n->uuid(d, c->uuid, sizeof(c->uuid)) != NVML_SUCCESS)
		c->uuid[0] = '\0';
	nvmlPciInfo_t pci;
	memset(&pci, 0, sizeof(pci));
	if (n->pci && n->pci(d, &pci) == NVML_SUCCESS)
		snprintf(c->pci_bus_id, sizeof(c->pci_bus_id), "%.31s", pci.busId);

	nvmlMemory_v2_t m2;
	memset(&m2, 0, sizeof(m2));
	m2.version = (unsigned int)sizeof(m2) | 2u << 24;
	nvmlMemory_t m1;
	if (n->memory_v2 && n->memory_v2(d, &m2) == NVML_SUCCESS) {
		c->vram_total = m2.total;
		c->vram_free = m2.free;
	} else if (n->memory && n->memory(d, &m1) == NVML_SUCCESS) {
		c->vram_total = m1.total;
		c->vram_free = m1.free;
	}

	unsigned int dev_minor = 0;
	if (n->minor && n->minor(d, &dev_minor) == NVML_SUCCESS && dev_minor < 1u << 20)
		c->dev_node = dev_minor + 1;

	int major = 0, minor = 0;
	if (n->cc && n->cc(d, &major, &minor) == NVML_SUCCESS) {
		snprintf(c->arch, sizeof(c->arch), "%d.%d", major, minor);
		c->own_kernels_ok = gp_cuda_own_kernels_ok(major, minor);
	}
	uint32_t per_sm = gp_cuda_cores_per_sm(major, minor);
	nvmlDeviceAttributes_t at;
	memset(&at, 0, sizeof(at));
	if (n->attributes && n->attributes(d, &at) == NVML_SUCCESS)
		c->sm_count = at.multiprocessorCount;
	unsigned int cores = 0;
	if (n->num_cores && n->num_cores(d, &cores) == NVML_SUCCESS)
		c->cores = cores;
	/* whichever of the two NVML gave, derive the other from the cores-per-SM table */
	if (!c->cores && c->sm_count)
		c->cores = c->sm_count * per_sm;
	if (!c->sm_count && c->cores && per_sm)
		c->sm_count = c->cores / per_sm;

	unsigned int mw = 0;
	if ((n->power_limit && n->power_limit(d, &mw) == NVML_SUCCESS) ||
	    (n->enforced_limit && n->enforced_limit(d, &mw) == NVML_SUCCESS))
		c->power_limit_w = (mw + 500) / 1000;
	unsigned int t = 0;
	if (n->temperature && n->temperature(d, NVML_TEMPERATURE_GPU, &t) == NVML_SUCCESS)
		c->temperature_c = t;
	nvmlUtilization_t u;
	if (n->utilization && n->utilization(d, &u) == NVML_SUCCESS)
		c->utilization_pct = u.gpu;
	gp_card_reading_t rd;
	nvml_read(n, d, &rd);
	c->energy_mj = rd.energy_mj;
	c->has_energy = rd.has_energy;
	c->power_mw = rd.power_mw;
	c->has_power = rd.has_power;
}

/* dlopen NVML, look its functions up and initialise it. 0 / -1 (said through l's debug). */
static int nvml_open(const char *lib, struct nvml *n, const gp_card_list_t *l)
{
	if (!lib)
		lib = "libnvidia-ml.so.1";
	memset(n, 0, sizeof(*n));
	n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		gp_card_debugf(l, "nvml: no '%s' (%s)", lib, dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(nvml_syms) / sizeof(nvml_syms[0]); i++) {
		void *f = NULL;
		for (size_t k = 0; k < 3 && nvml_syms[i].names[k] && !f; k++)
			f = dlsym(n->dl, nvml_syms[i].names[k]);
		if (!f && nvml_syms[i].required) {
			gp_card_debugf(l, "nvml: '%s' lacks %s", lib, nvml_syms[i].names[0]);
			dlclose(n->dl);
			return -1;
		}
		/* POSIX guarantees a void * from dlsym converts to a function pointer */
		memcpy((char *)n + nvml_syms[i].off, &f, sizeof(f));
	}
	nvmlReturn_t r = n->init();
	if (r != NVML_SUCCESS) {
		gp_card_debugf(l, "nvml: init: %s", nvml_err(n, r));
		dlclose(n->dl);
		return -1;
	}
	return 0;
}

static void nvml_close(struct nvml *n)
{
	n->shutdown();
	dlclose(n->dl);
}

int gp_cards_nvml_discover(const char *lib, gp_card_list_t *out)
{
	struct nvml n;
	if (nvml_open(lib, &n, out) < 0)
		return 0;
	nvmlReturn_t r;
	char driver[80] = "";
	if (n.driver_version && n.driver_version(driver, sizeof(driver)) != NVML_SUCCESS)
		driver[0] = '\0';
	char api[32] = "CUDA";
	int cv = 0;
	if (n.cuda_version && n.cuda_version(&cv) == NVML_SUCCESS && cv > 0)
		snprintf(api, sizeof(api), "CUDA %d.%d", cv / 1000, cv % 1000 / 10);
	unsigned int count = 0;
	r = n.count(&count);
	if (r != NVML_SUCCESS) {
		gp_card_debugf(out, "nvml: device count: %s", nvml_err(&n, r));
		count = 0;
	}
	int rc = 0;
	for (unsigned int i = 0; i < count; i++) {
		nvmlDevice_t d;
		r = n.handle(i, &d);
		if (r != NVML_SUCCESS) {
			/* a card NVML cannot open (lost, no permission) is skipped, not fatal */
			gp_card_debugf(out, "nvml: card %u: %s", i, nvml_err(&n, r));
			continue;
		}
		gp_card_info_t *c = gp_card_list_add(out);
		if (!c) {
			rc = -1;
			break;
		}
		nvml_card(&n, d, driver, api, c);
	}
	nvml_close(&n);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

/* NVML kept initialised, with the handle of every card it could open. */
struct gp_nvml_meter {
	struct nvml n;
	nvmlDevice_t *dev;
	unsigned int ndev;
};

struct gp_nvml_meter *gp_nvml_meter_open(const char *lib, const gp_card_list_t *l)
{
	struct gp_nvml_meter *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (nvml_open(lib, &m->n, l) < 0) {
		free(m);
		return NULL;
	}
	unsigned int count = 0;
	if (m->n.count(&count) != NVML_SUCCESS)
		count = 0;
	if (count && !(m->dev = calloc(count, sizeof(*m->dev)))) {
		gp_nvml_meter_close(m);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int i = 0; i < count; i++)
		if (m->n.handle(i, &m->dev[m->ndev]) == NVML_SUCCESS)
			m->ndev++;
	return m;
}

int gp_nvml_meter_find(struct gp_nvml_meter *m, const char *uuid)
{
	for (unsigned int i = 0; m->n.uuid && i < m->ndev; i++) {
		char u[96];
		if (m->n.uuid(m->dev[i], u, sizeof(u)) == NVML_SUCCESS && !strcmp(u, uuid))
			return (int)i;
	}
	return -1;
}

int gp_nvml_meter_read(struct gp_nvml_meter *m, int idx, gp_card_reading_t *r)
{
	if (idx < 0 || (unsigned int)idx >= m->ndev) {
		errno = EINVAL;
		return -1;
	}
	nvml_read(&m->n, m->dev[idx], r);
	if (!r->has_energy && !r->has_power) {
		errno = EIO;
		return -1;
	}
	return 0;
}

void gp_nvml_meter_close(struct gp_nvml_meter *m)
{
	if (!m)
		return;
	nvml_close(&m->n);
	free(m->dev);
	free(m);
}
