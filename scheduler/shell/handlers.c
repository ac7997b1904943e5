/* handlers.c: which message goes to which handler, and who may send it: the table of
 * gschedd's message endpoint (common/endpoint.h, over net.c's socket). */
#include <string.h>

#include "common/endpoint.h"

#include "scheduler/core/agent.h"
#include "scheduler/shell/client.h"
#include "scheduler/shell/effects.h"
#include "scheduler/features/files.h"
#include "scheduler/core/gschedd.h"
#include "common/log.h"
#include "scheduler/features/metrics.h"
#include "scheduler/shell/net.h"
#include "scheduler/core/nodes.h"
#include "scheduler/features/rdv.h"
#include "scheduler/shell/reqids.h"
#include "scheduler/features/service.h"
#include "scheduler/features/share.h"
#include "scheduler/features/share_set.h"

/* The scheduler's handlers take a struct req: one adapter each, so the table below stays the
 * endpoint's (common/endpoint.h). */
#define VIA(fn)                                                                                    \
	static void via_##fn(void *arg, void *peer, const Gpool__Msg *m)                           \
	{                                                                                          \
		struct req *r = peer;                                                              \
		r->msg = (Gpool__Msg *)m;                                                          \
		fn(r);                                                                             \
		effects_carry_out(r->s);                                                           \
	}
/* A mutating request: applied once per request id (reqids.h). */
#define VIA_ONCE(fn)                                                                               \
	static void via_##fn(void *arg, void *peer, const Gpool__Msg *m)                           \
	{                                                                                          \
		struct req *r = peer;                                                              \
		r->msg = (Gpool__Msg *)m;                                                          \
		if (!reqids_answer(r)) {                                                           \
			size_t mark = orders_count(r->s->orders);                                  \
			fn(r);                                                                     \
			reqids_record(r, mark);                                                    \
		}                                                                                  \
		effects_carry_out(r->s);                                                           \
	}
VIA(agent_heartbeat)
VIA(agent_task_event)
VIA(agent_output)
VIA(client_submit)
VIA(client_job_query)
VIA_ONCE(client_job_control)
VIA(client_node_query)
VIA_ONCE(client_node_control)
VIA(client_log_query)
VIA(client_watch)
VIA_ONCE(client_card_report)
VIA(rdv_put)
VIA(rdv_get)
VIA(rdv_fence)
VIA(files_chunk_have)
VIA(files_chunk_put)
VIA(files_chunk_get)
VIA_ONCE(files_set_put)
VIA(files_set_get)
VIA(metrics_query)
VIA(metrics_history)
VIA(client_service_query)
VIA(client_share_query)
VIA_ONCE(client_share_set)

/* a registration changes which node this routing id belongs to */
static void via_agent_register(void *arg, void *peer, const Gpool__Msg *m)
{
	struct req *r = peer;
	r->msg = (Gpool__Msg *)m;
	agent_register(r);
	effects_carry_out(r->s);
	r->node = nodes_find_rid(r->s->nodes, r->rid, r->rid_len);
}

