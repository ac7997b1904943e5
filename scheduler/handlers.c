/* handlers.c: which message goes to which handler, and who may send it. */
#include <string.h>

#include "scheduler/agent.h"
#include "scheduler/client.h"
#include "scheduler/files.h"
#include "scheduler/gschedd.h"
#include "common/log.h"
#include "scheduler/metrics.h"
#include "scheduler/nodes.h"
#include "scheduler/rdv.h"
#include "scheduler/service.h"

enum sender { FROM_AGENT = 1, FROM_CLIENT = 2 };

struct handler {
	Gpool__Msg__MCase type;
	unsigned from;
	void (*fn)(struct req *r);
	const char *name;
};

static const struct handler handlers[] = {
	{ GPOOL__MSG__M_NODE_REGISTER, FROM_AGENT, agent_register, "node_register" },
	{ GPOOL__MSG__M_HEARTBEAT, FROM_AGENT, agent_heartbeat, "heartbeat" },
	{ GPOOL__MSG__M_TASK_EVENT, FROM_AGENT, agent_task_event, "task_event" },
	{ GPOOL__MSG__M_OUTPUT, FROM_AGENT, agent_output, "output" },
	{ GPOOL__MSG__M_SUBMIT, FROM_CLIENT, client_submit, "submit" },
	{ GPOOL__MSG__M_JOB_QUERY, FROM_CLIENT, client_job_query, "job_query" },
	{ GPOOL__MSG__M_JOB_CONTROL, FROM_CLIENT, client_job_control, "job_control" },
	{ GPOOL__MSG__M_NODE_QUERY, FROM_CLIENT, client_node_query, "node_query" },
	{ GPOOL__MSG__M_NODE_CONTROL, FROM_CLIENT, client_node_control, "node_control" },
	{ GPOOL__MSG__M_LOG_QUERY, FROM_CLIENT, client_log_query, "log_query" },
	{ GPOOL__MSG__M_WATCH, FROM_CLIENT, client_watch, "watch" },
	{ GPOOL__MSG__M_CARD_REPORT, FROM_CLIENT, client_card_report, "card_report" },
	{ GPOOL__MSG__M_RDV_PUT, FROM_CLIENT, rdv_put, "rdv_put" },
	{ GPOOL__MSG__M_RDV_GET, FROM_CLIENT, rdv_get, "rdv_get" },
	{ GPOOL__MSG__M_RDV_FENCE, FROM_CLIENT, rdv_fence, "rdv_fence" },
	{ GPOOL__MSG__M_CHUNK_HAVE, FROM_CLIENT, files_chunk_have, "chunk_have" },
	{ GPOOL__MSG__M_CHUNK_PUT, FROM_CLIENT, files_chunk_put, "chunk_put" },
	{ GPOOL__MSG__M_CHUNK_GET, FROM_CLIENT, files_chunk_get, "chunk_get" },
	{ GPOOL__MSG__M_FILE_SET_PUT, FROM_CLIENT, files_set_put, "file_set_put" },
	{ GPOOL__MSG__M_FILE_SET_GET, FROM_CLIENT, files_set_get, "file_set_get" },
	{ GPOOL__MSG__M_OPS_METRICS_QUERY, FROM_CLIENT, metrics_query, "ops_metrics_query" },
	{ GPOOL__MSG__M_OPS_HISTORY_QUERY, FROM_CLIENT, metrics_history, "ops_history_query" },
	{ GPOOL__MSG__M_SERVICE_QUERY, FROM_CLIENT, client_service_query, "service_query" },
};

void handle_batch(struct gsched *s, const uint8_t *rid, size_t rid_len, const char *addr,
		  const struct gp_sender *from, Gpool__Batch *b)
{
	int node = nodes_find_rid(s->nodes, rid, rid_len);
	for (size_t i = 0; i < b->n_msgs; i++) {
		Gpool__Msg *m = b->msgs[i];
		struct req r = { .s = s, .rid = rid, .rid_len = rid_len, .from = *from,
				 .addr = addr, .msg = m, .node = node };
		const struct handler *h = NULL;
		for (size_t k = 0; k < sizeof(handlers) / sizeof(handlers[0]); k++)
			if (handlers[k].type == m->m_case)
				h = &handlers[k];
		if (!h) {
			gp_warn("unknown message type %d from %s: refused", (int)m->m_case, addr);
			gsched_reply_error(&r, GPOOL__ERROR_CODE__ERROR_UNEXPECTED,
					   "unknown message type %d", (int)m->m_case);
			continue;
		}
		if ((h->from & FROM_AGENT) && from->uid != s->agent_uid) {
			gp_warn("%s from %s signed by uid %u, not the agents' uid %u: refused", h->name,
				addr, (unsigned)from->uid, (unsigned)s->agent_uid);
			gsched_reply_error(&r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
					   "only the agents' account may send %s", h->name);
			continue;
		}
		h->fn(&r);
		/* a registration changes which node this routing id belongs to */
		if (m->m_case == GPOOL__MSG__M_NODE_REGISTER)
			node = nodes_find_rid(s->nodes, rid, rid_len);
	}
}
