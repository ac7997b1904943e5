/* gserve: the reference model server. Serves a trained MLP (model.h) over HTTP (evhttp):
 * POST /v1/predict with {"inputs": [[...], ...]} answers the class probabilities; GET /health
 * answers 200 once the model is loaded; GET /v1/model its shape. Requests are batched: rows
 * wait until --max-batch rows are queued or the first has waited --max-wait-us, then one
 * sgemm per layer serves them all. CPU through OpenBLAS. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/opt.h"
#include "serve/model.h"
#include "common/parse.h"
#include "serve/predict.h"

/* OpenBLAS's own: one thread by default, so that replicas on one PC do not fight */
void openblas_set_num_threads(int n);

struct waiting {
	struct waiting *next;
	struct evhttp_request *req;
	float *x;
	size_t rows;
};

struct server {
	struct event_base *base;
	gs_model_t *model;
	size_t max_batch, max_rows;
	long max_wait_us;
	struct waiting *head, **tail;
	size_t queued_rows;
	struct event *timer;
	bool timer_armed;
	uint64_t requests, batches, rows_served, bad;
};

static void reply_text(struct evhttp_request *req, int code, const char *text)
{
	struct evbuffer *b = evbuffer_new();
	if (b)
		evbuffer_add_printf(b, "%s\n", text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "text/plain; charset=utf-8");
	evhttp_send_reply(req, code, NULL, b);
	if (b)
		evbuffer_free(b);
}

