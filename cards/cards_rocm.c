/* cards_rocm.c: AMD cards through ROCm SMI (librocm_smi64, loaded with dlopen), falling back
 * to sysfs when the library is absent or finds no card.
 *
 * The signatures below follow rocm_smi.h of ROCm SMI 5.2 (Debian's librocm-smi-dev), which
 * is consulted, never included or linked. ROCm SMI 5.2 has no gfx target query, so the gfx
 * target and compute unit count come from the KFD topology in sysfs in both paths.
 */
#include "cards/cards_backends.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int rsmi_status_t; /* RSMI_STATUS_SUCCESS is 0 */
#define RSMI_OK		    0
#define RSMI_MEM_TYPE_VRAM  0
#define RSMI_TEMP_TYPE_EDGE 0
#define RSMI_TEMP_CURRENT   0
#define RSMI_SW_COMP_DRIVER 0

struct rsmi {
	void *dl;
	rsmi_status_t (*init)(uint64_t);
	rsmi_status_t (*shut_down)(void);
	rsmi_status_t (*num_devices)(uint32_t *);
	rsmi_status_t (*name)(uint32_t, char *, size_t);
	rsmi_status_t (*pci_id)(uint32_t, uint64_t *);
	rsmi_status_t (*unique_id)(uint32_t, uint64_t *);
	rsmi_status_t (*mem_total)(uint32_t, int, uint64_t *);
	rsmi_status_t (*mem_used)(uint32_t, int, uint64_t *);
	rsmi_status_t (*power_cap)(uint32_t, uint32_t, uint64_t *);
	rsmi_status_t (*temp)(uint32_t, uint32_t, int, int64_t *);
	rsmi_status_t (*busy)(uint32_t, uint32_t *);
	rsmi_status_t (*energy)(uint32_t, uint64_t *, float *, uint64_t *);
	rsmi_status_t (*version_str)(int, char *, uint32_t);
	rsmi_status_t (*power_ave)(uint32_t, uint32_t, uint64_t *);
	rsmi_status_t (*socket_power)(uint32_t, uint64_t *);
};

static const struct {
	size_t off;
	const char *name;
	int required;
} rsmi_syms[] = {
#define SYM(field, name, req)                                                                      \
	{                                                                                          \
		offsetof(struct rsmi, field), name, req                                            \
	}
    SYM(init, "rsmi_init", 1),
    SYM(shut_down, "rsmi_shut_down", 1),
    SYM(num_devices, "rsmi_num_monitor_devices", 1),
    SYM(pci_id, "rsmi_dev_pci_id_get", 1),
    SYM(name, "rsmi_dev_name_get", 0),
    SYM(unique_id, "rsmi_dev_unique_id_get", 0),
    SYM(mem_total, "rsmi_dev_memory_total_get", 0),
    SYM(mem_used, "rsmi_dev_memory_usage_get", 0),
    SYM(power_cap, "rsmi_dev_power_cap_get", 0),
    SYM(temp, "rsmi_dev_temp_metric_get", 0),
    SYM(busy, "rsmi_dev_busy_percent_get", 0),
    SYM(energy, "rsmi_dev_energy_count_get", 0),
    SYM(version_str, "rsmi_version_str_get", 0),
    /* µW; power_ave is amdgpu's power1_average, which newer SMUs lack: their instant
     * power1_input is current_socket_power (ROCm 6) */
    SYM(power_ave, "rsmi_dev_power_ave_get", 0),
    SYM(socket_power, "rsmi_dev_current_socket_power_get", 0),
#undef SYM
};

static void rsmi_read(const struct rsmi *r, uint32_t i, gp_card_reading_t *rd)
{
	memset(rd, 0, sizeof(*rd));
	uint64_t v = 0, ts = 0;
	float res = 0;
	if (r->energy && r->energy(i, &v, &res, &ts) == RSMI_OK && res > 0) {
		rd->energy_mj = (uint64_t)((double)v * res / 1000.0); /* counter x µJ per count */
		rd->has_energy = 1;
	}
	if ((r->power_ave && r->power_ave(i, 0, &v) == RSMI_OK) ||
	    (r->socket_power && r->socket_power(i, &v) == RSMI_OK)) {
		rd->power_mw = (uint32_t)(v / 1000);
		rd->has_power = 1;
	}
}

