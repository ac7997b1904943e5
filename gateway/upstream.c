/* upstream.c: each replica's keep-alive connections (see gateway.h): http/client_conn.c makes,
 * writes and reads them; here they are pooled per replica (at most max_conns, an idle one
 * reused first) and their events become the request's (head, done, failed: its ops, proxy.c's)
 * and the pool's (an idle connection the replica closed goes from its list, pool.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"
#include "gateway/upstream.h"
#include "gateway/request.h"
#include "gateway/pool.h"
#include "common/log.h"

static void on_head(gh_client_t *cl, void *arg)
{
	(void)cl;
	struct gw_conn *conn = arg;
	conn->fwd->ops->head(conn->fwd);
}

/* the answer's bytes so far on to the client */
static void on_flush(gh_client_t *cl, void *arg)
{
	struct gw_conn *conn = arg;
	if (conn->fwd)
		conn->fwd->ops->flushed(conn->fwd, gh_client_answer(cl));
	if (conn->fwd && conn->fwd->client)
		gh_conn_flush(conn->fwd->client);
}

static void on_done(gh_client_t *cl, void *arg, bool keep)
{
	(void)cl;
	struct gw_conn *conn = arg;
	struct gw_fwd *f = conn->fwd;
	conn->fwd = NULL;
	if (!keep)
		gw_conn_close(conn);
	f->ops->done(f); /* may free the replica, and conn with it */
}

static void on_error(gh_client_t *cl, void *arg, const struct gh_client_error *e)
{
	struct gw_conn *conn = arg;
	struct gw_fwd *f = conn->fwd;
	struct gw_replica *r = conn->r;
	if (e->detail[0])
		gp_debug("replica %s: %s: %s", r->label, e->why, e->detail);
	if (f && e->answered)
		f->ops->flushed(f, gh_client_answer(cl)); /* where a stream stopped */
	gw_conn_close(conn);
	if (f) /* a connect timeout is no answer's timeout: 502, not 504 */
		f->ops->failed(f, e->reached, e->timeout && e->connected, e->why);
	else
		gw_replica_maybe_free(r); /* idle: the replica closed it */
}

static const struct gh_client_ops ops = {
    .head = on_head,
    .flush = on_flush,
    .done = on_done,
    .error = on_error,
};

static struct gw_conn *conn_new(struct gw_replica *r)
{
	struct gw_ctx *c = r->svc->ctx;
	struct gw_conn *conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->r = r;
	struct gh_client_limits lim = {.connect_ms = c->connect_timeout_ms,
				       .answer_ms = c->timeout_ms};
	conn->cl = gh_client_create(c->base, r->addr, r->port, &lim, &ops, conn);
	if (!conn->cl) {
		gp_debug("replica %s: cannot connect: %s", r->label, strerror(errno));
		free(conn);
		return NULL;
	}
	return conn;
}

struct gw_conn *gw_conn_get(struct gw_replica *r)
{
	struct gw_ctx *c = r->svc->ctx;
	for (uint32_t i = 0; i < r->nconns; i++)
		if (!r->conns[i]->fwd)
			return r->conns[i];
	if (r->nconns >= c->max_conns)
		return NULL;
	if (r->nconns == r->capconns) {
		uint32_t nc = r->capconns ? r->capconns * 2 : 8;
		struct gw_conn **n = realloc(r->conns, nc * sizeof(*n));
		if (!n)
			return NULL;
		r->conns = n;
		r->capconns = nc;
	}
	struct gw_conn *conn = conn_new(r);
	if (conn)
		r->conns[r->nconns++] = conn;
	return conn;
}

void gw_conn_attach(struct gw_conn *conn, struct gw_fwd *f)
{
	conn->fwd = f;
	if (gh_client_send(conn->cl, &f->out, f->head, f->req_done) < 0) {
		/* never so for an idle connection of the pool (closed ones leave it at once) */
		conn->fwd = NULL;
		gw_conn_close(conn);
		f->ops->failed(f, false, false, "cannot send");
	}
}

void gw_conn_flush(struct gw_conn *conn)
{
	gh_client_more(conn->cl, conn->fwd && conn->fwd->req_done);
}

void gw_conn_resume(struct gw_conn *conn)
{
	gh_client_resume(conn->cl);
}
