/* ports.c: the agent's offer of master ports (see ports.h). */
#include "worker/node/ports.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_MS     1000 /* how often the range is searched again */
#define MAX_RESERVED 64

struct gp_ports {
	uint32_t lo, hi;
	size_t want, n;
	uint32_t *free; /* found free at the last probe */
	int64_t next_probe_ms;
	struct {
		uint32_t port;
		int fd;
	} res[MAX_RESERVED]; /* bound for a launch under way */
	size_t nres;
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
	if (!p || !(p->free = calloc(want, sizeof(*p->free)))) {
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
	for (size_t i = 0; i < p->nres; i++)
		close(p->res[i].fd);
	free(p->free);
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

bool gp_ports_overlap_ephemeral(uint32_t lo, uint32_t hi)
{
	unsigned elo = 32768, ehi = 60999; /* the kernel's default */
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	if (f) {
		if (fscanf(f, "%u %u", &elo, &ehi) != 2)
			elo = 32768, ehi = 60999;
		fclose(f);
	}
	return lo <= ehi && hi >= elo;
}

/* Bind port on every address, IPv6 and IPv4 alike where the kernel has IPv6. Without
 * SO_REUSEADDR the bind excludes every other socket on the port, listening or not; without
 * listen() a peer that connects early is refused, not queued. -1 when the port is taken. */
static int bind_port(uint32_t port)
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
		if (e == EADDRINUSE) {
			errno = e;
			return -1;
		}
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
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

static bool reserved(const gp_ports_t *p, uint32_t port)
{
	for (size_t i = 0; i < p->nres; i++)
		if (p->res[i].port == port)
			return true;
	return false;
}

void gp_ports_refill(gp_ports_t *p, gp_ports_busy_f busy, void *arg, int64_t now_ms)
{
	if (now_ms < p->next_probe_ms)
		return;
	p->next_probe_ms = now_ms + PROBE_MS;
	p->n = 0;
	for (uint32_t port = p->lo; port <= p->hi && p->n < p->want; port++) {
		if (reserved(p, port) || (busy && busy(port, arg)))
			continue;
		int fd = bind_port(port);
		if (fd < 0)
			continue;
		close(fd); /* found free; held by nothing until a launch reserves it */
		p->free[p->n++] = port;
	}
}

size_t gp_ports_held(const gp_ports_t *p, uint32_t *out, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; p && i < p->n && k < max; i++)
		out[k++] = p->free[i];
	return k;
}

int gp_ports_reserve(gp_ports_t *p, uint32_t port)
{
	if (!p || p->nres == MAX_RESERVED) {
		errno = ENOSPC;
		return -1;
	}
	if (reserved(p, port))
		return 0;
	int fd = bind_port(port);
	if (fd < 0)
		return -1;
	p->res[p->nres].port = port;
	p->res[p->nres++].fd = fd;
	for (size_t i = 0; i < p->n; i++)
		if (p->free[i] == port) {
			p->free[i] = p->free[--p->n];
			break;
		}
	return 0;
}

bool gp_ports_release(gp_ports_t *p, uint32_t port)
{
	for (size_t i = 0; p && i < p->nres; i++) {
		if (p->res[i].port != port)
			continue;
		close(p->res[i].fd);
		p->res[i] = p->res[--p->nres];
		return true;
	}
	return false;
}

size_t gp_ports_bound(const gp_ports_t *p)
{
	return p ? p->nres : 0;
}
