/* peers.c: the proxy lines (see peers.h). */
#include "launch/peers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A word of the line: printable, no spaces. */
static int word(const char **s, const char *end, char *out, size_t cap)
{
	while (*s < end && **s == ' ')
		(*s)++;
	size_t n = 0;
	while (*s < end && **s != ' ' && **s != '\n') {
		unsigned char c = (unsigned char)**s;
		if (c < 0x21 || c > 0x7e || n + 1 >= cap)
			return -1;
		out[n++] = (char)c;
		(*s)++;
	}
	out[n] = '\0';
	return n ? 0 : -1;
}

static int number(const char *w, unsigned long max, unsigned long *v)
{
	char *end;
	if (*w < '0' || *w > '9')
		return -1;
	errno = 0;
	*v = strtoul(w, &end, 10);
	return errno || *end || *v > max ? -1 : 0;
}

int gp_peer_parse(const char *line, size_t len, struct gp_peer *p)
{
	const char *s = line, *end = line + len;
	char port[16], slots[16];
	unsigned long v;
	memset(p, 0, sizeof(*p));
	if (word(&s, end, p->node, sizeof(p->node)) < 0 ||
	    word(&s, end, p->addr, sizeof(p->addr)) < 0 || word(&s, end, port, sizeof(port)) < 0 ||
	    word(&s, end, slots, sizeof(slots)) < 0)
		goto bad;
	while (s < end && *s == ' ')
		s++;
	if (s < end && !(*s == '\n' && s + 1 == end))
		goto bad;
	if (number(port, 65535, &v) < 0 || v == 0)
		goto bad;
	p->port = (uint16_t)v;
	if (number(slots, 1u << 20, &v) < 0 || v == 0)
		goto bad;
	p->slots = (uint32_t)v;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int gp_peer_format(const struct gp_peer *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s %s %u %u\n", p->node, p->addr, p->port, p->slots);
	if (n < 0 || (size_t)n >= len) {
		errno = ENOSPC;
		return -1;
	}
	return n;
}

int gp_peers_find(const char *path, const char *node, struct gp_peer *p)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = -1;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct gp_peer q;
		if (gp_peer_parse(line, (size_t)n, &q) == 0 && !strcmp(q.node, node)) {
			*p = q;
			rc = 0;
			break;
		}
	}
	free(line);
	fclose(f);
	if (rc < 0)
		errno = ENOENT;
	return rc;
}