/* GP_EP_PEER: only the agents' account (agent_uid) */
static const struct gp_ep_handler handlers[] = {
    {GPOOL__MSG__M_NODE_REGISTER, GP_EP_PEER, via_agent_register, "node_register"},
    {GPOOL__MSG__M_HEARTBEAT, GP_EP_PEER, via_agent_heartbeat, "heartbeat"},
    {GPOOL__MSG__M_TASK_EVENT, GP_EP_PEER, via_agent_task_event, "task_event"},
    {GPOOL__MSG__M_OUTPUT, GP_EP_PEER, via_agent_output, "output"},
    {GPOOL__MSG__M_SUBMIT, GP_EP_ANYONE, via_client_submit, "submit"},
    {GPOOL__MSG__M_JOB_QUERY, GP_EP_ANYONE, via_client_job_query, "job_query"},
    {GPOOL__MSG__M_JOB_CONTROL, GP_EP_ANYONE, via_client_job_control, "job_control"},
    {GPOOL__MSG__M_NODE_QUERY, GP_EP_ANYONE, via_client_node_query, "node_query"},
    {GPOOL__MSG__M_NODE_CONTROL, GP_EP_ANYONE, via_client_node_control, "node_control"},
    {GPOOL__MSG__M_LOG_QUERY, GP_EP_ANYONE, via_client_log_query, "log_query"},
    {GPOOL__MSG__M_WATCH, GP_EP_ANYONE, via_client_watch, "watch"},
    {GPOOL__MSG__M_CARD_REPORT, GP_EP_ANYONE, via_client_card_report, "card_report"},
    {GPOOL__MSG__M_RDV_PUT, GP_EP_ANYONE, via_rdv_put, "rdv_put"},
    {GPOOL__MSG__M_RDV_GET, GP_EP_ANYONE, via_rdv_get, "rdv_get"},
    {GPOOL__MSG__M_RDV_FENCE, GP_EP_ANYONE, via_rdv_fence, "rdv_fence"},
    {GPOOL__MSG__M_CHUNK_HAVE, GP_EP_ANYONE, via_files_chunk_have, "chunk_have"},
    {GPOOL__MSG__M_CHUNK_PUT, GP_EP_ANYONE, via_files_chunk_put, "chunk_put"},
    {GPOOL__MSG__M_CHUNK_GET, GP_EP_ANYONE, via_files_chunk_get, "chunk_get"},
    {GPOOL__MSG__M_FILE_SET_PUT, GP_EP_ANYONE, via_files_set_put, "file_set_put"},
    {GPOOL__MSG__M_FILE_SET_GET, GP_EP_ANYONE, via_files_set_get, "file_set_get"},
    {GPOOL__MSG__M_OPS_METRICS_QUERY, GP_EP_ANYONE, via_metrics_query, "ops_metrics_query"},
    {GPOOL__MSG__M_OPS_HISTORY_QUERY, GP_EP_ANYONE, via_metrics_history, "ops_history_query"},
    {GPOOL__MSG__M_SERVICE_QUERY, GP_EP_ANYONE, via_client_service_query, "service_query"},
    {GPOOL__MSG__M_SHARE_QUERY, GP_EP_ANYONE, via_client_share_query, "share_query"},
    {GPOOL__MSG__M_SHARE_SET, GP_EP_ANYONE, via_client_share_set, "share_set"},
};

/* The request every message of the envelope being dispatched is handled as (gschedd is one
 * thread: one envelope at a time). */
static struct req current;

static int on_accept(void *arg, const struct gp_ep_envelope *e, void **peer)
{
	struct gsched *s = arg;
	current = (struct req){.s = s,
			       .rid = e->rid,
			       .rid_len = e->rid_len,
			       .from = e->from,
			       .addr = e->addr,
			       .node = nodes_find_rid(s->nodes, e->rid, e->rid_len)};
	*peer = &current;
	if (e->rid) /* opened: its credential decoded */
		net_authed(s->net, e->rid, e->rid_len);
	return 0;
}

static void on_rejected(void *arg, void *peer, const struct gp_ep_envelope *e, const Gpool__Msg *m,
			Gpool__ErrorCode code, const char *why)
{
	struct gsched *s = arg;
	struct req *r = peer;
	r->msg = (Gpool__Msg *)m;
	if (code == GPOOL__ERROR_CODE__ERROR_PERMISSION) {
		const char *name = "this message";
		for (size_t k = 0; k < sizeof(handlers) / sizeof(handlers[0]); k++)
			if (handlers[k].type == m->m_case)
				name = handlers[k].name;
		gp_warn("%s from %s signed by uid %u, not the agents' uid %u: refused", name,
			e->addr, (unsigned)e->from.uid, (unsigned)s->agent_uid);
		req_reply_error(r, code, "only the agents' account may send %s", name);
		return;
	}
	gp_warn("unknown message type %d from %s: refused", (int)m->m_case, e->addr);
	req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED, "unknown message type %d",
			(int)m->m_case);
}

static gp_endpoint_t *endpoint(struct gsched *s)
{
	gp_endpoint_t *ep = net_endpoint(s->net);
	const struct gp_ep_hooks hooks = {.accept = on_accept, .rejected = on_rejected};
	gp_endpoint_set_dispatch(ep, handlers, sizeof(handlers) / sizeof(handlers[0]), &hooks, s);
	gp_endpoint_set_peer_uid(ep, s->agent_uid);
	return ep;
}

int gsched_recv(struct gsched *s, int max)
{
	return gp_endpoint_dispatch(endpoint(s), max);
}

void handle_batch(struct gsched *s, const uint8_t *rid, size_t rid_len, const char *addr,
		  const struct gp_sender *from, Gpool__Batch *b)
{
	struct gp_ep_envelope e = {
	    .rid = rid, .rid_len = rid_len, .addr = addr, .from = *from, .batch = b};
	gp_endpoint_deliver(endpoint(s), &e);
}
