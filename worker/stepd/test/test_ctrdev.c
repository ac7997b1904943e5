/* test_ctrdev.c: a container task's card devices (worker/stepd/ctrdev.c): exactly the bound
 * cards' nodes and the vendor's shared ones, never a card that was not given, none for a fake
 * card; the NVIDIA driver files found under a root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "worker/stepd/ctrdev.h"
#include "worker/stepd/ctrmounts.h"

static bool has(char (*v)[GP_CTRDEV_PATH], size_t n, const char *p)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], p))
			return true;
	return false;
}

/* two NVIDIA cards, the second given: nvidia1 and the shared nodes, not nvidia0 */
static void test_nvidia_second(void **state)
{
	(void)state;
	int vendor[] = {1, 1};
	bool fake[] = {false, false};
	uint32_t given[] = {1};
	char out[16][GP_CTRDEV_PATH];
	size_t n = gp_ctrdev_paths(given, 1, vendor, fake, NULL, 2, out, 16);
	assert_int_equal(n, 5);
	assert_string_equal(out[0], "/dev/nvidia1");
	assert_true(has(out, n, "/dev/nvidiactl"));
	assert_true(has(out, n, "/dev/nvidia-uvm"));
	assert_true(has(out, n, "/dev/nvidia-uvm-tools"));
	assert_true(has(out, n, "/dev/nvidia-modeset"));
	assert_false(has(out, n, "/dev/nvidia0"));
	assert_false(has(out, n, "/dev/kfd"));
}

/* the driver's numbering, when the agent learnt it (Card.dev_node), over the cards' places:
 * the second NVIDIA card is /dev/nvidia0 here, and so is what the container gets */
static void test_driver_numbering(void **state)
{
	(void)state;
	int vendor[] = {1, 1, 2};
	bool fake[] = {false, false, false};
	uint32_t dev_node[] = {1 + 1, 0 + 1, 1 + 129};
	uint32_t given[] = {1, 2};
	char out[16][GP_CTRDEV_PATH];
	size_t n = gp_ctrdev_paths(given, 2, vendor, fake, dev_node, 3, out, 16);
	assert_true(has(out, n, "/dev/nvidia0"));
	assert_false(has(out, n, "/dev/nvidia1"));
	assert_true(has(out, n, "/dev/dri/renderD129"));
	assert_false(has(out, n, "/dev/dri/renderD128"));
	assert_true(has(out, n, "/dev/kfd"));
}

/* an NVIDIA card and two AMD cards, the second AMD one given: its render node and kfd only */
static void test_amd_mixed(void **state)
{
	(void)state;
	int vendor[] = {1, 2, 2};
	bool fake[] = {false, false, false};
	uint32_t given[] = {2};
	char out[16][GP_CTRDEV_PATH];
	size_t n = gp_ctrdev_paths(given, 1, vendor, fake, NULL, 3, out, 16);
	assert_int_equal(n, 2);
	assert_string_equal(out[0], "/dev/dri/renderD129");
	assert_string_equal(out[1], "/dev/kfd");
}

/* fake cards (CI) have no device; nothing given, nothing at all */
static void test_fake_and_none(void **state)
{
	(void)state;
	int vendor[] = {1, 1};
	bool fake[] = {true, true};
	uint32_t given[] = {0, 1};
	char out[16][GP_CTRDEV_PATH];
	assert_int_equal(gp_ctrdev_paths(given, 2, vendor, fake, NULL, 2, out, 16), 0);
	bool real[] = {false, false};
	assert_int_equal(gp_ctrdev_paths(NULL, 0, vendor, real, NULL, 2, out, 16), 0);
}

/* the max is respected */
static void test_max(void **state)
{
	(void)state;
	int vendor[] = {1, 1, 1};
	bool fake[] = {false, false, false};
	uint32_t given[] = {0, 1, 2};
	char out[2][GP_CTRDEV_PATH];
	assert_int_equal(gp_ctrdev_paths(given, 3, vendor, fake, NULL, 3, out, 2), 2);
}

static void put(const char *root, const char *path)
{
	char p[512];
	snprintf(p, sizeof(p), "%s%s", root, path);
	*strrchr(p, '/') = '\0';
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s%s", root, path);
	assert_int_equal(gp_write_file(p, "x", 1, 0644), 0);
}

/* the container path of host path h among out[0..n), or NULL */
static const char *ctr_of(const struct gp_ctrdev_file *out, size_t n, const char *h)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(out[i].host, h))
			return out[i].ctr;
	return NULL;
}

/* driver files under a made-up root: the libraries and nvidia-smi, nothing else, at their own
 * paths when the driver is in the standard directory */
