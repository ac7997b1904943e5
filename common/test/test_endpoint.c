/* The message endpoint over real ZeroMQ sockets (a ROUTER and a DEALER on loopback TCP) and
 * the real munged: dispatch by type, the sender-uid policy per handler and per envelope, what
 * goes to the refused and rejected hooks (garbage, multi-frame, unknown types), the accept
 * hook's veto, and attachments (a frame after the envelope, for bulk_in endpoints only). Skips when
 * munged is absent. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/endpoint.h"
#include "common/test/munge.h"

static gp_auth_t *auth;

struct seen {
	int replies, heartbeats, rejected, refused, accepted, done;
	Gpool__ErrorCode last_code;
	char rid[64];
	int veto; /* accept() refuses the envelope */
	uint64_t last_job;
};

static void on_reply(void *arg, void *peer, const Gpool__Msg *m)
{
	struct seen *s = arg;
	assert_ptr_equal(peer, s);
	s->replies++;
	s->last_job = m->submit_reply->job_id;
}

static void on_heartbeat(void *arg, void *peer, const Gpool__Msg *m)
{
	struct seen *s = arg;
	s->heartbeats++;
}

static int on_accept(void *arg, const struct gp_ep_envelope *e, void **peer)
{
	struct seen *s = arg;
	s->accepted++;
	if (e->rid_len && e->rid_len < sizeof(s->rid)) {
		memcpy(s->rid, e->rid, e->rid_len);
		s->rid[e->rid_len] = '\0';
	}
	*peer = s;
	return s->veto ? -1 : 0;
}

static void on_refused(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len,
		       Gpool__ErrorCode code, const char *why)
{
	struct seen *s = arg;
	s->refused++;
	s->last_code = code;
}

static void on_rejected(void *arg, void *peer, const struct gp_ep_envelope *e, const Gpool__Msg *m,
			Gpool__ErrorCode code, const char *why)
{
	struct seen *s = arg;
	s->rejected++;
	s->last_code = code;
}

static void on_done(void *arg, void *peer, const struct gp_ep_envelope *e)
{
	((struct seen *)arg)->done++;
}

static const struct gp_ep_handler handlers[] = {
    {GPOOL__MSG__M_SUBMIT_REPLY, GP_EP_ANYONE, on_reply, "submit_reply"},
    {GPOOL__MSG__M_HEARTBEAT, GP_EP_PEER, on_heartbeat, "heartbeat"},
};

struct pair {
	void *zctx, *router, *dealer;
	gp_endpoint_t *server, *client;
	struct seen seen;
};

static void pair_open(struct pair *p, bool client_peer_only, uid_t client_peer)
{
	memset(p, 0, sizeof(*p));
	p->zctx = zmq_ctx_new();
	p->router = zmq_socket(p->zctx, ZMQ_ROUTER);
	p->dealer = zmq_socket(p->zctx, ZMQ_DEALER);
	int zero = 0;
	zmq_setsockopt(p->router, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(p->dealer, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(p->dealer, ZMQ_ROUTING_ID, "client-7", 8);
	assert_int_equal(zmq_bind(p->router, "tcp://127.0.0.1:*"), 0);
	char ep[256];
	size_t len = sizeof(ep);
	assert_int_equal(zmq_getsockopt(p->router, ZMQ_LAST_ENDPOINT, ep, &len), 0);
	assert_int_equal(zmq_connect(p->dealer, ep), 0);
	struct gp_ep_config sc = {
	    .sock = p->router,
	    .routed = true,
	    .auth = auth,
	    .max_message = 1 << 20,
	    .handlers = handlers,
	    .nhandlers = 2,
	    .peer_name = "the agents",
	    .hooks = {.accept = on_accept,
		      .refused = on_refused,
		      .rejected = on_rejected,
		      .done = on_done},
	    .arg = &p->seen,
	};
	assert_non_null(p->server = gp_endpoint_create(&sc));
	struct gp_ep_config cc = {.sock = p->dealer,
				  .auth = auth,
				  .max_message = 1 << 20,
				  .peer_only = client_peer_only,
				  .blocking_send = true,
				  .peer_name = "the scheduler"};
	assert_non_null(p->client = gp_endpoint_create(&cc));
	gp_endpoint_set_peer_uid(p->client, client_peer);
}

static void pair_close(struct pair *p)
{
	gp_endpoint_destroy(&p->server);
	gp_endpoint_destroy(&p->client);
	assert_null(p->server);
	zmq_close(p->router);
	zmq_close(p->dealer);
	zmq_ctx_term(p->zctx);
}

/* Dispatch until n envelopes were taken or two seconds passed. */
static int pump(gp_endpoint_t *ep, void *sock, int n)
{
	int got = 0;
	for (int i = 0; i < 200 && got < n; i++) {
		zmq_pollitem_t pi = {sock, 0, ZMQ_POLLIN, 0};
		zmq_poll(&pi, 1, 10);
		got += gp_endpoint_dispatch(ep, 64);
	}
	return got;
}

static void add_reply(gp_batch_t *b, uint64_t job)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__SubmitReply r = GPOOL__SUBMIT_REPLY__INIT;
	r.job_id = job;
	m.m_case = GPOOL__MSG__M_SUBMIT_REPLY;
	m.submit_reply = &r;
	assert_int_equal(gp_batch_add(b, &m), 0);
}

static void add_heartbeat(gp_batch_t *b)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__Heartbeat h = GPOOL__HEARTBEAT__INIT;
	m.m_case = GPOOL__MSG__M_HEARTBEAT;
	m.heartbeat = &h;
	assert_int_equal(gp_batch_add(b, &m), 0);
}

