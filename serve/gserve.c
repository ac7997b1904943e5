/* gserve: the reference model server. Serves a trained MLP (model/model.h, read by model/file.h)
 * over HTTP (http/server.h,
 * ggated's own HTTP library):
 * POST /v1/predict with {"inputs": [[...], ...]} answers the class probabilities; GET /health
 * answers 200 once the model is loaded; GET /v1/model its shape. Requests are batched: rows
 * wait until --max-batch rows are queued or the first has waited --max-wait-us, then one
 * sgemm per layer serves them all (model/infer.h): on a card, or the kernels' cpu backend
 * (OpenBLAS). */
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opt.h"
#include "common/parse.h"
#include "http/server.h"
#include "model/file.h"
#include "model/infer.h"
#include "serve/predict.h"

/* OpenBLAS's own: one thread by default, so that replicas on one PC do not fight */
void openblas_set_num_threads(int n);

struct server;

/* a POST /v1/predict: its body as it comes, then its rows waiting for a batch */
struct waiting {
	struct waiting *next;
	struct server *s;
	gh_conn_t *c; /* NULL: the client left; the rows are served and the answer dropped */
	struct gh_buf body;
	bool queued;
	float *x;
	size_t rows;
};

struct server {
	struct event_base *base;
	gm_model_t *model; /* until its parameters are on bk: then only what follows stays */
	uint32_t inputs, outputs;
	char shape[GM_MAX_SIZES * 8 + 1];
	gk_backend_t *bk; /* a card, or the kernels' cpu backend (OpenBLAS) */
	gm_infer_t *run;  /* the forward pass on bk */
	size_t max_batch, max_rows;
	long max_wait_us;
	struct waiting *head, **tail;
	size_t queued_rows;
	struct event *timer;
	bool timer_armed;
	uint64_t requests, batches, rows_served, bad;
};

static void waiting_free(struct waiting *w)
{
	gh_buf_free(&w->body);
	free(w->x);
	free(w);
}

static void reply_error(gh_conn_t *c, int code, const char *why)
{
	char buf[600];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"error\":\"");
	for (const char *p = why; *p && n < sizeof(buf) - 8; p++) {
		if (*p == '"' || *p == '\\') /* the texts are ours: only quotes to escape */
			buf[n++] = '\\';
		buf[n++] = *p;
	}
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\"}\n");
	gh_conn_answer(c, code, "application/json", buf, n);
}

/* Serve queued requests, up to max_batch rows at a time (a larger request alone). Each batch
 * leaves the queue before it is answered: an answer lets its client's next (pipelined)
 * request in, which may queue rows and flush again. */
static void flush(struct server *s)
{
	uint32_t in = s->inputs, k = s->outputs;
	while (s->head) {
		size_t rows = 0, nreq = 0;
		struct waiting *w = s->head, *last = NULL;
		for (; w && (nreq == 0 || rows + w->rows <= s->max_batch); w = w->next) {
			rows += w->rows;
			nreq++;
			last = w;
		}
		struct waiting *batch = s->head;
		s->head = last->next;
		if (!s->head)
			s->tail = &s->head;
		last->next = NULL;
		s->queued_rows -= rows;
		float *x = malloc(rows * in * sizeof(float));
		float *p = malloc(rows * k * sizeof(float));
		size_t off = 0;
		for (w = batch; x && w; w = w->next) {
			memcpy(x + off * in, w->x, w->rows * in * sizeof(float));
			off += w->rows;
		}
		bool ok = x && p && gm_infer_run(s->run, x, rows, p) == 0;
		s->batches++;
		off = 0;
		for (struct waiting *nx; batch; batch = nx) {
			w = batch;
			nx = w->next;
			if (w->c && ok) {
				size_t len;
				char *js = gs_predict_encode(p + off * k, w->rows, k, &len);
				if (js)
					gh_conn_answer(w->c, 200, "application/json", js, len);
				else
					reply_error(w->c, 503, "out of memory");
				free(js);
			} else if (w->c) {
				reply_error(w->c, 503, "out of memory");
			}
			off += w->rows;
			s->rows_served += w->rows;
			gh_conn_t *c = w->c;
			waiting_free(w);
			if (c)
				gh_conn_next(c, true);
		}
		free(x);
		free(p);
	}
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct server *s = arg;
	s->timer_armed = false;
	flush(s);
}

