/* array.c: see array.h. */
#include "common/array.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number at *p (no sign, at most 10 digits, <= GP_ARRAY_MAX_INDEX). */
static int num(const char **p, uint32_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;
	while (*s >= '0' && *s <= '9') {
		if (++digits > 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (!digits || v > GP_ARRAY_MAX_INDEX)
		return -1;
	*out = (uint32_t)v;
	*p = s;
	return 0;
}

static uint32_t range_count(const struct gp_array_range *r)
{
	return (r->last - r->first) / r->step + 1;
}

static bool range_has(const struct gp_array_range *r, uint32_t x)
{
	return x >= r->first && x <= r->last && (x - r->first) % r->step == 0;
}

bool gp_array_has(const gp_array_t *a, uint32_t x)
{
	for (size_t i = 0; i < a->n; i++)
		if (range_has(&a->r[i], x))
			return true;
	return false;
}

/* Steps of x, from the start of the overlap, before its residues modulo y's step repeat. */
static uint64_t walk_cost(const struct gp_array_range *x, const struct gp_array_range *y,
			  uint32_t lo, uint32_t hi)
{
	uint64_t n = (hi - lo) / x->step + 1;
	return n < y->step ? n : y->step;
}

static bool walk(const struct gp_array_range *x, const struct gp_array_range *y, uint32_t lo,
		 uint32_t hi)
{
	/* the first index of x at or after lo */
	uint64_t v = x->first;
	if (v < lo)
		v += ((uint64_t)(lo - x->first) + x->step - 1) / x->step * x->step;
	for (uint64_t k = 0; v <= hi && k <= y->step; k++, v += x->step)
		if (range_has(y, (uint32_t)v))
			return true;
	return false;
}

/* Whether two ranges share an index; cost bounded by the smaller step. */
static bool overlap(const struct gp_array_range *x, const struct gp_array_range *y)
{
	if (x->last < y->first || y->last < x->first)
		return false;
	uint32_t lo = x->first > y->first ? x->first : y->first;
	uint32_t hi = x->last < y->last ? x->last : y->last;
	if (walk_cost(x, y, lo, hi) <= walk_cost(y, x, lo, hi))
		return walk(x, y, lo, hi);
	return walk(y, x, lo, hi);
}

/* Parse "a[-b[:s]](,...)" up to a terminator in `end` ("" or "]"). */
static int parse_ranges(const char **p, gp_array_t *a, char end)
{
	const char *s = *p;
	uint64_t total = 0;
	a->n = 0;
	while (1) {
		struct gp_array_range r = {0, 0, 1};
		if (num(&s, &r.first) < 0)
			return errno = EINVAL, -1;
		r.last = r.first;
		if (*s == '-') {
			s++;
			if (num(&s, &r.last) < 0 || r.last < r.first)
				return errno = EINVAL, -1;
			if (*s == ':') {
				s++;
				if (num(&s, &r.step) < 0 || r.step == 0)
					return errno = EINVAL, -1;
			}
		}
		if (a->n == GP_ARRAY_MAX_RANGES)
			return errno = E2BIG, -1;
		total += range_count(&r);
		if (total > GP_ARRAY_MAX_TASKS)
			return errno = E2BIG, -1;
		for (size_t i = 0; i < a->n; i++)
			if (overlap(&a->r[i], &r))
				return errno = EINVAL, -1;
		a->r[a->n++] = r;
		if (*s != ',')
			break;
		s++;
	}
	if (*s != end && !(end == '\0' && *s == '%'))
		return errno = EINVAL, -1;
	a->count = (uint32_t)total;
	a->min = UINT32_MAX;
	a->max = 0;
	for (size_t i = 0; i < a->n; i++) {
		if (a->r[i].first < a->min)
			a->min = a->r[i].first;
		uint32_t top = a->r[i].first + (range_count(&a->r[i]) - 1) * a->r[i].step;
		if (top > a->max)
			a->max = top;
	}
	*p = s;
	return 0;
}

int gp_array_parse(const char *s, gp_array_t *a)
{
	memset(a, 0, sizeof(*a));
	if (!s || !*s)
		return errno = EINVAL, -1;
	if (parse_ranges(&s, a, '\0') < 0)
		return -1;
	if (*s == '%') {
		s++;
		uint32_t lim;
		if (num(&s, &lim) < 0 || lim == 0 || *s)
			return errno = EINVAL, -1;
		a->limit = lim;
	}
	return 0;
}

uint32_t gp_array_index(const gp_array_t *a, uint32_t i)
{
	for (size_t k = 0; k < a->n; k++) {
		uint32_t c = range_count(&a->r[k]);
		if (i < c)
			return a->r[k].first + i * a->r[k].step;
		i -= c;
	}
	return UINT32_MAX;
}

void gp_array_format(const uint32_t *v, size_t n, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	if (n == 1) {
		snprintf(buf, len, "%u", v[0]);
		return;
	}
	size_t used = 0;
	int w = snprintf(buf, len, "[");
	used = (size_t)w;
	for (size_t i = 0; i < n;) {
		size_t k = i;
		while (k + 1 < n && v[k + 1] == v[k] + 1)
			k++;
		char item[40];
		if (k > i)
			snprintf(item, sizeof(item), "%s%u-%u", i ? "," : "", v[i], v[k]);
		else
			snprintf(item, sizeof(item), "%s%u", i ? "," : "", v[i]);
		if (used + strlen(item) + 5 >= len) {
			snprintf(buf + used, len - used, "...]");
			return;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s", item);
		i = k + 1;
	}
	snprintf(buf + used, len - used, "]");
}

int gp_array_selector(const char *s, uint64_t *job, bool *has_tasks, gp_array_t *set)
{
	memset(set, 0, sizeof(*set));
	*has_tasks = false;
	if (!s || *s < '0' || *s > '9')
		return errno = EINVAL, -1;
	uint64_t v = 0;
	int digits = 0;
	while (*s >= '0' && *s <= '9') {
		if (++digits > 19)
			return errno = EINVAL, -1;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (v == 0)
		return errno = EINVAL, -1;
	*job = v;
	if (!*s)
		return 0;
	if (*s++ != '_')
		return errno = EINVAL, -1;
	*has_tasks = true;
	if (*s == '[') {
		s++;
		if (parse_ranges(&s, set, ']') < 0)
			return -1;
		if (*s != ']' || s[1])
			return errno = EINVAL, -1;
		return 0;
	}
	if (parse_ranges(&s, set, '\0') < 0 || *s || set->n != 1 || set->count != 1)
		return errno = EINVAL, -1;
	return 0;
}
