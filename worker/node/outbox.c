/* outbox.c: sequenced, acknowledged messages from a gstepd to its agent. */
#include "worker/node/outbox.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	uint64_t seq;
	uint8_t *data;
	size_t len;
};

struct gp_outbox {
	struct entry *v;
	size_t head, n, cap; /* live entries are v[head .. head+n) */
	size_t sent;	     /* of those, the first `sent` went out */
	size_t bytes;
	uint64_t next_seq;
	uint64_t acked;
};

gp_outbox_t *gp_outbox_create(void)
{
	gp_outbox_t *o = calloc(1, sizeof(*o));
	if (o)
		o->next_seq = 1;
	return o;
}

void gp_outbox_destroy(gp_outbox_t **p)
{
	if (!p || !*p)
		return;
	gp_outbox_t *o = *p;
	for (size_t i = 0; i < o->n; i++)
		free(o->v[o->head + i].data);
	free(o->v);
	free(o);
	*p = NULL;
}

int gp_outbox_push(gp_outbox_t *o, Gpool__Msg *m)
{
	if (o->head + o->n == o->cap) {
		if (o->head > o->cap / 2) {
			memmove(o->v, o->v + o->head, o->n * sizeof(*o->v));
			o->head = 0;
		} else {
			size_t nc = o->cap ? o->cap * 2 : 64;
			struct entry *nv = realloc(o->v, nc * sizeof(*nv));
			if (!nv)
				return -1;
			o->v = nv;
			o->cap = nc;
		}
	}
	m->id = o->next_seq;
	/* kept as a batch member (common/wire.h), ready to go into any batch */
	size_t len;
	uint8_t *d = gp_batch_member(m, &len);
	if (!d)
		return -1;
	o->v[o->head + o->n++] = (struct entry){o->next_seq++, d, len};
	o->bytes += len;
	return 0;
}

int gp_outbox_fill(gp_outbox_t *o, gp_batch_t *b, size_t max_bytes)
{
	int k = 0;
	size_t used = 0;
	for (size_t i = o->sent; i < o->n; i++) {
		struct entry *e = &o->v[o->head + i];
		if (k > 0 && used + e->len > max_bytes)
			break;
		if (gp_batch_add_member(b, e->data, e->len) < 0)
			break;
		used += e->len;
		k++;
	}
	return k;
}

void gp_outbox_sent(gp_outbox_t *o, int n)
{
	o->sent += (size_t)n;
	if (o->sent > o->n)
		o->sent = o->n;
}

void gp_outbox_ack(gp_outbox_t *o, uint64_t upto)
{
	while (o->n && o->v[o->head].seq <= upto) {
		struct entry *e = &o->v[o->head];
		o->bytes -= e->len;
		free(e->data);
		o->head++;
		o->n--;
		if (o->sent)
			o->sent--;
	}
	if (upto > o->acked)
		o->acked = upto < o->next_seq ? upto : o->next_seq - 1;
	if (!o->n)
		o->head = 0;
}

void gp_outbox_rewind(gp_outbox_t *o)
{
	o->sent = 0;
}

size_t gp_outbox_count(const gp_outbox_t *o)
{
	return o->n;
}

size_t gp_outbox_bytes(const gp_outbox_t *o)
{
	return o->bytes;
}

size_t gp_outbox_unsent(const gp_outbox_t *o)
{
	return o->n - o->sent;
}

uint64_t gp_outbox_acked(const gp_outbox_t *o)
{
	return o->acked;
}
