/* util.c - the small helpers every gpool program uses: clocks, growing buffers, whole-file
 * reads and writes, mkdir -p, rm -rf and random numbers (util.h) */
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double gp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int64_t gp_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp_buf_reserve(gp_buf_t *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 256;
	while (nc < b->len + extra)
		nc *= 2;
	uint8_t *nd = realloc(b->data, nc);
	if (!nd)
		return -1;
	b->data = nd;
	b->cap = nc;
	return 0;
}

int gp_buf_append(gp_buf_t *b, const void *p, size_t n)
{
	if (gp_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void gp_buf_release(gp_buf_t *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int gp_read_file(const char *path, size_t max, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	gp_buf_t b = {0};
	while (1) {
		if (gp_buf_reserve(&b, 65536) < 0)
			goto fail;
		ssize_t n = read(fd, b.data + b.len, b.cap - b.len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0)
			break;
		b.len += n;
		if (b.len > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	close(fd);
	if (gp_buf_reserve(&b, 1) < 0) {
		gp_buf_release(&b);
		return -1;
	}
	b.data[b.len] = 0;
	*data = b.data;
	*len = b.len;
	return 0;
fail : {
	int e = errno;
	close(fd);
	gp_buf_release(&b);
	errno = e;
	return -1;
}
}

int gp_write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			return errno = EIO, -1;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

int gp_write_file(const char *path, const void *data, size_t len, int mode)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return errno = ENAMETOOLONG, -1;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (gp_write_all(fd, data, len) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return errno = e, -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return errno = e, -1;
	}
	return 0;
}

int gp_mkdir_p(const char *path, int mode)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(buf, mode) < 0 && errno != EEXIST)
				return -1;
			*p = '/';
		}
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static int rm_rf_at(int dfd, const char *name, dev_t dev)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	if (st.st_dev != dev)
		return errno = EXDEV, -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (rm_rf_at(fd, e->d_name, dev) < 0)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		rc = -1;
	return rc;
}

int gp_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	return rm_rf_at(AT_FDCWD, path, st.st_dev);
}

uint64_t gp_random64(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)gp_mono_ms() ^ ((uint64_t)getpid() << 32);
	return v;
}
