/* error.c - filling a gp_error_t, the message carried up the stack (error.h) */
#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int gp_errprintf(gp_error_t *err, const char *fmt, ...)
{
	int saved = errno;
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}
