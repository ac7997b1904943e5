/* ports.c: the agent's pool of master ports (see ports.h). */
#include "worker/node/ports.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RESCAN_MS 5000 /* how often the range is searched again for a pool short of ports */
#define RETRY_MS  1000 /* how often ports not held are tried again */

struct held {
	uint32_t port;
	int fd; /* -1: not held (given to a job, or something else had it) */
};

struct gp_ports {
	uint32_t lo, hi;
	size_t want, n;
	struct held *v;
	int64_t next_scan_ms;
	int64_t next_retry_ms;
};

gp_ports_t *gp_ports_create(uint32_t lo, uint32_t hi, size_t want)
{
	if (lo == 0 || lo > hi || hi > 65535 || want == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (want > hi - lo + 1)
		want = hi - lo + 1;
	gp_ports_t *p = calloc(1, sizeof(*p));
	if (!p || !(p->v = calloc(want, sizeof(*p->v)))) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->lo = lo;
	p->hi = hi;
	p->want = want;
	return p;
}

void gp_ports_destroy(gp_ports_t **pp)
{
	if (!pp || !*pp)
		return;
	gp_ports_t *p = *pp;
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
	free(p->v);
	free(p);
	*pp = NULL;
}

int gp_ports_parse_range(const char *s, uint32_t *lo, uint32_t *hi, gp_error_t *err)
{
	char *end;
	errno = 0;
	unsigned long a = strtoul(s, &end, 10);
	if (end == s || *end != '-' || errno)
		return gp_errprintf(err, "invalid port range '%s' (LO-HI)", s);
	const char *s2 = end + 1;
	unsigned long b = strtoul(s2, &end, 10);
	if (end == s2 || *end || errno || a < 1024 || b > 65535 || a > b)
		return gp_errprintf(err, "invalid port range '%s' (LO-HI within 1024-65535)", s);
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return 0;
}

/* Bind port on every address, IPv6 and IPv4 alike where the kernel has IPv6. Without
 * SO_REUSEADDR the bind excludes every other socket on the port, listening or not; without
 * listen() a peer that connects early is refused, not queued. -1 when the port is taken. */
static int hold(uint32_t port)
{
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		int off = 0;
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
					  .sin6_port = htons((uint16_t)port),
					  .sin6_addr = IN6ADDR_ANY_INIT};
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0 &&
		    bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e == EADDRINUSE)
			return -1;
	}
	/* no IPv6 here: IPv4 alone */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a4 = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0)
		return fd;
	close(fd);
	return -1;
}

static bool in_pool(const gp_ports_t *p, uint32_t port)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].port == port)
			return true;
	return false;
}

void gp_ports_refill(gp_ports_t *p, gp_ports_busy_f busy, void *arg, int64_t now_ms)
{
	if (now_ms < p->next_retry_ms)
		return;
	p->next_retry_ms = now_ms + RETRY_MS;
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].fd < 0 && !(busy && busy(p->v[i].port, arg)))
			p->v[i].fd = hold(p->v[i].port);
	if (p->n >= p->want || now_ms < p->next_scan_ms)
		return;
	for (uint32_t port = p->lo; port <= p->hi && p->n < p->want; port++) {
		if (in_pool(p, port) || (busy && busy(port, arg)))
			continue;
		int fd = hold(port);
		if (fd >= 0)
			p->v[p->n++] = (struct held){.port = port, .fd = fd};
	}
	p->next_scan_ms = now_ms + RESCAN_MS;
}

size_t gp_ports_held(const gp_ports_t *p, uint32_t *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; p && i < p->n && k < max; i++)
		if (p->v[i].fd >= 0)
			out[k++] = p->v[i].port;
	return k;
}

bool gp_ports_release(gp_ports_t *p, uint32_t port)
{
	for (size_t i = 0; p && i < p->n; i++) {
		if (p->v[i].port != port)
			continue;
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
		p->v[i].fd = -1;
		return true;
	}
	return false;
}