/* a POST /v1/predict is whole: its rows wait for a batch */
static void predict(struct waiting *w)
{
	struct server *s = w->s;
	gp_error_t err = {{0}};
	if (gs_predict_decode(gh_buf_size(&w->body) ? gh_buf_data(&w->body) : "",
			      gh_buf_size(&w->body), s->inputs, s->max_rows, &w->x, &w->rows,
			      &err) < 0) {
		s->bad++;
		reply_error(w->c, 400, err.text);
		gh_conn_next(w->c, true);
		waiting_free(w);
		return;
	}
	gh_buf_free(&w->body);
	s->requests++;
	w->queued = true;
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

static void on_body(void *task, bool done)
{
	if (done)
		predict(task);
}

static void on_gone(void *task)
{
	struct waiting *w = task;
	w->c = NULL;
	if (!w->queued)
		waiting_free(w); /* its body never came whole */
}

static void on_head(gh_conn_t *c, void *arg)
{
	struct server *s = arg;
	struct gh_msg *m = gh_conn_request(c);
	const char *t = gh_buf_data(&m->target);
	size_t tl = gh_buf_size(&m->target);
	const char *q = memchr(t, '?', tl);
	size_t pl = q ? (size_t)(q - t) : tl;
#define PATH_IS(lit) (pl == sizeof(lit) - 1 && memcmp(t, lit, pl) == 0)
	enum http_method meth = (enum http_method)m->p.method;
	if (meth != HTTP_GET && meth != HTTP_HEAD && meth != HTTP_POST) {
		reply_error(c, 405, "use GET or POST");
	} else if (PATH_IS("/v1/predict")) {
		if (meth != HTTP_POST) {
			reply_error(c, 405, "use POST");
			return;
		}
		struct waiting *w = calloc(1, sizeof(*w));
		if (!w) {
			reply_error(c, 503, "out of memory");
			return;
		}
		w->s = s;
		w->c = c;
		m->out = &w->body;
		m->out_frame = GH_FRAME_LENGTH; /* the body as it is */
		gh_conn_take(c, w);
	} else if (PATH_IS("/health")) {
		gh_conn_answer_text(c, 200, "ok");
	} else if (PATH_IS("/v1/model")) {
		char buf[512];
		snprintf(buf, sizeof(buf),
			 "{\"layers\":\"%s\",\"inputs\":%u,\"outputs\":%u,\"max_batch\":%zu,"
			 "\"max_wait_us\":%ld,\"requests\":%llu,\"batches\":%llu,\"rows\":%llu,"
			 "\"bad_requests\":%llu}",
			 s->shape, s->inputs, s->outputs, s->max_batch, s->max_wait_us,
			 (unsigned long long)s->requests, (unsigned long long)s->batches,
			 (unsigned long long)s->rows_served, (unsigned long long)s->bad);
		gh_conn_answer_text(c, 200, "%s", buf);
	} else {
		reply_error(c, 404, "no such path (POST /v1/predict, GET /health, GET /v1/model)");
	}
#undef PATH_IS
}

/* The forward pass's backend. auto: a card (cuda, then hip) when one opens, i.e. the replica
 * was given one (its CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES), else the CPU; blas, cpu: the
 * kernels' cpu backend (its sgemm is OpenBLAS's); cuda, hip: that card, or an error. */
static int open_backend(struct server *s, const char *name)
{
	static const char *const cards[] = {"cuda", "hip"};
	gk_error_t ge = {{0}};
	gp_error_t err = {{0}};
	bool cpu = !strcmp(name, "blas");
	if (!strcmp(name, "auto")) {
		for (size_t i = 0; i < sizeof(cards) / sizeof(cards[0]) && !s->bk; i++)
			s->bk = gk_backend_open(cards[i], &ge);
		if (!s->bk) {
			gp_info("no card: the forward pass runs on the CPU (OpenBLAS)");
			cpu = true;
		}
	}
	if (!s->bk && !(s->bk = gk_backend_open(cpu ? "cpu" : name, &ge))) {
		gp_err("cannot open the %s backend: %s", cpu ? "cpu" : name, ge.text);
		return -1;
	}
	/* a batch is at most max_batch rows, or one request's rows when larger */
	size_t most = s->max_batch > s->max_rows ? s->max_batch : s->max_rows;
	if (!(s->run = gm_infer_create(s->bk, s->model, most, &err))) {
		gp_err("cannot load the model on the %s backend: %s", gk_backend_name(s->bk),
		       err.text);
		return -1;
	}
	if (!cpu)
		gp_info("forward pass on the %s backend", gk_backend_name(s->bk));
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: gserve --model PATH [OPTIONS]\n"
	      "  --model PATH        the model file (docs/gserve.md)\n"
	      "  --listen ADDR:PORT  default 0.0.0.0:$GPOOL_PORT (8080 without it); a socket\n"
	      "                      handed over as fd 3 (LISTEN_FDS=1, LISTEN_PID) is served "
	      "instead\n"
	      "  --max-batch N       rows served by one forward pass (default 32)\n"
	      "  --max-wait-us N     the longest a row waits for others (default 1000; 0: no "
	      "batching)\n"
	      "  --max-rows N        rows in one request (default 1024)\n"
	      "  --max-body SIZE     largest request body (default 4MiB)\n"
	      "  --client-timeout MS a client silent this long is closed (default 10000)\n"
	      "  --threads N         OpenBLAS threads (default 1)\n"
	      "  --backend NAME      auto (a card when the replica has one, else OpenBLAS), blas,\n"
	      "                      cuda, hip, cpu (the kernels' own; default auto)\n"
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

/* What the command line sets. */
struct args {
	const char *model, *backend;
	char addr[128];
	long port, batch, wait_us, rows, timeout, threads;
	uint64_t max_body;
	int level;
};

/* One option of getopt_long's table: 0, -1 when its value is bad (said on stderr), 1 when it
 * is none of the table's (--help, an unknown option). */
static int set_opt(int o, const char *arg, struct args *a)
{
	switch (o) {
	case 'm':
		a->model = arg;
		return 0;
	case 'l':
		if (gp_parse_listen(arg, a->addr, sizeof(a->addr), &a->port) < 0) {
			fprintf(stderr, "gserve: invalid listen address '%s'\n", arg);
			return -1;
		}
		return 0;
	case 'b':
		return num(arg, 1, 65536, "batch size", &a->batch);
	case 'w':
		return num(arg, 0, 10000000, "wait", &a->wait_us);
	case 'r':
		return num(arg, 1, 1000000, "row limit", &a->rows);
	case 'B':
		if (gp_parse_size(arg, 1, &a->max_body) < 0 || !a->max_body) {
			fprintf(stderr, "gserve: invalid body size '%s'\n", arg);
			return -1;
		}
		return 0;
	case 'T':
		return num(arg, 1, 3600000, "client timeout", &a->timeout);
	case 't':
		return num(arg, 1, 256, "thread count", &a->threads);
	case 'k':
		a->backend = arg;
		if (strcmp(arg, "auto") && strcmp(arg, "blas") && strcmp(arg, "cuda") &&
		    strcmp(arg, "hip") && strcmp(arg, "cpu")) {
			fprintf(stderr, "gserve: invalid backend '%s'\n", arg);
			return -1;
		}
		return 0;
	case 'L':
		if ((a->level = gp_log_level_parse(arg)) < 0) {
			fprintf(stderr, "gserve: invalid log level '%s'\n", arg);
			return -1;
		}
		return 0;
	default:
		return 1;
	}
}

/* $GPOOL_PORT, then the command line: 0 to go on, or -1 with the exit status in *status. */
static int parse_args(int argc, char **argv, struct args *a, int *status)
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
	    {"backend", required_argument, 0, 'k'},
	    {"log-level", required_argument, 0, 'L'},
	    {"help", no_argument, 0, 'h'},
	    {0, 0, 0, 0},
	};
	*a = (struct args){.backend = "auto",
			   .addr = "0.0.0.0",
			   .port = 8080,
			   .batch = 32,
			   .wait_us = 1000,
			   .rows = 1024,
			   .timeout = 10000,
			   .threads = 1,
			   .max_body = 4u << 20,
			   .level = GP_LOG_INFO};
	*status = 2;
	const char *gp = getenv("GPOOL_PORT");
	if (gp && *gp && gp_parse_long(gp, 1, 65535, &a->port) < 0) {
		fprintf(stderr, "gserve: invalid GPOOL_PORT '%s'\n", gp);
		return -1;
	}
	int o;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		int r = set_opt(o, optarg, a);
		if (r > 0)
			*status = gp_opt_usage_status(usage, o == 'h', 2);
		if (r != 0)
			return -1;
	}
	if (!a->model) {
		fprintf(stderr, "gserve: no model given (--model PATH)\n");
		return -1;
	}
	return 0;
}

