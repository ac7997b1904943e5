/* test_fsfull.c: writes into gpool's directories on a file system that is full, over quota or
 * read-only (common/fserr.h) say so, with the directory, on a small tmpfs of their own: the
 * scratch directory's job directory and staged files, and the chunk store or node cache. Needs
 * root (a mount namespace of its own, tmpfs mounts, a quota's uid): skipped otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fserr.h"
#include "common/util.h"
#include "worker/node/staging.h"

static char root[] = "/tmp/gp-fsfull-XXXXXX";
static char mnt[300];
static int quota_ok; /* the kernel's tmpfs takes quota options (6.6 and later) */

/* a fresh tmpfs at mnt with these options */
static void fresh(const char *opts)
{
	umount2(mnt, MNT_DETACH);
	mkdir(mnt, 0755);
	assert_int_equal(mount("tmpfs", mnt, "tmpfs", 0, opts), 0);
	chmod(mnt, 0755);
}

/* a job whose in-spec file is 200 KiB, for gp_stage_files */
struct job {
	Gpool__Launch l;
	Gpool__JobSpec spec;
	Gpool__StagedFile f, *fp[1];
	uint8_t data[200 * 1024];
};

static void job_init(struct job *j)
{
	gpool__launch__init(&j->l);
	gpool__job_spec__init(&j->spec);
	gpool__staged_file__init(&j->f);
	j->l.job_id = 1;
	j->l.attempt = 1;
	j->l.spec = &j->spec;
	j->f.name = "big.bin";
	j->f.mode = 0600;
	memset(j->data, 'x', sizeof(j->data));
	j->f.content.data = j->data;
	j->f.content.len = sizeof(j->data);
	j->fp[0] = &j->f;
	j->spec.files = j->fp;
	j->spec.n_files = 1;
}

static void scratch_full(void **state)
{
	fresh("size=64k");
	struct job *j = calloc(1, sizeof(*j));
	job_init(j);
	struct gp_account a = {0, 0, "root", "/", "/bin/sh"};
	char *dir = NULL, want[1024];
	bool owned;
	gp_error_t err;
	assert_int_equal(gp_stage_workdir(&j->l, mnt, &a, &dir, &owned, &err), 0);
	assert_int_equal(gp_stage_files(&j->spec, dir, &a, &err), -1);
	snprintf(want, sizeof(want),
		 "cannot write staged file 'big.bin': no space left on the file system of '%s' "
		 "(200.0 KiB needed, ",
		 dir);
	assert_non_null(strstr(err.text, want));
	free(dir);
	free(j);
}

static void scratch_read_only(void **state)
{
	fresh("size=64k,ro");
	struct job *j = calloc(1, sizeof(*j));
	job_init(j);
	struct gp_account a = {0, 0, "root", "/", "/bin/sh"};
	char *dir = NULL, want[1024];
	bool owned;
	gp_error_t err;
	assert_int_equal(gp_stage_workdir(&j->l, mnt, &a, &dir, &owned, &err), -1);
	snprintf(want, sizeof(want), "cannot make '%s/job1.1': '%s' is on a read-only file system",
		 mnt, mnt);
	assert_string_equal(err.text, want);
	free(j);
}

/* the account over its quota: staged files are written as the account (a child of its uid) */
static void scratch_over_quota(void **state)
{
	if (!quota_ok) {
		skip();
		return;
	}
	fresh("size=4m,usrquota,usrquota_block_hardlimit=64k");
	struct job *j = calloc(1, sizeof(*j));
	job_init(j);
	struct gp_account a = {65534, 65534, "nobody", "/", "/bin/sh"};
	char *dir = NULL, want[1024];
	bool owned;
	gp_error_t err;
	assert_int_equal(gp_stage_workdir(&j->l, mnt, &a, &dir, &owned, &err), 0);
	assert_int_equal(gp_stage_files(&j->spec, dir, &a, &err), -1);
	snprintf(want, sizeof(want),
		 "cannot write staged file 'big.bin': disk quota of uid 65534 reached on the file "
		 "system of '%s'",
		 dir);
	assert_string_equal(err.text, want);
	free(dir);
	free(j);
}

/* the chunk store and a node's cache write chunks with gp_chunk_write; their callers name
 * the directory with gp_fs_errprintf */
static void chunks_full_and_read_only(void **state)
{
	fresh("size=64k");
	static uint8_t data[100 * 1024];
	uint8_t h[GP_HASH_LEN];
	memset(data, 'y', sizeof(data));
	gp_chunk_hash(data, sizeof(data), h);
	assert_int_equal(gp_chunk_write(mnt, h, data, sizeof(data)), -1);
	assert_int_equal(errno, ENOSPC);
	gp_error_t err;
	char want[1024];
	assert_int_equal(gp_fs_errprintf(&err, errno, mnt, sizeof(data), "cannot store a chunk"),
			 -1);
	assert_int_equal(errno, ENOSPC);
	snprintf(want, sizeof(want),
		 "cannot store a chunk: no space left on the file system of '%s' (100.0 KiB "
		 "needed, ",
		 mnt);
	assert_non_null(strstr(err.text, want));
	assert_true(gp_fs_free(mnt) < (int64_t)sizeof(data));
	fresh("size=64k,ro");
	assert_int_equal(gp_chunk_write(mnt, h, data, 10), -1);
	assert_int_equal(errno, EROFS);
	assert_true(gp_fs_full_or_ro(errno));
	gp_fs_errprintf(&err, errno, mnt, 10, "cannot store a chunk");
	snprintf(want, sizeof(want), "cannot store a chunk: '%s' is on a read-only file system",
		 mnt);
	assert_string_equal(err.text, want);
	/* a quota's wording, also where the kernel's tmpfs takes no quota (scratch_over_quota
	 * skips there) */
	gp_fs_errprintf(&err, EDQUOT, mnt, 10, "cannot store a chunk");
	snprintf(want, sizeof(want),
		 "cannot store a chunk: disk quota of uid 0 reached on the file system of '%s'",
		 mnt);
	assert_string_equal(err.text, want);
	assert_true(gp_fs_full_or_ro(EDQUOT));
	/* any other errno reads as strerror's text */
	gp_fs_errprintf(&err, EACCES, mnt, 0, "cannot store a chunk");
	assert_string_equal(err.text, "cannot store a chunk: Permission denied");
	assert_false(gp_fs_full_or_ro(EACCES));
}

static int setup(void **state)
{
	if (geteuid() != 0 || !mkdtemp(root) || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	chmod(root, 0755);
	snprintf(mnt, sizeof(mnt), "%s/fs", root);
	mkdir(mnt, 0755);
	quota_ok = mount("tmpfs", mnt, "tmpfs", 0, "size=1m,usrquota") == 0;
	umount2(mnt, MNT_DETACH);
	return 0;
}

int main(void)
{
	if (setup(NULL) < 0) {
		printf("# skip: needs root and a mount namespace of its own\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(scratch_full),
	    cmocka_unit_test(scratch_read_only),
	    cmocka_unit_test(scratch_over_quota),
	    cmocka_unit_test(chunks_full_and_read_only),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	umount2(mnt, MNT_DETACH);
	gp_rm_rf(root);
	return rc;
}
