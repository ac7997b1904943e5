/* test_cards_real.c: the real discovery backends without real cards: the cores-per-SM table,
 * the sysfs parser on a fake sysfs tree, and NVML / ROCm SMI absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cards/cards_backends.h"

static void cores_per_sm(void **state)
{
	static const struct {
		int major, minor;
		uint32_t cores;
	} t[] = {
	    {6, 0, 64},	  {6, 1, 128}, {7, 0, 64},  {7, 5, 64},	 {8, 0, 64},
	    {8, 6, 128},  {8, 7, 128}, {8, 9, 128}, {9, 0, 128}, {10, 0, 128},
	    {12, 0, 128}, {5, 2, 0},   {13, 0, 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(gp_cuda_cores_per_sm(t[i].major, t[i].minor), t[i].cores);
	/* CUDA 13 builds sm_75 and newer */
	assert_false(gp_cuda_own_kernels_ok(6, 1));
	assert_false(gp_cuda_own_kernels_ok(7, 0));
	assert_true(gp_cuda_own_kernels_ok(7, 5));
	assert_true(gp_cuda_own_kernels_ok(9, 0));
	assert_true(gp_cuda_own_kernels_ok(12, 0));
}

/* mkdir -p of the folder part of root/rel, then write text into root/rel */
static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char root[64];

