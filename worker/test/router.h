/* router.h: a unit test that plays a peer on a ROUTER socket (test_agent, test_stepd): opening
 * what the peer sent, and the end of the test: the socket closed at once, nothing left queued,
 * its context ended, its wire destroyed and the test's directory removed. */
#ifndef GPOOL_WORKER_TEST_ROUTER_H
#define GPOOL_WORKER_TEST_ROUTER_H

#include <zmq.h>

#include "common/util.h"
#include "common/wire.h"

/* The body frame of the message on ROUTER whose identity frame was just read, opened with
 * WIRE: its batch and *FROM, or NULL with ERR. */
static inline Gpool__Batch *gp_test_peer_open(void *router, gp_wire_t *wire, struct gp_sender *from,
					      gp_error_t *err)
{
	zmq_msg_t body;
	Gpool__ErrorCode code;
	zmq_msg_init(&body);
	zmq_msg_recv(&body, router, 0);
	Gpool__Batch *b =
	    gp_wire_open(wire, zmq_msg_data(&body), zmq_msg_size(&body), from, &code, err);
	zmq_msg_close(&body);
	return b;
}

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
