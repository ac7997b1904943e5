/* cards_sysfs.c: AMD cards from sysfs (amdgpu and the KFD topology), no library needed.
 *
 * The sysfs root is a parameter so that tests can build a fake tree in a temporary folder.
 * Files read, relative to the root:
 *   class/drm/cardN/device/{vendor,device,uevent,product_name,unique_id,
 *                           mem_info_vram_total,mem_info_vram_used,gpu_busy_percent}
 *   class/drm/cardN/device/hwmon/hwmonM/{power1_cap,temp1_input,power1_average,power1_input}
 *   class/kfd/kfd/topology/nodes/K/properties (gfx_target_version, location_id, domain,
 *                                              simd_count, simd_per_cu)
 *   module/amdgpu/version (a DKMS amdgpu only; else the kernel release is the driver)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* scandir's strverscmp; the probe builds without the project's flags */
#endif
#include "cards/cards_backends.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

/* Read a small file, trailing white space stripped. 0 / -1 when absent or empty. */
static int read_str(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int read_str(char *buf, size_t len, const char *fmt, ...)
{
	char path[1024];
	va_list ap;
	va_start(ap, fmt);
	int pn = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (pn < 0 || (size_t)pn >= sizeof(path))
		return -1;
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return n > 0 ? 0 : -1;
}

static int read_u64(uint64_t *v, const char *dir, const char *file)
{
	char buf[64], *end;
	if (read_str(buf, sizeof(buf), "%s/%s", dir, file) < 0)
		return -1;
	errno = 0;
	unsigned long long x = strtoull(buf, &end, 0);
	if (errno || end == buf || *end)
		return -1;
	*v = x;
	return 0;
}

/* The value of "key N" in a KFD properties file. */
static int prop_u64(const char *props, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);
	for (const char *p = props; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			*v = strtoull(p + kl + 1, NULL, 10);
			return 0;
		}
	}
	return -1;
}

int gp_sysfs_gfx_target(const char *root, unsigned domain, unsigned bus, unsigned dev, unsigned fn,
			char *out, size_t outlen, uint32_t *cus)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/class/kfd/kfd/topology/nodes", root);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int rc = -1;
	struct dirent *e;
	uint64_t want = (uint64_t)bus << 8 | dev << 3 | fn;
	while (rc < 0 && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char props[8192];
		uint64_t loc, gfx, dom = 0, simds = 0, per_cu = 0;
		if (read_str(props, sizeof(props), "%s/%s/properties", dir, e->d_name) < 0 ||
		    prop_u64(props, "location_id", &loc) < 0 ||
		    prop_u64(props, "gfx_target_version", &gfx) < 0 || gfx == 0)
			continue;		 /* CPU nodes have gfx_target_version 0 */
		prop_u64(props, "domain", &dom); /* absent before Linux 5.12: domain 0 */
		if (loc != want || dom != domain)
			continue;
		/* 100301 -> gfx1031, 90010 -> gfx90a: major, minor, stepping (LLVM spells the
		 * last two in hex) */
		snprintf(out, outlen, "gfx%u%x%x", (unsigned)(gfx / 10000),
			 (unsigned)(gfx / 100 % 100), (unsigned)(gfx % 100));
		prop_u64(props, "simd_count", &simds);
		prop_u64(props, "simd_per_cu", &per_cu);
		*cus = per_cu ? (uint32_t)(simds / per_cu) : 0;
		rc = 0;
	}
	closedir(d);
	return rc;
}

void gp_hip_api_version(const char *lib, char *out, size_t outlen)
{
	static const char *const libs[] = {"libamdhip64.so", "libamdhip64.so.6",
					   "libamdhip64.so.5"};
	snprintf(out, outlen, "HIP");
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		if (lib && i > 0)
			break;
		void *dl = dlopen(lib ? lib : libs[i], RTLD_NOW | RTLD_LOCAL);
		if (!dl)
			continue;
		int (*get)(int *) = NULL;
		void *f = dlsym(dl, "hipRuntimeGetVersion");
		memcpy(&get, &f, sizeof(get));
		int v = 0;
		/* HIP_VERSION = major * 10000000 + minor * 100000 + patch */
		if (get && get(&v) == 0 && v > 0)
			snprintf(out, outlen, "HIP %d.%d", v / 10000000, v / 100000 % 100);
		dlclose(dl);
		return;
	}
}

void gp_amdgpu_driver_version(const char *root, char *out, size_t outlen)
{
	char v[64];
	if (read_str(v, sizeof(v), "%s/module/amdgpu/version", root) == 0) {
		snprintf(out, outlen, "amdgpu %s", v);
		return;
	}
	/* the in-tree amdgpu has no version of its own: the kernel is the driver */
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(out, outlen, "Linux %s", u.release);
	else
		out[0] = '\0';
}

