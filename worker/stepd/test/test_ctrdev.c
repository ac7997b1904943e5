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
	size_t n = gp_ctrdev_paths(given, 1, vendor, fake, 2, out, 16);
	assert_int_equal(n, 5);
	assert_string_equal(out[0], "/dev/nvidia1");
	assert_true(has(out, n, "/dev/nvidiactl"));
	assert_true(has(out, n, "/dev/nvidia-uvm"));
	assert_true(has(out, n, "/dev/nvidia-uvm-tools"));
	assert_true(has(out, n, "/dev/nvidia-modeset"));
	assert_false(has(out, n, "/dev/nvidia0"));
	assert_false(has(out, n, "/dev/kfd"));
}

/* an NVIDIA card and two AMD cards, the second AMD one given: its render node and kfd only */
static void test_amd_mixed(void **state)
{
	(void)state;
	int vendor[] = {1, 2, 2};
	bool fake[] = {false, false, false};
	uint32_t given[] = {2};
	char out[16][GP_CTRDEV_PATH];
	size_t n = gp_ctrdev_paths(given, 1, vendor, fake, 3, out, 16);
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
	assert_int_equal(gp_ctrdev_paths(given, 2, vendor, fake, 2, out, 16), 0);
	bool real[] = {false, false};
	assert_int_equal(gp_ctrdev_paths(NULL, 0, vendor, real, 2, out, 16), 0);
}

/* the max is respected */
static void test_max(void **state)
{
	(void)state;
	int vendor[] = {1, 1, 1};
	bool fake[] = {false, false, false};
	uint32_t given[] = {0, 1, 2};
	char out[2][GP_CTRDEV_PATH];
	assert_int_equal(gp_ctrdev_paths(given, 3, vendor, fake, 3, out, 2), 2);
}

/* driver files under a made-up root: the libraries and nvidia-smi, nothing else */
static void test_nvidia_files(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-ctrdev-XXXXXX";
	assert_non_null(mkdtemp(root));
	char p[512];
	snprintf(p, sizeof(p), "%s/usr/lib/x86_64-linux-gnu", root);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/bin", root);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	const char *files[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
			       "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
			       "/usr/lib/x86_64-linux-gnu/libz.so.1", "/usr/bin/nvidia-smi"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", root, files[i]);
		assert_int_equal(gp_write_file(p, "x", 1, 0644), 0);
	}
	char out[16][256];
	size_t n = gp_ctrdev_nvidia_files(root, out, 16);
	assert_int_equal(n, 3);
	bool cuda = false, ml = false, smi = false;
	for (size_t i = 0; i < n; i++) {
		cuda |= !strcmp(out[i], files[0]);
		ml |= !strcmp(out[i], files[1]);
		smi |= !strcmp(out[i], files[3]);
		assert_string_not_equal(out[i], files[2]);
	}
	assert_true(cuda && ml && smi);
	gp_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nvidia_second), cmocka_unit_test(test_amd_mixed),
	    cmocka_unit_test(test_fake_and_none), cmocka_unit_test(test_max),
	    cmocka_unit_test(test_nvidia_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
