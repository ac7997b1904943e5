/* cards_backends.h: the real card discovery backends (NVML, ROCm SMI, sysfs).
 *
 * The backends fill a plain C struct, not Gpool__Card: they build with libc and dlopen only,
 * so tools/gpu-probe links them (cards/, gpool-cards) without protobuf-c or gpool's libraries.
 * worker/node/cards.c converts each entry into a Gpool__Card.
 *
 * Every vendor library is loaded with dlopen. A missing library, driver or card is never an
 * error: the backend finds nothing, says why through the list's debug callback, and
 * returns 0. Only running out of memory returns -1 (errno = ENOMEM).
 */
#ifndef GPOOL_CARDS_BACKENDS_H
#define GPOOL_CARDS_BACKENDS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum gp_card_vendor { GP_CARD_NVIDIA = 1, GP_CARD_AMD = 2 };

/* One card as a backend saw it. Strings are NUL-terminated; an unknown number is 0. */
typedef struct gp_card_info {
	int vendor;	    /* enum gp_card_vendor */
	const char *source; /* "nvml", "rocm-smi" or "sysfs" (a static string) */
	char name[96];
	char uuid[96];
	char pci_bus_id[32]; /* "00000000:19:00.0" as NVML spells it, "0000:03:00.0" for sysfs */
	uint64_t vram_total; /* bytes */
	uint64_t vram_free;
	char arch[32];	   /* "9.0" (compute capability) or "gfx1031" */
	uint32_t sm_count; /* NVIDIA SMs, AMD compute units */
	uint32_t cores;	   /* CUDA cores, AMD stream processors (CUs x 64) */
	char driver_version[80];
	char api_version[32]; /* "CUDA 13.0", "HIP 5.2", "HIP" */
	uint32_t power_limit_w;
	uint32_t temperature_c;
	uint32_t utilization_pct;
	uint64_t energy_mj; /* total energy since driver load, for energy reports */
	int has_energy;
	uint32_t power_mw; /* present draw (for cards without an energy counter) */
	int has_power;
	int own_kernels_ok; /* gpool's own kernels are built for it (see gp_cuda_own_kernels_ok) */
	/* 1 + the minor number of its device node (NVIDIA /dev/nvidia<N>, N from NVML, which is
	 * not always its index; AMD /dev/dri/renderD<N>, N >= 128, from sysfs); 0: unknown */
	uint32_t dev_node;
} gp_card_info_t;

typedef void (*gp_card_debug_f)(const char *msg, void *arg);

/* A growing list of cards. Zero-initialise; set debug to hear why a backend found nothing. */
typedef struct gp_card_list {
	gp_card_info_t *v;
	size_t n;
	gp_card_debug_f debug;
	void *debug_arg;
	/* the HIP runtime dlopen'd for api_version when an AMD card is found; NULL: the
	 * usual libamdhip64 names (tests name an absent one: HIP's initialisers leak) */
	const char *hip_lib;
} gp_card_list_t;

/* Append one zeroed entry; NULL with errno = ENOMEM (errno from realloc). */
static inline gp_card_info_t *gp_card_list_add(gp_card_list_t *l)
{
	gp_card_info_t *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	l->v = nv;
	memset(&nv[l->n], 0, sizeof(nv[l->n]));
	return &nv[l->n++];
}