/* The first hwmon power file of a card's device folder that reads: power1_average (amdgpu's
 * average over about a second), else power1_input (instant; the only one newer SMUs have,
 * and power1_average can exist and fail to read). 0 / -1. */
static int hwmon_power_file(const char *dev, char *path, size_t len)
{
	static const char *const files[] = {"power1_average", "power1_input"};
	char hw[1040];
	snprintf(hw, sizeof(hw), "%s/hwmon", dev);
	DIR *d = opendir(hw);
	if (!d)
		return -1;
	int rc = -1;
	struct dirent *e;
	while (rc < 0 && (e = readdir(d))) {
		if (strncmp(e->d_name, "hwmon", 5) != 0)
			continue;
		for (size_t i = 0; rc < 0 && i < sizeof(files) / sizeof(files[0]); i++) {
			uint32_t mw;
			int n = snprintf(path, len, "%s/%s/%s", hw, e->d_name, files[i]);
			if (n > 0 && (size_t)n < len && gp_sysfs_power_read(path, &mw) == 0)
				rc = 0;
		}
	}
	closedir(d);
	return rc;
}

int gp_sysfs_power_read(const char *path, uint32_t *mw)
{
	char buf[64], *end;
	if (read_str(buf, sizeof(buf), "%s", path) < 0)
		return -1;
	errno = 0;
	unsigned long long uw = strtoull(buf, &end, 10);
	if (errno || end == buf || *end || uw / 1000 > UINT32_MAX)
		return -1;
	*mw = (uint32_t)(uw / 1000);
	return 0;
}

uint32_t gp_sysfs_render_node(const char *devdir)
{
	char p[1100];
	snprintf(p, sizeof(p), "%s/drm", devdir);
	DIR *d = opendir(p);
	if (!d)
		return 0;
	uint32_t node = 0;
	struct dirent *e;
	while (!node && (e = readdir(d))) {
		char *end;
		if (strncmp(e->d_name, "renderD", 7) != 0 || !isdigit((unsigned char)e->d_name[7]))
			continue;
		unsigned long n = strtoul(e->d_name + 7, &end, 10);
		if (!*end && n >= 128 && n < 1u << 20)
			node = (uint32_t)n + 1;
	}
	closedir(d);
	return node;
}

/* Fill c from <root>/class/drm/<card>/device; 1 if it is not an AMD card. */
static int sysfs_card(const char *root, const char *card, gp_card_info_t *c)
{
	char dev[1024], buf[256];
	snprintf(dev, sizeof(dev), "%s/class/drm/%s/device", root, card);
	if (read_str(buf, sizeof(buf), "%s/vendor", dev) < 0 || strcmp(buf, "0x1002") != 0)
		return 1;
	uint64_t total = 0;
	if (read_u64(&total, dev, "mem_info_vram_total") < 0)
		return 1; /* not amdgpu (radeon) or no VRAM file: not a compute card */
	c->vendor = GP_CARD_AMD;
	c->source = "sysfs";
	c->vram_total = total;
	uint64_t used = 0;
	if (read_u64(&used, dev, "mem_info_vram_used") == 0 && used <= total)
		c->vram_free = total - used;

	char uevent[1024];
	unsigned dom = 0, bus = 0, dv = 0, fn = 0;
	if (read_str(uevent, sizeof(uevent), "%s/uevent", dev) == 0) {
		const char *s = strstr(uevent, "PCI_SLOT_NAME=");
		if (s && sscanf(s + 14, "%x:%x:%x.%x", &dom, &bus, &dv, &fn) == 4)
			snprintf(c->pci_bus_id, sizeof(c->pci_bus_id), "%04x:%02x:%02x.%x", dom,
				 bus, dv, fn);
	}
	uint32_t cus = 0;
	if (gp_sysfs_gfx_target(root, dom, bus, dv, fn, c->arch, sizeof(c->arch), &cus) == 0) {
		c->sm_count = cus;
		c->cores = cus * 64; /* 64 stream processors per compute unit (GCN, RDNA) */
	}
	c->dev_node = gp_sysfs_render_node(dev);
	if (read_str(c->name, sizeof(c->name), "%s/product_name", dev) < 0) {
		char id[16] = "?";
		read_str(id, sizeof(id), "%s/device", dev);
		snprintf(c->name, sizeof(c->name), "AMD GPU 1002:%s", id[0] == '0' ? id + 2 : id);
	}
	if (read_str(buf, sizeof(buf), "%s/unique_id", dev) == 0)
		snprintf(c->uuid, sizeof(c->uuid), "GPU-%.64s", buf);
	uint64_t v;
	if (read_u64(&v, dev, "gpu_busy_percent") == 0 && v <= 100)
		c->utilization_pct = (uint32_t)v;

	char hw[1040];
	snprintf(hw, sizeof(hw), "%s/hwmon", dev);
	DIR *d = opendir(hw);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (strncmp(e->d_name, "hwmon", 5) != 0)
				continue;
			char h[1300]; /* hw, a slash, a name of up to 255 bytes */
			snprintf(h, sizeof(h), "%s/%s", hw, e->d_name);
			if (read_u64(&v, h, "power1_cap") == 0)
				c->power_limit_w = (uint32_t)((v + 500000) / 1000000); /* µW */
			if (read_u64(&v, h, "temp1_input") == 0)
				c->temperature_c = (uint32_t)(v / 1000); /* millidegrees */
			break;
		}
		closedir(d);
	}
	char pf[1400];
	if (hwmon_power_file(dev, pf, sizeof(pf)) == 0 &&
	    gp_sysfs_power_read(pf, &c->power_mw) == 0)
		c->has_power = 1;
	return 0;
}