static void reply_error(struct evhttp_request *req, int code, const char *why)
{
	struct evbuffer *b = evbuffer_new();
	if (b) {
		evbuffer_add_printf(b, "{\"error\":\"");
		for (const char *p = why; *p; p++) /* the texts are ours: only quotes to escape */
			evbuffer_add_printf(b, *p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
		evbuffer_add_printf(b, "\"}\n");
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	evhttp_send_reply(req, code, NULL, b);
	if (b)
		evbuffer_free(b);
}

static void free_js(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

/* Serve queued requests, up to max_batch rows at a time (a larger request alone). */
static void flush(struct server *s)
{
	uint32_t in = gs_model_inputs(s->model), k = gs_model_outputs(s->model);
	while (s->head) {
		size_t rows = 0, nreq = 0;
		struct waiting *w = s->head;
		for (; w && (nreq == 0 || rows + w->rows <= s->max_batch); w = w->next) {
			rows += w->rows;
			nreq++;
		}
		float *x = malloc(rows * in * sizeof(float));
		float *p = malloc(rows * k * sizeof(float));
		size_t off = 0;
		for (w = s->head; x && w && off < rows; w = w->next) {
			memcpy(x + off * in, w->x, w->rows * in * sizeof(float));
			off += w->rows;
		}
		bool ok = x && p && gs_model_forward(s->model, x, rows, p) == 0;
		s->batches++;
		off = 0;
		for (size_t i = 0; i < nreq; i++) {
			w = s->head;
			s->head = w->next;
			if (ok) {
				size_t len;
				char *js = gs_predict_encode(p + off * k, w->rows, k, &len);
				if (js) {
					struct evbuffer *b = evbuffer_new();
					/* the buffer owns js from here: freed when sent */
					if (!b ||
					    evbuffer_add_reference(b, js, len, free_js, NULL) < 0)
						free(js);
					evhttp_add_header(evhttp_request_get_output_headers(w->req),
							  "Content-Type", "application/json");
					evhttp_send_reply(w->req, 200, "OK", b);
					if (b)
						evbuffer_free(b);
				} else {
					reply_error(w->req, 503, "out of memory");
				}
			} else {
				reply_error(w->req, 503, "out of memory");
			}
			off += w->rows;
			s->rows_served += w->rows;
			s->queued_rows -= w->rows;
			free(w->x);
			free(w);
		}
		free(x);
		free(p);
	}
	s->tail = &s->head;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct server *s = arg;
	s->timer_armed = false;
	flush(s);
}

static void predict(struct server *s, struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	const char *body = (const char *)evbuffer_pullup(in, -1);
	gp_error_t err = {{0}};
	struct waiting *w = calloc(1, sizeof(*w));
	if (!w) {
		reply_error(req, 503, "out of memory");
		return;
	}
	if (gs_predict_decode(body ? body : "", len, gs_model_inputs(s->model), s->max_rows, &w->x,
			      &w->rows, &err) < 0) {
		s->bad++;
		free(w);
		reply_error(req, 400, err.text);
		return;
	}
	s->requests++;
	w->req = req;
	*s->tail = w;
	s->tail = &w->next;
	s->queued_rows += w->rows;
	if (s->queued_rows >= s->max_batch || s->max_wait_us <= 0) {
		if (s->timer_armed) {
			event_del(s->timer);
			s->timer_armed = false;
		}
		flush(s);
	} else if (!s->timer_armed) {
		struct timeval tv = {s->max_wait_us / 1000000, s->max_wait_us % 1000000};
		event_add(s->timer, &tv);
		s->timer_armed = true;
	}
}

static void on_request(struct evhttp_request *req, void *arg)
{
	struct server *s = arg;
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	enum evhttp_cmd_type m = evhttp_request_get_command(req);
	if (!path)
		path = "";
	if (strcmp(path, "/v1/predict") == 0) {
		if (m != EVHTTP_REQ_POST) {
			reply_error(req, 405, "use POST");
			return;
		}
		predict(s, req);
	} else if (strcmp(path, "/health") == 0) {
		reply_text(req, 200, "ok");
	} else if (strcmp(path, "/v1/model") == 0) {
		char buf[512];
		snprintf(buf, sizeof(buf),
			 "{\"layers\":\"%s\",\"inputs\":%u,\"outputs\":%u,\"max_batch\":%zu,"
			 "\"max_wait_us\":%ld,\"requests\":%llu,\"batches\":%llu,\"rows\":%llu,"
			 "\"bad_requests\":%llu}",
			 gs_model_shape(s->model), gs_model_inputs(s->model),
			 gs_model_outputs(s->model), s->max_batch, s->max_wait_us,
			 (unsigned long long)s->requests, (unsigned long long)s->batches,
			 (unsigned long long)s->rows_served, (unsigned long long)s->bad);
		reply_text(req, 200, buf);
	} else {
		reply_error(req, 404,
			    "no such path (POST /v1/predict, GET /health, GET /v1/model)");
	}
}

static void usage(FILE *f)
{
	fputs("usage: gserve --model PATH [OPTIONS]\n"
	      "  --model PATH        the model file (docs/gserve.md)\n"
	      "  --listen ADDR:PORT  default 0.0.0.0:$GPOOL_PORT (8080 without it)\n"
	      "  --max-batch N       rows served by one forward pass (default 32)\n"
	      "  --max-wait-us N     the longest a row waits for others (default 1000; 0: no "
	      "batching)\n"
	      "  --max-rows N        rows in one request (default 1024)\n"
	      "  --max-body SIZE     largest request body (default 4MiB)\n"
	      "  --client-timeout MS a client silent this long is closed (default 10000)\n"
	      "  --threads N         OpenBLAS threads (default 1)\n"
	      "  --log-level LEVEL   err, warn, info, debug\n",
	      f);
}

static int num(const char *a, long lo, long hi, const char *what, long *out)
{
	if (gp_parse_long(a, lo, hi, out) < 0) {
		fprintf(stderr, "gserve: invalid %s '%s'\n", what, a);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"model", required_argument, 0, 'm'},
	    {"listen", required_argument, 0, 'l'},
	    {"max-batch", required_argument, 0, 'b'},
	    {"max-wait-us", required_argument, 0, 'w'},
	    {"max-rows", required_argument, 0, 'r'},
	    {"max-body", required_argument, 0, 'B'},
	    {"client-timeout", required_argument, 0, 'T'},
	    {"threads", required_argument, 0, 't'},
	    {"log-level", required_argument, 0, 'L'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	static struct server s;
	const char *model = NULL;
	char addr[128] = "0.0.0.0";
	long port = 8080, batch = 32, wait_us = 1000, rows = 1024, timeout = 10000, threads = 1;
	uint64_t max_body = 4u << 20;
	int level = GP_LOG_INFO;
	const char *gp = getenv("GPOOL_PORT");
	if (gp && *gp && gp_parse_long(gp, 1, 65535, &port) < 0) {
		fprintf(stderr, "gserve: invalid GPOOL_PORT '%s'\n", gp);
		return 2;
	}
	int o;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		int bad = 0;
		switch (o) {
		case 'm':
			model = optarg;
			break;
		case 'l':
			if (gp_parse_listen(optarg, addr, sizeof(addr), &port) < 0) {
				fprintf(stderr, "gserve: invalid listen address '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			bad = num(optarg, 1, 65536, "batch size", &batch);
			break;
		case 'w':
			bad = num(optarg, 0, 10000000, "wait", &wait_us);
			break;
		case 'r':
			bad = num(optarg, 1, 1000000, "row limit", &rows);
			break;
		case 'B':
			if (gp_parse_size(optarg, 1, &max_body) < 0 || !max_body) {
				fprintf(stderr, "gserve: invalid body size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'T':
			bad = num(optarg, 1, 3600000, "client timeout", &timeout);
			break;
		case 't':
			bad = num(optarg, 1, 256, "thread count", &threads);
			break;
		case 'L':
			if ((level = gp_log_level_parse(optarg)) < 0) {
				fprintf(stderr, "gserve: invalid log level '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
		default:
			return gp_opt_usage_status(usage, o == 'h', 2);
		}
		if (bad)
			return 2;
	}
	if (!model) {
		fprintf(stderr, "gserve: no model given (--model PATH)\n");
		return 2;
	}
	gp_log_init("gserve", level);
	signal(SIGPIPE, SIG_IGN);
	openblas_set_num_threads((int)threads);
	gp_error_t err = {{0}};
	if (!(s.model = gs_model_load(model, &err))) {
		gp_err("%s", err.text);
		return 1;
	}
	s.max_batch = (size_t)batch;
	s.max_rows = (size_t)rows;
	s.max_wait_us = wait_us;
	s.tail = &s.head;
	struct evhttp *http;
	if (!(s.base = event_base_new()) || !(http = evhttp_new(s.base)) ||
	    !(s.timer = evtimer_new(s.base, on_timer, &s))) {
		gp_err("cannot make the event loop");
		return 1;
	}
	evhttp_set_max_body_size(http, max_body);
	evhttp_set_max_headers_size(http, 16384);
	struct timeval tv = {timeout / 1000, (timeout % 1000) * 1000};
	evhttp_set_timeout_tv(http, &tv);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(http, on_request, &s);
	if (evhttp_bind_socket(http, addr, (uint16_t)port) < 0) {
		gp_err("cannot listen on %s:%ld: %s", addr, port, strerror(errno));
		return 1;
	}
	gp_info("model %s (%s) served on %s:%ld, batches of up to %ld rows, waiting up to %ld us",
		model, gs_model_shape(s.model), addr, port, batch, wait_us);
	event_base_dispatch(s.base);
	gs_model_destroy(&s.model);
	return 0;
}
