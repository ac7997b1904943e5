/* fieldfmt.c: see fieldfmt.h. */
#include "cli/lib/fieldfmt.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct item {
	char *text; /* literal text, or NULL for a field */
	int field;  /* index into fields */
	int width;  /* 0: as long as it is */
	bool trunc; /* ".N": at most N, right aligned */
};

struct gp_fieldfmt {
	const struct gp_field *fields;
	size_t nfields;
	struct item *v;
	size_t n;
};

static int push(gp_fieldfmt_t *f, struct item it)
{
	struct item *nv = realloc(f->v, (f->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	f->v = nv;
	f->v[f->n++] = it;
	return 0;
}

gp_fieldfmt_t *gp_fieldfmt_create(const char *fmt, const struct gp_field *fields, size_t nfields,
				  gp_error_t *err)
{
	gp_fieldfmt_t *f = calloc(1, sizeof(*f));
	if (!f)
		goto oom;
	f->fields = fields;
	f->nfields = nfields;
	for (const char *p = fmt; *p;) {
		if (*p != '%' || p[1] == '%') {
			size_t len = *p == '%' ? 1 : strcspn(p, "%");
			struct item it = {.text = strndup(p, len)};
			if (!it.text || push(f, it) < 0) {
				free(it.text);
				goto oom;
			}
			p += *p == '%' ? 2 : len;
			continue;
		}
		p++;
		struct item it = {0};
		if (*p == '.') {
			it.trunc = true;
			p++;
		}
		while (*p >= '0' && *p <= '9' && it.width < 1000)
			it.width = it.width * 10 + (*p++ - '0');
		int k = -1;
		for (size_t i = 0; i < nfields && *p; i++)
			if (fields[i].letter == *p)
				k = (int)i;
		if (k < 0 || it.width >= 1000 || (it.trunc && !it.width)) {
			errno = EINVAL;
			gp_errprintf(err, "invalid field '%%%.8s' in '%s'", p, fmt);
			gp_fieldfmt_destroy(&f);
			return NULL;
		}
		it.field = k;
		if (push(f, it) < 0)
			goto oom;
		p++;
	}
	return f;
oom:
	gp_fieldfmt_destroy(&f);
	errno = ENOMEM;
	gp_errprintf(err, "out of memory");
	return NULL;
}

void gp_fieldfmt_destroy(gp_fieldfmt_t **p)
{
	if (!p || !*p)
		return;
	for (size_t i = 0; i < (*p)->n; i++)
		free((*p)->v[i].text);
	free((*p)->v);
	free(*p);
	*p = NULL;
}

static int put(const struct item *it, const char *s, FILE *out)
{
	if (it->trunc)
		return fprintf(out, "%*.*s", it->width, it->width, s) < 0 ? -1 : 0;
	return fprintf(out, "%-*s", it->width, s) < 0 ? -1 : 0;
}

int gp_fieldfmt_header(const gp_fieldfmt_t *f, FILE *out)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct item *it = &f->v[i];
		if ((it->text ? fputs(it->text, out) < 0
			      : put(it, f->fields[it->field].header, out) < 0))
			return -1;
	}
	return fputc('\n', out) == EOF ? -1 : 0;
}

int gp_fieldfmt_row(const gp_fieldfmt_t *f, const void *row, double now, FILE *out)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct item *it = &f->v[i];
		char buf[512];
		if (it->text) {
			if (fputs(it->text, out) < 0)
				return -1;
			continue;
		}
		f->fields[it->field].fn(row, now, buf, sizeof(buf));
		if (put(it, buf, out) < 0)
			return -1;
	}
	return fputc('\n', out) == EOF ? -1 : 0;
}
