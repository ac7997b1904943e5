/* cma.c - process_vm_readv pulls and the FIFO of early frames (see cma.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "comm/src/cma.h"

int gc_cma_pull(pid_t pid, void *dst, uint64_t src, size_t len)
{
	char *d = dst;
	while (len) {
		struct iovec l = {.iov_base = d, .iov_len = len};
		struct iovec r = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			return errno = EFAULT, -1;
		d += n;
		src += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int gc_cma_check(pid_t pid, uint64_t addr, const void *expect, size_t len)
{
	char buf[64];
	if (pid <= 0 || !addr || len > sizeof(buf))
		return 0;
	return gc_cma_pull(pid, buf, addr, len) == 0 && memcmp(buf, expect, len) == 0;
}

int gc_fifo_push(gc_fifo_t *f, const void *a, size_t al, const void *b, size_t bl)
{
	size_t need = al + bl;
	if (f->cap - f->hi < need) {
		if (f->lo) { /* slide down first */
			memmove(f->p, f->p + f->lo, f->hi - f->lo);
			f->hi -= f->lo;
			f->lo = 0;
		}
		if (f->cap - f->hi < need) {
			size_t cap = f->cap ? f->cap : 4096;
			while (cap - f->hi < need)
				cap *= 2;
			char *p = realloc(f->p, cap);
			if (!p)
				return errno = ENOMEM, -1;
			f->p = p;
			f->cap = cap;
		}
	}
	memcpy(f->p + f->hi, a, al);
	if (bl)
		memcpy(f->p + f->hi + al, b, bl);
	f->hi += need;
	return 0;
}

void gc_fifo_drop(gc_fifo_t *f, size_t n)
{
	f->lo += n;
	if (f->lo >= f->hi)
		f->lo = f->hi = 0;
}

void gc_fifo_free(gc_fifo_t *f)
{
	free(f->p);
	*f = (gc_fifo_t){0};
}
