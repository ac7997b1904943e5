/* sysinfo.h: what this PC has to offer: name, CPUs, memory, load, and the address other
 * nodes reach it at. */
#ifndef GPOOL_WORKER_SYSINFO_H
#define GPOOL_WORKER_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* The host name. 0 / -1. */
int gp_sys_hostname(char *buf, size_t len);
/* Online CPUs (at least 1). */
uint32_t gp_sys_cpus(void);
/* MemTotal and MemAvailable in MiB (0 when unknown). */
uint64_t gp_sys_mem_total_mb(void);
uint64_t gp_sys_mem_avail_mb(void);
double gp_sys_load1(void);
/* The local address of the route to the host of a ZeroMQ endpoint ("tcp://host:port"),
 * found by connect()ing a UDP socket (no packet is sent). 0 / -1 with err. */
int gp_sys_route_addr(const char *endpoint, char *buf, size_t len, gp_error_t *err);
/* The name of the network interface that carries addr (an IPv4 or IPv6 address in text) and
 * its subnet as ADDR/BITS, found with getifaddrs: what GLOO_SOCKET_IFNAME and friends must
 * name so that ranks talk over the network that joins the nodes. 0 / -1 with err (no
 * interface has addr). */
int gp_sys_iface_of(const char *addr, char *name, size_t nlen, char *subnet, size_t slen,
		    gp_error_t *err);

#endif
