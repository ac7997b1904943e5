/* gk_loader.h - the backend handle, shared by loader.c and memtest.c (internal) */
#ifndef GK_LOADER_H
#define GK_LOADER_H

#include "kernels/gk_backend.h"

struct gk_backend {
	const struct gk_ops *ops;
	void *ctx;
	void *dl;
	char name[8];
	char err[GK_ERRLEN];
	int fault_pending;
	size_t fault_word;
	uint32_t fault_mask;
};

/* Sets B's message and errno to E; returns -1. */
int gk_fail(gk_backend_t *b, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
