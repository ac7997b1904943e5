/* cards_meter.c: one interface over the backends' meters (cards_backends.h).
 *
 * A vendor library is opened the first time a card of its vendor is looked up, and stays
 * open until the meters are destroyed. NVIDIA cards are read through NVML; AMD cards through
 * ROCm SMI when it reads them, else through amdgpu's hwmon power file in sysfs.
 */
#include "cards/cards_backends.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum meter_kind { METER_NVML, METER_RSMI, METER_SYSFS };

struct meter {
	enum meter_kind kind;
	int idx;	 /* NVML handle index, ROCm SMI device index */
	char path[1400]; /* sysfs power file */
};

struct gp_card_meters {
	struct gp_card_meter_opts o; /* its strings belong to the caller */
	gp_card_list_t dbg;	     /* no cards: carries the debug callback for the backends */
	struct gp_nvml_meter *nvml;
	struct gp_rsmi_meter *rsmi;
	bool nvml_tried, rsmi_tried;
	struct meter *v;
	size_t n;
};

static const char *const kind_names[] = {
    [METER_NVML] = "nvml",
    [METER_RSMI] = "rocm-smi",
    [METER_SYSFS] = "sysfs",
};

gp_card_meters_t *gp_card_meters_create(const struct gp_card_meter_opts *o)
{
	gp_card_meters_t *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (o)
		m->o = *o;
	m->dbg.debug = m->o.debug;
	m->dbg.debug_arg = m->o.debug_arg;
	return m;
}

void gp_card_meters_destroy(gp_card_meters_t **p)
{
	if (!p || !*p)
		return;
	gp_card_meters_t *m = *p;
	gp_nvml_meter_close(m->nvml);
	gp_rsmi_meter_close(m->rsmi);
	free(m->v);
	free(m);
	*p = NULL;
}

static int add(gp_card_meters_t *m, const struct meter *x)
{
	struct meter *nv = realloc(m->v, (m->n + 1) * sizeof(*nv));
	if (!nv) {
		errno = ENOMEM;
		return -1;
	}
	m->v = nv;
	m->v[m->n] = *x;
	return (int)m->n++;
}

static int find_nvidia(gp_card_meters_t *m, const char *uuid, struct meter *x)
{
	if (!m->nvml_tried) {
		m->nvml_tried = true;
		m->nvml = gp_nvml_meter_open(m->o.nvml_lib, &m->dbg);
	}
	x->kind = METER_NVML;
	if (!m->nvml || !uuid || !*uuid || (x->idx = gp_nvml_meter_find(m->nvml, uuid)) < 0)
		return -1;
	return 0;
}

static int find_amd(gp_card_meters_t *m, const char *pci_bus_id, struct meter *x)
{
	if (!pci_bus_id || !*pci_bus_id)
		return -1;
	if (!m->rsmi_tried) {
		m->rsmi_tried = true;
		m->rsmi = gp_rsmi_meter_open(m->o.rsmi_lib, &m->dbg);
	}
	gp_card_reading_t r;
	x->kind = METER_RSMI;
	/* ROCm SMI only when it reads something: else amdgpu's own file may */
	if (m->rsmi && (x->idx = gp_rsmi_meter_find(m->rsmi, pci_bus_id)) >= 0 &&
	    gp_rsmi_meter_read(m->rsmi, x->idx, &r) == 0)
		return 0;
	x->kind = METER_SYSFS;
	x->idx = -1;
	return gp_sysfs_power_path(m->o.sysfs_root, pci_bus_id, x->path, sizeof(x->path));
}

int gp_card_meters_find(gp_card_meters_t *m, int vendor, const char *uuid, const char *pci_bus_id)
{
	struct meter x;
	memset(&x, 0, sizeof(x));
	int rc = vendor == GP_CARD_NVIDIA ? find_nvidia(m, uuid, &x)
		 : vendor == GP_CARD_AMD  ? find_amd(m, pci_bus_id, &x)
					  : -1;
	if (rc < 0) {
		gp_card_debugf(&m->dbg, "meter: nothing reads the power of card %s",
			       uuid && *uuid ? uuid
			       : pci_bus_id  ? pci_bus_id
					     : "?");
		errno = ENOENT;
		return -1;
	}
	return add(m, &x);
}

static int read_nvml(gp_card_meters_t *m, const struct meter *x, gp_card_reading_t *r)
{
	return gp_nvml_meter_read(m->nvml, x->idx, r);
}

static int read_rsmi(gp_card_meters_t *m, const struct meter *x, gp_card_reading_t *r)
{
	return gp_rsmi_meter_read(m->rsmi, x->idx, r);
}

static int read_sysfs(gp_card_meters_t *m, const struct meter *x, gp_card_reading_t *r)
{
	if (gp_sysfs_power_read(x->path, &r->power_mw) < 0) {
		errno = EIO;
		return -1;
	}
	r->has_power = 1;
	return 0;
}

static int (*const readers[])(gp_card_meters_t *, const struct meter *, gp_card_reading_t *) = {
    [METER_NVML] = read_nvml,
    [METER_RSMI] = read_rsmi,
    [METER_SYSFS] = read_sysfs,
};

int gp_card_meters_read(gp_card_meters_t *m, int id, gp_card_reading_t *r)
{
	memset(r, 0, sizeof(*r));
	if (id < 0 || (size_t)id >= m->n) {
		errno = EINVAL;
		return -1;
	}
	return readers[m->v[id].kind](m, &m->v[id], r);
}

const char *gp_card_meters_source(const gp_card_meters_t *m, int id)
{
	if (id < 0 || (size_t)id >= m->n)
		return "none";
	return kind_names[m->v[id].kind];
}
