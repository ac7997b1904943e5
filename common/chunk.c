/* chunk.c: content-addressed chunks: hashing, a chunk directory, manifest checks. */
#include "common/chunk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "common/util.h"

void gp_chunk_hash(const void *data, size_t len, uint8_t out[GP_HASH_LEN])
{
	gp_sha256(&data, &len, 1, out);
}

void gp_chunk_hex(const uint8_t h[GP_HASH_LEN], char out[2 * GP_HASH_LEN + 1])
{
	static const char hx[] = "0123456789abcdef";
	for (int i = 0; i < GP_HASH_LEN; i++) {
		out[2 * i] = hx[h[i] >> 4];
		out[2 * i + 1] = hx[h[i] & 15];
	}
	out[2 * GP_HASH_LEN] = '\0';
}

uint32_t gp_mode_plain(uint32_t mode, uint32_t dflt)
{
	return (mode ? mode : dflt) & GP_MODE_BITS;
}

int gp_chunk_path(const char *dir, const uint8_t h[GP_HASH_LEN], char *buf, size_t len)
{
	char hex[2 * GP_HASH_LEN + 1];
	gp_chunk_hex(h, hex);
	int n = snprintf(buf, len, "%s/%s", dir, hex);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

bool gp_chunk_has(const char *dir, const uint8_t h[GP_HASH_LEN])
{
	char path[4200];
	struct stat st;
	return gp_chunk_path(dir, h, path, sizeof(path)) == 0 && stat(path, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

int gp_chunk_put(const char *dir, const uint8_t h[GP_HASH_LEN], const void *data, size_t len)
{
	uint8_t got[GP_HASH_LEN];
	if (len > GP_CHUNK_SIZE) {
		errno = EFBIG;
		return -1;
	}
	gp_chunk_hash(data, len, got);
	if (memcmp(got, h, GP_HASH_LEN)) {
		errno = EBADMSG;
		return -1;
	}
	return gp_chunk_write(dir, h, data, len);
}

int gp_chunk_write(const char *dir, const uint8_t h[GP_HASH_LEN], const void *data, size_t len)
{
	if (len > GP_CHUNK_SIZE) {
		errno = EFBIG;
		return -1;
	}
	if (gp_chunk_has(dir, h))
		return 0;
	char path[4200], tmp[4300];
	if (gp_chunk_path(dir, h, path, sizeof(path)) < 0)
		return -1;
	/* a name of our own: writers of the same chunk in other processes do not collide */
	snprintf(tmp, sizeof(tmp), "%s.%d.%llx.tmp", path, (int)getpid(),
		 (unsigned long long)gp_random64());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	const uint8_t *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ENOSPC;
			close(fd);
			unlink(tmp);
			errno = e;
			return -1;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

/* One allocation of the file's size and one read: a chunk is read on every request. */
static int read_chunk_file(const char *path, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int e = fstat(fd, &st) < 0		    ? errno
		: !S_ISREG(st.st_mode)		    ? EINVAL
		: st.st_size > (off_t)GP_CHUNK_SIZE ? EFBIG
						    : 0;
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	size_t size = (size_t)st.st_size, got = 0;
	uint8_t *d = malloc(size ? size : 1);
	if (!d) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	while (got < size) {
		ssize_t n = read(fd, d + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != size) { /* it changed under us (being replaced): not a chunk we can send */
		free(d);
		errno = EBADMSG;
		return -1;
	}
	*data = d;
	*len = size;
	return 0;
}

int gp_chunk_read_unchecked(const char *dir, const uint8_t h[GP_HASH_LEN], uint8_t **data,
			    size_t *len)
{
	char path[4200];
	*data = NULL;
	*len = 0;
	if (gp_chunk_path(dir, h, path, sizeof(path)) < 0)
		return -1;
	if (read_chunk_file(path, data, len) < 0) {
		if (errno == EFBIG) { /* too long to be any chunk: it is damaged */
			unlink(path);
			errno = EBADMSG;
		}
		return -1;
	}
	return 0;
}

int gp_chunk_read(const char *dir, const uint8_t h[GP_HASH_LEN], uint8_t **data, size_t *len)
{
	char path[4200];
	uint8_t *d;
	size_t n;
	if (gp_chunk_read_unchecked(dir, h, data, len) < 0 ||
	    gp_chunk_path(dir, h, path, sizeof(path)) < 0)
		return -1;
	d = *data;
	n = *len;
	*data = NULL;
	*len = 0;
	uint8_t got[GP_HASH_LEN];
	gp_chunk_hash(d, n, got);
	if (memcmp(got, h, GP_HASH_LEN)) {
		free(d);
		unlink(path);
		errno = EBADMSG;
		return -1;
	}
	*data = d;
	*len = n;
	return 0;
}

int gp_chunk_verify(const char *dir, const uint8_t h[GP_HASH_LEN])
{
	uint8_t *d;
	size_t n;
	if (gp_chunk_read(dir, h, &d, &n) < 0)
		return -1;
	free(d);
	return 0;
}

uint64_t gp_chunk_count(uint64_t size)
{
	return (size + GP_CHUNK_SIZE - 1) / GP_CHUNK_SIZE;
}

bool gp_path_relative_ok(const char *name, bool plain)
{
	if (!name || !*name || name[0] == '/' || strlen(name) > 4095)
		return false;
	const char *p = name;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if ((n == 2 && p[0] == '.' && p[1] == '.') ||
		    (plain && ((n == 1 && p[0] == '.') || n == 0)))
			return false;
		if (!slash)
			break;
		p = slash + 1;
	}
	/* a trailing slash names a directory, not a file */
	return name[strlen(name) - 1] != '/';
}

bool gp_path_ok(const char *name)
{
	return gp_path_relative_ok(name, true);
}

bool gp_entry_ok(const Gpool__StageEntry *e)
{
	if (!e || !gp_path_ok(e->path) || (e->mode & ~07777u))
		return false;
	if (e->dir)
		return e->n_chunks == 0 && e->size == 0;
	if (e->n_chunks != gp_chunk_count(e->size))
		return false;
	for (size_t i = 0; i < e->n_chunks; i++)
		if (e->chunks[i].len != GP_HASH_LEN)
			return false;
	return true;
}
