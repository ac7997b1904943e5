/* test_staging.c: staged file names and writing them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/staging.h"
#include "common/util.h"

static void names(void **state)
{
	assert_true(gp_stage_name_ok("train.py"));
	assert_true(gp_stage_name_ok("data/x.bin"));
	assert_true(gp_stage_name_ok("a..b"));
	assert_true(gp_stage_name_ok(".hidden"));
	assert_false(gp_stage_name_ok(""));
	assert_false(gp_stage_name_ok(NULL));
	assert_false(gp_stage_name_ok("/etc/passwd"));
	assert_false(gp_stage_name_ok(".."));
	assert_false(gp_stage_name_ok("../x"));
	assert_false(gp_stage_name_ok("a/../../x"));
	assert_false(gp_stage_name_ok("a/.."));
	assert_false(gp_stage_name_ok("dir/"));
}

static void write_files(void **state)
{
	char root[] = "/tmp/gp-stage-XXXXXX";
	assert_non_null(mkdtemp(root));
	struct gp_account a = {getuid(), getgid(), "me", "/", "/bin/sh"};
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	char *argv[] = {"./run.sh", "x"};
	Gpool__StagedFile f = GPOOL__STAGED_FILE__INIT, *fp[1] = {&f};
	l.job_id = 7;
	l.attempt = 1;
	l.spec = &spec;
	spec.argv = argv;
	spec.n_argv = 2;
	spec.script.data = (uint8_t *)"#!/bin/sh\necho hi\n";
	spec.script.len = strlen((char *)spec.script.data);
	f.name = "sub/in.txt";
	f.mode = 0640;
	f.content.data = (uint8_t *)"data";
	f.content.len = 4;
	spec.files = fp;
	spec.n_files = 1;
	char *dir = NULL;
	bool owned = false;
	gp_error_t err;
	assert_int_equal(gp_stage_workdir(&l, root, &a, &dir, &owned, &err), 0);
	assert_true(owned);
	char want[256];
	snprintf(want, sizeof(want), "%s/job7.1", root);
	assert_string_equal(dir, want);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(gp_stage_files(&spec, dir, &a, &err), 0);
	char p[512];
	snprintf(p, sizeof(p), "%s/run.sh", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	snprintf(p, sizeof(p), "%s/sub/in.txt", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(st.st_size, 4);
	/* a bad name is refused before anything is written */
	f.name = "../evil";
	assert_int_equal(gp_stage_files(&spec, dir, &a, &err), -1);
	assert_non_null(strstr(err.text, "../evil"));
	/* chdir: must exist, is not ours to remove */
	spec.chdir = "/nonexistent/dir";
	free(dir);
	assert_int_equal(gp_stage_workdir(&l, root, &a, &dir, &owned, &err), -1);
	spec.chdir = root;
	assert_int_equal(gp_stage_workdir(&l, root, &a, &dir, &owned, &err), 0);
	assert_false(owned);
	free(dir);
	gp_rm_rf(root);
}

/* A requeued job's attempt 2 may start on a node while attempt 1's gstepd there is still
 * ending: that gstepd's cleanup (gp_rm_rf of its own directory) must not take the new
 * attempt's working directory and script with it. */
static void attempts_own_their_directory(void **state)
{
	char root[] = "/tmp/gp-stage-XXXXXX";
	assert_non_null(mkdtemp(root));
	struct gp_account a = {getuid(), getgid(), "me", "/", "/bin/sh"};
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	char *argv[] = {"./run.sh"};
	l.job_id = 4;
	l.spec = &spec;
	spec.argv = argv;
	spec.n_argv = 1;
	spec.script.data = (uint8_t *)"#!/bin/sh\nexit 0\n";
	spec.script.len = strlen((char *)spec.script.data);
	char *dir1 = NULL, *dir2 = NULL;
	bool owned1 = false, owned2 = false;
	gp_error_t err;
	l.attempt = 1;
	assert_int_equal(gp_stage_workdir(&l, root, &a, &dir1, &owned1, &err), 0);
	assert_int_equal(gp_stage_files(&spec, dir1, &a, &err), 0);
	l.attempt = 2;
	assert_int_equal(gp_stage_workdir(&l, root, &a, &dir2, &owned2, &err), 0);
	assert_int_equal(gp_stage_files(&spec, dir2, &a, &err), 0);
	assert_true(owned1 && owned2);
	assert_string_not_equal(dir1, dir2);
	char want[256];
	snprintf(want, sizeof(want), "%s/job4.2", root);
	assert_string_equal(dir2, want);
	/* attempt 1's gstepd ends after attempt 2 has staged its script */
	assert_int_equal(gp_rm_rf(dir1), 0);
	char p[512];
	snprintf(p, sizeof(p), "%s/run.sh", dir2);
	assert_int_equal(access(p, X_OK), 0);
	char buf[64];
	assert_int_equal(gp_stage_scratch_path(root, 4, 2, buf, sizeof(buf)), 0);
	assert_string_equal(buf, dir2);
	assert_int_equal(gp_stage_scratch_path(root, 4, 2, buf, 8), -1);
	free(dir1);
	free(dir2);
	gp_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names),
	    cmocka_unit_test(write_files),
	    cmocka_unit_test(attempts_own_their_directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
