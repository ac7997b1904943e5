/* agent.h: handlers for the messages agents send, and node liveness. */
#ifndef GPOOL_AGENT_H
#define GPOOL_AGENT_H

#include "scheduler/core/gschedd.h"

void agent_register(struct req *r);
void agent_heartbeat(struct req *r);
void agent_task_event(struct req *r);
void agent_output(struct req *r);
/* Nodes silent past node_timeout go DOWN; their jobs end NODE_FAIL. */
void agents_tick(struct gsched *s);

#endif