int gp_amd_own_kernels_ok(const char *arch)
{
	static const char *const built[] = {"gfx1010", "gfx1030", "gfx1031", "gfx1032"};
	for (size_t i = 0; i < sizeof(built) / sizeof(built[0]); i++)
		if (!strcmp(arch, built[i]))
			return 1;
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strverscmp((*a)->d_name, (*b)->d_name);
}

static int is_card_dir(const struct dirent *e)
{
	/* card0, card1, ...; not the connectors card0-DP-1 */
	const char *p = e->d_name;
	if (strncmp(p, "card", 4) != 0 || !p[4])
		return 0;
	for (p += 4; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

/* The card entries (card0, card1, ...) of ROOT/class/drm in name order, ROOT "/sys" when
 * NULL: their number with *ents (free each and the array), or -1 with DIR the folder. */
static int scan_cards(const char **root, char *dir, size_t dirlen, struct dirent ***ents)
{
	if (!*root)
		*root = "/sys";
	snprintf(dir, dirlen, "%s/class/drm", *root);
	return scandir(dir, ents, is_card_dir, by_name);
}

int gp_cards_sysfs_discover(const char *root, gp_card_list_t *out)
{
	char dir[1024];
	struct dirent **ents;
	int n = scan_cards(&root, dir, sizeof(dir), &ents);
	if (n < 0) {
		gp_card_debugf(out, "sysfs: no '%s'", dir);
		return 0;
	}
	char driver[80] = "", api[32] = "";
	int rc = 0;
	for (int i = 0; i < n; i++) {
		gp_card_info_t tmp;
		memset(&tmp, 0, sizeof(tmp));
		if (rc == 0 && sysfs_card(root, ents[i]->d_name, &tmp) == 0) {
			if (!driver[0]) {
				gp_amdgpu_driver_version(root, driver, sizeof(driver));
				gp_hip_api_version(out->hip_lib, api, sizeof(api));
			}
			memcpy(tmp.driver_version, driver, sizeof(driver));
			memcpy(tmp.api_version, api, sizeof(api));
			tmp.own_kernels_ok = gp_amd_own_kernels_ok(tmp.arch);
			gp_card_info_t *c = gp_card_list_add(out);
			if (c)
				*c = tmp;
			else
				rc = -1;
		}
		free(ents[i]);
	}
	free(ents);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

int gp_sysfs_power_path(const char *root, const char *pci_bus_id, char *path, size_t len)
{
	char dir[1024];
	struct dirent **ents;
	int n = scan_cards(&root, dir, sizeof(dir), &ents);
	if (n < 0)
		return -1;
	int rc = -1;
	for (int i = 0; i < n; i++) {
		char dev[1300], uevent[1024];
		snprintf(dev, sizeof(dev), "%s/%s/device", dir, ents[i]->d_name);
		const char *s;
		if (rc < 0 && read_str(uevent, sizeof(uevent), "%s/uevent", dev) == 0 &&
		    (s = strstr(uevent, "PCI_SLOT_NAME=")) &&
		    !strncasecmp(s + 14, pci_bus_id, strlen(pci_bus_id)) &&
		    (s[14 + strlen(pci_bus_id)] == '\n' || !s[14 + strlen(pci_bus_id)]))
			rc = hwmon_power_file(dev, path, len);
		free(ents[i]);
	}
	free(ents);
	return rc;
}
