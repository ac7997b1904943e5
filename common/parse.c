/* parse.c - parsers of the values users type: sizes, durations, numbers, host lists and
 * listen addresses; no trailing garbage accepted (parse.h) */
#include "common/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int einval(void)
{
	errno = EINVAL;
	return -1;
}

int gp_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	if (!s || !*s || isspace((unsigned char)*s))
		return einval();
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end)
		return einval();
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int gp_parse_listen(const char *s, char *host, size_t hostlen, long *port)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	long p;
	if (!colon || (size_t)(colon - s) >= hostlen || gp_parse_long(colon + 1, 1, 65535, &p) < 0)
		return einval();
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	*port = p;
	return 0;
}

struct unit {
	const char *suffix;
	uint64_t mult;
};

static const struct unit size_units[] = {
    {"", 0},
    {"b", 1},
    {"k", 1ULL << 10},
    {"kb", 1ULL << 10},
    {"kib", 1ULL << 10},
    {"m", 1ULL << 20},
    {"mb", 1ULL << 20},
    {"mib", 1ULL << 20},
    {"g", 1ULL << 30},
    {"gb", 1ULL << 30},
    {"gib", 1ULL << 30},
    {"t", 1ULL << 40},
    {"tb", 1ULL << 40},
    {"tib", 1ULL << 40},
};

int gp_parse_size(const char *s, uint64_t def_unit, uint64_t *bytes)
{
	char *end;
	if (!s || !*s || !(isdigit((unsigned char)*s) || *s == '.'))
		return einval();
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return einval();
	for (size_t i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
		if (strcasecmp(end, size_units[i].suffix) == 0) {
			uint64_t mult = size_units[i].mult ? size_units[i].mult : def_unit;
			double b = v * (double)mult;
			if (b >= 18446744073709551615.0) {
				errno = ERANGE;
				return -1;
			}
			*bytes = (uint64_t)b;
			return 0;
		}
	}
	return einval();
}

/* Read up to `max_fields` colon-separated unsigned numbers. */
static int read_fields(const char *s, long *f, int max_fields)
{
	int n = 0;
	const char *p = s;
	while (1) {
		if (!isdigit((unsigned char)*p) || n == max_fields)
			return -1;
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || v > 100000000)
			return -1;
		f[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ':')
			return -1;
		p = end + 1;
	}
}

int gp_parse_duration(const char *s, uint32_t *seconds)
{
	if (!s || !*s)
		return einval();
	if (!strcasecmp(s, "infinite") || !strcasecmp(s, "unlimited")) {
		*seconds = 0;
		return 0;
	}
	size_t len = strlen(s);
	char last = (char)tolower((unsigned char)s[len - 1]);
	if (strchr("smhd", last) && len > 1) {
		char num[32];
		if (len - 1 >= sizeof(num))
			return einval();
		memcpy(num, s, len - 1);
		num[len - 1] = '\0';
		long v;
		if (gp_parse_long(num, 0, 100000000, &v) < 0)
			return einval();
		uint64_t mult = last == 's' ? 1 : last == 'm' ? 60 : last == 'h' ? 3600 : 86400;
		if ((uint64_t)v * mult > UINT32_MAX) {
			errno = ERANGE;
			return -1;
		}
		*seconds = (uint32_t)(v * mult);
		return 0;
	}
	long days = 0, f[3];
	const char *rest = s;
	const char *dash = strchr(s, '-');
	int n;
	if (dash) {
		char num[32];
		if ((size_t)(dash - s) >= sizeof(num) || dash == s)
			return einval();
		memcpy(num, s, dash - s);
		num[dash - s] = '\0';
		if (gp_parse_long(num, 0, 100000, &days) < 0)
			return einval();
		rest = dash + 1;
		n = read_fields(rest, f, 3);
		if (n < 1)
			return einval();
		/* D-H, D-H:M, D-H:M:S */
		uint64_t t = (uint64_t)days * 86400 + (uint64_t)f[0] * 3600;
		if (n >= 2)
			t += (uint64_t)f[1] * 60;
		if (n == 3)
			t += (uint64_t)f[2];
		if (t > UINT32_MAX)
			return errno = ERANGE, -1;
		*seconds = (uint32_t)t;
		return 0;
	}
	n = read_fields(rest, f, 3);
	if (n < 1)
		return einval();
	uint64_t t;
	if (n == 1)
		t = (uint64_t)f[0] * 60; /* minutes, as Slurm */
	else if (n == 2)
		t = (uint64_t)f[0] * 60 + (uint64_t)f[1];
	else
		t = (uint64_t)f[0] * 3600 + (uint64_t)f[1] * 60 + (uint64_t)f[2];
	if (t > UINT32_MAX)
		return errno = ERANGE, -1;
	*seconds = (uint32_t)t;
	return 0;
}

