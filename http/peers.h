/* peers.h: open connections counted per source address, for http/'s connection caps
 * (gh_limits.max_conns_per_addr). A hash table of the addresses that hold a connection now:
 * an accept costs one lookup whatever the number of clients. */
#ifndef GPOOL_HTTP_PEERS_H
#define GPOOL_HTTP_PEERS_H

#include <stddef.h>
#include <sys/socket.h>

typedef struct gh_peers gh_peers_t;

/* a source address as counted: IPv4, IPv6 (a v4-mapped one counts as its IPv4) */
struct gh_peer_addr {
	unsigned char b[16];
	unsigned char len; /* 4 or 16; 0: not an IP address (a socketpair), never counted */
};

void gh_peer_addr_of(const struct sockaddr *sa, struct gh_peer_addr *a);

gh_peers_t *gh_peers_create(void);
void gh_peers_destroy(gh_peers_t **p);
/* One more connection from a, unless it holds max already: its count then, or -1 with
 * errno EBUSY (at the cap) or ENOMEM. */
int gh_peers_add(gh_peers_t *p, const struct gh_peer_addr *a, size_t max);
/* a connection from a has closed */
void gh_peers_del(gh_peers_t *p, const struct gh_peer_addr *a);

#endif