static void add_job_query(gp_batch_t *b)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = &q;
	assert_int_equal(gp_batch_add(b, &m), 0);
}

/* Every message of one envelope to its handler; the type without one to rejected(). */
static void dispatch_by_type(void **state)
{
	struct pair p;
	pair_open(&p, false, 0);
	gp_endpoint_set_peer_uid(p.server, getuid());
	gp_batch_t b = {0};
	gp_error_t err;
	add_reply(&b, 41);
	add_heartbeat(&b);
	add_job_query(&b);
	add_reply(&b, 42);
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.accepted, 1);
	assert_string_equal(p.seen.rid, "client-7");
	assert_int_equal(p.seen.replies, 2);
	assert_int_equal(p.seen.last_job, 42); /* in order */
	assert_int_equal(p.seen.heartbeats, 1);
	assert_int_equal(p.seen.rejected, 1);
	assert_int_equal(p.seen.last_code, GPOOL__ERROR_CODE__ERROR_UNEXPECTED);
	assert_int_equal(p.seen.done, 1);
	assert_int_equal(p.seen.refused, 0);
	/* nothing more waiting */
	assert_int_equal(gp_endpoint_dispatch(p.server, 64), 0);
	gp_batch_release(&b);
	pair_close(&p);
}

/* A GP_EP_PEER message signed by another uid is rejected; GP_EP_ANYONE ones still pass. */
static void peer_policy(void **state)
{
	struct pair p;
	pair_open(&p, false, 0);
	gp_endpoint_set_peer_uid(p.server, getuid() + 1);
	gp_batch_t b = {0};
	gp_error_t err;
	add_heartbeat(&b);
	add_reply(&b, 7);
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.heartbeats, 0);
	assert_int_equal(p.seen.rejected, 1);
	assert_int_equal(p.seen.last_code, GPOOL__ERROR_CODE__ERROR_PERMISSION);
	assert_int_equal(p.seen.replies, 1);
	gp_batch_release(&b);
	pair_close(&p);
}

/* Routed replies come back to the sender; peer_only refuses a whole envelope of another uid. */
static void reply_and_peer_only(void **state)
{
	for (int right = 0; right < 2; right++) {
		struct pair p;
		pair_open(&p, true, right ? getuid() : getuid() + 1);
		gp_batch_t b = {0};
		gp_error_t err;
		add_reply(&b, 1);
		assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
		assert_int_equal(pump(p.server, p.router, 1), 1);
		gp_batch_reset(&b);
		add_reply(&b, 99);
		assert_int_equal(
		    gp_endpoint_send(p.server, (const uint8_t *)"client-7", 8, &b, &err), 0);
		zmq_pollitem_t pi = {p.dealer, 0, ZMQ_POLLIN, 0};
		assert_int_equal(zmq_poll(&pi, 1, 2000), 1);
		struct gp_ep_envelope e;
		Gpool__Batch *got = gp_endpoint_recv(p.client, true, &e, &err);
		if (right) {
			assert_non_null(got);
			assert_int_equal(got->n_msgs, 1);
			assert_int_equal(got->msgs[0]->submit_reply->job_id, 99);
			assert_int_equal(e.from.uid, getuid());
			gpool__batch__free_unpacked(got, NULL);
		} else {
			assert_null(got);
			assert_int_equal(errno, EPERM);
			assert_non_null(strstr(err.text, "not the scheduler's uid"));
		}
		/* nothing left: a non-blocking receive says EAGAIN */
		assert_null(gp_endpoint_recv(p.client, false, &e, &err));
		assert_int_equal(errno, EAGAIN);
		gp_batch_release(&b);
		pair_close(&p);
	}
}