void gp_strv_free(char **v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int strv_push(char ***v, int *n, int *cap, char *s)
{
	if (!s)
		return -1;
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 8;
		char **nv = realloc(*v, nc * sizeof(*nv));
		if (!nv) {
			free(s);
			return -1;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	return 0;
}

#define GP_HOSTLIST_MAX 65536

/* Expand one element: "name" or "pre[1-3,7]suf". */
static int expand_one(const char *e, size_t len, char ***v, int *n, int *cap)
{
	int n0 = *n;
	const char *lb = memchr(e, '[', len);
	if (!lb) {
		if (len == 0)
			return einval();
		return strv_push(v, n, cap, strndup(e, len));
	}
	const char *rb = memchr(lb, ']', len - (lb - e));
	if (!rb)
		return einval();
	size_t plen = lb - e;
	const char *suf = rb + 1;
	size_t slen = len - (suf - e);
	char ranges[256];
	if ((size_t)(rb - lb - 1) >= sizeof(ranges) || rb - lb - 1 == 0)
		return einval();
	memcpy(ranges, lb + 1, rb - lb - 1);
	ranges[rb - lb - 1] = '\0';
	char *save, *tok;
	for (tok = strtok_r(ranges, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		long lo, hi;
		int width = dash ? (int)(dash - tok) : (int)strlen(tok);
		if (dash) {
			*dash = '\0';
			if (gp_parse_long(tok, 0, 99999999, &lo) < 0 ||
			    gp_parse_long(dash + 1, 0, 99999999, &hi) < 0 || hi < lo)
				return einval();
		} else {
			if (gp_parse_long(tok, 0, 99999999, &lo) < 0)
				return einval();
			hi = lo;
		}
		if (*n + (hi - lo + 1) > GP_HOSTLIST_MAX)
			return errno = ERANGE, -1;
		for (long i = lo; i <= hi; i++) {
			char buf[512];
			int k = snprintf(buf, sizeof(buf), "%.*s%0*ld%.*s", (int)plen, e, width, i,
					 (int)slen, suf);
			if (k < 0 || k >= (int)sizeof(buf))
				return einval();
			if (strv_push(v, n, cap, strdup(buf)) < 0)
				return -1;
		}
	}
	return *n > n0 ? 0 : einval(); /* "h[,]" names no host */
}

int gp_hostlist_expand(const char *s, char ***names, int *count)
{
	char **v = NULL;
	int n = 0, cap = 0;
	const char *p = s;
	if (!s || !*s)
		return einval();
	while (*p) {
		/* split on commas outside brackets */
		const char *q = p;
		int depth = 0;
		while (*q && (depth || *q != ',')) {
			if (*q == '[')
				depth++;
			else if (*q == ']')
				depth--;
			if (depth < 0 || depth > 1)
				goto bad;
			q++;
		}
		if (depth)
			goto bad;
		if (expand_one(p, q - p, &v, &n, &cap) < 0)
			goto bad;
		p = *q ? q + 1 : q;
		if (*q && !*p)
			goto bad;
	}
	*names = v;
	*count = n;
	return 0;
bad:
	gp_strv_free(v, n);
	if (errno != ERANGE && errno != ENOMEM)
		errno = EINVAL;
	return -1;
}

void gp_format_duration(uint32_t s, char *buf, int len)
{
	if (s >= 86400)
		snprintf(buf, len, "%u-%02u:%02u:%02u", s / 86400, s % 86400 / 3600, s % 3600 / 60,
			 s % 60);
	else
		snprintf(buf, len, "%02u:%02u:%02u", s / 3600, s % 3600 / 60, s % 60);
}

void gp_format_size(uint64_t b, char *buf, int len)
{
	static const char u[] = "BKMGTP";
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%lluB", (unsigned long long)b);
	else
		snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, u[i]);
}
