/* gp-standby: a stand-in for a standby gschedd (t0390-haclients): binds a ROUTER socket at
 * ENDPOINT and answers every request of every envelope it can open with ERROR_NOT_LEADER naming
 * LEADER (may be ""), sealed with this process's MUNGE credential (run it as sched_uid). One
 * line per request on stdout: "TYPE REQUEST-ID-HEX|-" (flushed), so a test can see who came and
 * with which request id. Runs until SIGTERM or SIGINT.
 *
 *     gp-standby ENDPOINT LEADER
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/auth.h"
#include "common/wire.h"
#include "proto/gpool.pb-c.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static const char *type_name(const Gpool__Msg *m)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field(&gpool__msg__descriptor, (unsigned)m->m_case);
	return f ? f->name : "unknown";
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gp-standby ENDPOINT LEADER\n");
		return 2;
	}
	gp_error_t err = {{0}};
	gp_auth_t *auth = gp_auth_create(NULL, &err);
	gp_wire_t *wire = auth ? gp_wire_create(auth, 1 << 24) : NULL;
	if (!wire) {
		fprintf(stderr, "gp-standby: %s\n", err.text[0] ? err.text : "out of memory");
		return 1;
	}
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_ROUTER);
	int linger = 0;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(sock, argv[1]) < 0) {
		fprintf(stderr, "gp-standby: cannot bind '%s': %s\n", argv[1], zmq_strerror(errno));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!stop) {
		zmq_pollitem_t pi = {sock, 0, ZMQ_POLLIN, 0};
		if (zmq_poll(&pi, 1, 200) <= 0)
			continue;
		zmq_msg_t ident, body;
		zmq_msg_init(&ident);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&ident, sock, 0) < 0 || !zmq_msg_more(&ident) ||
		    zmq_msg_recv(&body, sock, 0) < 0)
			goto next;
		struct gp_sender from;
		Gpool__ErrorCode code;
		Gpool__Batch *b = gp_wire_open(wire, zmq_msg_data(&body), zmq_msg_size(&body),
					       &from, &code, &err);
		if (!b)
			goto next;
		gp_batch_t out = {0};
		for (size_t i = 0; i < b->n_msgs; i++) {
			const Gpool__Msg *req = b->msgs[i];
			printf("%s ", type_name(req));
			for (size_t k = 0; k < req->request_id.len; k++)
				printf("%02x", req->request_id.data[k]);
			printf("%s uid %u\n", req->request_id.len ? "" : "-", (unsigned)from.uid);
			fflush(stdout);
			Gpool__Error e = GPOOL__ERROR__INIT;
			e.code = GPOOL__ERROR_CODE__ERROR_NOT_LEADER;
			e.text = "this scheduler is a standby";
			e.leader = argv[2];
			Gpool__Msg rep = GPOOL__MSG__INIT;
			rep.id = req->id;
			rep.m_case = GPOOL__MSG__M_ERROR;
			rep.error = &e;
			gp_batch_add(&out, &rep);
		}
		gpool__batch__free_unpacked(b, NULL);
		gp_buf_t env = {0};
		if (out.count && gp_wire_seal(wire, &out, &env, &err) == 0) {
			zmq_send(sock, zmq_msg_data(&ident), zmq_msg_size(&ident), ZMQ_SNDMORE);
			zmq_send(sock, env.data, env.len, 0);
		}
		gp_buf_release(&env);
		gp_batch_release(&out);
	next:
		zmq_msg_close(&ident);
		zmq_msg_close(&body);
	}
	zmq_close(sock);
	zmq_ctx_term(ctx);
	gp_wire_destroy(&wire);
	gp_auth_destroy(&auth);
	return 0;
}
