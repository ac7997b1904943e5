/* metrics.c: counters and latency histograms, as Prometheus text at /metrics. */
#include <event2/buffer.h>
#include <stdlib.h>
#include <stdio.h>

#include "gateway/gateway.h"
#include "gateway/metrics.h"
#include "gateway/pool.h"

static const double bounds[GW_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					  0.1,	  0.25,	 0.5,	 1,	2.5,  5,     10};

void gw_stats_observe(struct gw_stats *s, double sec)
{
	s->sum_sec += sec;
	s->count++;
	for (int i = 0; i < GW_BUCKETS; i++)
		if (sec <= bounds[i]) {
			s->bucket[i]++;
			return;
		}
	/* beyond the last bound: in +Inf (count) only */
}

/* A label value: backslash, quote and newline escaped. */
static void label(struct evbuffer *b, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			evbuffer_add_printf(b, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, v, 1);
	}
}

static void labels(struct evbuffer *b, const struct gw_service *s, const struct gw_replica *r)
{
	evbuffer_add(b, "{", 1);
	if (s) {
		evbuffer_add_printf(b, "service=\"");
		label(b, s->name);
		evbuffer_add_printf(b, "\",service_id=\"%llu\"", (unsigned long long)s->id);
	}
	if (r)
		evbuffer_add_printf(b, ",replica=\"%s\",replica_index=\"%u\"", r->label, r->index);
}

static void histogram(struct evbuffer *b, const char *name, const struct gw_service *s,
		      const struct gw_replica *r, const struct gw_stats *st)
{
	uint64_t count = st->count;
	uint64_t cum = 0;
	for (int i = 0; i < GW_BUCKETS; i++) {
		cum += st->bucket[i];
		evbuffer_add_printf(b, "%s_bucket", name);
		labels(b, s, r);
		evbuffer_add_printf(b, "%sle=\"%g\"} %llu\n", s ? "," : "", bounds[i],
				    (unsigned long long)cum);
	}
	evbuffer_add_printf(b, "%s_bucket", name);
	labels(b, s, r);
	evbuffer_add_printf(b, "%sle=\"+Inf\"} %llu\n", s ? "," : "", (unsigned long long)count);
	evbuffer_add_printf(b, "%s_sum", name);
	labels(b, s, r);
	evbuffer_add_printf(b, "} %.6f\n%s_count", st->sum_sec, name);
	labels(b, s, r);
	evbuffer_add_printf(b, "} %llu\n", (unsigned long long)count);
}

static void counter(struct evbuffer *b, const char *name, const struct gw_service *s,
		    const struct gw_replica *r, uint64_t v)
{
	evbuffer_add_printf(b, "%s", name);
	labels(b, s, r);
	evbuffer_add_printf(b, "} %llu\n", (unsigned long long)v);
}