/* "0000:03:00.0" from ROCm SMI's BDFID (domain << 32 | bus << 8 | device << 3 | function) */
static void bdf_string(uint64_t bdf, char *out, size_t len)
{
	snprintf(out, len, "%04x:%02x:%02x.%x", (unsigned)(bdf >> 32), (unsigned)(bdf >> 8) & 0xff,
		 (unsigned)(bdf >> 3) & 0x1f, (unsigned)bdf & 7);
}

static void rsmi_card(const struct rsmi *r, uint32_t i, const char *root, gp_card_info_t *c)
{
	c->vendor = GP_CARD_AMD;
	c->source = "rocm-smi";
	uint64_t bdf = 0;
	r->pci_id(i, &bdf);
	unsigned dom = (unsigned)(bdf >> 32), bus = (bdf >> 8) & 0xff, dev = (bdf >> 3) & 0x1f,
		 fn = bdf & 7;
	bdf_string(bdf, c->pci_bus_id, sizeof(c->pci_bus_id));
	char devdir[1100];
	snprintf(devdir, sizeof(devdir), "%s/bus/pci/devices/%s", root, c->pci_bus_id);
	c->dev_node = gp_sysfs_render_node(devdir);
	uint32_t cus = 0;
	if (gp_sysfs_gfx_target(root, dom, bus, dev, fn, c->arch, sizeof(c->arch), &cus) == 0) {
		c->sm_count = cus;
		c->cores = cus * 64;
	}
	c->own_kernels_ok = gp_amd_own_kernels_ok(c->arch);
	if (!r->name || r->name(i, c->name, sizeof(c->name)) != RSMI_OK)
		snprintf(c->name, sizeof(c->name), "AMD GPU %s", c->pci_bus_id);
	uint64_t v = 0;
	if (r->unique_id && r->unique_id(i, &v) == RSMI_OK)
		snprintf(c->uuid, sizeof(c->uuid), "GPU-%016llx", (unsigned long long)v);
	uint64_t total = 0, used = 0;
	if (r->mem_total && r->mem_total(i, RSMI_MEM_TYPE_VRAM, &total) == RSMI_OK) {
		c->vram_total = total;
		if (r->mem_used && r->mem_used(i, RSMI_MEM_TYPE_VRAM, &used) == RSMI_OK &&
		    used <= total)
			c->vram_free = total - used;
	}
	if (r->power_cap && r->power_cap(i, 0, &v) == RSMI_OK)
		c->power_limit_w = (uint32_t)((v + 500000) / 1000000); /* µW */
	int64_t t = 0;
	if (r->temp && r->temp(i, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &t) == RSMI_OK && t > 0)
		c->temperature_c = (uint32_t)(t / 1000);
	uint32_t busy = 0;
	if (r->busy && r->busy(i, &busy) == RSMI_OK && busy <= 100)
		c->utilization_pct = busy;
	gp_card_reading_t rd;
	rsmi_read(r, i, &rd);
	c->energy_mj = rd.energy_mj;
	c->has_energy = rd.has_energy;
	c->power_mw = rd.power_mw;
	c->has_power = rd.has_power;
}

/* dlopen ROCm SMI (lib NULL: the usual names), look its functions up and initialise it.
 * 0 / -1 (said through l's debug). */