static inline void gp_card_list_release(gp_card_list_t *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Report through l->debug (printf-style); a no-op when debug is NULL. */
static inline __attribute__((format(printf, 2, 3))) void gp_card_debugf(const gp_card_list_t *l,
									const char *fmt, ...)
{
	if (!l->debug)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	l->debug(msg, l->debug_arg);
}

/* CUDA cores per SM for compute capability major.minor; 0 when unknown. */
uint32_t gp_cuda_cores_per_sm(int major, int minor);
/* gpool's CUDA kernels are built by CUDA 13, which emits sm_75 and newer only. */
int gp_cuda_own_kernels_ok(int major, int minor);

/* NVIDIA cards through NVML. lib: the library to dlopen, NULL for "libnvidia-ml.so.1".
 * 0 (also when NVML or the driver is absent) / -1 with errno = ENOMEM. */
int gp_cards_nvml_discover(const char *lib, gp_card_list_t *out);

/* AMD cards through ROCm SMI (lib NULL: librocm_smi64.so.*), else through sysfs under
 * sysfs_root (NULL: "/sys"). 0 / -1 with errno = ENOMEM. */
int gp_cards_amd_discover(const char *lib, const char *sysfs_root, gp_card_list_t *out);

/* AMD cards from sysfs alone: <root>/class/drm/cardN/device with vendor 0x1002, gfx targets
 * from <root>/class/kfd/kfd/topology/nodes/N/properties. 0 / -1 with errno = ENOMEM. */
int gp_cards_sysfs_discover(const char *sysfs_root, gp_card_list_t *out);

/* ---- meters: what a card draws, read often (every power_sample_interval) ----
 * Discovery opens and closes the vendor libraries each time; a meter keeps them open, so a
 * reading costs one library call or one small file read. cards_meter.c puts the backends'
 * meters behind one interface. */

/* One reading of a card. */
typedef struct gp_card_reading {
	uint64_t energy_mj; /* the card's own cumulative energy counter */
	int has_energy;
	uint32_t power_mw; /* present draw */
	int has_power;
	uint32_t temperature_c, utilization_pct; /* present state (NVML only, so far) */
	int has_util;
} gp_card_reading_t;

typedef struct gp_card_meters gp_card_meters_t;

/* Where the meters look; a NULL member: the default (as for discovery). */
struct gp_card_meter_opts {
	const char *nvml_lib;
	const char *rsmi_lib;
	const char *sysfs_root;
	gp_card_debug_f debug; /* why a card has no meter */
	void *debug_arg;
};

/* Open the vendor libraries there are cards for, lazily on the first gp_card_meters_find of
 * such a card. NULL with errno = ENOMEM only. */
gp_card_meters_t *gp_card_meters_create(const struct gp_card_meter_opts *o);
void gp_card_meters_destroy(gp_card_meters_t **m);
/* The meter of one card: NVIDIA by uuid (NVML), AMD by PCI bus id "0000:03:00.0" (ROCm
 * SMI, else amdgpu's hwmon power file in sysfs). Returns a meter id, or -1 when nothing
 * reads that card (errno = ENOENT) or out of memory (ENOMEM). */
int gp_card_meters_find(gp_card_meters_t *m, int vendor, const char *uuid, const char *pci_bus_id);
/* Read meter id; fields it cannot read stay 0 (has_* 0). 0 / -1 with errno = EINVAL (no
 * such id) or EIO (nothing could be read this time). */
int gp_card_meters_read(gp_card_meters_t *m, int id, gp_card_reading_t *r);
/* What meter id reads: "nvml", "rocm-smi" or "sysfs" (static strings). */
const char *gp_card_meters_source(const gp_card_meters_t *m, int id);

/* The backends' meters (used by cards_meter.c). Each open returns NULL when its library or
 * driver is absent (said through l's debug) or out of memory. */
struct gp_nvml_meter;
struct gp_nvml_meter *gp_nvml_meter_open(const char *lib, const gp_card_list_t *l);
int gp_nvml_meter_find(struct gp_nvml_meter *m, const char *uuid); /* handle index or -1 */
int gp_nvml_meter_read(struct gp_nvml_meter *m, int idx, gp_card_reading_t *r);
void gp_nvml_meter_close(struct gp_nvml_meter *m);
struct gp_rsmi_meter;
struct gp_rsmi_meter *gp_rsmi_meter_open(const char *lib, const gp_card_list_t *l);
int gp_rsmi_meter_find(struct gp_rsmi_meter *m, const char *pci_bus_id); /* device or -1 */
int gp_rsmi_meter_read(struct gp_rsmi_meter *m, int idx, gp_card_reading_t *r);
void gp_rsmi_meter_close(struct gp_rsmi_meter *m);
/* amdgpu's power file of the card at pci_bus_id: <root>/class/drm/cardN/device/hwmon/hwmonM/
 * power1_average, else power1_input (newer SMUs have only the latter), both in µW. Writes
 * its path into path; 0 / -1 when the card or the file is absent. */
int gp_sysfs_power_path(const char *sysfs_root, const char *pci_bus_id, char *path, size_t len);
/* Read a hwmon power file (µW) as mW. 0 / -1. */
int gp_sysfs_power_read(const char *path, uint32_t *mw);

/* Internal to the AMD backends (cards_rocm.c and cards_sysfs.c). */
/* The gfx target of the KFD node at PCI domain:bus:dev.fn ("gfx1031"); 0 / -1 if none. */
int gp_sysfs_gfx_target(const char *sysfs_root, unsigned domain, unsigned bus, unsigned dev,
			unsigned fn, char *out, size_t outlen, uint32_t *cus);
/* 1 + N of the render node /dev/dri/renderD<N> of the PCI device whose sysfs directory is
 * devdir (its drm/renderD<N> entry), 0 when it has none. */
uint32_t gp_sysfs_render_node(const char *devdir);
/* The "HIP x.y" (or "HIP") API version string, from lib (NULL: libamdhip64.so*) if present. */
void gp_hip_api_version(const char *lib, char *out, size_t outlen);
/* gpool's HIP kernels are built for kernels/CMakeLists.txt's default GK_HIP_ARCHS
 * (gfx1010, gfx1030, gfx1031, gfx1032). */
int gp_amd_own_kernels_ok(const char *arch);
/* The amdgpu driver version from <root>/module/amdgpu/version, else the kernel release. */
void gp_amdgpu_driver_version(const char *sysfs_root, char *out, size_t outlen);

#endif
