/* router.h: the end of a unit test that plays a peer on a ROUTER socket (test_agent,
 * test_stepd): the socket closed at once, nothing left queued, and its context ended. */
#ifndef GPOOL_WORKER_TEST_ROUTER_H
#define GPOOL_WORKER_TEST_ROUTER_H

#include <zmq.h>

static inline void gp_test_router_close(void *router, void *zctx)
{
	int zero = 0;
	zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_close(router);
	zmq_ctx_term(zctx);
}

#endif
