/* peers.h: how a node's exec-proxy is named. A proxy publishes one line through the job's
 * rendezvous, and rank 0's leader writes the lines of all of them into a file (mode 0600)
 * that gpool-rsh reads:
 *
 *     NODE ADDR PORT SLOTS
 *
 * NODE the node's name (as in GPOOL_NODELIST), ADDR:PORT where its proxy listens, SLOTS the
 * job's tasks on that node. No secret: a client proves it is the job's owner to the proxy with
 * a MUNGE credential (launch/proxyauth.h), so nothing here needs hiding.
 */
#ifndef GPOOL_LAUNCH_PEERS_H
#define GPOOL_LAUNCH_PEERS_H

#include <stddef.h>
#include <stdint.h>

#define GP_PEER_NAME_MAX 64

struct gp_peer {
	char node[GP_PEER_NAME_MAX];
	char addr[64];
	uint16_t port;
	uint32_t slots;
};

/* Parse one line (a trailing newline is fine). 0 / -1 with EINVAL. */
int gp_peer_parse(const char *line, size_t len, struct gp_peer *p);
/* Format p as a line with its newline. The length, or -1 (ENOSPC) when buf is too small. */
int gp_peer_format(const struct gp_peer *p, char *buf, size_t len);
/* Find node's line in the file at path. 0, or -1 with ENOENT (no such node) or the file's
 * errno. */
int gp_peers_find(const char *path, const char *node, struct gp_peer *p);

#endif
