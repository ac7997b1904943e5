/* gp-submit-many: submit N jobs over one connection, BATCH per envelope (one MUNGE credential
 * per batch), and wait for every acknowledgement. For the benchmarks: filling a queue of
 * 100,000 jobs with gsub processes would measure process start-up, not the scheduler.
 *   gp-submit-many N BATCH [--hold] [-- command args]
 * Prints: "<N> jobs acknowledged in <s> s (<rate>/s)". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/config.h"
#include "common/util.h"
#include "common/wire.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gp-submit-many N BATCH [--hold] [-- command args]\n");
		return 2;
	}
	long n = atol(argv[1]), batch = atol(argv[2]);
	int hold = 0, ai = 3;
	if (ai < argc && !strcmp(argv[ai], "--hold")) {
		hold = 1;
		ai++;
	}
	if (ai < argc && !strcmp(argv[ai], "--"))
		ai++;
	char *defcmd[] = {"/bin/true"};
	char **cmd = ai < argc ? argv + ai : defcmd;
	size_t ncmd = ai < argc ? (size_t)(argc - ai) : 1;
	if (n <= 0 || batch <= 0) {
		fprintf(stderr, "gp-submit-many: N and BATCH must be positive\n");
		return 2;
	}
	gp_config_t *cfg = gp_config_create(GP_CLI);
	gp_error_t err;
	if (gp_config_load_file(cfg, NULL, &err) < 0) {
		fprintf(stderr, "gp-submit-many: %s\n", err.text);
		return 1;
	}
	const char *ep =
	    getenv("GPOOL_SCHEDULER") ? getenv("GPOOL_SCHEDULER") : gp_config_str(cfg, "scheduler");
	gp_auth_t *auth = gp_auth_create(NULL, &err);
	gp_wire_t *wire = gp_wire_create(auth, 64 << 20);
	void *ctx = zmq_ctx_new(), *sock = zmq_socket(ctx, ZMQ_DEALER);
	if (!auth || !wire || zmq_connect(sock, ep) < 0) {
		fprintf(stderr, "gp-submit-many: cannot connect to '%s'\n", ep);
		return 1;
	}
	double t0 = gp_now();
	long sent = 0, acked = 0, failed = 0;
	gp_batch_t b = {0};
	gp_buf_t out = {0};
	while (acked + failed < n) {
		/* keep at most 4 batches in flight */
		while (sent < n && sent - acked - failed < 4 * batch) {
			gp_batch_reset(&b);
			for (long k = 0; k < batch && sent < n; k++, sent++) {
				Gpool__JobSpec sp = GPOOL__JOB_SPEC__INIT;
				sp.argv = cmd;
				sp.n_argv = ncmd;
				sp.ntasks = 1;
				sp.hold = hold;
				sp.name = "many";
				Gpool__SubmitRequest sr = GPOOL__SUBMIT_REQUEST__INIT;
				sr.spec = &sp;
				Gpool__Msg m = GPOOL__MSG__INIT;
				m.id = (uint64_t)sent + 1;
				m.m_case = GPOOL__MSG__M_SUBMIT;
				m.submit = &sr;
				gp_batch_add(&b, &m);
			}
			if (gp_wire_seal(wire, &b, &out, &err) < 0 ||
			    zmq_send(sock, out.data, out.len, 0) < 0) {
				fprintf(stderr, "gp-submit-many: send: %s\n", err.text);
				return 1;
			}
		}
		zmq_pollitem_t pi = {sock, 0, ZMQ_POLLIN, 0};
		if (zmq_poll(&pi, 1, 30000) <= 0) {
			fprintf(stderr,
				"gp-submit-many: no answer for 30 s (%ld of %ld acknowledged)\n",
				acked, n);
			return 1;
		}
		zmq_msg_t zm;
		zmq_msg_init(&zm);
		zmq_msg_recv(&zm, sock, 0);
		struct gp_sender from;
		Gpool__ErrorCode code;
		Gpool__Batch *rb =
		    gp_wire_open(wire, zmq_msg_data(&zm), zmq_msg_size(&zm), &from, &code, &err);
		zmq_msg_close(&zm);
		if (!rb) {
			fprintf(stderr, "gp-submit-many: bad reply: %s\n", err.text);
			return 1;
		}
		for (size_t i = 0; i < rb->n_msgs; i++) {
			if (rb->msgs[i]->m_case == GPOOL__MSG__M_SUBMIT_REPLY)
				acked++;
			else {
				if (!failed && rb->msgs[i]->m_case == GPOOL__MSG__M_ERROR)
					fprintf(stderr, "gp-submit-many: refused: %s\n",
						rb->msgs[i]->error->text);
				failed++;
			}
		}
		gpool__batch__free_unpacked(rb, NULL);
	}
	double dt = gp_now() - t0;
	printf("%ld jobs acknowledged in %.3f s (%.0f/s), %ld refused, %.3f s in munge\n", acked,
	       dt, acked / dt, failed, gp_auth_seconds(auth));
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return failed ? 1 : 0;
}
