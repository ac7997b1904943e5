/* buf.h: a byte buffer for sockets (ggated, gserve): bytes p[off..len), room up to cap. Read and
 * written with one system call each (read(2), write(2)): no FIONREAD probe as libevent's
 * evbuffer makes before every read. */
#ifndef GPOOL_HTTP_BUF_H
#define GPOOL_HTTP_BUF_H

#include <stddef.h>
#include <sys/types.h>

struct gh_buf {
	char *p;
	size_t off, len, cap;
};

static inline size_t gh_buf_size(const struct gh_buf *b)
{
	return b->len - b->off;
}
static inline const char *gh_buf_data(const struct gh_buf *b)
{
	return b->p ? b->p + b->off : ""; /* never NULL + 0 */
}
/* room for n more bytes at the end (the consumed front moved out first); 0 / -1 ENOMEM */
int gh_buf_reserve(struct gh_buf *b, size_t n);
int gh_buf_add(struct gh_buf *b, const void *d, size_t n);
int gh_buf_printf(struct gh_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gh_buf_consume(struct gh_buf *b, size_t n);
void gh_buf_clear(struct gh_buf *b);
void gh_buf_free(struct gh_buf *b);
/* one read(2) of at most max bytes onto the end: its result (-1 with errno, 0 at EOF) */
ssize_t gh_buf_read(struct gh_buf *b, int fd, size_t max);
/* one write(2) of what is held, consumed as written: its result */
ssize_t gh_buf_write(struct gh_buf *b, int fd);

#endif
