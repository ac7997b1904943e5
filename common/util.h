/* util.h: clocks, buffers and small helpers every gpool program uses. */
#ifndef GPOOL_UTIL_H
#define GPOOL_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Wall-clock seconds since the epoch (for records users read). */
double gp_now(void);
/* Monotonic milliseconds (for timeouts). */
int64_t gp_mono_ms(void);

/* A growable byte buffer. */
typedef struct gp_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
} gp_buf_t;

int gp_buf_reserve(gp_buf_t *b, size_t extra);
int gp_buf_append(gp_buf_t *b, const void *p, size_t n);
void gp_buf_release(gp_buf_t *b);

/* Read a whole file (at most max bytes) into a malloc'd buffer. 0 / -1 with errno (EFBIG). */
int gp_read_file(const char *path, size_t max, uint8_t **data, size_t *len);
/* Write all of data to fd (again after EINTR and short writes). 0 / -1 with errno. */
int gp_write_all(int fd, const void *data, size_t len);
/* Write a whole file atomically (tmp + rename). */
int gp_write_file(const char *path, const void *data, size_t len, int mode);
/* mkdir -p */
int gp_mkdir_p(const char *path, int mode);
/* rm -rf (does not cross mount points) */
int gp_rm_rf(const char *path);

/* 64-bit random number from the kernel. */
uint64_t gp_random64(void);

#endif
