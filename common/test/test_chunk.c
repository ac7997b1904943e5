/* Chunks and manifests: hashes, a chunk directory that refuses bytes not matching their hash
 * (on arrival and on every read), dedupe, and manifest building and checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/util.h"
#include "common/xfer.h"

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/gp-chunk-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return gp_rm_rf(dir);
}

static int count_files(const char *d)
{
	DIR *dd = opendir(d);
	int n = 0;
	struct dirent *de;
	while (dd && (de = readdir(dd)))
		n += de->d_name[0] != '.';
	if (dd)
		closedir(dd);
	return n;
}

static void known_hash(void **state)
{
	uint8_t h[GP_HASH_LEN];
	char hex[65];
	gp_chunk_hash("abc", 3, h);
	gp_chunk_hex(h, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void mismatch_refused(void **state)
{
	char cd[128];
	snprintf(cd, sizeof(cd), "%s/c1", dir);
	assert_int_equal(gp_mkdir_p(cd, 0700), 0);
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash("good", 4, h);
	errno = 0;
	assert_int_equal(gp_chunk_put(cd, h, "evil", 4), -1);
	assert_int_equal(errno, EBADMSG);
	assert_false(gp_chunk_has(cd, h));
	assert_int_equal(count_files(cd), 0); /* no temporary left either */
	assert_int_equal(gp_chunk_put(cd, h, "good", 4), 0);
	assert_true(gp_chunk_has(cd, h));
}

