/* quorum.c: the pool's members and its majority (quorum.h). */
#include "scheduler/core/quorum.h"

#include <errno.h>
#include <stdlib.h>

#include "scheduler/core/nodes.h"

static bool member(const struct node *n)
{
	return n->state != GPOOL__NODE_STATE__NODE_DOWN;
}

void quorum_count(struct nodes *ns, int64_t now, int64_t timeout_ms, struct quorum *q)
{
	q->heard = q->members = 0;
	for (int i = 0; i < nodes_count(ns); i++) {
		const struct node *n = nodes_get(ns, i);
		if (!member(n))
			continue;
		q->members++;
		/* a placeholder (a running job's node, not back yet) was never heard */
		if (n->registered && now - n->last_heard_ms <= timeout_ms)
			q->heard++;
	}
	for (size_t i = 0; i < nodes_expected_count(ns); i++)
		if (nodes_expected_member(ns, i))
			q->members++;
}

bool quorum_held(const struct quorum *q)
{
	return q->members > 0 && 2 * q->heard >= q->members;
}

int quorum_members(struct nodes *ns, Gpool__PoolMembers *out)
{
	gpool__pool_members__init(out);
	size_t cap = (size_t)nodes_count(ns) + nodes_expected_count(ns);
	Gpool__PoolMember *v = calloc(cap ? cap : 1, sizeof(*v));
	Gpool__PoolMember **pv = calloc(cap ? cap : 1, sizeof(*pv));
	if (!v || !pv) {
		free(v);
		free(pv);
		return errno = ENOMEM, -1;
	}
	size_t k = 0;
	for (int i = 0; i < nodes_count(ns); i++) {
		struct node *n = nodes_get(ns, i);
		if (!member(n))
			continue;
		gpool__pool_member__init(&v[k]);
		v[k].name = n->name;
		v[k].peer_endpoint = n->peer_ep ? n->peer_ep : "";
		pv[k] = &v[k];
		k++;
	}
	for (size_t i = 0; i < nodes_expected_count(ns); i++) {
		const char *name = nodes_expected_member(ns, i);
		if (!name)
			continue;
		gpool__pool_member__init(&v[k]);
		v[k].name = (char *)name;
		v[k].peer_endpoint = "";
		pv[k] = &v[k];
		k++;
	}
	if (!k)
		free(v); /* nothing points at it */
	out->members = pv;
	out->n_members = k;
	out->version = quorum_members_version(ns);
	return 0;
}

void quorum_members_free(Gpool__PoolMembers *out)
{
	if (out->n_members)
		free(out->members[0]);
	free(out->members);
	out->members = NULL;
	out->n_members = 0;
}

/* FNV-1a over a string and its terminating NUL */
static uint64_t fnv(uint64_t h, const char *s)
{
	do {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	} while (*s++);
	return h;
}

uint64_t quorum_members_version(struct nodes *ns)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < nodes_count(ns); i++) {
		const struct node *n = nodes_get(ns, i);
		if (member(n))
			h = fnv(fnv(h, n->name), n->peer_ep ? n->peer_ep : "");
	}
	for (size_t i = 0; i < nodes_expected_count(ns); i++) {
		const char *name = nodes_expected_member(ns, i);
		if (name)
			h = fnv(fnv(h, name), "");
	}
	return h ? h : 1;
}
