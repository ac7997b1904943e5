/* jsonw.h: a small streaming JSON writer, for output that must build without jansson: gcheck's
 * measuring core (check.h) also builds standalone on a GPU machine that has none of gpool's
 * Debian libraries (tools/gcheck-local). It indents by two spaces, as gp_json_print does.
 *
 * Values go out in the order they are given; a key comes before each value inside an object.
 * A write error sticks: later calls do nothing and gp_jw_finish returns -1. Nesting deeper
 * than GP_JW_MAX_DEPTH, a value without its key in an object or an unbalanced end is a
 * programmer error: it also sticks (errno EINVAL) rather than writing invalid JSON.
 */
#ifndef GP_COMMON_JSONW_H
#define GP_COMMON_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define GP_JW_MAX_DEPTH 32

typedef struct gp_jw gp_jw_t;

/* A writer onto f (not closed by it). NULL when out of memory. */
gp_jw_t *gp_jw_create(FILE *f);
/* End the document with a newline and free the writer (NULL is fine). 0 when everything was
 * written and balanced / -1 (errno EIO after a write error, EINVAL after a misuse). */
int gp_jw_finish(gp_jw_t **w);

void gp_jw_object(gp_jw_t *w);
void gp_jw_end_object(gp_jw_t *w);
void gp_jw_array(gp_jw_t *w);
void gp_jw_end_array(gp_jw_t *w);
/* The key of the next value (inside an object). */
void gp_jw_key(gp_jw_t *w, const char *key);

/* s NULL writes null. Control characters, '"' and '\\' are escaped; other bytes pass. */
void gp_jw_string(gp_jw_t *w, const char *s);
/* 17 significant digits, always with a '.' or an exponent (as jansson); NaN and the
 * infinities, which JSON lacks, are null. */
void gp_jw_real(gp_jw_t *w, double v);
void gp_jw_int(gp_jw_t *w, int64_t v);
void gp_jw_uint(gp_jw_t *w, uint64_t v);
void gp_jw_bool(gp_jw_t *w, bool v);
void gp_jw_null(gp_jw_t *w);
/* KEY: V, or KEY: null when V is negative (a measurement that was not made). */
void gp_jw_key_real_or_null(gp_jw_t *w, const char *key, double v);

#endif
