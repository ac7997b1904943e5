/* fakesched.c - a stand-in gschedd for the command tests: a ROUTER thread that opens each
 * request, answers it through the test's handler and keeps it for checks (fakesched.h) */
#include "cli/test/fakesched.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/auth.h"
#include "common/wire.h"

#define MAX_REQUESTS 256

struct fakesched {
	void *zctx;
	void *sock;
	gp_auth_t *auth;
	gp_wire_t *wire;
	fakesched_f handler;
	void *arg;
	pthread_t thread;
	pthread_mutex_t lock;
	volatile bool stop;
	Gpool__Msg *reqs[MAX_REQUESTS];
	int nreqs;
};

static void serve_one(fakesched_t *f, zmq_msg_t *ident, const void *data, size_t len)
{
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err;
	Gpool__Batch *b = gp_wire_open(f->wire, data, len, &from, &code, &err);
	if (!b)
		return;
	gp_batch_t out = {0};
	for (size_t i = 0; i < b->n_msgs; i++) {
		Gpool__Msg *req = b->msgs[i];
		uint8_t *buf = malloc(gpool__msg__get_packed_size(req) + 1);
		size_t n = gpool__msg__pack(req, buf);
		pthread_mutex_lock(&f->lock);
		if (f->nreqs < MAX_REQUESTS)
			f->reqs[f->nreqs++] = gpool__msg__unpack(NULL, n, buf);
		pthread_mutex_unlock(&f->lock);
		free(buf);
		Gpool__Msg reply = GPOOL__MSG__INIT;
		f->handler(req, &reply, f->arg);
		reply.id = req->id;
		if (reply.m_case != GPOOL__MSG__M__NOT_SET)
			gp_batch_add(&out, &reply);
	}
	gpool__batch__free_unpacked(b, NULL);
	if (out.count) {
		gp_buf_t env = {0};
		if (gp_wire_seal(f->wire, &out, &env, &err) == 0) {
			zmq_send(f->sock, zmq_msg_data(ident), zmq_msg_size(ident), ZMQ_SNDMORE);
			zmq_send(f->sock, env.data, env.len, 0);
		}
		gp_buf_release(&env);
	}
	gp_batch_release(&out);
}

static void *run(void *p)
{
	fakesched_t *f = p;
	while (!f->stop) {
		zmq_pollitem_t pi = {f->sock, 0, ZMQ_POLLIN, 0};
		if (zmq_poll(&pi, 1, 50) <= 0)
			continue;
		zmq_msg_t ident, body;
		zmq_msg_init(&ident);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&ident, f->sock, 0) >= 0 && zmq_msg_more(&ident) &&
		    zmq_msg_recv(&body, f->sock, 0) >= 0)
			serve_one(f, &ident, zmq_msg_data(&body), zmq_msg_size(&body));
		zmq_msg_close(&ident);
		zmq_msg_close(&body);
	}
	return NULL;
}

fakesched_t *fakesched_start(const char *endpoint, fakesched_f handler, void *arg)
{
	fakesched_t *f = calloc(1, sizeof(*f));
	gp_error_t err;
	if (!f)
		return NULL;
	f->handler = handler;
	f->arg = arg;
	pthread_mutex_init(&f->lock, NULL);
	if (!(f->auth = gp_auth_create(NULL, &err)) ||
	    !(f->wire = gp_wire_create(f->auth, 1 << 28)))
		goto fail;
	/* munged must answer for the fake to be of any use */
	gp_batch_t probe = {0};
	gp_buf_t env = {0};
	Gpool__Msg m = GPOOL__MSG__INIT;
	gp_batch_add(&probe, &m);
	int ok = gp_wire_seal(f->wire, &probe, &env, &err) == 0;
	gp_batch_release(&probe);
	gp_buf_release(&env);
	if (!ok)
		goto fail;
	f->zctx = zmq_ctx_new();
	if (!f->zctx || !(f->sock = zmq_socket(f->zctx, ZMQ_ROUTER)))
		goto fail;
	int linger = 0;
	zmq_setsockopt(f->sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(f->sock, endpoint) < 0)
		goto fail;
	if (pthread_create(&f->thread, NULL, run, f) != 0)
		goto fail;
	return f;
fail:
	if (f->sock)
		zmq_close(f->sock);
	if (f->zctx)
		zmq_ctx_term(f->zctx);
	gp_wire_destroy(&f->wire);
	gp_auth_destroy(&f->auth);
	free(f);
	return NULL;
}

void fakesched_stop(fakesched_t **p)
{
	if (!p || !*p)
		return;
	fakesched_t *f = *p;
	f->stop = true;
	pthread_join(f->thread, NULL);
	zmq_close(f->sock);
	zmq_ctx_term(f->zctx);
	for (int i = 0; i < f->nreqs; i++)
		if (f->reqs[i])
			gpool__msg__free_unpacked(f->reqs[i], NULL);
	gp_wire_destroy(&f->wire);
	gp_auth_destroy(&f->auth);
	pthread_mutex_destroy(&f->lock);
	free(f);
	*p = NULL;
}

int fakesched_count(fakesched_t *f)
{
	pthread_mutex_lock(&f->lock);
	int n = f->nreqs;
	pthread_mutex_unlock(&f->lock);
	return n;
}

Gpool__Msg *fakesched_request(fakesched_t *f, int i)
{
	pthread_mutex_lock(&f->lock);
	Gpool__Msg *m = i >= 0 && i < f->nreqs ? f->reqs[i] : NULL;
	pthread_mutex_unlock(&f->lock);
	return m;
}