/* The model read and loaded on its backend; the model file's copy let go. */
static int load_model(struct server *s, const struct args *a)
{
	gp_error_t err = {{0}};
	if (!(s->model = gm_model_read(a->model, &err))) {
		gp_err("%s", err.text);
		return -1;
	}
	s->inputs = (uint32_t)gm_model_inputs(s->model);
	s->outputs = (uint32_t)gm_model_outputs(s->model);
	snprintf(s->shape, sizeof(s->shape), "%s", gm_model_shape(s->model));
	s->max_batch = (size_t)a->batch;
	s->max_rows = (size_t)a->rows;
	if (open_backend(s, a->backend) < 0)
		return -1;
	/* the runner holds the parameters now (on the cpu backend a second host copy) */
	gm_model_destroy(&s->model);
	s->max_wait_us = a->wait_us;
	s->tail = &s->head;
	return 0;
}

/* The event loop, the HTTP server and its socket (bound, or handed over as fd 3). */
static int start_http(struct server *s, struct args *a, gh_server_t **http)
{
	static const struct gh_handler h = {.head = on_head, .body = on_body, .gone = on_gone};
	struct gh_limits lim = {
	    .max_head = 16384, .max_body = a->max_body, .client_timeout_ms = (int)a->timeout};
	if (!(s->base = event_base_new()) || !(*http = gh_server_create(s->base, &h, &lim)) ||
	    !(s->timer = evtimer_new(s->base, on_timer, s))) {
		gp_err("cannot make the event loop");
		return -1;
	}
	/* a socket handed over (gsub --listen-fd, or systemd): served as it is, nothing bound */
	const char *lfds = getenv("LISTEN_FDS"), *lpid = getenv("LISTEN_PID");
	bool handed = lfds && lpid && strcmp(lfds, "1") == 0 && atol(lpid) == (long)getpid();
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
	if (handed ? gh_server_listen_fd(*http, 3, s) < 0
		   : gh_server_listen(*http, a->addr, (uint16_t)a->port, s) < 0)
		return -1;
	if (handed)
		snprintf(a->addr, sizeof(a->addr), "fd 3 (handed over), port");
	return 0;
}

int main(int argc, char **argv)
{
	static struct server s;
	struct args a;
	int status;
	if (parse_args(argc, argv, &a, &status) < 0)
		return status;
	gp_log_init("gserve", a.level);
	signal(SIGPIPE, SIG_IGN);
	openblas_set_num_threads((int)a.threads);
	gh_server_t *http = NULL;
	if (load_model(&s, &a) < 0 || start_http(&s, &a, &http) < 0)
		return 1;
	gp_info("model %s (%s) served on %s:%ld, batches of up to %ld rows, waiting up to %ld us",
		a.model, s.shape, a.addr, a.port, a.batch, a.wait_us);
	event_base_dispatch(s.base);
	gh_server_destroy(&http);
	gm_infer_destroy(&s.run);
	gk_backend_close(&s.bk);
	return 0;
}
