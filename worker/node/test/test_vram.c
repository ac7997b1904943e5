/* A job's VRAM on a fake card (vram.h): the lines of its pids summed, others' left out; no
 * file: nothing known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "worker/node/vram.h"

static void fake_file(void **state)
{
	char path[] = "/tmp/gp-test-vram.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "100 1073741824\n200 2147483648\n300 8589934592\n100 1024\n");
	fclose(f);
	pid_t mine[] = {100, 200};
	uint64_t b = 1;
	assert_int_equal(gp_vram_fake(path, mine, 2, &b), 0);
	assert_int_equal(b, 3221226496ULL);
	pid_t none[] = {400};
	assert_int_equal(gp_vram_fake(path, none, 1, &b), 0);
	assert_int_equal(b, 0);
	unlink(path);
	assert_int_equal(gp_vram_fake(path, mine, 2, &b), -1);
	assert_int_equal(b, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(fake_file)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
