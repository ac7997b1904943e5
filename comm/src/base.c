/* base.c - what every file of the engine needs of a communicator, under them all: a failure
 * told (gc_fail) or the communicator broken (gc_break), its scratch buffers on the host or the
 * card, whether a pointer is the card's, and waiting for the transport's requests
 * (comm_int.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "comm/src/comm_int.h"

int gc_fail(gc_comm_t *c, int e, const char *fmt, ...)
{
	if (c) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

int gc_break(gc_comm_t *c, const char *what)
{
	int e = errno ? errno : EIO;
	if (!c->broken) {
		c->broken = 1;
		snprintf(c->err, sizeof(c->err), "%s: %s", what,
			 c->tpo && c->tp && *c->tpo->error(c->tp) ? c->tpo->error(c->tp)
								  : strerror(e));
		if (c->tpo && c->tp)
			c->tpo->abort(c->tp); /* the peers fail fast too */
	}
	errno = e;
	return -1;
}

void *gc_buf(gc_comm_t *c, int which, size_t len, int dev)
{
	dev = dev ? 1 : 0;
	if (len == 0)
		len = 1;
	if (len <= c->bufs[which][dev].len)
		return c->bufs[which][dev].p;
	void *old = c->bufs[which][dev].p;
	if (old)
		dev ? gk_dev_free(c->gk, old) : gk_host_free(c->gk, old);
	c->bufs[which][dev].p = NULL;
	c->bufs[which][dev].len = 0;
	void *p;
	if ((dev ? gk_dev_alloc(c->gk, len, &p) : gk_host_alloc(c->gk, len, &p)) < 0) {
		gc_fail(c, ENOMEM, "cannot allocate %zu bytes %s: %s", len,
			dev	 ? "on the card"
			: c->gpu ? "of pinned host memory"
				 : "of memory",
			gk_backend_error(c->gk));
		return NULL;
	}
	c->bufs[which][dev].p = p;
	c->bufs[which][dev].len = len;
	return p;
}

int gc_is_device(gc_comm_t *c, const void *p)
{
	return c->gpu && p && gk_is_device_ptr(c->gk, p) == 1;
}

int gc_waitall(gc_comm_t *c, gc_tpreq_t *r, int n)
{
	for (;;) {
		int pending = 0;
		for (int i = 0; i < n; i++) {
			if (r[i].done && r[i].err) {
				errno = r[i].err;
				return gc_break(c, "transfer");
			}
			pending += !r[i].done;
		}
		if (!pending)
			return 0;
		if (c->tpo->progress(c->tp, -1) < 0)
			return gc_break(c, "transfer");
	}
}
