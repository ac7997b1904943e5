/* error.h: human-readable error detail carried up the stack (flux_error_t style).
 * Functions that fail return -1 (or NULL) with errno set and, when given a gp_error_t,
 * a lowercase message in it. gp_errprintf() returns -1 so callers can `return gp_errprintf(...)`.
 */
#ifndef GPOOL_ERROR_H
#define GPOOL_ERROR_H

typedef struct gp_error {
	char text[512];
} gp_error_t;

/* Fill err (may be NULL) and return -1. errno is preserved. */
int gp_errprintf(gp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
