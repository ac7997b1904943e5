/* rdv_msg.h: the RdvPut request that stores KEY = VAL (LEN bytes) for RANK in the rendezvous
 * of attempt ATTEMPT of job JOB, built in the caller's P and M (they point at KEY and VAL, no
 * copies). libgcomm's gpool rendezvous sends it, and the scheduler's tests of the rendezvous
 * send the very same request. */
#ifndef GPOOL_COMMON_RDV_MSG_H
#define GPOOL_COMMON_RDV_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/gpool.pb-c.h"

static inline void gp_rdv_put_msg(Gpool__Msg *m, Gpool__RdvPut *p, uint64_t job, uint32_t attempt,
				  uint32_t rank, const char *key, const void *val, size_t len)
{
	gpool__rdv_put__init(p);
	p->job_id = job;
	p->attempt = attempt;
	p->rank = rank;
	p->key = (char *)key;
	p->value.data = (uint8_t *)val;
	p->value.len = len;
	gpool__msg__init(m);
	m->m_case = GPOOL__MSG__M_RDV_PUT;
	m->rdv_put = p;
}

#endif
