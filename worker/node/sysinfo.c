/* sysinfo.c: node resources from /proc and the kernel. */
#include "worker/node/sysinfo.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int gp_sys_hostname(char *buf, size_t len)
{
	if (gethostname(buf, len) < 0)
		return -1;
	buf[len - 1] = '\0';
	char *dot = strchr(buf, '.');
	if (dot)
		*dot = '\0';
	return 0;
}

uint32_t gp_sys_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (uint32_t)n : 1;
}

static uint64_t meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return 0;
	char line[256];
	size_t kl = strlen(key);
	uint64_t v = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoull(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

uint64_t gp_sys_mem_total_mb(void)
{
	return meminfo_kb("MemTotal") / 1024;
}

uint64_t gp_sys_mem_avail_mb(void)
{
	return meminfo_kb("MemAvailable") / 1024;
}

double gp_sys_load1(void)
{
	double l[1];
	return getloadavg(l, 1) == 1 ? l[0] : 0.0;
}

int gp_sys_route_addr(const char *endpoint, char *buf, size_t len, gp_error_t *err)
{
	char host[256], port[16] = "7820";
	const char *p = strstr(endpoint, "://");
	if (!p || strncmp(endpoint, "tcp", 3) != 0)
		return gp_errprintf(err, "scheduler endpoint '%s' is not tcp://host:port",
				    endpoint);
	p += 3;
	const char *colon = strrchr(p, ':');
	size_t hl = colon ? (size_t)(colon - p) : strlen(p);
	if (hl == 0 || hl >= sizeof(host))
		return gp_errprintf(err, "no host in scheduler endpoint '%s'", endpoint);
	memcpy(host, p, hl);
	host[hl] = '\0';
	if (host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	if (colon)
		snprintf(port, sizeof(port), "%s", colon + 1);
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai = NULL;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
		return gp_errprintf(err, "cannot resolve '%s': %s", host, gai_strerror(rc));
	int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return gp_errprintf(err, "no route to '%s': %s", host, strerror(e));
	}
	close(fd);
	freeaddrinfo(ai);
	const void *a = ss.ss_family == AF_INET6
			    ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
			    : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
	if (!inet_ntop(ss.ss_family, a, buf, (socklen_t)len))
		return gp_errprintf(err, "cannot format the local address: %s", strerror(errno));
	return 0;
}

/* addr masked by mask (len bytes), and the mask's length in bits. */
static int mask_bits(uint8_t *addr, const uint8_t *mask, size_t len)
{
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		addr[i] &= mask[i];
		bits += __builtin_popcount(mask[i]);
	}
	return bits;
}

int gp_sys_iface_of(const char *addr, char *name, size_t nlen, char *subnet, size_t slen,
		    gp_error_t *err)
{
	uint8_t want[16];
	int fam = inet_pton(AF_INET, addr, want) == 1	 ? AF_INET
		  : inet_pton(AF_INET6, addr, want) == 1 ? AF_INET6
							 : 0;
	if (!fam)
		return gp_errprintf(err, "'%s' is not an IP address", addr);
	size_t alen = fam == AF_INET ? 4 : 16;
	struct ifaddrs *ifa = NULL;
	if (getifaddrs(&ifa) < 0)
		return gp_errprintf(err, "getifaddrs: %s", strerror(errno));
	int rc = -1;
	for (struct ifaddrs *i = ifa; i && rc < 0; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != fam || !i->ifa_name)
			continue;
		const void *have =
		    fam == AF_INET ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
				   : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if (memcmp(have, want, alen) || strlen(i->ifa_name) >= nlen)
			continue;
		snprintf(name, nlen, "%s", i->ifa_name);
		uint8_t net[16], full[16];
		memcpy(net, want, alen);
		memset(full, 0xff, sizeof(full));
		const void *mask =
		    !i->ifa_netmask ? (const void *)full
		    : fam == AF_INET
			? (const void *)&((struct sockaddr_in *)i->ifa_netmask)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)i->ifa_netmask)->sin6_addr;
		int bits = mask_bits(net, mask, alen);
		char text[INET6_ADDRSTRLEN];
		if (!inet_ntop(fam, net, text, sizeof(text)) ||
		    snprintf(subnet, slen, "%s/%d", text, bits) >= (int)slen)
			subnet[0] = '\0';
		rc = 0;
	}
	freeifaddrs(ifa);
	if (rc < 0)
		gp_errprintf(err, "no network interface has the address %s", addr);
	return rc;
}
