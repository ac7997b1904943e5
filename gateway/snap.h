/* snap.h: gschedd's answer to a ServiceQuery as the loop's snapshot: every replica listed,
 * ready or not (snap.c). */
#ifndef GPOOL_GATEWAY_SNAP_H
#define GPOOL_GATEWAY_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

/* One service's replicas as gschedd sent them (discovery thread -> loop): all of them, ready
 * or not. */
struct gw_snap_rep {
	uint64_t job_id;
	uint32_t index;
	uint32_t restarts;
	bool running;  /* state RUNNING: this attempt has not ended (its port may be unknown) */
	bool ready;    /* running, port known, node up, addr resolved: may take requests */
	char addr[64]; /* numeric; "" unless ready */
	uint16_t port; /* 0: not known (yet) */
};
struct gw_snap_svc {
	uint64_t id;
	char name[257];
	char user[64]; /* its owner */
	char health_path[1025];
	char route_hash[65]; /* ServiceInfo.route_token_sha256 */
	bool keep_prefix;    /* ServiceInfo.route_keep_prefix: /svc/NAME/ stays in the target */
	struct gw_snap_rep *reps;
	size_t nreps;
};
struct gw_snap {
	struct gw_snap_svc *svcs;
	size_t nsvcs;
};
/* addr (a name or a numeric address) as a numeric address into out; 0 / -1 */
typedef int (*gw_resolve_f)(const char *addr, char *out, size_t n);
/* snap.c: the snapshot of a reply (NULL: out of memory); names resolved with resolve */
struct gw_snap *gw_snap_of(const Gpool__ServiceQueryReply *rep, gw_resolve_f resolve);
void gw_snap_free(struct gw_snap *s);

#endif
