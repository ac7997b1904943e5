/* test_staging.c: staged file names and writing them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/staging.h"
#include "common/chunk.h"
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

/* The scratch root: made when absent; a link, a directory of another uid, or one writable by
 * group or others without the sticky bit is refused with a message that says which. */
static void scratch_root_checked(void **state)
{
	char base[] = "/tmp/gp-scratch-XXXXXX", p[256], real[256];
	assert_non_null(mkdtemp(base));
	gp_error_t err;
	snprintf(p, sizeof(p), "%s/made/here", base);
	assert_int_equal(gp_stage_scratch_check(p, &err), 0);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(gp_stage_scratch_check("", &err), -1);
	/* a link, even to a good directory */
	snprintf(real, sizeof(real), "%s/real", base);
	assert_int_equal(mkdir(real, 0755), 0);
	snprintf(p, sizeof(p), "%s/link", base);
	assert_int_equal(symlink(real, p), 0);
	assert_int_equal(gp_stage_scratch_check(p, &err), -1);
	assert_non_null(strstr(err.text, "is a symbolic link"));
	assert_non_null(strstr(err.text, p));
	/* writable by others: only with the sticky bit, as /tmp */
	assert_int_equal(chmod(real, 0777), 0);
	assert_int_equal(gp_stage_scratch_check(real, &err), -1);
	assert_non_null(strstr(err.text, "without the sticky bit"));
	assert_int_equal(chmod(real, 0775), 0);
	assert_int_equal(gp_stage_scratch_check(real, &err), -1);
	assert_int_equal(chmod(real, 01777), 0);
	assert_int_equal(gp_stage_scratch_check(real, &err), 0);
	assert_int_equal(chmod(real, 0755), 0);
	/* another uid's: only root can make one here */
	if (geteuid() == 0) {
		assert_int_equal(chown(real, 4321, 4321), 0);
		assert_int_equal(gp_stage_scratch_check(real, &err), -1);
		assert_non_null(strstr(err.text, "owned by uid 4321, not root"));
	}
	/* a job's directory goes under a checked root only */
	struct gp_account a = {getuid(), getgid(), "me", "/", "/bin/sh"};
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = 3;
	l.attempt = 1;
	char *d = NULL;
	bool owned = false;
	assert_int_equal(gp_stage_workdir(&l, p, &a, &d, &owned, &err), -1);
	assert_null(d);
	assert_non_null(strstr(err.text, "symbolic link"));
	gp_rm_rf(base);
}

/* A job directory swapped for a link (to a directory root must not touch) before gstepd makes
 * it is refused, and what the link names keeps its owner and mode. */