static int rsmi_open(const char *lib, struct rsmi *r, const gp_card_list_t *l)
{
	static const char *const libs[] = {"librocm_smi64.so.7", "librocm_smi64.so.6",
					   "librocm_smi64.so.5", "librocm_smi64.so.1",
					   "librocm_smi64.so"};
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; !r->dl && i < sizeof(libs) / sizeof(libs[0]); i++) {
		if (lib && i > 0)
			break;
		r->dl = dlopen(lib ? lib : libs[i], RTLD_NOW | RTLD_LOCAL);
	}
	if (!r->dl) {
		gp_card_debugf(l, "rocm-smi: no %s", lib ? lib : "librocm_smi64.so.*");
		return -1;
	}
	for (size_t i = 0; i < sizeof(rsmi_syms) / sizeof(rsmi_syms[0]); i++) {
		void *f = dlsym(r->dl, rsmi_syms[i].name);
		if (!f && rsmi_syms[i].required) {
			gp_card_debugf(l, "rocm-smi: library lacks %s", rsmi_syms[i].name);
			dlclose(r->dl);
			return -1;
		}
		memcpy((char *)r + rsmi_syms[i].off, &f, sizeof(f));
	}
	rsmi_status_t st = r->init(0);
	if (st != RSMI_OK) {
		gp_card_debugf(l, "rocm-smi: init: status %d", st);
		dlclose(r->dl);
		return -1;
	}
	return 0;
}

static void rsmi_close(struct rsmi *r)
{
	r->shut_down();
	dlclose(r->dl);
}

static int rsmi_discover(const char *lib, const char *root, gp_card_list_t *out, int *found)
{
	struct rsmi r;
	if (rsmi_open(lib, &r, out) < 0)
		return 0;
	uint32_t n = 0;
	if (r.num_devices(&n) != RSMI_OK)
		n = 0;
	char driver[80] = "", api[32] = "";
	if (n > 0) {
		if (!r.version_str ||
		    r.version_str(RSMI_SW_COMP_DRIVER, driver, sizeof(driver)) != RSMI_OK)
			gp_amdgpu_driver_version(root, driver, sizeof(driver));
		gp_hip_api_version(out->hip_lib, api, sizeof(api));
	}
	int rc = 0;
	for (uint32_t i = 0; i < n; i++) {
		gp_card_info_t *c = gp_card_list_add(out);
		if (!c) {
			rc = -1;
			break;
		}
		rsmi_card(&r, i, root, c);
		memcpy(c->driver_version, driver, sizeof(driver));
		memcpy(c->api_version, api, sizeof(api));
		(*found)++;
	}
	rsmi_close(&r);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

/* ROCm SMI kept initialised. */
struct gp_rsmi_meter {
	struct rsmi r;
	uint32_t ndev;
};

struct gp_rsmi_meter *gp_rsmi_meter_open(const char *lib, const gp_card_list_t *l)
{
	struct gp_rsmi_meter *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (rsmi_open(lib, &m->r, l) < 0) {
		free(m);
		return NULL;
	}
	if (m->r.num_devices(&m->ndev) != RSMI_OK)
		m->ndev = 0;
	return m;
}

int gp_rsmi_meter_find(struct gp_rsmi_meter *m, const char *pci_bus_id)
{
	for (uint32_t i = 0; i < m->ndev; i++) {
		uint64_t bdf = 0;
		char id[32];
		if (m->r.pci_id(i, &bdf) != RSMI_OK)
			continue;
		bdf_string(bdf, id, sizeof(id));
		if (!strcmp(id, pci_bus_id))
			return (int)i;
	}
	return -1;
}

int gp_rsmi_meter_read(struct gp_rsmi_meter *m, int idx, gp_card_reading_t *r)
{
	if (idx < 0 || (uint32_t)idx >= m->ndev) {
		errno = EINVAL;
		return -1;
	}
	rsmi_read(&m->r, (uint32_t)idx, r);
	if (!r->has_energy && !r->has_power) {
		errno = EIO;
		return -1;
	}
	return 0;
}

void gp_rsmi_meter_close(struct gp_rsmi_meter *m)
{
	if (!m)
		return;
	rsmi_close(&m->r);
	free(m);
}

int gp_cards_amd_discover(const char *lib, const char *sysfs_root, gp_card_list_t *out)
{
	if (!sysfs_root)
		sysfs_root = "/sys";
	int found = 0;
	if (rsmi_discover(lib, sysfs_root, out, &found) < 0)
		return -1;
	if (found)
		return 0;
	return gp_cards_sysfs_discover(sysfs_root, out);
}
