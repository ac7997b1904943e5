/* test_card_procs.c: the processes on a card and their memory (card_procs.h): a fake card's
 * file (a line per allocation, a pid repeating, bad lines, no file), the sum over a job's pids
 * with others' left out, and the vendor libraries when absent (no NVML, no ROCm SMI here: -1,
 * never a crash); an unknown vendor refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cards/card_procs.h"

static void fake_file(void **state)
{
	char path[] = "/tmp/gp-test-card-procs.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(
	    f, "100 1073741824\n200 2147483648\n100 1024\n0 5\n-3 7\n300 8589934592\nx 1\n400 9\n");
	fclose(f);
	struct gp_card_proc v[16];
	int n = gp_card_procs_fake(path, v, 16);
	assert_int_equal(n, 4); /* pids 0 and -3 skipped; "x" ends the list */
	assert_int_equal(v[0].pid, 100);
	assert_int_equal(v[2].bytes, 1024);
	pid_t mine[] = {100, 200};
	assert_int_equal(gp_card_procs_sum(v, (size_t)n, mine, 2), 3221226496ULL);
	pid_t other[] = {300};
	assert_int_equal(gp_card_procs_sum(v, (size_t)n, other, 1), 8589934592ULL);
	pid_t none[] = {999};
	assert_int_equal(gp_card_procs_sum(v, (size_t)n, none, 1), 0);
	assert_int_equal(gp_card_procs_fake(path, v, 2), 2); /* at most max */
	unlink(path);
	assert_int_equal(gp_card_procs_fake(path, v, 16), -1);
}

static void libraries_absent_or_present(void **state)
{
	struct gp_card_proc v[8];
	/* a bus id no card has: -1 without NVML, -1 with it too */
	assert_int_equal(gp_card_procs(1, "00000000:99:00.0", v, 8), -1);
	assert_int_equal(gp_card_procs_nvml(NULL, v, 8), -1);
	int n = gp_card_procs(2, NULL, v, 8); /* no ROCm SMI: -1; with it, what it lists */
	assert_true(n >= -1 && n <= 8);
	assert_int_equal(gp_card_procs(3, "", v, 8), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(fake_file),
	    cmocka_unit_test(libraries_absent_or_present),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
