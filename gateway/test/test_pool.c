/* test_pool: ggated's replica set as the scheduler's answers change it (snap.c, pool.c): the
 * set is kept through a gschedd restart, whose first answers list every replica as running
 * with its port and node not known yet, and a replica goes only when the scheduler says that
 * it ended. Active health checks (pool.c on http/client_conn.c) go to a real server on loopback
 * (http/server.c): admitted, kept on one connection, ejected by a 503, re-admitted, failed once
 * the replica is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/gateway.h"
#include "gateway/proxy.h"
#include "gateway/snap.h"
#include "gateway/pool.h"
#include "gateway/report.h"

/* a ServiceQueryReply of one service, built in place */
struct world {
	Gpool__ServiceQueryReply rep;
	Gpool__ServiceInfo si, *psi[1];
	Gpool__ReplicaInfo ri[4], *pri[4];
	char addr[4][32];
};

static void world_init(struct world *w, const char *health_path)
{
	memset(w, 0, sizeof(*w));
	gpool__service_query_reply__init(&w->rep);
	gpool__service_info__init(&w->si);
	w->si.id = 7;
	w->si.name = "web";
	w->si.health_path = (char *)health_path;
	w->si.state = GPOOL__JOB_STATE__RUNNING;
	w->psi[0] = &w->si;
	w->rep.services = w->psi;
	w->rep.n_services = 1;
	w->si.replicas = w->pri;
}

/* replica k: job 100+k at 127.0.0.(k+1):port, as gschedd lists it */
static void replica(struct world *w, size_t k, uint32_t restarts, Gpool__JobState st, uint32_t port,
		    bool ready)
{
	Gpool__ReplicaInfo *ri = &w->ri[k];
	gpool__replica_info__init(ri);
	ri->index = (uint32_t)k;
	ri->job_id = 100 + k;
	ri->restarts = restarts;
	ri->state = st;
	ri->port = port;
	ri->ready = ready;
	snprintf(w->addr[k], sizeof(w->addr[k]), "127.0.0.%zu", k + 1);
	ri->addr = ready ? w->addr[k] : "";
	ri->node = ready ? "h1" : "";
	w->pri[k] = ri;
	if (w->si.n_replicas <= k)
		w->si.n_replicas = k + 1;
}

/* what gschedd answers right after it restarted: every replica running, its port and node
 * not known until its agent registers again */
static void restarted(struct world *w)
{
	for (size_t k = 0; k < w->si.n_replicas; k++)
		replica(w, k, w->ri[k].restarts, GPOOL__JOB_STATE__RUNNING, 0, false);
}

static int resolve(const char *addr, char *out, size_t n)
{
	if (strncmp(addr, "127.", 4) != 0)
		return -1;
	snprintf(out, n, "%s", addr);
	return 0;
}

static struct gw_ctx *ctx_new(void)
{
	struct gw_ctx *c = calloc(1, sizeof(*c));
	assert_non_null(c);
	assert_non_null(c->base = event_base_new());
	c->timeout_ms = 1000;
	c->connect_timeout_ms = 100;
	c->eject_ms = 1000;
	c->max_conns = 4;
	c->tries = GW_MAX_TRIES;
	return c;
}

static void ctx_free(struct gw_ctx *c)
{
	struct gw_snap empty = {0};
	struct gw_snap *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	*s = empty;
	gw_pool_apply(c, s); /* every service gone: the replicas removed */
	for (struct gw_service *s2 = c->svcs, *nx; s2; s2 = nx) {
		nx = s2->next;
		for (struct gw_replica *r = s2->reps, *rn; r; r = rn) {
			rn = r->next;
			r->removed_ms -= GW_LINGER_MS; /* their linger is over: freed */
			gw_replica_maybe_free(r);
		}
		assert_null(s2->reps);
		free(s2);
	}
	event_base_loop(c->base, EVLOOP_NONBLOCK); /* the connections freed later */
	event_base_free(c->base);
	free(c);
}

static void apply(struct gw_ctx *c, const struct world *w)
{
	struct gw_snap *s = gw_snap_of(&w->rep, resolve);
	assert_non_null(s);
	gw_pool_apply(c, s);
}

static struct gw_service *svc(struct gw_ctx *c)
{
	struct gw_service *s = gw_service_find(c, "web", 3);
	assert_non_null(s);
	return s;
}