/* Garbage and a multi-frame message go to refused(), never to a handler; the socket keeps
 * working after them. */
static void refused_envelopes(void **state)
{
	struct pair p;
	pair_open(&p, false, 0);
	assert_int_equal(zmq_send(p.dealer, "garbage", 7, 0), 7);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.refused, 1);
	assert_int_equal(p.seen.last_code, GPOOL__ERROR_CODE__ERROR_MALFORMED);
	assert_int_equal(zmq_send(p.dealer, "a", 1, ZMQ_SNDMORE), 1);
	assert_int_equal(zmq_send(p.dealer, "b", 1, 0), 1);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.refused, 2);
	assert_int_equal(p.seen.accepted, 0);
	assert_int_equal(p.seen.replies, 0);
	gp_batch_t b = {0};
	gp_error_t err;
	add_reply(&b, 5);
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.replies, 1);
	/* accept() may veto an envelope: then no handler runs */
	p.seen.veto = 1;
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	assert_int_equal(p.seen.replies, 1);
	assert_int_equal(p.seen.accepted, 2);
	gp_batch_release(&b);
	pair_close(&p);
}

static void free_copy(void *data, void *hint)
{
	free(data);
}

/* Wait for the dealer to have something, then receive on ep. */
static Gpool__Batch *recv_on(struct pair *p, gp_endpoint_t *ep, struct gp_ep_envelope *e,
			     gp_error_t *err)
{
	zmq_pollitem_t pi = {p->dealer, 0, ZMQ_POLLIN, 0};
	assert_int_equal(zmq_poll(&pi, 1, 2000), 1);
	return gp_endpoint_recv(ep, true, e, err);
}

/* An attachment (a chunk after its reply's envelope) reaches an endpoint that takes them, is
 * refused by one that does not, and two attachments are refused by both; the socket keeps
 * working after each. */
static void attachments(void **state)
{
	struct pair p;
	pair_open(&p, false, 0);
	struct gp_ep_config bc = {.sock = p.dealer,
				  .auth = auth,
				  .max_message = 1 << 20,
				  .bulk_in = true,
				  .peer_name = "the scheduler"};
	gp_endpoint_t *bulk = gp_endpoint_create(&bc);
	assert_non_null(bulk);
	gp_batch_t b = {0};
	gp_error_t err;
	struct gp_ep_envelope e;
	add_reply(&b, 7);
	const uint8_t *rid = (const uint8_t *)"client-7";
	/* the client says hello first, so the router knows its routing id */
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);

	assert_int_equal(
	    gp_endpoint_send_bulk(p.server, rid, 8, &b, strdup("CHUNK-BYTES"), 11, free_copy, &err),
	    0);
	Gpool__Batch *got = recv_on(&p, bulk, &e, &err);
	assert_non_null(got);
	assert_int_equal(got->msgs[0]->submit_reply->job_id, 7);
	assert_int_equal(e.bulk_len, 11);
	assert_memory_equal(e.bulk, "CHUNK-BYTES", 11);
	gpool__batch__free_unpacked(got, NULL);

	/* without bulk_in: refused as a multi-frame message */
	assert_int_equal(
	    gp_endpoint_send_bulk(p.server, rid, 8, &b, strdup("CHUNK-BYTES"), 11, free_copy, &err),
	    0);
	assert_null(recv_on(&p, p.client, &e, &err));
	assert_int_equal(errno, EPROTO);

	/* two attachments: refused even with bulk_in */
	gp_wire_t *w = gp_wire_create(auth, 1 << 20);
	gp_buf_t sealed = {0};
	assert_int_equal(gp_wire_seal(w, &b, &sealed, &err), 0);
	assert_int_equal(zmq_send(p.router, rid, 8, ZMQ_SNDMORE), 8);
	assert_int_equal(zmq_send(p.router, sealed.data, sealed.len, ZMQ_SNDMORE), (int)sealed.len);
	assert_int_equal(zmq_send(p.router, "a", 1, ZMQ_SNDMORE), 1);
	assert_int_equal(zmq_send(p.router, "b", 1, 0), 1);
	assert_null(recv_on(&p, bulk, &e, &err));
	assert_int_equal(errno, EPROTO);

	/* and a plain reply still arrives, without an attachment */
	assert_int_equal(gp_endpoint_send(p.server, rid, 8, &b, &err), 0);
	got = recv_on(&p, bulk, &e, &err);
	assert_non_null(got);
	assert_null(e.bulk);
	gpool__batch__free_unpacked(got, NULL);
	gp_buf_release(&sealed);
	gp_wire_destroy(&w);
	gp_batch_release(&b);
	gp_endpoint_destroy(&bulk);
	pair_close(&p);
}

