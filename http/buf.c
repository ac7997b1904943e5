/* buf.c: byte buffers (see buf.h). */
#include "http/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gh_buf_reserve(struct gh_buf *b, size_t n)
{
	if (b->cap - b->len >= n)
		return 0;
	if (b->off) {
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= n)
			return 0;
	}
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > ((size_t)-1) / 2) {
			errno = ENOMEM;
			return -1;
		}
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int gh_buf_add(struct gh_buf *b, const void *d, size_t n)
{
	if (!n)
		return 0;
	if (gh_buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

int gh_buf_printf(struct gh_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if (b->p && (size_t)n < b->cap - b->len) {
		b->len += (size_t)n;
		return 0;
	}
	if (gh_buf_reserve(b, (size_t)n + 1) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void gh_buf_consume(struct gh_buf *b, size_t n)
{
	b->off += n;
	if (b->off >= b->len)
		b->off = b->len = 0;
}

void gh_buf_clear(struct gh_buf *b)
{
	b->off = b->len = 0;
}

void gh_buf_free(struct gh_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

ssize_t gh_buf_read(struct gh_buf *b, int fd, size_t max)
{
	if (gh_buf_reserve(b, max) < 0)
		return -1;
	ssize_t n = read(fd, b->p + b->len, max);
	if (n > 0)
		b->len += (size_t)n;
	return n;
}

ssize_t gh_buf_write(struct gh_buf *b, int fd)
{
	if (!gh_buf_size(b))
		return 0;
	ssize_t n = write(fd, gh_buf_data(b), gh_buf_size(b));
	if (n > 0)
		gh_buf_consume(b, (size_t)n);
	return n;
}