static void test_nvidia_files(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-ctrdev-XXXXXX";
	assert_non_null(mkdtemp(root));
	const char *files[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
			       "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
			       "/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/bin/nvidia-smi"};
	for (size_t i = 0; i < 4; i++)
		put(root, files[i]);
	struct gp_ctrdev_file out[16];
	size_t n = gp_ctrdev_nvidia_files(root, NULL, NULL, GP_CTRDEV_LIBDIR, out, 16);
	assert_int_equal(n, 3);
	assert_string_equal(ctr_of(out, n, files[0]), files[0]);
	assert_string_equal(ctr_of(out, n, files[1]), files[1]);
	assert_string_equal(ctr_of(out, n, files[3]), files[3]);
	assert_null(ctr_of(out, n, files[2]));
	/* an image of the RHEL family: its loader's directory */
	n = gp_ctrdev_nvidia_files(root, NULL, NULL, "/usr/lib64", out, 16);
	assert_string_equal(ctr_of(out, n, files[0]), "/usr/lib64/libcuda.so.1");
	/* a merged-/usr host: /lib is /usr/lib, and /lib/x86_64-linux-gnu holds the same files:
	 * each once */
	char p[512];
	snprintf(p, sizeof(p), "%s/lib", root);
	assert_int_equal(symlink("usr/lib", p), 0);
	assert_int_equal(gp_ctrdev_nvidia_files(root, NULL, NULL, GP_CTRDEV_LIBDIR, out, 16), 3);
	gp_rm_rf(root);
}

/* a driver outside the standard directories (a cloud image's /usr/local/nvidia), found as the
 * host's loader finds it: through ld.so.conf.d or LD_LIBRARY_PATH, bound into the image's
 * library directory; nvidia-smi from PATH into /usr/bin; the loader's first find wins */
static void test_nvidia_elsewhere(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-ctrdev-XXXXXX";
	assert_non_null(mkdtemp(root));
	put(root, "/usr/local/nvidia/lib64/libcuda.so.1");
	put(root, "/usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.1");
	put(root, "/usr/local/nvidia/bin/nvidia-smi");
	put(root, "/opt/other/libcuda.so.1");
	put(root, "/opt/other/libnvidia-ml.so.1");
	char p[512];
	snprintf(p, sizeof(p), "%s/etc/ld.so.conf.d", root);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/etc/ld.so.conf.d/nvidia.conf", root);
	const char conf[] = "# the driver\n/usr/local/nvidia/lib64\n\n  /opt/other # too\n";
	assert_int_equal(gp_write_file(p, conf, sizeof(conf) - 1, 0644), 0);

	/* not found without the loader's configuration: none of it is in a standard place */
	char bare[] = "/tmp/gp-ctrdev-XXXXXX";
	assert_non_null(mkdtemp(bare));
	char dirs[8][256];
	size_t nd = gp_ctrdev_lib_dirs(bare, NULL, dirs, 8);
	assert_int_equal(nd, 4);
	assert_string_equal(dirs[0], GP_CTRDEV_LIBDIR);
	gp_rm_rf(bare);

	struct gp_ctrdev_file out[16];
	size_t n = gp_ctrdev_nvidia_files(root, NULL, "/usr/local/nvidia/bin:/usr/bin",
					  GP_CTRDEV_LIBDIR, out, 16);
	assert_int_equal(n, 4); /* libcuda once (the first directory's), ptxjit, ml, smi */
	assert_string_equal(ctr_of(out, n, "/usr/local/nvidia/lib64/libcuda.so.1"),
			    GP_CTRDEV_LIBDIR "/libcuda.so.1");
	assert_null(ctr_of(out, n, "/opt/other/libcuda.so.1"));
	assert_string_equal(ctr_of(out, n, "/opt/other/libnvidia-ml.so.1"),
			    GP_CTRDEV_LIBDIR "/libnvidia-ml.so.1");
	assert_string_equal(ctr_of(out, n, "/usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.1"),
			    GP_CTRDEV_LIBDIR "/libnvidia-ptxjitcompiler.so.1");
	assert_string_equal(ctr_of(out, n, "/usr/local/nvidia/bin/nvidia-smi"),
			    "/usr/bin/nvidia-smi");

	/* LD_LIBRARY_PATH comes before the configuration, as for the loader */
	n = gp_ctrdev_nvidia_files(root, "/opt/other::relative", NULL, GP_CTRDEV_LIBDIR, out, 16);
	assert_non_null(ctr_of(out, n, "/opt/other/libcuda.so.1"));
	assert_null(ctr_of(out, n, "/usr/local/nvidia/lib64/libcuda.so.1"));
	assert_null(ctr_of(out, n, "/usr/local/nvidia/bin/nvidia-smi")); /* not on PATH */
	nd = gp_ctrdev_lib_dirs(root, "/opt/other::relative", dirs, 8);
	assert_string_equal(dirs[0], "/opt/other");
	assert_string_equal(dirs[1], "/usr/local/nvidia/lib64");
	assert_string_equal(dirs[2], GP_CTRDEV_LIBDIR);
	gp_rm_rf(root);
}

/* the image's loader's directory: Debian/Ubuntu's, else /usr/lib64, else Debian's */
static void test_image_libdir(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-ctrdev-XXXXXX";
	assert_non_null(mkdtemp(root));
	assert_string_equal(gp_ctrdev_image_libdir(root), GP_CTRDEV_LIBDIR);
	char p[512];
	snprintf(p, sizeof(p), "%s/usr/lib64", root);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	assert_string_equal(gp_ctrdev_image_libdir(root), "/usr/lib64");
	snprintf(p, sizeof(p), "%s%s", root, GP_CTRDEV_LIBDIR);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	assert_string_equal(gp_ctrdev_image_libdir(root), GP_CTRDEV_LIBDIR);
	gp_rm_rf(root);
}

