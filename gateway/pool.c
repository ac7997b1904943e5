/* pool.c: the services ggated knows and their replicas (see gateway.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gateway/gateway.h"
#include "gateway/request.h"
#include "gateway/snap.h"
#include "gateway/pool.h"
#include "common/log.h"

int64_t gw_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void gw_conn_close(struct gw_conn *conn)
{
	struct gw_replica *r = conn->r;
	for (uint32_t i = 0; i < r->nconns; i++)
		if (r->conns[i] == conn) {
			r->conns[i] = r->conns[--r->nconns];
			break;
		}
	gh_client_destroy(&conn->cl);
	free(conn);
}

static void replica_free(struct gw_replica *r)
{
	while (r->nconns)
		gw_conn_close(r->conns[0]);
	free(r->conns);
	gh_client_destroy(&r->hc);
	gh_buf_free(&r->hc_req);
	free(r);
}

void gw_replica_maybe_free(struct gw_replica *r)
{
	if (!r->removed || r->outstanding || r->hc_busy)
		return;
	/* idle: its connections go at once; the entry stays GW_LINGER_MS in the reports */
	while (r->nconns)
		gw_conn_close(r->conns[0]);
	gh_client_destroy(&r->hc);
	if (gw_now_ms() - r->removed_ms < GW_LINGER_MS)
		return;
	struct gw_service *s = r->svc;
	for (struct gw_replica **p = &s->reps; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			break;
		}
	replica_free(r);
}

static struct gw_replica *replica_new(struct gw_service *s, const struct gw_snap_rep *sr)
{
	struct gw_replica *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->svc = s;
	r->job_id = sr->job_id;
	r->index = sr->index;
	r->restarts = sr->restarts;
	snprintf(r->addr, sizeof(r->addr), "%s", sr->addr);
	r->port = sr->port;
	snprintf(r->label, sizeof(r->label), "%s:%u", r->addr, r->port);
	/* without a health path the scheduler's word is all there is; with one, the first
	 * check (made at once) admits it */
	r->healthy = !s->health_path[0];
	r->next = s->reps;
	s->reps = r;
	gp_info("service %s: replica %u (job %llu) at %s added", s->name, r->index,
		(unsigned long long)r->job_id, r->label);
	return r;
}

/* The known replica that sr is: the same attempt of the same job at the same address. */
static struct gw_replica *replica_find(struct gw_service *s, const struct gw_snap_rep *sr)
{
	for (struct gw_replica *r = s->reps; r; r = r->next)
		if (!r->removed && r->job_id == sr->job_id && r->restarts == sr->restarts &&
		    r->port == sr->port && strcmp(r->addr, sr->addr) == 0)
			return r;
	return NULL;
}

/* Whether the scheduler's word ss says that known replica r has ended: its job is not one of
 * the service's replicas any more, is at another attempt, is not running (requeued, stopping,
 * ended), or runs at another address. A running replica whose port or node the scheduler
 * does not know (yet) has not ended. */
static bool replica_ended(const struct gw_replica *r, const struct gw_snap_svc *ss)
{
	for (size_t k = 0; k < ss->nreps; k++) {
		const struct gw_snap_rep *sr = &ss->reps[k];
		if (sr->job_id != r->job_id)
			continue;
		if (sr->restarts != r->restarts || !sr->running)
			return true;
		if (sr->port && sr->port != r->port)
			return true;
		return sr->ready && strcmp(sr->addr, r->addr) != 0;
	}
	return true;
}

static void replica_remove(struct gw_replica *r)
{
	if (r->removed)
		return;
	gp_info("service %s: replica %u at %s removed (draining %u requests)", r->svc->name,
		r->index, r->label, r->outstanding);
	r->removed = true;
	r->removed_ms = gw_now_ms();
	r->healthy = false;
	gw_replica_maybe_free(r);
}

static void health_check(struct gw_replica *r);

