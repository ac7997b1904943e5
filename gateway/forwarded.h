/* forwarded.h: what a replica is told of the client (X-Forwarded-For). A client can write any
 * header it likes: its own X-Forwarded-For, Forwarded and X-Real-IP lines are dropped and
 * X-Forwarded-For is set to the address ggated saw, so that a replica that logs or limits by it
 * sees the real peer. Only a front proxy ggated is told to trust (--trust-forwarded ADDR[/BITS],
 * ...) has its X-Forwarded-For kept, with its own address appended (as each proxy on the way
 * does); its Forwarded and X-Real-IP lines are kept too. */
#ifndef GPOOL_GATEWAY_FORWARDED_H
#define GPOOL_GATEWAY_FORWARDED_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "http/buf.h"

#define GW_TRUST_MAX 64 /* entries of --trust-forwarded */

/* The front proxies whose X-Forwarded-For is kept: addresses or prefixes, IPv4 or IPv6. */
struct gw_trust {
	struct {
		int family; /* AF_INET, AF_INET6 */
		unsigned char addr[16];
		unsigned bits;
	} net[GW_TRUST_MAX];
	size_t n;
};

/* Add "ADDR[/BITS],..." (numeric addresses) to t. 0 / -1 with err filled (t as before). */
int gw_trust_parse(struct gw_trust *t, const char *list, gp_error_t *err);
/* Whether numeric address addr is one of t's. */
bool gw_trust_has(const struct gw_trust *t, const char *addr);

/* The end-to-end header lines hdrs[0..len) ("Name: value\r\n" each, as http/msg.c keeps them)
 * onto out as the replica gets them: the client's forwarding lines dropped (trusted: kept)
 * and "X-Forwarded-For: [THEIRS, ]peer" added. 0 / -1 ENOMEM. */
int gw_forwarded_headers(const char *hdrs, size_t len, const char *peer, bool trusted,
			 struct gh_buf *out);

#endif
