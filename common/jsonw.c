/* jsonw.c: the streaming JSON writer (see jsonw.h). */
#include "common/jsonw.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gp_jw {
	FILE *f;
	int depth;			  /* open containers */
	bool object[GP_JW_MAX_DEPTH + 1]; /* level d is an object (else an array) */
	int count[GP_JW_MAX_DEPTH + 1];	  /* values written at level d (0: the document) */
	bool keyed;			  /* a key was written: its value comes next */
	int err;			  /* 0, EIO or EINVAL: sticks */
};

gp_jw_t *gp_jw_create(FILE *f)
{
	gp_jw_t *w = calloc(1, sizeof(*w));
	if (w)
		w->f = f;
	return w;
}

static void put(gp_jw_t *w, const char *s)
{
	if (!w->err && fputs(s, w->f) == EOF)
		w->err = EIO;
}

static void newline(gp_jw_t *w, int indent)
{
	put(w, "\n");
	for (int i = 0; i < indent && !w->err; i++)
		put(w, "  ");
}

/* Before a value: its separator and indentation, or the check that its key came first. */
static bool begin_value(gp_jw_t *w)
{
	if (w->err)
		return false;
	int d = w->depth;
	if (d == 0) {
		if (w->count[0]) /* one document */
			w->err = EINVAL;
	} else if (w->object[d]) {
		if (!w->keyed)
			w->err = EINVAL;
	} else {
		if (w->count[d])
			put(w, ",");
		newline(w, d);
	}
	w->keyed = false;
	w->count[d]++;
	return !w->err;
}

static void put_string(gp_jw_t *w, const char *s)
{
	char buf[8];
	put(w, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p && !w->err; p++) {
		if (*p == '"' || *p == '\\') {
			buf[0] = '\\';
			buf[1] = (char)*p;
			buf[2] = '\0';
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(buf, sizeof(buf), "\\u%04x", *p);
		} else {
			buf[0] = (char)*p;
			buf[1] = '\0';
		}
		put(w, buf);
	}
	put(w, "\"");
}

void gp_jw_key(gp_jw_t *w, const char *key)
{
	int d = w->depth;
	if (w->err)
		return;
	if (d == 0 || !w->object[d] || w->keyed) {
		w->err = EINVAL;
		return;
	}
	if (w->count[d])
		put(w, ",");
	newline(w, d);
	put_string(w, key);
	put(w, ": ");
	w->keyed = true;
}

static void open_container(gp_jw_t *w, bool object)
{
	if (!begin_value(w))
		return;
	if (w->depth == GP_JW_MAX_DEPTH) {
		w->err = EINVAL;
		return;
	}
	w->depth++;
	w->object[w->depth] = object;
	w->count[w->depth] = 0;
	put(w, object ? "{" : "[");
}

static void close_container(gp_jw_t *w, bool object)
{
	if (w->err)
		return;
	if (w->depth == 0 || w->object[w->depth] != object || w->keyed) {
		w->err = EINVAL;
		return;
	}
	if (w->count[w->depth])
		newline(w, w->depth - 1);
	w->depth--;
	put(w, object ? "}" : "]");
}

void gp_jw_object(gp_jw_t *w)
{
	open_container(w, true);
}

void gp_jw_end_object(gp_jw_t *w)
{
	close_container(w, true);
}

void gp_jw_array(gp_jw_t *w)
{
	open_container(w, false);
}

void gp_jw_end_array(gp_jw_t *w)
{
	close_container(w, false);
}

void gp_jw_string(gp_jw_t *w, const char *s)
{
	if (!s) {
		gp_jw_null(w);
		return;
	}
	if (begin_value(w))
		put_string(w, s);
}

void gp_jw_real(gp_jw_t *w, double v)
{
	if (!isfinite(v)) {
		gp_jw_null(w);
		return;
	}
	if (!begin_value(w))
		return;
	char buf[40];
	snprintf(buf, sizeof(buf), "%.17g", v);
	if (!strpbrk(buf, ".eE")) /* a real reads back as a real */
		strcat(buf, ".0");
	put(w, buf);
}

void gp_jw_int(gp_jw_t *w, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	if (begin_value(w))
		put(w, buf);
}

void gp_jw_uint(gp_jw_t *w, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	if (begin_value(w))
		put(w, buf);
}

void gp_jw_bool(gp_jw_t *w, bool v)
{
	if (begin_value(w))
		put(w, v ? "true" : "false");
}

void gp_jw_null(gp_jw_t *w)
{
	if (begin_value(w))
		put(w, "null");
}

int gp_jw_finish(gp_jw_t **p)
{
	if (!p || !*p)
		return 0;
	gp_jw_t *w = *p;
	if (!w->err && (w->depth || w->keyed || !w->count[0]))
		w->err = EINVAL;
	put(w, "\n");
	if (!w->err && fflush(w->f) == EOF)
		w->err = EIO;
	int e = w->err;
	free(w);
	*p = NULL;
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

void gp_jw_key_real_or_null(gp_jw_t *w, const char *key, double v)
{
	gp_jw_key(w, key);
	if (v < 0)
		gp_jw_null(w);
	else
		gp_jw_real(w, v);
}
