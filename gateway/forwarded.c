/* forwarded.c: X-Forwarded-For as ggated sets it (see forwarded.h). */
#include "gateway/forwarded.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* one entry "ADDR[/BITS]" of n bytes into t. 0 / -1 */
static int trust_one(struct gw_trust *t, const char *s, size_t n, gp_error_t *err)
{
	char buf[64];
	if (!n || n >= sizeof(buf))
		return gp_errprintf(err, "invalid trusted proxy '%.*s'", (int)(n > 64 ? 64 : n), s);
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (t->n >= GW_TRUST_MAX)
		return gp_errprintf(err, "more than %d trusted proxies", GW_TRUST_MAX);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	int fam = strchr(buf, ':') ? AF_INET6 : AF_INET;
	unsigned max = fam == AF_INET6 ? 128 : 32;
	unsigned bits = max;
	if (slash) {
		char *end;
		unsigned long b = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || b > max)
			return gp_errprintf(err, "invalid prefix length in trusted proxy '%s/%s'",
					    buf, slash + 1);
		bits = (unsigned)b;
	}
	unsigned char a[16] = {0};
	if (inet_pton(fam, buf, a) != 1)
		return gp_errprintf(err, "invalid trusted proxy '%s' (a numeric address)", buf);
	t->net[t->n].family = fam;
	memcpy(t->net[t->n].addr, a, sizeof(a));
	t->net[t->n].bits = bits;
	t->n++;
	return 0;
}

int gw_trust_parse(struct gw_trust *t, const char *list, gp_error_t *err)
{
	size_t n0 = t->n;
	for (const char *p = list;;) {
		size_t n = strcspn(p, ",");
		if (trust_one(t, p, n, err) < 0) {
			t->n = n0;
			return -1;
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

static bool prefix_eq(const unsigned char *a, const unsigned char *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(a, b, whole) != 0)
		return false;
	if (!rest)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[whole] & mask) == (b[whole] & mask);
}

bool gw_trust_has(const struct gw_trust *t, const char *addr)
{
	if (!t || !t->n || !addr)
		return false;
	unsigned char a[16] = {0};
	int fam = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(fam, addr, a) != 1)
		return false;
	for (size_t i = 0; i < t->n; i++)
		if (t->net[i].family == fam && prefix_eq(a, t->net[i].addr, t->net[i].bits))
			return true;
	return false;
}

static bool name_is(const char *l, size_t nl, const char *want)
{
	return strlen(want) == nl && strncasecmp(l, want, nl) == 0;
}

int gw_forwarded_headers(const char *hdrs, size_t len, const char *peer, bool trusted,
			 struct gh_buf *out)
{
	/* the trusted proxy's X-Forwarded-For values, in order, joined by ", " */
	struct gh_buf xff = {0};
	int rc = 0;
	const char *end = hdrs + len;
	for (const char *l = hdrs; l < end && rc == 0;) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		const char *next = eol ? eol + 1 : end;
		const char *colon = memchr(l, ':', (size_t)(next - l));
		size_t nl = colon ? (size_t)(colon - l) : 0;
		bool is_xff = colon && name_is(l, nl, "X-Forwarded-For");
		bool other = colon && (name_is(l, nl, "Forwarded") || name_is(l, nl, "X-Real-IP"));
		if (is_xff && trusted) {
			const char *v = colon + 1, *ve = next;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\n' || ve[-1] == '\r' || ve[-1] == ' ' ||
					  ve[-1] == '\t'))
				ve--;
			if (ve > v)
				rc = (gh_buf_size(&xff) ? gh_buf_add(&xff, ", ", 2) : 0) < 0 ||
					     gh_buf_add(&xff, v, (size_t)(ve - v)) < 0
					 ? -1
					 : 0;
		} else if (!is_xff && (trusted || !other)) {
			rc = gh_buf_add(out, l, (size_t)(next - l));
		}
		l = next;
	}
	if (rc == 0)
		rc = gh_buf_size(&xff)
			 ? gh_buf_printf(out, "X-Forwarded-For: %.*s, %s\r\n",
					 (int)gh_buf_size(&xff), gh_buf_data(&xff), peer)
			 : gh_buf_printf(out, "X-Forwarded-For: %s\r\n", peer);
	gh_buf_free(&xff);
	return rc < 0 ? -1 : 0;
}
