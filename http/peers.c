/* peers.c: connections counted per source address (see peers.h). */
#include "http/peers.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 1024

struct entry {
	struct entry *next;
	struct gh_peer_addr a;
	size_t n;
};

struct gh_peers {
	struct entry *b[BUCKETS];
};

void gh_peer_addr_of(const struct sockaddr *sa, struct gh_peer_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sa && sa->sa_family == AF_INET) {
		memcpy(a->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		a->len = 4;
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *v6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(v6)) {
			memcpy(a->b, v6->s6_addr + 12, 4);
			a->len = 4;
		} else {
			memcpy(a->b, v6->s6_addr, 16);
			a->len = 16;
		}
	}
}

/* FNV-1a */
static size_t slot(const struct gh_peer_addr *a)
{
	uint32_t h = 2166136261u;
	for (unsigned i = 0; i < a->len; i++)
		h = (h ^ a->b[i]) * 16777619u;
	return h % BUCKETS;
}

static struct entry **find(gh_peers_t *p, const struct gh_peer_addr *a)
{
	struct entry **e = &p->b[slot(a)];
	while (*e && ((*e)->a.len != a->len || memcmp((*e)->a.b, a->b, a->len) != 0))
		e = &(*e)->next;
	return e;
}

gh_peers_t *gh_peers_create(void)
{
	return calloc(1, sizeof(gh_peers_t));
}

void gh_peers_destroy(gh_peers_t **pp)
{
	gh_peers_t *p = pp ? *pp : NULL;
	if (!p)
		return;
	for (size_t i = 0; i < BUCKETS; i++)
		while (p->b[i]) {
			struct entry *e = p->b[i];
			p->b[i] = e->next;
			free(e);
		}
	free(p);
	*pp = NULL;
}

int gh_peers_add(gh_peers_t *p, const struct gh_peer_addr *a, size_t max)
{
	struct entry **e = find(p, a);
	if (*e) {
		if (max && (*e)->n >= max) {
			errno = EBUSY;
			return -1;
		}
		return (int)++(*e)->n;
	}
	struct entry *n = calloc(1, sizeof(*n));
	if (!n)
		return -1;
	n->a = *a;
	n->n = 1;
	*e = n;
	return 1;
}

void gh_peers_del(gh_peers_t *p, const struct gh_peer_addr *a)
{
	struct entry **e = find(p, a);
	if (!*e)
		return;
	if (--(*e)->n == 0) {
		struct entry *dead = *e;
		*e = dead->next;
		free(dead);
	}
}
