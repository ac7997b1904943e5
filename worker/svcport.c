/* svcport.c: picking a free port for a service replica (see svcport.h). */
#include "worker/svcport.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bind port on every IPv4 address (0: the kernel picks); the port bound, 0 if it failed. */
static uint32_t try_bind(uint32_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(sa);
	uint32_t got = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		got = ntohs(sa.sin_port);
	int e = errno;
	close(fd);
	errno = e;
	return got;
}

static bool is_taken(uint32_t p, const uint32_t *taken, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (taken[i] == p)
			return true;
	return false;
}

uint32_t gp_svcport_pick(uint32_t wish, const uint32_t *taken, size_t ntaken)
{
	for (uint32_t p = wish; wish && p < wish + 100 && p <= 65535; p++)
		if (!is_taken(p, taken, ntaken) && try_bind(p))
			return p;
	for (int i = 0; i < 64; i++) {
		uint32_t p = try_bind(0);
		if (p && !is_taken(p, taken, ntaken))
			return p;
	}
	if (!errno)
		errno = EADDRINUSE;
	return 0;
}
