/* router.h: the end of a unit test that plays a peer on a ROUTER socket (test_agent,
 * test_stepd): the socket closed at once, nothing left queued, its context ended, its wire
 * destroyed and the test's directory removed. */
#ifndef GPOOL_WORKER_TEST_ROUTER_H
#define GPOOL_WORKER_TEST_ROUTER_H

#include <zmq.h>

#include "common/util.h"
#include "common/wire.h"

static inline void gp_test_peer_close(void *router, void *zctx, gp_wire_t **wire, const char *dir)
{
	int zero = 0;
	zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_close(router);
	zmq_ctx_term(zctx);
	gp_wire_destroy(wire);
	gp_rm_rf(dir);
}

#endif
