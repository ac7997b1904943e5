/* rdv_impl.h - what each rendezvous implementation (rdv_tcp.c, rdv_gpool.c) shares: the
 * table of its functions and its error message. Private to comm/src. */
#ifndef GCOMM_RDV_IMPL_H
#define GCOMM_RDV_IMPL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "gpool/gcomm_rdv.h"

/* The table of a rendezvous file that names its functions rdv_open ... rdv_error. */
#define GC_RDV_OPS(NAME)                                                                           \
	{                                                                                          \
		.name = (NAME), .open = rdv_open, .put = rdv_put, .fence = rdv_fence,              \
		.get = rdv_get, .local_addr = rdv_local_addr, .close = rdv_close,                  \
		.error = rdv_error,                                                                \
	}

/* Record a failure in an implementation's message buffer (its error()): errno e; -1. */
static inline int gc_rdv_errf(char *buf, size_t len, int e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int gc_rdv_errf(char *buf, size_t len, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

#endif
