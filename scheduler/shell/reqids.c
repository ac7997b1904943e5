/* reqids.c: a mutating request applied once per request id (see reqids.h). */
#include "scheduler/shell/reqids.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/orders.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_reqid.h"

/* Prune the kept ids every this many new ones (and at the first). */
#define PRUNE_EVERY 256

bool reqids_answer(struct req *r)
{
	const ProtobufCBinaryData *id = &r->msg->request_id;
	if (!id->len)
		return false;
	if (id->len != REQID_LEN) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"invalid request id (%zu bytes)", id->len);
		return true;
	}
	uint8_t *kept;
	size_t len;
	int rc = store_reqid_get(r->s->store, r->from.uid, id->data, id->len, &kept, &len);
	if (rc <= 0)
		return false; /* an error reading it: applied as a new request */
	Gpool__Msg *m = gpool__msg__unpack(NULL, len, kept);
	free(kept);
	if (!m) {
		gp_warn("kept reply of a request id of uid %u is damaged: applied again",
			(unsigned)r->from.uid);
		return false;
	}
	gp_info("request id of uid %u seen before: answered with its first reply",
		(unsigned)r->from.uid);
	m->id = r->msg->id;
	/* durable: when the first is still in the open transaction, its answer waits for it */
	req_reply(r, m, true);
	gpool__msg__free_unpacked(m, NULL);
	return true;
}

static bool worth_retrying(const Gpool__Msg *m)
{
	if (m->m_case != GPOOL__MSG__M_ERROR || !m->error)
		return false;
	switch (m->error->code) {
	case GPOOL__ERROR_CODE__ERROR_UNAVAILABLE:
	case GPOOL__ERROR_CODE__ERROR_RATE:
	case GPOOL__ERROR_CODE__ERROR_NOT_LEADER:
		return true;
	default:
		return false;
	}
}

void reqids_record(struct req *r, size_t mark)
{
	const ProtobufCBinaryData *id = &r->msg->request_id;
	if (id->len != REQID_LEN)
		return;
	static unsigned puts;
	struct orders *o = r->s->orders;
	for (size_t i = mark; i < orders_count(o); i++) {
		const struct order *od = orders_at(o, i);
		if (od->kind != ORDER_REPLY || od->rid_len != r->rid_len ||
		    memcmp(od->rid, r->rid, r->rid_len) != 0)
			continue;
		Gpool__Msg *m = order_msg(od);
		if (!m || m->id != r->msg->id) {
			if (m)
				gpool__msg__free_unpacked(m, NULL);
			continue;
		}
		if (!worth_retrying(m)) {
			m->id = 0;
			size_t len = gpool__msg__get_packed_size(m);
			uint8_t *buf = malloc(len ? len : 1);
			if (buf) {
				gpool__msg__pack(m, buf);
				double now = gp_now();
				if (store_reqid_put(r->s->store, r->from.uid, id->data, id->len,
						    buf, len, now) < 0)
					gp_warn("cannot keep a request id: %s", strerror(errno));
				else if (!r->s->txn_first_ms)
					r->s->txn_first_ms = gp_mono_ms();
				if (puts++ % PRUNE_EVERY == 0)
					store_reqid_prune(r->s->store, now - REQID_KEEP_SEC,
							  REQID_KEEP_MAX);
				free(buf);
			}
		}
		gpool__msg__free_unpacked(m, NULL);
		return;
	}
}
