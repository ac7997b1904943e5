/* imageref.c: container image names in a registry (imageref.h). The grammar is the distribution
 * reference's, less what gpool does not need (IPv6 literal hosts, digests other than sha256):
 *   HOST[:PORT] "/" COMPONENT ("/" COMPONENT)* [":" TAG] ["@sha256:" 64 HEX]
 * COMPONENT is lowercase alphanumerics joined by '.', '_', "__" or runs of '-'; TAG is
 * [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/imageref.h"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}
static bool hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* host[:port] of length n: labels of alphanumerics and '-', joined by '.'. */
static bool host_ok(const char *h, size_t n)
{
	const char *colon = memchr(h, ':', n);
	size_t hn = colon ? (size_t)(colon - h) : n;
	if (hn == 0 || hn > 253)
		return false;
	size_t label = 0;
	for (size_t i = 0; i < hn; i++) {
		char c = h[i];
		if (c == '.') {
			if (label == 0 || h[i - 1] == '-')
				return false;
			label = 0;
		} else if (alnum(c) || (c == '-' && label > 0)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
	}
	if (label == 0 || h[hn - 1] == '-')
		return false;
	if (!colon)
		return true;
	size_t pn = n - hn - 1;
	if (pn == 0 || pn > 5)
		return false;
	unsigned port = 0;
	for (size_t i = hn + 1; i < n; i++) {
		if (h[i] < '0' || h[i] > '9')
			return false;
		port = port * 10 + (unsigned)(h[i] - '0');
	}
	return port >= 1 && port <= 65535;
}

/* A registry host, not the first directory of a path: Docker's rule. */
static bool is_host(const char *h, size_t n)
{
	if (!host_ok(h, n))
		return false;
	return memchr(h, '.', n) || memchr(h, ':', n) || (n == 9 && !memcmp(h, "localhost", 9));
}

bool gp_imageref_like(const char *s)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	return slash && slash[1] && is_host(s, (size_t)(slash - s));
}

/* One path component of length n. */
static bool component_ok(const char *p, size_t n)
{
	if (n == 0 || !lower_alnum(p[0]) || !lower_alnum(p[n - 1]))
		return false;
	for (size_t i = 1; i < n; i++) {
		if (lower_alnum(p[i]))
			continue;
		if (p[i] == '-')
			continue; /* runs of '-' are allowed */
		if (p[i] == '.' || p[i] == '_') {
			/* one separator, or "__" */
			if (!lower_alnum(p[i - 1]) &&
			    !(p[i] == '_' && p[i - 1] == '_' && i >= 2 && lower_alnum(p[i - 2])))
				return false;
			continue;
		}
		return false;
	}
	return true;
}

static int bad(gp_error_t *err, const char *s, const char *why)
{
	errno = EINVAL;
	return gp_errprintf(err, "invalid image name '%.300s': %s", s, why);
}

int gp_imageref_parse(const char *s, struct gp_imageref *r, gp_error_t *err)
{
	memset(r, 0, sizeof(*r));
	size_t len = s ? strlen(s) : 0;
	if (len == 0 || len > 1024)
		return bad(err, s ? s : "", "empty or too long");
	const char *slash = strchr(s, '/');
	if (!slash || !is_host(s, (size_t)(slash - s)))
		return bad(err, s, "it does not start with a registry host (HOST:PORT/NAME:TAG)");
	memcpy(r->host, s, (size_t)(slash - s));
	const char *rest = slash + 1;
	const char *at = strchr(rest, '@');
	size_t plen = at ? (size_t)(at - rest) : strlen(rest);
	if (at) {
		const char *d = at + 1;
		if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
			return bad(err, s, "a digest is sha256: and 64 hex digits");
		for (size_t i = 7; i < 7 + 64; i++)
			if (!hex(d[i]))
				return bad(err, s, "a digest is sha256: and 64 hex digits");
		memcpy(r->digest, d, 7 + 64);
	}
	/* a tag follows the last ':' after the last '/' */
	const char *tag = NULL;
	for (const char *p = rest + plen; p > rest; p--)
		if (p[-1] == '/')
			break;
		else if (p[-1] == ':') {
			tag = p;
			break;
		}
	size_t nlen = tag ? (size_t)(tag - 1 - rest) : plen;
	if (tag) {
		size_t tlen = (size_t)(rest + plen - tag);
		if (tlen == 0 || tlen > 128 || !(alnum(tag[0]) || tag[0] == '_'))
			return bad(err, s, "a tag is 1 to 128 of A-Z a-z 0-9 _ . -");
		for (size_t i = 0; i < tlen; i++)
			if (!(alnum(tag[i]) || tag[i] == '_' || tag[i] == '.' || tag[i] == '-'))
				return bad(err, s, "a tag is 1 to 128 of A-Z a-z 0-9 _ . -");
		memcpy(r->tag, tag, tlen);
	}
	if (nlen == 0 || nlen >= GP_IMAGEREF_PATH)
		return bad(err, s, "the name is empty or too long");
	for (const char *c = rest, *end = rest + nlen; c < end;) {
		const char *e = memchr(c, '/', (size_t)(end - c));
		size_t n = e ? (size_t)(e - c) : (size_t)(end - c);
		if (!component_ok(c, n))
			return bad(err, s,
				   "the name's parts are lowercase letters and digits "
				   "joined by . _ or -");
		c += n + (e ? 1 : 0);
		if (e && c == end)
			return bad(err, s, "the name ends with '/'");
	}
	memcpy(r->path, rest, nlen);
	if (!r->tag[0] && !r->digest[0])
		strcpy(r->tag, "latest");
	return 0;
}

int gp_imageref_transport(const struct gp_imageref *r, const char *digest, char *buf, size_t len)
{
	if (!digest && r->digest[0])
		digest = r->digest;
	int n = digest ? snprintf(buf, len, "docker://%s/%s@%s", r->host, r->path, digest)
		       : snprintf(buf, len, "docker://%s/%s:%s", r->host, r->path, r->tag);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

bool gp_imageref_host_listed(const char *host, const char *list)
{
	size_t hl = strlen(host);
	const char *colon = strchr(host, ':');
	size_t bare = colon ? (size_t)(colon - host) : hl;
	for (const char *p = list ? list : ""; *p;) {
		p += strspn(p, ", \t");
		size_t n = strcspn(p, ", \t");
		if (n && ((n == hl && !memcmp(p, host, n)) ||
			  (!memchr(p, ':', n) && n == bare && !memcmp(p, host, n))))
			return true;
		p += n;
	}
	return false;
}