static void job_dir_link_refused(void **state)
{
	char root[] = "/tmp/gp-stage-XXXXXX", victim[] = "/tmp/gp-victim-XXXXXX", p[256];
	assert_non_null(mkdtemp(root));
	assert_non_null(mkdtemp(victim));
	assert_int_equal(chmod(victim, 0750), 0);
	struct stat before, after;
	assert_int_equal(stat(victim, &before), 0);
	snprintf(p, sizeof(p), "%s/job9.1", root);
	assert_int_equal(symlink(victim, p), 0);
	/* the task's account: another uid when root runs the test */
	uid_t uid = geteuid() == 0 ? 4321 : getuid();
	struct gp_account a = {uid, uid, "someone", "/", "/bin/sh"};
	Gpool__Launch l = GPOOL__LAUNCH__INIT;
	l.job_id = 9;
	l.attempt = 1;
	char *d = NULL;
	bool owned = true;
	gp_error_t err;
	assert_int_equal(gp_stage_workdir(&l, root, &a, &d, &owned, &err), -1);
	assert_false(owned);
	assert_non_null(strstr(err.text, "job9.1"));
	assert_int_equal(stat(victim, &after), 0);
	assert_int_equal(after.st_uid, before.st_uid);
	assert_int_equal(after.st_mode, before.st_mode);
	/* a file in the way is refused too */
	unlink(p);
	int fd = open(p, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(gp_stage_workdir(&l, root, &a, &d, &owned, &err), -1);
	unlink(p);
	/* a directory someone else made in advance (a sticky, world-writable root) is refused */
	if (geteuid() == 0) {
		assert_int_equal(chmod(root, 01777), 0);
		assert_int_equal(mkdir(p, 0777), 0);
		assert_int_equal(chown(p, 5555, 5555), 0);
		assert_int_equal(gp_stage_workdir(&l, root, &a, &d, &owned, &err), -1);
		assert_int_equal(rmdir(p), 0);
	}
	/* the real thing: made, given to the account, mode 0700 */
	assert_int_equal(gp_stage_workdir(&l, root, &a, &d, &owned, &err), 0);
	assert_true(owned);
	assert_int_equal(lstat(d, &after), 0);
	assert_true(S_ISDIR(after.st_mode));
	assert_int_equal(after.st_uid, uid);
	assert_int_equal(after.st_mode & 07777, 0700);
	free(d);
	gp_rm_rf(root);
	gp_rm_rf(victim);
}

/* Files written from a manifest keep the rwx bits only, even when the manifest (not made by
 * gpool's own tools) carries setuid, setgid or sticky ones. */
static void staged_modes_plain(void **state)
{
	char root[] = "/tmp/gp-stage-XXXXXX", cache[300], p[300];
	assert_non_null(mkdtemp(root));
	snprintf(cache, sizeof(cache), "%s/cache", root);
	assert_int_equal(mkdir(cache, 0700), 0);
	const char *data = "#!/bin/sh\nexec /bin/sh\n";
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash(data, strlen(data), h);
	assert_int_equal(gp_chunk_put(cache, h, data, strlen(data)), 0);
	ProtobufCBinaryData ch[1] = {{GP_HASH_LEN, h}};
	Gpool__StageEntry d = GPOOL__STAGE_ENTRY__INIT, f = GPOOL__STAGE_ENTRY__INIT;
	Gpool__StageEntry *ev[2] = {&d, &f};
	d.path = "bin";
	d.dir = true;
	d.mode = 03777;
	f.path = "bin/sh";
	f.mode = 06755;
	f.size = strlen(data);
	f.chunks = ch;
	f.n_chunks = 1;
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	spec.stage = ev;
	spec.n_stage = 2;
	struct gp_account a = {getuid(), getgid(), "me", "/", "/bin/sh"};
	gp_error_t err;
	assert_int_equal(gp_stage_manifest(&spec, root, &a, cache, &err), 0);
	struct stat st;
	snprintf(p, sizeof(p), "%s/bin/sh", root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_size, (off_t)strlen(data));
	snprintf(p, sizeof(p), "%s/bin", root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0777);
	/* the in-spec files too */
	Gpool__StagedFile sf = GPOOL__STAGED_FILE__INIT, *sfp[1] = {&sf};
	sf.name = "suid";
	sf.mode = 04711;
	sf.content.data = (uint8_t *)"x";
	sf.content.len = 1;
	Gpool__JobSpec spec2 = GPOOL__JOB_SPEC__INIT;
	spec2.files = sfp;
	spec2.n_files = 1;
	assert_int_equal(gp_stage_files(&spec2, root, &a, &err), 0);
	snprintf(p, sizeof(p), "%s/suid", root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	gp_rm_rf(root);
}

/* A lazy file's chunks reach it only through gp_stage_lazy_fill, each hashed as it leaves the
 * cache: a damaged one is refused (and removed), none of its bytes written. */
static void lazy_fill_verifies(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-lazyXXXXXX", cache[64], file[64];
	assert_non_null(mkdtemp(root));
	snprintf(cache, sizeof(cache), "%s/cache", root);
	snprintf(file, sizeof(file), "%s/m.gguf", root);
	assert_int_equal(gp_mkdir_p(cache, 0700), 0);
	size_t size = 2 * GP_CHUNK_SIZE + 1000;
	uint8_t *data = malloc(size), *back = malloc(size);
	assert_non_null(data);
	assert_non_null(back);
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 20));
	uint8_t h[3][GP_HASH_LEN];
	ProtobufCBinaryData ch[3];
	for (int k = 0; k < 3; k++) {
		size_t len = k < 2 ? GP_CHUNK_SIZE : 1000;
		gp_chunk_hash(data + (size_t)k * GP_CHUNK_SIZE, len, h[k]);
		assert_int_equal(gp_chunk_put(cache, h[k], data + (size_t)k * GP_CHUNK_SIZE, len),
				 0);
		ch[k] = (ProtobufCBinaryData){GP_HASH_LEN, h[k]};
	}
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT;
	e.path = "m.gguf";
	e.size = size;
	e.chunks = ch;
	e.n_chunks = 3;
	e.lazy = true;
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	gp_error_t err = {{0}};
	/* chunks 1 and 2 only: chunk 0's range stays a hole */
	assert_int_equal(gp_stage_lazy_fill(fd, &e, 1, 3, cache, &err), 0);
	assert_int_equal(pread(fd, back, size, 0), (ssize_t)size);
	assert_memory_equal(back + GP_CHUNK_SIZE, data + GP_CHUNK_SIZE, size - GP_CHUNK_SIZE);
	for (size_t i = 0; i < GP_CHUNK_SIZE; i += 4096)
		assert_int_equal(back[i], 0);
	/* out of range */
	assert_int_equal(gp_stage_lazy_fill(fd, &e, 2, 4, cache, &err), -1);
	assert_int_equal(errno, EINVAL);
	/* chunk 0 damaged in the cache: refused, removed, nothing of it written */
	char cp[200];
	assert_int_equal(gp_chunk_path(cache, h[0], cp, sizeof(cp)), 0);
	int cfd = open(cp, O_WRONLY);
	assert_true(cfd >= 0);
	assert_int_equal(pwrite(cfd, "EVIL", 4, 100), 4);
	close(cfd);
	assert_int_equal(gp_stage_lazy_fill(fd, &e, 0, 1, cache, &err), -1);
	assert_int_equal(errno, EBADMSG);
	assert_non_null(strstr(err.text, "does not match its hash"));
	assert_false(gp_chunk_has(cache, h[0]));
	assert_int_equal(pread(fd, back, 4096, 0), 4096);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(back[i], 0);
	/* gone from the cache: ENOENT, for the caller to fetch again */
	assert_int_equal(gp_stage_lazy_fill(fd, &e, 0, 1, cache, &err), -1);
	assert_int_equal(errno, ENOENT);
	close(fd);
	free(data);
	free(back);
	gp_rm_rf(root);
}

