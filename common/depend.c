/* depend.c: see depend.h. */
#include "common/depend.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	enum gp_dep_type type;
} types[] = {
    {"after", GP_DEP_AFTER},	       {"afterok", GP_DEP_AFTEROK},
    {"afternotok", GP_DEP_AFTERNOTOK}, {"afterany", GP_DEP_AFTERANY},
    {"singleton", GP_DEP_SINGLETON},
};

static int parse_id(const char *s, size_t len, struct gp_dep *d)
{
	uint64_t v = 0;
	size_t i = 0;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (i >= 19)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i == 0 || v == 0)
		return -1;
	d->job = v;
	if (i == len)
		return 0;
	if (s[i++] != '_' || i == len)
		return -1;
	uint64_t t = 0;
	size_t start = i;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (i - start >= 10)
			return -1;
		t = t * 10 + (uint64_t)(s[i] - '0');
	}
	if (i != len || t > UINT32_MAX)
		return -1;
	d->has_task = true;
	d->task = (uint32_t)t;
	return 0;
}

/* One "type[:id...]" item of length len. */
static int parse_item(const char *s, size_t len, gp_depend_t *d)
{
	size_t tl = 0;
	while (tl < len && s[tl] != ':')
		tl++;
	int type = -1;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == tl && !strncmp(types[i].name, s, tl))
			type = (int)types[i].type;
	if (type < 0)
		return errno = EINVAL, -1;
	if (type == GP_DEP_SINGLETON) {
		if (tl != len)
			return errno = EINVAL, -1;
		if (d->n == GP_DEP_MAX)
			return errno = E2BIG, -1;
		memset(&d->d[d->n], 0, sizeof(d->d[0]));
		d->d[d->n++].type = GP_DEP_SINGLETON;
		return 0;
	}
	if (tl == len)
		return errno = EINVAL, -1; /* a type without a job */
	size_t p = tl + 1;
	while (1) {
		size_t e = p;
		while (e < len && s[e] != ':')
			e++;
		if (d->n == GP_DEP_MAX)
			return errno = E2BIG, -1;
		struct gp_dep *x = &d->d[d->n];
		memset(x, 0, sizeof(*x));
		x->type = (enum gp_dep_type)type;
		if (parse_id(s + p, e - p, x) < 0)
			return errno = EINVAL, -1;
		d->n++;
		if (e == len)
			return 0;
		p = e + 1;
	}
}

int gp_depend_parse(const char *s, gp_depend_t *d)
{
	memset(d, 0, sizeof(*d));
	if (!s || !*s)
		return errno = EINVAL, -1;
	bool comma = strchr(s, ',') != NULL, q = strchr(s, '?') != NULL;
	if (comma && q)
		return errno = EINVAL, -1;
	d->any = q;
	char sep = q ? '?' : ',';
	const char *p = s;
	while (1) {
		const char *e = strchr(p, sep);
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0 || parse_item(p, len, d) < 0)
			return errno = errno == E2BIG ? E2BIG : EINVAL, -1;
		if (!e)
			return 0;
		p = e + 1;
	}
}

enum gp_dep_result gp_dep_eval(const struct gp_dep *d, const struct gp_dep_target *t)
{
	if (d->type == GP_DEP_SINGLETON)
		return t->total ? GP_DEP_WAIT : GP_DEP_OK;
	if (!t->exists || t->total == 0)
		return GP_DEP_NEVER;
	bool all_ended = t->ended == t->total;
	switch (d->type) {
	case GP_DEP_AFTER:
		return t->started == t->total || all_ended ? GP_DEP_OK : GP_DEP_WAIT;
	case GP_DEP_AFTERANY:
		return all_ended ? GP_DEP_OK : GP_DEP_WAIT;
	case GP_DEP_AFTEROK:
		if (t->ended > t->ok)
			return GP_DEP_NEVER; /* one task failed: it can never all be ok */
		return all_ended ? GP_DEP_OK : GP_DEP_WAIT;
	case GP_DEP_AFTERNOTOK:
		if (!all_ended)
			return GP_DEP_WAIT;
		return t->ok < t->total ? GP_DEP_OK : GP_DEP_NEVER;
	default:
		return GP_DEP_NEVER;
	}
}

enum gp_dep_result gp_depend_combine(bool any, const enum gp_dep_result *r, size_t n)
{
	if (n == 0)
		return GP_DEP_OK;
	bool wait = false, ok = false, never = false;
	for (size_t i = 0; i < n; i++) {
		wait |= r[i] == GP_DEP_WAIT;
		ok |= r[i] == GP_DEP_OK;
		never |= r[i] == GP_DEP_NEVER;
	}
	if (any)
		return ok ? GP_DEP_OK : wait ? GP_DEP_WAIT : GP_DEP_NEVER;
	return never ? GP_DEP_NEVER : wait ? GP_DEP_WAIT : GP_DEP_OK;
}