void gw_pool_apply(struct gw_ctx *c, struct gw_snap *snap)
{
	for (struct gw_service *s = c->svcs; s; s = s->next)
		s->seen = false;
	for (size_t i = 0; i < snap->nsvcs; i++) {
		struct gw_snap_svc *ss = &snap->svcs[i];
		struct gw_service *s;
		for (s = c->svcs; s && s->id != ss->id; s = s->next)
			;
		if (!s) {
			s = calloc(1, sizeof(*s));
			if (!s)
				continue;
			s->ctx = c;
			s->id = ss->id;
			s->next = c->svcs;
			c->svcs = s;
			gp_info("service %llu (%s) known", (unsigned long long)ss->id, ss->name);
		}
		s->seen = true;
		snprintf(s->name, sizeof(s->name), "%s", ss->name);
		snprintf(s->user, sizeof(s->user), "%s", ss->user);
		snprintf(s->health_path, sizeof(s->health_path), "%s", ss->health_path);
		snprintf(s->route_hash, sizeof(s->route_hash), "%s", ss->route_hash);
		s->keep_prefix = ss->keep_prefix;
		struct gw_replica *r = s->reps, *nx;
		for (; r; r = nx) {
			nx = r->next;
			if (!r->removed && replica_ended(r, ss))
				replica_remove(r);
		}
		for (size_t k = 0; k < ss->nreps; k++) {
			const struct gw_snap_rep *sr = &ss->reps[k];
			if (!sr->ready || replica_find(s, sr))
				continue;
			if ((r = replica_new(s, sr)) && s->health_path[0])
				health_check(r);
		}
	}
	/* a service gone from the scheduler: its replicas drain; the service entry stays
	 * (empty) so that its name answers 503, not 404, for a while */
	for (struct gw_service *s = c->svcs; s; s = s->next) {
		if (s->seen)
			continue;
		struct gw_replica *r = s->reps, *nx;
		for (; r; r = nx) {
			nx = r->next;
			replica_remove(r);
		}
	}
	gw_snap_free(snap);
}