/* A lazy entry is written sparse, of its size, with no chunk of it in the cache. */
static void lazy_manifest_sparse(void **state)
{
	(void)state;
	char root[] = "/tmp/gp-lazymXXXXXX", cache[64], file[64];
	assert_non_null(mkdtemp(root));
	snprintf(cache, sizeof(cache), "%s/cache", root);
	assert_int_equal(gp_mkdir_p(cache, 0700), 0);
	uint8_t h[GP_HASH_LEN] = {1, 2, 3};
	ProtobufCBinaryData ch[3] = {{GP_HASH_LEN, h}, {GP_HASH_LEN, h}, {GP_HASH_LEN, h}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ep = &e;
	e.path = "m.gguf";
	e.size = 2 * (uint64_t)GP_CHUNK_SIZE + 5;
	e.chunks = ch;
	e.n_chunks = 3;
	e.mode = 0644;
	e.lazy = true;
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	spec.stage = &ep;
	spec.n_stage = 1;
	struct gp_account a = {getuid(), getgid(), "me", "/", "/bin/sh"};
	gp_error_t err = {{0}};
	assert_int_equal(gp_stage_manifest(&spec, root, &a, cache, &err), 0);
	snprintf(file, sizeof(file), "%s/m.gguf", root);
	struct stat st;
	assert_int_equal(stat(file, &st), 0);
	assert_true((uint64_t)st.st_size == e.size);
	assert_true(st.st_blocks * 512 < 65536); /* a hole, not 8 MiB of zeros */
	assert_int_equal(st.st_mode & 0777, 0644);
	/* the same entry whole needs its chunks: there are none */
	e.lazy = false;
	assert_int_equal(gp_stage_manifest(&spec, root, &a, cache, &err), -1);
	gp_rm_rf(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names),
	    cmocka_unit_test(write_files),
	    cmocka_unit_test(attempts_own_their_directory),
	    cmocka_unit_test(scratch_root_checked),
	    cmocka_unit_test(job_dir_link_refused),
	    cmocka_unit_test(staged_modes_plain),
	    cmocka_unit_test(lazy_fill_verifies),
	    cmocka_unit_test(lazy_manifest_sparse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