/* the replicas ggated would send requests to */
static int usable(struct gw_ctx *c)
{
	int n = 0;
	for (struct gw_replica *r = svc(c)->reps; r; r = r->next)
		n += !r->removed && r->healthy;
	return n;
}

static struct gw_replica *known(struct gw_ctx *c, uint64_t job_id)
{
	for (struct gw_replica *r = svc(c)->reps; r; r = r->next)
		if (!r->removed && r->job_id == job_id)
			return r;
	return NULL;
}

static void kept_through_restart(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 2);
	struct gw_replica *r0 = known(c, 100), *r1 = known(c, 101);
	restarted(&w);
	for (int i = 0; i < 3; i++) {
		apply(c, &w);
		assert_int_equal(usable(c), 2);
		assert_non_null(gw_pick(svc(c), NULL, 0));
	}
	/* the agents registered again: the same replicas, not new ones */
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	apply(c, &w);
	assert_int_equal(usable(c), 2);
	assert_ptr_equal(known(c, 100), r0);
	assert_ptr_equal(known(c, 101), r1);
	ctx_free(c);
}

/* with a health path, the health a replica had is kept too (a new replica would wait for
 * its first check) */
static void health_kept_through_restart(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "/health");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 1, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 0); /* not checked yet */
	/* its first check (to a port of loopback where nothing listens) fails */
	struct timeval tv = {0, 300000};
	event_base_loopexit(c->base, &tv);
	event_base_dispatch(c->base);
	assert_false(known(c, 100)->hc_busy);
	known(c, 100)->healthy = true; /* as a passed check leaves it */
	restarted(&w);
	apply(c, &w);
	assert_int_equal(usable(c), 1);
	ctx_free(c);
}

static void ended_replicas_go(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	replica(&w, 2, 0, GPOOL__JOB_STATE__RUNNING, 8082, true);
	replica(&w, 3, 0, GPOOL__JOB_STATE__RUNNING, 8083, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 4);
	/* 0 requeued (its next attempt pending), 1 being stopped, 2 restarted on another port,
	 * 3 still running though its node is not known right now */
	replica(&w, 0, 1, GPOOL__JOB_STATE__PENDING, 0, false);
	replica(&w, 1, 0, GPOOL__JOB_STATE__COMPLETING, 8081, false);
	replica(&w, 2, 1, GPOOL__JOB_STATE__RUNNING, 9082, true);
	replica(&w, 3, 0, GPOOL__JOB_STATE__RUNNING, 8083, false);
	apply(c, &w);
	assert_null(known(c, 100));
	assert_null(known(c, 101));
	assert_non_null(known(c, 102));
	assert_int_equal(known(c, 102)->port, 9082);
	assert_int_equal(known(c, 102)->restarts, 1);
	assert_non_null(known(c, 103));
	assert_int_equal(usable(c), 2);
	/* a job that is no longer one of the service's replicas (scaled down, updated) */
	w.si.n_replicas = 3;
	apply(c, &w);
	assert_null(known(c, 103));
	/* a replica not ready yet is not sent requests */
	replica(&w, 0, 1, GPOOL__JOB_STATE__RUNNING, 0, false);
	apply(c, &w);
	assert_null(known(c, 100));
	replica(&w, 0, 1, GPOOL__JOB_STATE__RUNNING, 8090, true);
	apply(c, &w);
	assert_non_null(known(c, 100));
	assert_int_equal(usable(c), 2);
	ctx_free(c);
}

static void gone_service_drains(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 1);
	w.rep.n_services = 0;
	apply(c, &w);
	assert_int_equal(usable(c), 0);
	assert_null(gw_pick(svc(c), NULL, 0));
	ctx_free(c);
}

/* The report for gschedd: each replica with its requests in flight; one removed (draining)
 * is reported draining while its requests finish and GW_LINGER_MS after, then freed; one
 * whose drain is called off is reported once, live. */