static void dedupe_and_read(void **state)
{
	char cd[128];
	snprintf(cd, sizeof(cd), "%s/c2", dir);
	assert_int_equal(gp_mkdir_p(cd, 0700), 0);
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash("same", 4, h);
	assert_int_equal(gp_chunk_put(cd, h, "same", 4), 0);
	assert_int_equal(gp_chunk_put(cd, h, "same", 4), 0);
	assert_int_equal(count_files(cd), 1);
	uint8_t *d;
	size_t n;
	assert_int_equal(gp_chunk_read(cd, h, &d, &n), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(d, "same", 4);
	free(d);
	/* absent */
	uint8_t other[GP_HASH_LEN];
	gp_chunk_hash("other", 5, other);
	errno = 0;
	assert_int_equal(gp_chunk_read(cd, other, &d, &n), -1);
	assert_int_equal(errno, ENOENT);
	/* too long for a chunk */
	uint8_t *big = calloc(1, GP_CHUNK_SIZE + 1);
	assert_non_null(big);
	errno = 0;
	assert_int_equal(gp_chunk_put(cd, h, big, GP_CHUNK_SIZE + 1), -1);
	assert_int_equal(errno, EFBIG);
	free(big);
}

static void damaged_on_read(void **state)
{
	char cd[128], path[4300];
	snprintf(cd, sizeof(cd), "%s/c3", dir);
	assert_int_equal(gp_mkdir_p(cd, 0700), 0);
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash("0123456789", 10, h);
	assert_int_equal(gp_chunk_put(cd, h, "0123456789", 10), 0);
	assert_int_equal(gp_chunk_path(cd, h, path, sizeof(path)), 0);
	FILE *f = fopen(path, "r+");
	assert_non_null(f);
	fseek(f, 3, SEEK_SET);
	fputc('X', f);
	fclose(f);
	errno = 0;
	assert_int_equal(gp_chunk_verify(cd, h), -1);
	assert_int_equal(errno, EBADMSG);
	assert_false(gp_chunk_has(cd, h)); /* removed: the next fetch replaces it */
}

static void entries(void **state)
{
	uint8_t h[GP_HASH_LEN] = {0};
	ProtobufCBinaryData c[2] = {{GP_HASH_LEN, h}, {GP_HASH_LEN, h}};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT;
	e.path = "a/b.txt";
	e.size = GP_CHUNK_SIZE + 1;
	e.chunks = c;
	e.n_chunks = 2;
	assert_true(gp_entry_ok(&e));
	e.n_chunks = 1; /* one chunk short of its size */
	assert_false(gp_entry_ok(&e));
	e.n_chunks = 2;
	c[1].len = 31;
	assert_false(gp_entry_ok(&e));
	c[1].len = GP_HASH_LEN;
	const char *bad[] = {"../x", "a/../../x", "/etc/passwd", "", "a/", "a//b", "./a"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e.path = (char *)bad[i];
		assert_false(gp_entry_ok(&e));
	}
	e.path = "d";
	e.dir = 1;
	assert_false(gp_entry_ok(&e)); /* a directory with chunks */
	e.n_chunks = 0;
	e.size = 0;
	assert_true(gp_entry_ok(&e));
	e.mode = 010000;
	assert_false(gp_entry_ok(&e));
}

static void write_file_of(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void manifest_tree(void **state)
{
	char t[256], p[512];
	snprintf(t, sizeof(t), "%s/tree", dir);
	snprintf(p, sizeof(p), "%s/sub", t);
	assert_int_equal(gp_mkdir_p(p, 0750), 0);
	size_t big = 2 * GP_CHUNK_SIZE + 5;
	uint8_t *d = malloc(big);
	assert_non_null(d);
	for (size_t i = 0; i < big; i++)
		d[i] = (uint8_t)(i * 31 + i / 4096);
	snprintf(p, sizeof(p), "%s/big.bin", t);
	write_file_of(p, d, big);
	snprintf(p, sizeof(p), "%s/sub/a.txt", t);
	write_file_of(p, "twin", 4);
	snprintf(p, sizeof(p), "%s/sub/b.txt", t);
	write_file_of(p, "twin", 4);
	chmod(p, 0751);
	snprintf(p, sizeof(p), "%s/link", t);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	struct gp_manifest m = {0};
	gp_error_t err;
	assert_int_equal(gp_manifest_add(&m, t, "tree", &err), 0);
	/* tree, big.bin, sub, sub/a.txt, sub/b.txt: the link is skipped */
	assert_int_equal(m.n, 5);
	assert_string_equal(m.e[0]->path, "tree");
	assert_true(m.e[0]->dir);
	assert_string_equal(m.e[1]->path, "tree/big.bin");
	assert_int_equal(m.e[1]->size, big);
	assert_int_equal(m.e[1]->n_chunks, 3);
	uint8_t h[GP_HASH_LEN];
	gp_chunk_hash(d + 2 * GP_CHUNK_SIZE, 5, h);
	assert_memory_equal(m.e[1]->chunks[2].data, h, GP_HASH_LEN);
	assert_string_equal(m.e[2]->path, "tree/sub");
	assert_int_equal(m.e[2]->mode, 0750);
	/* the same bytes, the same chunk: dedupe across files */
	assert_memory_equal(m.e[3]->chunks[0].data, m.e[4]->chunks[0].data, GP_HASH_LEN);
	assert_int_equal(m.e[4]->mode, 0751);
	for (size_t i = 0; i < m.n; i++)
		assert_true(gp_entry_ok(m.e[i]));
	gp_manifest_release(&m);
	/* an invalid name is refused before anything is read */
	assert_int_equal(gp_manifest_add(&m, t, "../tree", &err), -1);
	assert_int_equal(m.n, 0);
	free(d);
}

/* Setuid, setgid and sticky bits never enter a manifest, whatever the files have. */
static void manifest_modes_plain(void **state)
{
	char t[256], p[512];
	snprintf(t, sizeof(t), "%s/modes", dir);
	assert_int_equal(gp_mkdir_p(t, 0700), 0);
	assert_int_equal(chmod(t, 01777), 0);
	snprintf(p, sizeof(p), "%s/sh", t);
	write_file_of(p, "#!/bin/sh\n", 10);
	assert_int_equal(chmod(p, 04755), 0);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 04755);
	struct gp_manifest m = {0};
	gp_error_t err;
	assert_int_equal(gp_manifest_add(&m, t, "modes", &err), 0);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.e[0]->mode, 0777);
	assert_int_equal(m.e[1]->mode, 0755);
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(gp_manifest_add_fd(&m, fd, "fd", 06711, &err), 0);
	close(fd);
	assert_int_equal(gp_manifest_add_dir(&m, "d", 03770, &err), 0);
	assert_int_equal(m.e[2]->mode, 0711);
	assert_int_equal(m.e[3]->mode, 0770);
	gp_manifest_release(&m);
	assert_int_equal(gp_mode_plain(04755, 0600), 0755);
	assert_int_equal(gp_mode_plain(0, 0600), 0600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(known_hash),
	    cmocka_unit_test(mismatch_refused),
	    cmocka_unit_test(dedupe_and_read),
	    cmocka_unit_test(damaged_on_read),
	    cmocka_unit_test(entries),
	    cmocka_unit_test(manifest_tree),
	    cmocka_unit_test(manifest_modes_plain),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
