/* outkeep.c: forwarded output kept until the scheduler answers for it (outkeep.h). */
#include "worker/agent/outkeep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/wire.h"

struct kept {
	uint8_t *packed;
	size_t len;
	uint64_t mark; /* the first message sent after it (0: none yet) */
};

struct outkeep {
	struct kept *v; /* oldest first, from v[head] */
	size_t head, n, cap;
	size_t bytes;
	uint64_t dropped; /* given up since the last report */
};

struct outkeep *outkeep_create(void)
{
	return calloc(1, sizeof(struct outkeep));
}

static void drop_first(struct outkeep *k)
{
	struct kept *e = &k->v[k->head];
	k->bytes -= e->len;
	free(e->packed);
	k->head++;
	k->n--;
	if (!k->n)
		k->head = 0;
}

void outkeep_destroy(struct outkeep **pk)
{
	struct outkeep *k = pk ? *pk : NULL;
	if (!k)
		return;
	while (k->n)
		drop_first(k);
	free(k->v);
	free(k);
	*pk = NULL;
}

const uint8_t *outkeep_add(struct outkeep *k, const Gpool__Msg *m, size_t *lenp)
{
	size_t len;
	uint8_t *p = gp_batch_member(m, &len);
	if (!p)
		return errno = ENOMEM, NULL;
	if (len > OUTKEEP_MAX) {
		free(p);
		return errno = EMSGSIZE, NULL;
	}
	while (k->n && k->bytes + len > OUTKEEP_MAX) {
		drop_first(k);
		if (!k->dropped++)
			gp_warn("over %u MiB of output not yet answered for by the scheduler: the "
				"oldest is not kept for a resend",
				OUTKEEP_MAX >> 20);
	}
	if (k->head && k->head + k->n == k->cap) { /* room at the front: move down */
		memmove(k->v, k->v + k->head, k->n * sizeof(*k->v));
		k->head = 0;
	}
	if (k->n == k->cap) {
		size_t nc = k->cap ? 2 * k->cap : 64;
		struct kept *nv = realloc(k->v, nc * sizeof(*nv));
		if (!nv) {
			free(p);
			return errno = ENOMEM, NULL;
		}
		k->v = nv;
		k->cap = nc;
	}
	k->v[k->head + k->n++] = (struct kept){p, len, 0};
	k->bytes += len;
	*lenp = len;
	return p;
}

void outkeep_mark(struct outkeep *k, uint64_t msg_id)
{
	/* the unmarked ones are the newest */
	for (size_t i = k->n; i > 0 && !k->v[k->head + i - 1].mark; i--)
		k->v[k->head + i - 1].mark = msg_id;
}

void outkeep_answered(struct outkeep *k, uint64_t msg_id)
{
	while (k->n && k->v[k->head].mark && k->v[k->head].mark <= msg_id)
		drop_first(k);
}

void outkeep_each(struct outkeep *k, void (*fn)(void *arg, const uint8_t *member, size_t len),
		  void *arg)
{
	k->dropped = 0;
	for (size_t i = 0; i < k->n; i++) {
		struct kept *e = &k->v[k->head + i];
		e->mark = 0; /* sent again: the next message's answer covers it */
		fn(arg, e->packed, e->len);
	}
}

size_t outkeep_bytes(const struct outkeep *k)
{
	return k ? k->bytes : 0;
}