static void report_draining(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	struct gw_replica *r1 = known(c, 101);
	r1->outstanding = 2; /* two requests in flight there */
	w.ri[1].draining = true;
	apply(c, &w);
	assert_null(known(c, 101));
	assert_true(r1->removed);
	Gpool__ServiceQuery q = GPOOL__SERVICE_QUERY__INIT;
	gw_report_publish(c);
	struct gw_report *rep = gw_report_take(c, &q);
	assert_int_equal(q.n_reports, 2);
	for (size_t i = 0; i < q.n_reports; i++) {
		bool one = q.reports[i]->job_id == 101;
		assert_int_equal(q.reports[i]->draining, one);
		assert_int_equal(q.reports[i]->outstanding, one ? 2 : 0);
	}
	gw_report_free(rep);
	/* its requests end: it stays in the report, idle, for the linger */
	r1->outstanding = 0;
	gw_replica_maybe_free(r1);
	gw_report_publish(c);
	rep = gw_report_take(c, &q);
	assert_int_equal(q.n_reports, 2);
	gw_report_free(rep);
	/* its drain called off: the live entry only */
	w.ri[1].draining = false;
	apply(c, &w);
	assert_non_null(known(c, 101));
	assert_ptr_not_equal(known(c, 101), r1);
	gw_report_publish(c);
	rep = gw_report_take(c, &q);
	assert_int_equal(q.n_reports, 2);
	for (size_t i = 0; i < q.n_reports; i++)
		assert_false(q.reports[i]->draining);
	gw_report_free(rep);
	/* the linger over, the health tick frees it */
	r1->removed_ms -= GW_LINGER_MS;
	gw_health_tick(-1, 0, c);
	int n = 0;
	for (struct gw_replica *r = svc(c)->reps; r; r = r->next)
		n++;
	assert_int_equal(n, 2);
	rep = gw_report_take(c, &q);
	gw_report_free(rep);
	ctx_free(c);
}

static void unreachable_address_not_added(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	w.ri[0].addr = "no-such-host.invalid";
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 0);
	ctx_free(c);
}

/* A replica whose agent finds a squatter on its port (PORT_FOREIGN) is removed at once, as an
 * ended one: what would be sent there reaches the squatter. Its port its own again, it comes
 * back. */
static void squatted_replica_removed(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, "");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, 8080, true);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	struct gw_ctx *c = ctx_new();
	apply(c, &w);
	assert_int_equal(usable(c), 2);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, false);
	w.ri[1].port_state = GPOOL__PORT_STATE__PORT_FOREIGN;
	apply(c, &w);
	assert_int_equal(usable(c), 1);
	assert_null(known(c, 101));
	for (int i = 0; i < 20; i++)
		assert_int_equal(gw_pick(svc(c), NULL, 0)->job_id, 100);
	replica(&w, 1, 0, GPOOL__JOB_STATE__RUNNING, 8081, true);
	apply(c, &w);
	assert_int_equal(usable(c), 2);
	ctx_free(c);
}

/* Three services: "web" of user a (id 7), "web" of user b (id 9, made before gschedd refused
 * a second owner), and one named "7" (the same). /svc/web/ is a's; /svc/7/ is job 7, never the
 * service named "7"; a's newer "web" (id 11) takes over from id 7, b's never. */
static void name_belongs_to_one_owner(void **state)
{
	(void)state;
	Gpool__ServiceQueryReply rep = GPOOL__SERVICE_QUERY_REPLY__INIT;
	Gpool__ServiceInfo si[4], *psi[4];
	const struct {
		uint64_t id;
		const char *name, *user;
	} def[4] = {{7, "web", "a"}, {9, "web", "b"}, {10, "7", "b"}, {11, "web", "a"}};
	for (int i = 0; i < 4; i++) {
		gpool__service_info__init(&si[i]);
		si[i].id = def[i].id;
		si[i].name = (char *)def[i].name;
		si[i].user = (char *)def[i].user;
		si[i].health_path = "";
		si[i].state = GPOOL__JOB_STATE__RUNNING;
		psi[i] = &si[i];
	}
	rep.services = psi;
	rep.n_services = 3;
	struct gw_ctx *c = ctx_new();
	gw_pool_apply(c, gw_snap_of(&rep, resolve));
	struct gw_service *s = gw_service_find(c, "web", 3);
	assert_non_null(s);
	assert_int_equal(s->id, 7);
	assert_int_equal(gw_service_find(c, "7", 1)->id, 7);
	assert_int_equal(gw_service_find(c, "9", 1)->id, 9);
	assert_int_equal(gw_service_find(c, "10", 2)->id, 10);
	assert_null(gw_service_find(c, "12", 2));
	assert_null(gw_service_find(c, "123456789012345678901234567890123", 33));
	rep.n_services = 4;
	gw_pool_apply(c, gw_snap_of(&rep, resolve));
	assert_int_equal(gw_service_find(c, "web", 3)->id, 11);
	/* a's services end: the name is b's now */
	psi[0] = &si[1];
	psi[1] = &si[2];
	rep.n_services = 2;
	gw_pool_apply(c, gw_snap_of(&rep, resolve));
	assert_int_equal(gw_service_find(c, "web", 3)->id, 9);
	ctx_free(c);
}

