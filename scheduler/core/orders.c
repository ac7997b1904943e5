/* orders.c: the core's order queue (orders.h). */
#include "scheduler/core/orders.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/names.h"
#include "common/wire.h"
#include "scheduler/core/gschedd.h"

struct orders {
	struct order *v;
	size_t n, cap;
};

struct orders *orders_create(void)
{
	return calloc(1, sizeof(struct orders));
}

void orders_destroy(struct orders **o)
{
	if (!o || !*o)
		return;
	orders_clear(*o);
	free((*o)->v);
	free(*o);
	*o = NULL;
}

static struct order *append(struct orders *o, enum order_kind kind)
{
	if (o->n == o->cap) {
		size_t nc = o->cap ? o->cap * 2 : 64;
		struct order *nv = realloc(o->v, nc * sizeof(*nv));
		if (!nv)
			return NULL;
		o->v = nv;
		o->cap = nc;
	}
	struct order *od = &o->v[o->n];
	memset(od, 0, sizeof(*od));
	od->kind = kind;
	od->node = -1;
	return od;
}

int orders_send(struct orders *o, int node, const Gpool__Msg *m)
{
	struct order *od = append(o, ORDER_SEND);
	if (!od || !(od->msg = gp_batch_member(m, &od->msg_len)))
		return -1;
	od->node = node;
	od->durable = true; /* an order to an agent follows from what is being saved */
	o->n++;
	return 0;
}

int orders_launch(struct orders *o, uint64_t job, uint32_t attempt)
{
	struct order *od = append(o, ORDER_LAUNCH);
	if (!od)
		return -1;
	od->job = job;
	od->attempt = attempt;
	o->n++;
	return 0;
}

int orders_reply(struct orders *o, const uint8_t *rid, size_t rid_len, const Gpool__Msg *m,
		 bool durable)
{
	struct order *od = append(o, ORDER_REPLY);
	if (!od || !(od->rid = malloc(rid_len ? rid_len : 1)))
		return -1;
	if (!(od->msg = gp_batch_member(m, &od->msg_len))) {
		free(od->rid);
		return -1;
	}
	memcpy(od->rid, rid, rid_len);
	od->rid_len = rid_len;
	od->durable = durable;
	o->n++;
	return 0;
}

int orders_save_job(struct orders *o, uint64_t job)
{
	/* a job saved twice in a row (a task's exit, then the job's end) is written once */
	if (o->n && o->v[o->n - 1].kind == ORDER_SAVE_JOB && o->v[o->n - 1].job == job)
		return 0;
	struct order *od = append(o, ORDER_SAVE_JOB);
	if (!od)
		return -1;
	od->job = job;
	o->n++;
	return 0;
}

int orders_insert_job(struct orders *o, uint64_t job, const uint8_t *spec, size_t len)
{
	struct order *od = append(o, ORDER_INSERT_JOB);
	if (!od || !(od->msg = malloc(len ? len : 1)))
		return -1;
	memcpy(od->msg, spec, len);
	od->msg_len = len;
	od->job = job;
	o->n++;
	return 0;
}

int orders_save_node(struct orders *o, int node)
{
	struct order *od = append(o, ORDER_SAVE_NODE);
	if (!od)
		return -1;
	od->node = node;
	o->n++;
	return 0;
}

int orders_node_member(struct orders *o, int node, bool known, bool member)
{
	struct order *od = append(o, ORDER_NODE_MEMBER);
	if (!od)
		return -1;
	od->node = node;
	od->known = known;
	od->member = member;
	o->n++;
	return 0;
}

int orders_trust_node(struct orders *o, int node)
{
	struct order *od = append(o, ORDER_TRUST_NODE);
	if (!od)
		return -1;
	od->node = node;
	o->n++;
	return 0;
}

size_t orders_count(const struct orders *o)
{
	return o->n;
}

const struct order *orders_at(const struct orders *o, size_t i)
{
	return i < o->n ? &o->v[i] : NULL;
}

Gpool__Msg *order_msg(const struct order *od)
{
	if (od->kind != ORDER_SEND && od->kind != ORDER_REPLY)
		return NULL;
	Gpool__Batch *b = gpool__batch__unpack(NULL, od->msg_len, od->msg);
	if (!b)
		return NULL;
	Gpool__Msg *m = NULL;
	if (b->n_msgs == 1) { /* take it out of the batch */
		m = b->msgs[0];
		b->msgs[0] = NULL;
		b->n_msgs = 0;
	}
	gpool__batch__free_unpacked(b, NULL);
	return m;
}

void orders_clear(struct orders *o)
{
	orders_release(o->v, o->n);
	o->n = 0;
}

struct order *orders_take(struct orders *o)
{
	struct order *v = o->v;
	o->v = NULL;
	o->n = o->cap = 0;
	return v;
}

void orders_release(struct order *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].rid);
		free(v[i].msg);
	}
}

int req_reply(struct req *r, Gpool__Msg *m, bool durable)
{
	return orders_reply(r->s->orders, r->rid, r->rid_len, m, durable);
}

int req_reply_error(struct req *r, Gpool__ErrorCode code, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	Gpool__Msg m;
	Gpool__Error e;
	gp_msg_error(&m, &e, r->msg ? r->msg->id : 0, code, text);
	return req_reply(r, &m, false);
}