char *gw_metrics_text(struct gw_ctx *c, size_t *len)
{
	struct evbuffer *b = evbuffer_new();
	if (!b)
		return NULL;
	evbuffer_add_printf(b, "# HELP ggated_requests_total requests received for a service\n"
			       "# TYPE ggated_requests_total counter\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		counter(b, "ggated_requests_total", s, NULL, s->st.requests);
	evbuffer_add_printf(b, "# HELP ggated_errors_total requests ggated answered with an "
			       "error (no replica, replica failed, timeout)\n"
			       "# TYPE ggated_errors_total counter\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		counter(b, "ggated_errors_total", s, NULL, s->st.errors);
	evbuffer_add_printf(b, "# HELP ggated_retries_total requests sent to another replica "
			       "after a failure\n# TYPE ggated_retries_total counter\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		counter(b, "ggated_retries_total", s, NULL, s->st.retries);
	evbuffer_add_printf(b, "# HELP ggated_request_duration_seconds time from request to "
			       "answer\n# TYPE ggated_request_duration_seconds histogram\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		histogram(b, "ggated_request_duration_seconds", s, NULL, &s->st);
	evbuffer_add_printf(b, "# HELP ggated_replica_requests_total requests a replica "
			       "answered\n# TYPE ggated_replica_requests_total counter\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			counter(b, "ggated_replica_requests_total", s, r, r->st.requests);
	evbuffer_add_printf(b, "# HELP ggated_replica_errors_total requests that failed at a "
			       "replica\n# TYPE ggated_replica_errors_total counter\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			counter(b, "ggated_replica_errors_total", s, r, r->st.errors);
	evbuffer_add_printf(b, "# TYPE ggated_replica_healthy gauge\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			counter(b, "ggated_replica_healthy", s, r, r->healthy);
	evbuffer_add_printf(b, "# TYPE ggated_replica_outstanding gauge\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			counter(b, "ggated_replica_outstanding", s, r, r->outstanding);
	evbuffer_add_printf(b, "# HELP ggated_replica_request_duration_seconds time from "
			       "request to answer, per replica\n"
			       "# TYPE ggated_replica_request_duration_seconds histogram\n");
	for (struct gw_service *s = c->svcs; s; s = s->next)
		for (struct gw_replica *r = s->reps; r; r = r->next)
			histogram(b, "ggated_replica_request_duration_seconds", s, r, &r->st);
	uint64_t ok = __atomic_load_n(&c->polls_ok, __ATOMIC_RELAXED);
	uint64_t bad = __atomic_load_n(&c->polls_failed, __ATOMIC_RELAXED);
	evbuffer_add_printf(
	    b,
	    "# TYPE ggated_scheduler_polls_total counter\n"
	    "ggated_scheduler_polls_total{result=\"ok\"} %llu\n"
	    "ggated_scheduler_polls_total{result=\"failed\"} %llu\n"
	    "# TYPE ggated_bad_requests_total counter\n"
	    "ggated_bad_requests_total %llu\n"
	    "# TYPE ggated_client_connections gauge\n"
	    "ggated_client_connections %zu\n"
	    "# TYPE ggated_client_connections_refused_total counter\n"
	    "ggated_client_connections_refused_total %llu\n"
	    "# TYPE ggated_websockets gauge\n"
	    "ggated_websockets %llu\n"
	    "# TYPE ggated_websocket_handshakes_total counter\n"
	    "ggated_websocket_handshakes_total{result=\"switched\"} %llu\n"
	    "ggated_websocket_handshakes_total{result=\"other\"} %llu\n"
	    "# TYPE ggated_websocket_idle_closed_total counter\n"
	    "ggated_websocket_idle_closed_total %llu\n"
	    "# TYPE ggated_route_token_refused_total counter\n"
	    "ggated_route_token_refused_total %llu\n",
	    (unsigned long long)ok, (unsigned long long)bad,
	    (unsigned long long)(c->bad_requests + (c->http ? gh_server_bad_requests(c->http) : 0)),
	    c->http ? gh_server_conns(c->http) : 0,
	    (unsigned long long)(c->http ? gh_server_refused_conns(c->http) : 0),
	    (unsigned long long)c->ws_open, (unsigned long long)c->ws_upgraded,
	    (unsigned long long)(c->ws_total - c->ws_upgraded),
	    (unsigned long long)c->ws_idle_closed, (unsigned long long)c->auth_refused);
	evbuffer_add_printf(b,
			    "# TYPE ggated_event_streams_total counter\n"
			    "ggated_event_streams_total %llu\n"
			    "# TYPE ggated_event_stream_keepalives_total counter\n"
			    "ggated_event_stream_keepalives_total %llu\n"
			    "# TYPE ggated_event_stream_errors_total counter\n"
			    "ggated_event_stream_errors_total %llu\n"
			    "# TYPE ggated_answers_cut_total counter\n"
			    "ggated_answers_cut_total %llu\n",
			    (unsigned long long)c->sse_streams,
			    (unsigned long long)c->sse_keepalives,
			    (unsigned long long)c->sse_errors, (unsigned long long)c->streams_cut);
	*len = evbuffer_get_length(b);
	char *t = malloc(*len ? *len : 1);
	if (t && evbuffer_remove(b, t, *len) != (int)*len) {
		free(t);
		t = NULL;
	}
	evbuffer_free(b);
	return t;
}