/* ---- active health checks over loopback (http/client_conn.c against http/server.c) ---- */

static int hc_status = 200; /* what the replica answers its health path */
static int hc_heads;

static void hc_replica_head(gh_conn_t *conn, void *arg)
{
	(void)arg;
	hc_heads++;
	struct gh_msg *m = gh_conn_request(conn);
	bool health =
	    gh_buf_size(&m->target) == 7 && memcmp(gh_buf_data(&m->target), "/health", 7) == 0;
	size_t ua_len = 0;
	const char *ua = gh_msg_header(m, "User-Agent", &ua_len);
	assert_true(ua && ua_len == 13 && memcmp(ua, "ggated-health", 13) == 0);
	gh_conn_answer_text(conn, health ? hc_status : 404, "checked");
}

/* run c's loop until r's check is answered */
static void check_answered(struct gw_ctx *c, struct gw_replica *r)
{
	for (int i = 0; i < 2000 && r->hc_busy; i++) {
		event_base_loop(c->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_false(r->hc_busy);
}

/* A replica with a health path is admitted by its first passed check; the checks go on one
 * kept-alive connection; a 503 ejects it, a 200 admits it again; once the replica is gone
 * (its listener and connections closed) the idle connection's close is noticed and the next
 * check fails. */
static void health_checks_over_loopback(void **state)
{
	(void)state;
	struct gw_ctx *c = ctx_new();
	static const struct gh_handler h = {.head = hc_replica_head};
	struct gh_limits lim = {.max_head = 4096, .client_timeout_ms = 10000};
	gh_server_t *srv = gh_server_create(c->base, &h, &lim);
	assert_non_null(srv);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(gh_server_listen_fd(srv, fd, NULL), 0);
	struct world w;
	world_init(&w, "/health");
	replica(&w, 0, 0, GPOOL__JOB_STATE__RUNNING, ntohs(a.sin_port), true);
	hc_status = 200;
	hc_heads = 0;
	apply(c, &w); /* its first check, at once */
	struct gw_replica *r = known(c, 100);
	assert_true(r->hc_busy);
	assert_int_equal(usable(c), 0);
	check_answered(c, r);
	assert_int_equal(usable(c), 1);
	for (int i = 0; i < 3; i++) {
		gw_health_tick(-1, 0, c);
		check_answered(c, r);
		assert_true(r->healthy);
	}
	assert_int_equal(hc_heads, 4);
	assert_int_equal(gh_server_conns(srv), 1); /* one connection for every check */
	hc_status = 503;
	gw_health_tick(-1, 0, c);
	check_answered(c, r);
	assert_false(r->healthy);
	assert_int_equal(r->fails, 1);
	assert_null(gw_pick(svc(c), NULL, 0));
	hc_status = 200;
	gw_health_tick(-1, 0, c);
	check_answered(c, r);
	assert_true(r->healthy);
	assert_int_equal(r->fails, 0);
	assert_int_equal(gh_server_conns(srv), 1);
	/* the replica goes away: its close of the idle connection is noticed */
	gh_server_destroy(&srv);
	for (int i = 0; i < 2000 && r->hc; i++) {
		event_base_loop(c->base, EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_null(r->hc);
	gw_health_tick(-1, 0, c);
	check_answered(c, r);
	assert_false(r->healthy);
	assert_int_equal(r->fails, 1);
	Gpool__ServiceQuery q = GPOOL__SERVICE_QUERY__INIT;
	gw_report_free(gw_report_take(c, &q));
	ctx_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(kept_through_restart),
	    cmocka_unit_test(health_kept_through_restart),
	    cmocka_unit_test(ended_replicas_go),
	    cmocka_unit_test(gone_service_drains),
	    cmocka_unit_test(report_draining),
	    cmocka_unit_test(unreachable_address_not_added),
	    cmocka_unit_test(squatted_replica_removed),
	    cmocka_unit_test(name_belongs_to_one_owner),
	    cmocka_unit_test(health_checks_over_loopback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