/* where destination dst is in mounts, or -1 */
static int at(const json_t *mounts, const char *dst)
{
	for (size_t i = 0; i < json_array_size(mounts); i++)
		if (!strcmp(json_string_value(
				json_object_get(json_array_get(mounts, i), "destination")),
			    dst))
			return (int)i;
	return -1;
}

static const char *type_of(const json_t *mounts, const char *dst)
{
	assert_true(at(mounts, dst) >= 0);
	return json_string_value(
	    json_object_get(json_array_get(mounts, (size_t)at(mounts, dst)), "type"));
}

/* a slice of a shared card whose scratch_dir is under /tmp (as on the H100 run and in the test
 * clusters): its working directory, PMIx directory, MPS pipe directory and driver files are
 * all bound after the container's /tmp, so none is hidden; /dev/shm is the host's */
static void test_mounts_slice(void **state)
{
	(void)state;
	struct gp_ctrdev_file drv[1] = {
	    {"/usr/local/nvidia/lib64/libcuda.so.1", GP_CTRDEV_LIBDIR "/libcuda.so.1"}};
	const char *etc[] = {"/etc/hosts"};
	struct gp_ctr_mounts_in in = {.workdir = "/tmp/gpc/h1/scratch/job-7.1",
				      .pmixdir = "/tmp/gpool-pmix.Ab12Cd",
				      .mps_pipe = "/tmp/gpc/h1/scratch/mps/card0/pipe",
				      .driver = drv,
				      .ndriver = 1,
				      .etc = etc,
				      .netc = 1};
	json_t *m = gp_ctr_mounts(&in);
	assert_non_null(m);
	char why[300];
	assert_int_equal(gp_ctr_mounts_check(m, why, sizeof(why)), 0);
	int tmp = at(m, "/tmp");
	assert_true(tmp >= 0);
	assert_true(at(m, in.workdir) > tmp);
	assert_true(at(m, in.pmixdir) > tmp);
	assert_true(at(m, in.mps_pipe) > tmp);
	assert_string_equal(type_of(m, "/dev/shm"), "bind");
	assert_string_equal(type_of(m, GP_CTRDEV_LIBDIR "/libcuda.so.1"), "bind");
	assert_true(at(m, "/etc/hosts") > 0);
	assert_int_equal(at(m, "/etc/resolv.conf"), -1);
	json_decref(m);

	/* any other task: a /dev/shm of its own, no pipe directory */
	in.mps_pipe = NULL;
	in.pmixdir = NULL;
	m = gp_ctr_mounts(&in);
	assert_non_null(m);
	assert_string_equal(type_of(m, "/dev/shm"), "tmpfs");
	assert_int_equal(at(m, "/tmp/gpc/h1/scratch/mps/card0/pipe"), -1);
	assert_int_equal(gp_ctr_mounts_check(m, why, sizeof(why)), 0);
	json_decref(m);
}

/* the check finds a bind that a later tmpfs would hide (the H100's MPS bug), and only that */
static void test_mounts_check(void **state)
{
	(void)state;
	json_t *m = json_array();
	json_array_append_new(m, gp_ctr_mount("/tmp/x/pipe", "bind", "/tmp/x/pipe", "rbind"));
	json_array_append_new(m, gp_ctr_mount("/tmpfoo", "bind", "/tmpfoo", "rbind"));
	json_array_append_new(m, gp_ctr_mount("/tmp", "tmpfs", "tmpfs", "nosuid"));
	char why[300];
	assert_int_equal(gp_ctr_mounts_check(m, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "/tmp/x/pipe"));
	json_array_remove(m, 0);
	assert_int_equal(gp_ctr_mounts_check(m, why, sizeof(why)),
			 0); /* /tmpfoo is not under /tmp */
	json_array_append_new(m, gp_ctr_mount("/tmp", "tmpfs", "tmpfs", "nosuid"));
	assert_int_equal(gp_ctr_mounts_check(m, why, sizeof(why)), -1); /* /tmp itself, twice */
	json_decref(m);
	json_t *one = gp_ctr_mount("/a", "bind", "/b", "rbind,ro,nosuid");
	assert_int_equal(json_array_size(json_object_get(one, "options")), 3);
	json_decref(one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nvidia_second),
	    cmocka_unit_test(test_amd_mixed),
	    cmocka_unit_test(test_driver_numbering),
	    cmocka_unit_test(test_fake_and_none),
	    cmocka_unit_test(test_max),
	    cmocka_unit_test(test_nvidia_files),
	    cmocka_unit_test(test_nvidia_elsewhere),
	    cmocka_unit_test(test_image_libdir),
	    cmocka_unit_test(test_mounts_slice),
	    cmocka_unit_test(test_mounts_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