struct gw_service *gw_service_by_id(struct gw_ctx *c, uint64_t id)
{
	for (struct gw_service *s = c->svcs; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static bool all_digits(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return len > 0;
}

struct gw_service *gw_service_find(struct gw_ctx *c, const char *name, size_t len)
{
	if (all_digits(name, len)) {
		char buf[32];
		if (len >= sizeof(buf))
			return NULL;
		memcpy(buf, name, len);
		buf[len] = '\0';
		return gw_service_by_id(c, strtoull(buf, NULL, 10));
	}
	/* the name's holder: the owner of the oldest of its services listed now (else of the
	 * oldest known) */
	const struct gw_service *holder = NULL;
	for (struct gw_service *s = c->svcs; s; s = s->next)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0 &&
		    (!holder || (s->seen && !holder->seen) ||
		     (s->seen == holder->seen && s->id < holder->id)))
			holder = s;
	if (!holder)
		return NULL;
	/* a name may be reused by its owner: the newest of theirs listed now wins */
	struct gw_service *best = NULL;
	for (struct gw_service *s = c->svcs; s; s = s->next)
		if (strlen(s->name) == len && memcmp(s->name, name, len) == 0 &&
		    strcmp(s->user, holder->user) == 0 &&
		    (!best || (s->seen && (!best->seen || s->id > best->id))))
			best = s;
	return best;
}

static bool usable(const struct gw_replica *r, int64_t now, struct gw_replica *const *avoid,
		   int navoid)
{
	if (r->removed || !r->healthy || now < r->eject_until_ms)
		return false;
	for (int i = 0; i < navoid; i++)
		if (avoid[i] == r)
			return false;
	return true;
}

struct gw_replica *gw_pick(struct gw_service *svc, struct gw_replica *const *avoid, int navoid)
{
	int64_t now = gw_now_ms();
	uint32_t n = 0;
	for (struct gw_replica *r = svc->reps; r; r = r->next)
		n += usable(r, now, avoid, navoid);
	if (!n)
		return NULL;
	/* power of two choices: two at random, the one with fewer requests outstanding */
	uint32_t a = (uint32_t)random() % n, b = n > 1 ? (uint32_t)random() % (n - 1) : 0;
	if (n > 1 && b >= a)
		b++;
	struct gw_replica *ra = NULL, *rb = NULL;
	uint32_t k = 0;
	for (struct gw_replica *r = svc->reps; r; r = r->next) {
		if (!usable(r, now, avoid, navoid))
			continue;
		if (k == a)
			ra = r;
		if (k == b)
			rb = r;
		k++;
	}
	if (!rb || ra->outstanding <= rb->outstanding)
		return ra;
	return rb;
}

/* r is out: the requests in flight on it are retried elsewhere or failed, its connections
 * closed (an unreachable host would hold them until their timeout). */
static void eject(struct gw_replica *r, const char *why, bool abandon)
{
	struct gw_ctx *c = r->svc->ctx;
	if (r->healthy || !r->eject_until_ms)
		gp_warn("service %s: replica %u at %s ejected: %s", r->svc->name, r->index,
			r->label, why);
	r->healthy = false;
	r->eject_until_ms = gw_now_ms() + c->eject_ms;
	/* idle connections go (to a cut host they would take a request and wait for its
	 * timeout); busy ones too when the replica is unreachable, their requests retried
	 * elsewhere or failed */
	for (uint32_t i = 0; i < r->nconns;) {
		struct gw_conn *conn = r->conns[i];
		if (!conn->fwd) {
			gw_conn_close(conn); /* the last one takes its place */
			continue;
		}
		if (!abandon) {
			i++;
			continue;
		}
		struct gw_fwd *f = conn->fwd;
		conn->fwd = NULL;
		gw_conn_close(conn);
		f->ops->failed(f, true, false, "the replica became unreachable");
		i = 0; /* that may have changed the list */
	}
}

void gw_replica_failed(struct gw_replica *r, const char *why)
{
	r->fails++;
	eject(r, why, false);
}

void gw_replica_ok(struct gw_replica *r)
{
	r->fails = 0;
	if (!r->svc->health_path[0] && !r->healthy) {
		r->healthy = true;
		r->eject_until_ms = 0;
	}
}

/* ---- active health checks: GET <health path> on a keep-alive connection of their own ---- */

/* the check's answer: code (0: none) */
static void health_done(struct gw_replica *r, int code)
{
	r->hc_busy = false;
	if (r->removed) {
		gh_client_destroy(&r->hc);
		gw_replica_maybe_free(r);
		return;
	}
	if (code >= 200 && code < 400) {
		if (!r->healthy)
			gp_info("service %s: replica %u at %s healthy", r->svc->name, r->index,
				r->label);
		r->healthy = true;
		r->fails = 0;
		r->eject_until_ms = 0;
		return;
	}
	char why[64];
	snprintf(why, sizeof(why), code ? "health check answered %d" : "health check failed", code);
	r->fails++;
	eject(r, why, code == 0); /* unreachable: what is in flight there is lost */
}

static void hc_head(gh_client_t *cl, void *arg)
{
	struct gw_replica *r = arg;
	r->hc_code = gh_client_answer(cl)->p.status_code; /* its body is dropped */
}

static void hc_done(gh_client_t *cl, void *arg, bool keep)
{
	(void)cl;
	struct gw_replica *r = arg;
	if (!keep)
		gh_client_destroy(&r->hc);
	health_done(r, r->hc_code);
}

static void hc_error(gh_client_t *cl, void *arg, const struct gh_client_error *e)
{
	(void)cl;
	struct gw_replica *r = arg;
	/* a fresh connection for the next check (a timed-out one may be stuck on an
	 * unreachable host) */
	gh_client_destroy(&r->hc);
	if (e->request) {
		gp_debug("replica %s: health check: %s%s%s", r->label, e->why,
			 e->detail[0] ? ": " : "", e->detail);
		health_done(r, 0);
	} else if (r->removed) {
		gw_replica_maybe_free(r);
	}
}

static const struct gh_client_ops hc_ops = {
    .head = hc_head,
    .done = hc_done,
    .error = hc_error,
};

/* A request target that can go into a request line as it is: no spaces or controls. */
static bool plain_target(const char *t)
{
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return false;
	return t[0] == '/';
}

static void health_check(struct gw_replica *r)
{
	if (r->hc_busy || r->removed)
		return;
	struct gw_ctx *c = r->svc->ctx;
	if (!plain_target(r->svc->health_path)) {
		if (!r->fails) /* once, not every period */
			gp_warn("service %s: health path '%s' is not a plain request target",
				r->svc->name, r->svc->health_path);
		health_done(r, 0);
		return;
	}
	if (!r->hc) {
		/* the check's whole time, connect and answer alike, is connect_timeout_ms */
		struct gh_client_limits lim = {.connect_ms = c->connect_timeout_ms,
					       .answer_ms = c->connect_timeout_ms};
		r->hc = gh_client_create(c->base, r->addr, r->port, &lim, &hc_ops, r);
		if (!r->hc) {
			gp_debug("replica %s: health check: cannot connect: %s", r->label,
				 strerror(errno));
			health_done(r, 0);
			return;
		}
	}
	gh_buf_clear(&r->hc_req);
	if (gh_buf_printf(&r->hc_req,
			  "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: ggated-health\r\n\r\n",
			  r->svc->health_path, r->label) < 0)
		return;
	r->hc_code = 0;
	r->hc_busy = true;
	if (gh_client_send(r->hc, &r->hc_req, false, true) < 0) {
		gh_client_destroy(&r->hc);
		health_done(r, 0);
	}
}

void gw_health_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct gw_ctx *c = arg;
	int64_t now = gw_now_ms();
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps, *nx; r; r = nx) {
			nx = r->next;
			if (r->removed) {
				gw_replica_maybe_free(r); /* its linger may be over */
				continue;
			}
			if (s->health_path[0])
				health_check(r);
			else if (!r->healthy && now >= r->eject_until_ms)
				r->healthy = true; /* passive ejection has served its time */
		}
}