static int make_tree(void **state)
{
	snprintf(root, sizeof(root), "/tmp/gpool-sysfs-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	/* an RX 6700 XT (gfx1031, 40 CUs) at 0000:03:00.0 */
	put(root, "class/drm/card0/device/vendor", "0x1002\n");
	put(root, "class/drm/card0/device/device", "0x73df\n");
	put(root, "class/drm/card0/device/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n");
	put(root, "class/drm/card0/device/mem_info_vram_total", "12884901888\n");
	put(root, "class/drm/card0/device/mem_info_vram_used", "1073741824\n");
	put(root, "class/drm/card0/device/gpu_busy_percent", "7\n");
	put(root, "class/drm/card0/device/hwmon/hwmon3/power1_cap", "186000000\n");
	put(root, "class/drm/card0/device/hwmon/hwmon3/temp1_input", "45000\n");
	put(root, "class/drm/card0/device/hwmon/hwmon3/power1_average", "45000000\n"); /* 45 W */
	/* its DRM nodes: the render node's number is the driver's, not the card's place */
	put(root, "class/drm/card0/device/drm/card0/dev", "226:0\n");
	put(root, "class/drm/card0/device/drm/renderD129/dev", "226:129\n");
	/* a connector, an NVIDIA card, an old radeon-driven card: none is listed */
	put(root, "class/drm/card0-DP-1/status", "connected\n");
	put(root, "class/drm/card1/device/vendor", "0x10de\n");
	put(root, "class/drm/card2/device/vendor", "0x1002\n");
	/* an MI210 (gfx90a, 104 CUs) at 0000:c1:00.0 with a product name and a unique id */
	put(root, "class/drm/card10/device/vendor", "0x1002\n");
	put(root, "class/drm/card10/device/product_name", "AMD Instinct MI210\n");
	put(root, "class/drm/card10/device/unique_id", "4f8e2b7c1a9d3e05\n");
	put(root, "class/drm/card10/device/uevent", "PCI_SLOT_NAME=0000:c1:00.0\n");
	put(root, "class/drm/card10/device/mem_info_vram_total", "68719476736\n");
	put(root, "class/drm/card10/device/drm/renderDx/dev", "\n");  /* not a number */
	put(root, "class/drm/card10/device/drm/renderD12/dev", "\n"); /* below 128 */
	put(root, "class/drm/card10/device/drm/renderD128/dev", "226:128\n");
	/* a newer SMU: power1_average there but unreadable (empty here), power1_input reads */
	put(root, "class/drm/card10/device/hwmon/hwmon0/power1_average", "");
	put(root, "class/drm/card10/device/hwmon/hwmon0/power1_input", "301250000\n");
	/* KFD: node 0 is the CPU */
	put(root, "class/kfd/kfd/topology/nodes/0/properties",
	    "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\nlocation_id 0\n");
	put(root, "class/kfd/kfd/topology/nodes/1/properties",
	    "simd_count 80\nsimd_per_cu 2\ngfx_target_version 100301\nlocation_id 768\n"
	    "domain 0\n");
	put(root, "class/kfd/kfd/topology/nodes/2/properties",
	    "simd_count 416\nsimd_per_cu 4\ngfx_target_version 90010\nlocation_id 49408\n"
	    "domain 0\n");
	put(root, "module/amdgpu/version", "6.2.4\n");
	return 0;
}

static int remove_tree(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void check_two_amd(const gp_card_list_t *l)
{
	assert_int_equal(l->n, 2);
	const gp_card_info_t *a = &l->v[0], *b = &l->v[1];
	assert_int_equal(a->vendor, GP_CARD_AMD);
	assert_string_equal(a->source, "sysfs");
	assert_string_equal(a->name, "AMD GPU 1002:73df");
	assert_string_equal(a->pci_bus_id, "0000:03:00.0");
	assert_string_equal(a->arch, "gfx1031");
	assert_int_equal(a->sm_count, 40);
	assert_int_equal(a->cores, 2560);
	assert_int_equal(a->vram_total, 12ull << 30);
	assert_int_equal(a->vram_free, 11ull << 30);
	assert_int_equal(a->power_limit_w, 186);
	assert_int_equal(a->temperature_c, 45);
	assert_int_equal(a->utilization_pct, 7);
	assert_true(a->has_power);
	assert_int_equal(a->power_mw, 45000);
	assert_false(a->has_energy);
	assert_string_equal(a->driver_version, "amdgpu 6.2.4");
	assert_string_equal(a->api_version, "HIP"); /* no HIP runtime */
	assert_true(a->own_kernels_ok);
	assert_string_equal(a->uuid, "");
	assert_int_equal(a->dev_node, 129 + 1); /* renderD129 */
	/* card10 sorts after card2 (version order, not strcmp) */
	assert_string_equal(b->name, "AMD Instinct MI210");
	assert_string_equal(b->uuid, "GPU-4f8e2b7c1a9d3e05");
	assert_string_equal(b->pci_bus_id, "0000:c1:00.0");
	assert_string_equal(b->arch, "gfx90a");
	assert_int_equal(b->sm_count, 104);
	assert_int_equal(b->vram_total, 64ull << 30);
	assert_int_equal(b->vram_free, 0); /* no used file: unknown */
	assert_int_equal(b->power_limit_w, 0);
	assert_true(b->has_power);
	assert_int_equal(b->power_mw, 301250);	/* from power1_input */
	assert_false(b->own_kernels_ok);	/* gfx90a is not in GK_HIP_ARCHS */
	assert_int_equal(b->dev_node, 128 + 1); /* renderD128, past the bad names */
}

static void sysfs_tree(void **state)
{
	gp_card_list_t l = {.hip_lib = "libamdhip64-absent.so"};
	assert_int_equal(gp_cards_sysfs_discover(root, &l), 0);
	check_two_amd(&l);
	gp_card_list_release(&l);
}

static void rocm_smi_absent_falls_back_to_sysfs(void **state)
{
	gp_card_list_t l = {.hip_lib = "libamdhip64-absent.so"};
	assert_int_equal(gp_cards_amd_discover("librocm_smi64-absent.so.5", root, &l), 0);
	check_two_amd(&l);
	gp_card_list_release(&l);
}

static void sysfs_power_reader(void **state)
{
	char path[1400], want[1400];
	assert_int_equal(gp_sysfs_power_path(root, "0000:03:00.0", path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/class/drm/card0/device/hwmon/hwmon3/power1_average", root);
	assert_string_equal(path, want);
	uint32_t mw = 0;
	assert_int_equal(gp_sysfs_power_read(path, &mw), 0);
	assert_int_equal(mw, 45000);
	/* the bus id compares without regard to case; the unreadable power1_average is passed
	 * over for power1_input */
	assert_int_equal(gp_sysfs_power_path(root, "0000:C1:00.0", path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/class/drm/card10/device/hwmon/hwmon0/power1_input", root);
	assert_string_equal(path, want);
	assert_int_equal(gp_sysfs_power_read(path, &mw), 0);
	assert_int_equal(mw, 301250);
	/* no such card; a prefix of a bus id is not the card */
	assert_int_equal(gp_sysfs_power_path(root, "0000:05:00.0", path, sizeof(path)), -1);
	assert_int_equal(gp_sysfs_power_path(root, "0000:03:00", path, sizeof(path)), -1);
	assert_int_equal(
	    gp_sysfs_power_path("/nonexistent-gpool-sysfs", "0000:03:00.0", path, sizeof(path)),
	    -1);
	/* what is not a number of µW is no reading */
	put(root, "junk/power1_average", "12abc\n");
	snprintf(path, sizeof(path), "%s/junk/power1_average", root);
	assert_int_equal(gp_sysfs_power_read(path, &mw), -1);
	snprintf(path, sizeof(path), "%s/junk/absent", root);
	assert_int_equal(gp_sysfs_power_read(path, &mw), -1);
}

static void meters_through_sysfs(void **state)
{
	struct gp_card_meter_opts o = {.nvml_lib = "libnvidia-ml-absent.so.1",
				       .rsmi_lib = "librocm_smi64-absent.so.5",
				       .sysfs_root = root};
	gp_card_meters_t *m = gp_card_meters_create(&o);
	assert_non_null(m);
	int a = gp_card_meters_find(m, GP_CARD_AMD, "", "0000:03:00.0");
	int b = gp_card_meters_find(m, GP_CARD_AMD, NULL, "0000:c1:00.0");
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_string_equal(gp_card_meters_source(m, a), "sysfs");
	gp_card_reading_t r;
	assert_int_equal(gp_card_meters_read(m, a, &r), 0);
	assert_true(r.has_power);
	assert_false(r.has_energy);
	assert_int_equal(r.power_mw, 45000);
	/* each read reads the file again */
	put(root, "class/drm/card0/device/hwmon/hwmon3/power1_average", "61500000\n");
	assert_int_equal(gp_card_meters_read(m, a, &r), 0);
	assert_int_equal(r.power_mw, 61500);
	assert_int_equal(gp_card_meters_read(m, b, &r), 0);
	assert_int_equal(r.power_mw, 301250);
	/* the file gone: no reading this time */
	char path[1400];
	snprintf(path, sizeof(path), "%s/class/drm/card0/device/hwmon/hwmon3/power1_average", root);
	unlink(path);
	errno = 0;
	assert_int_equal(gp_card_meters_read(m, a, &r), -1);
	assert_int_equal(errno, EIO);
	assert_false(r.has_power);
	put(root, "class/drm/card0/device/hwmon/hwmon3/power1_average", "45000000\n");
	/* nothing reads these */
	errno = 0;
	assert_int_equal(gp_card_meters_find(m, GP_CARD_NVIDIA, "GPU-0000", NULL), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(gp_card_meters_find(m, GP_CARD_AMD, NULL, "0000:09:00.0"), -1);
	assert_int_equal(gp_card_meters_find(m, GP_CARD_AMD, NULL, NULL), -1);
	errno = 0;
	assert_int_equal(gp_card_meters_read(m, 7, &r), -1);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(gp_card_meters_source(m, 7), "none");
	gp_card_meters_destroy(&m);
	assert_null(m);
	gp_card_meters_destroy(&m); /* NULL is fine */
}

static void sysfs_empty(void **state)
{
	gp_card_list_t l = {0};
	assert_int_equal(gp_cards_sysfs_discover("/nonexistent-gpool-sysfs", &l), 0);
	assert_int_equal(l.n, 0);
	char empty[] = "/tmp/gpool-sysfs-XXXXXX";
	assert_non_null(mkdtemp(empty));
	assert_int_equal(gp_cards_sysfs_discover(empty, &l), 0);
	assert_int_equal(l.n, 0);
	rmdir(empty);
}

static void count_msg(const char *msg, void *arg)
{
	(*(int *)arg)++;
}

static void nvml_absent(void **state)
{
	int said = 0;
	gp_card_list_t l = {.debug = count_msg, .debug_arg = &said};
	assert_int_equal(gp_cards_nvml_discover("libnvidia-ml-absent.so.1", &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(said, 1); /* a debug line says why, nothing else */
	/* a library that loads but is not NVML */
	assert_int_equal(gp_cards_nvml_discover("libc.so.6", &l), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(said, 2);
	gp_card_list_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(cores_per_sm),
	    cmocka_unit_test(sysfs_tree),
	    cmocka_unit_test(rocm_smi_absent_falls_back_to_sysfs),
	    cmocka_unit_test(sysfs_power_reader),
	    cmocka_unit_test(meters_through_sysfs),
	    cmocka_unit_test(sysfs_empty),
	    cmocka_unit_test(nvml_absent),
	};
	return cmocka_run_group_tests(tests, make_tree, remove_tree);
}
