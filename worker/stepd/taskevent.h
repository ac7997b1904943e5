/* taskevent.h: a task that could not start, as the TASK_FAILED_TO_START message gschedd
 * expects, built the same way by gstepd and by the agent (when a shared gstepd dies before it
 * reported a start). EV and M are the caller's; M points at EV. */
#ifndef GPOOL_WORKER_TASKEVENT_H
#define GPOOL_WORKER_TASKEVENT_H

#include <stdint.h>

#include "common/util.h"
#include "proto/gpool.pb-c.h"

static inline void gp_task_failed_msg(Gpool__TaskEvent *ev, Gpool__Msg *m, uint64_t job,
				      uint32_t attempt, uint32_t rank, const char *why)
{
	gpool__task_event__init(ev);
	ev->job_id = job;
	ev->attempt = attempt;
	ev->rank = rank;
	ev->kind = GPOOL__TASK_EVENT_KIND__TASK_FAILED_TO_START;
	ev->reason = (char *)why;
	ev->time = gp_now();
	gpool__msg__init(m);
	m->m_case = GPOOL__MSG__M_TASK_EVENT;
	m->task_event = ev;
}

#endif
