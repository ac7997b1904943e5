/* discovery.c: a thread that asks gschedd for the services and their replicas
 * (ServiceQuery, over the authenticated control path) every poll interval and hands each
 * answer to the event loop (snap.c, pool.c). A failed poll hands nothing: the loop keeps
 * serving the set it knows while gschedd is down, and after it restarts until it says that
 * a replica ended (gw_pool_apply). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/sched_client.h"
#include "common/config.h"
#include "gateway/gateway.h"
#include "gateway/snap.h"
#include "gateway/pool.h"
#include "gateway/report.h"
#include "gateway/discovery.h"
#include "common/log.h"

struct disco {
	struct gw_ctx *c;
	gp_config_t *cfg;
};

/* addr as a numeric address, resolved here when it is a name: the event loop's connections
 * never ask DNS (http/client_conn.c takes numeric addresses only: a lookup would block the loop).
 * -1: unresolvable. */
static int numeric(const char *addr, char *out, size_t n)
{
	struct addrinfo hint = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	hint.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(addr, NULL, &hint, &ai) == 0) {
		freeaddrinfo(ai);
		snprintf(out, n, "%s", addr);
		return 0;
	}
	hint.ai_flags = 0;
	if (getaddrinfo(addr, NULL, &hint, &ai) != 0 || !ai)
		return -1;
	int e =
	    getnameinfo(ai->ai_addr, ai->ai_addrlen, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(ai);
	return e ? -1 : 0;
}

static void *run(void *arg)
{
	struct disco *d = arg;
	struct gw_ctx *c = d->c;
	gp_client_t *cl = NULL;
	int64_t last_warn = 0;
	for (;;) {
		gp_error_t err = {{0}};
		struct gw_snap *snap = NULL;
		if (!cl)
			cl = gp_client_create(d->cfg, &err);
		if (cl) {
			Gpool__ServiceQuery q = GPOOL__SERVICE_QUERY__INIT;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_SERVICE_QUERY;
			m.service_query = &q;
			struct gw_report *mine = gw_report_take(c, &q);
			Gpool__Msg *rep = gp_client_call(cl, &m, 2000, &err);
			gw_report_free(mine);
			if (rep && rep->m_case == GPOOL__MSG__M_SERVICE_QUERY_REPLY)
				snap = gw_snap_of(rep->service_query_reply, numeric);
			else if (rep && rep->m_case == GPOOL__MSG__M_ERROR)
				snprintf(err.text, sizeof(err.text), "%s", rep->error->text);
			if (!rep)
				gp_client_destroy(&cl); /* a fresh socket: no stale reply later */
		}
		if (snap) {
			/* a pointer is written whole (under PIPE_BUF); a full pipe means the loop
			 * is behind: this one is dropped, the next poll brings the news again */
			if (write(c->snap_pipe[1], &snap, sizeof(snap)) != (ssize_t)sizeof(snap))
				gw_snap_free(snap);
			__atomic_add_fetch(&c->polls_ok, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&c->polls_failed, 1, __ATOMIC_RELAXED);
			if (gw_now_ms() - last_warn > 10000) {
				gp_warn("cannot ask gschedd for the services (%s): serving the "
					"replicas known",
					err.text[0] ? err.text : "no answer");
				last_warn = gw_now_ms();
			}
		}
		usleep((useconds_t)c->poll_ms * 1000);
	}
	return NULL;
}

void gw_discovery_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct gw_ctx *c = arg;
	struct gw_snap *snap, *last = NULL;
	while (read(fd, &snap, sizeof(snap)) == (ssize_t)sizeof(snap)) {
		gw_snap_free(last);
		last = snap;
	}
	if (last)
		gw_pool_apply(c, last);
}

int gw_discovery_start(struct gw_ctx *c, const char *config, gp_error_t *err)
{
	struct disco *d = calloc(1, sizeof(*d));
	if (!d || !(d->cfg = gp_config_create(GP_CLI))) {
		free(d);
		return gp_errprintf(err, "out of memory");
	}
	d->c = c;
	if (gp_config_load_file(d->cfg, config, err) < 0) {
		gp_config_destroy(&d->cfg);
		free(d);
		return -1;
	}
	pthread_t t;
	int e = pthread_create(&t, NULL, run, d);
	if (e) {
		gp_config_destroy(&d->cfg);
		free(d);
		errno = e;
		return gp_errprintf(err, "cannot start the discovery thread: %s", strerror(e));
	}
	pthread_detach(t);
	return 0;
}
