/* buf.h: a byte buffer for ggated's sockets: bytes p[off..len), room up to cap. Read and
 * written with one system call each (read(2), write(2)): no FIONREAD probe as libevent's
 * evbuffer makes before every read. */
#ifndef GPOOL_GATEWAY_BUF_H
#define GPOOL_GATEWAY_BUF_H

#include <stddef.h>
#include <sys/types.h>

struct gw_buf {
	char *p;
	size_t off, len, cap;
};

static inline size_t gw_buf_size(const struct gw_buf *b)
{
	return b->len - b->off;
}
static inline const char *gw_buf_data(const struct gw_buf *b)
{
	return b->p + b->off;
}
/* room for n more bytes at the end (the consumed front moved out first); 0 / -1 ENOMEM */
int gw_buf_reserve(struct gw_buf *b, size_t n);
int gw_buf_add(struct gw_buf *b, const void *d, size_t n);
int gw_buf_printf(struct gw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gw_buf_consume(struct gw_buf *b, size_t n);
void gw_buf_clear(struct gw_buf *b);
void gw_buf_free(struct gw_buf *b);
/* one read(2) of at most max bytes onto the end: its result (-1 with errno, 0 at EOF) */
ssize_t gw_buf_read(struct gw_buf *b, int fd, size_t max);
/* one write(2) of what is held, consumed as written: its result */
ssize_t gw_buf_write(struct gw_buf *b, int fd);

#endif