/* A client with a reply key is answered under it (no credential), plain and with an
 * attachment (sealed the same way); the answer opens as from the scheduler's uid. */
static void reply_under_key(void **state)
{
	struct pair p;
	pair_open(&p, true, getuid());
	assert_int_equal(gp_wire_set_reply_key(gp_endpoint_wire(p.client), getuid()), 0);
	gp_batch_t b = {0};
	gp_error_t err;
	add_reply(&b, 1);
	assert_int_equal(gp_endpoint_send(p.client, NULL, 0, &b, &err), 0);
	assert_int_equal(pump(p.server, p.router, 1), 1);
	for (int bulk = 0; bulk < 2; bulk++) {
		gp_batch_reset(&b);
		add_reply(&b, 99);
		const uint8_t *rid = (const uint8_t *)"client-7";
		assert_int_equal(bulk ? gp_endpoint_send_bulk(p.server, rid, 8, &b, strdup("CHUNK"),
							      5, free_copy, &err)
				      : gp_endpoint_send(p.server, rid, 8, &b, &err),
				 0);
		zmq_pollitem_t pi = {p.dealer, 0, ZMQ_POLLIN, 0};
		assert_int_equal(zmq_poll(&pi, 1, 2000), 1);
		struct gp_ep_envelope e;
		Gpool__Batch *got = gp_endpoint_recv(p.client, true, &e, &err);
		if (bulk) { /* this client takes no attachment: refused as multi-frame, but opened
			     */
			assert_null(got);
			assert_non_null(strstr(err.text, "multi-frame"));
			continue;
		}
		assert_non_null(got);
		assert_int_equal(got->msgs[0]->submit_reply->job_id, 99);
		assert_int_equal(e.from.uid, getuid());
		gpool__batch__free_unpacked(got, NULL);
	}
	struct gp_wire_stats cs, ss;
	gp_wire_stats(gp_endpoint_wire(p.client), &cs);
	gp_wire_stats(gp_endpoint_wire(p.server), &ss);
	assert_int_equal(cs.mac_opened, 1);
	assert_int_equal(ss.mac_sealed, 2);
	/* another routing id gave no key: it is answered with a credential (the ROUTER drops it) */
	gp_batch_reset(&b);
	add_reply(&b, 5);
	assert_int_equal(gp_endpoint_send(p.server, (const uint8_t *)"client-8", 8, &b, &err), 0);
	gp_wire_stats(gp_endpoint_wire(p.server), &ss);
	assert_int_equal(ss.mac_sealed, 2);
	assert_int_equal(ss.sealed, 3);
	gp_batch_release(&b);
	pair_close(&p);
}

int main(void)
{
	if (!(auth = gp_test_auth_or_skip()))
		return 77;
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(dispatch_by_type),	   cmocka_unit_test(peer_policy),
	    cmocka_unit_test(reply_and_peer_only), cmocka_unit_test(refused_envelopes),
	    cmocka_unit_test(attachments),	   cmocka_unit_test(reply_under_key),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	gp_auth_destroy(&auth);
	return rc;
}
