/* http.c: gschedd's HTTP server thread (see http.h). */
#include "scheduler/http/http.h"

#include <errno.h>
#include <sched.h> /* before libevent's headers: they leave its cpu_set_t out */
#include <pthread.h>
#include <event2/event.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zmq.h>

#include "scheduler/http/api_json.h"
#include "common/auth.h"
#include "common/chunk.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/uidpolicy.h"
#include "common/util.h"
#include "http/server.h"

#define MAX_PENDING 4096
#define MAX_TOKENS  1024
/* a user's live tokens at most: a new one past it replaces that user's oldest, so one user
 * cannot fill the table the others need */
#define MAX_TOKENS_PER_USER 16
/* /metrics is rendered by the scheduler's loop at most this often; requests in between get
 * the last rendering, and those that come while one is being made wait for it */
#define METRICS_MIN_MS	  1000
#define METRICS_WAITERS	  256
#define STATIC_MAX	  (4 << 20)
#define MAX_HEAD	  16384
#define CLIENT_TIMEOUT_MS 60000

/* One request, from its head to its answer. A request the loop answers is held (in pending,
 * or among the /metrics waiters) until its reply comes, even when its client has gone (c
 * NULL then). */
struct req {
	struct http *h;
	gh_conn_t *c; /* NULL: the client has gone */
	struct gh_buf body;
	bool held;
	uint64_t seq;
	enum api_op op;
	struct req *next; /* pending */
};

/* a token is kept as its SHA-256 only: the table answers who, never what the token was */
struct token {
	uint8_t hash[GP_HASH_LEN];
	uid_t uid;
	gid_t gid;
	int64_t expires_ms;
};

struct http {
	pthread_t th;
	bool started;
	void *pair_main, *pair_thr;
	struct event_base *base;
	gh_server_t *srv;
	gh_tls_t *tls; /* NULL: plain HTTP */
	struct event *zev, *stop_ev;
	int stop_fds[2];
	gp_auth_t *auth;
	uint64_t seq;
	struct req *pending;
	size_t npending;
	struct token tokens[MAX_TOKENS];
	size_t ntokens;
	char *metrics;	      /* the last /metrics text, NULL: none yet */
	int64_t metrics_ms;   /* when it came */
	bool metrics_pending; /* one is being rendered */
	struct req *metrics_wait[METRICS_WAITERS];
	size_t nmetrics_wait;
	char web_dir[1024];
	_Atomic int64_t token_ttl_ms;
};

bool http_is_rid(const uint8_t *rid, size_t len)
{
	return len == HTTP_RID_LEN && memcmp(rid, HTTP_RID_PREFIX, HTTP_RID_PREFIX_LEN) == 0;
}

/* ---- answers ---- */

/* The request is answered (or its client gone): the connection reads on, r is freed. */
static void req_end(struct req *r)
{
	if (r->c)
		gh_conn_next(r->c, true);
	gh_buf_free(&r->body);
	free(r);
}

static void reply(struct req *r, int status, const char *ctype, const char *hdrs, const char *body,
		  size_t len)
{
	if (r->c)
		gh_conn_answer_hdrs(r->c, status, ctype, hdrs, body, len);
}

static void send_json(struct req *r, int status, json_t *doc)
{
	static const char oom[] = "{\"error\":{\"code\":\"ERROR_UNAVAILABLE\","
				  "\"message\":\"out of memory\"}}";
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	reply(r, text ? status : 503, "application/json", "Cache-Control: no-store\r\n",
	      text ? text : oom, text ? strlen(text) : sizeof(oom) - 1);
	free(text);
}

/* A listing: written without a jansson tree (api_jobs_text). */
static void send_jobs(struct req *r, const Gpool__JobQueryReply *q)
{
	gp_buf_t text = {0};
	if (api_jobs_text(q, &text) < 0) {
		gp_buf_release(&text);
		send_json(r, 500, api_error_json("ERROR_UNAVAILABLE", "cannot write the listing"));
		return;
	}
	reply(r, 200, "application/json", "Cache-Control: no-store\r\n", (const char *)text.data,
	      text.len);
	gp_buf_release(&text);
}

static void send_err(struct req *r, int status, const char *code, const char *text)
{
	send_json(r, status, api_error_json(code, text));
}

static const struct {
	const char *ext, *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".png", "image/png"},
    {".svg", "image/svg+xml"},
    {".ico", "image/x-icon"},
};

static void send_static(struct http *h, struct req *req, const char *file)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/%s", h->web_dir, file);
	uint8_t *data;
	size_t len;
	if (gp_read_file(path, STATIC_MAX, &data, &len) < 0) {
		send_err(req, 404, "ERROR_NOT_FOUND", "no such file");
		return;
	}
	const char *type = "application/octet-stream";
	size_t fl = strlen(file);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t el = strlen(types[i].ext);
		if (fl > el && !strcmp(file + fl - el, types[i].ext))
			type = types[i].type;
	}
	reply(req, 200, type, "Cache-Control: no-cache\r\n", (const char *)data, len);
	free(data);
}

/* ---- authentication ---- */

static void sha256_hex(const void *p, size_t n, char out[65])
{
	uint8_t md[GP_HASH_LEN];
	gp_sha256(&p, &n, 1, md);
	gp_chunk_hex(md, out);
}

static void token_hash(const char *tok, uint8_t out[GP_HASH_LEN])
{
	const void *p = tok;
	size_t n = strlen(tok);
	gp_sha256(&p, &n, 1, out);
}

static int token_find(struct http *h, const char *tok, struct gp_sender *from)
{
	int64_t now = gp_mono_ms();
	uint8_t want[GP_HASH_LEN];
	if (strlen(tok) != 32)
		return -1;
	token_hash(tok, want);
	for (size_t i = 0; i < h->ntokens; i++) {
		if (h->tokens[i].expires_ms <= now ||
		    sodium_memcmp(h->tokens[i].hash, want, sizeof(want)) != 0)
			continue;
		from->uid = h->tokens[i].uid;
		from->gid = h->tokens[i].gid;
		return 0;
	}
	return -1;
}

static int token_issue(struct http *h, const struct gp_sender *from, char tok[33], int64_t *ttl)
{
	int64_t now = gp_mono_ms();
	size_t k = 0;
	for (size_t i = 0; i < h->ntokens; i++) /* drop the expired */
		if (h->tokens[i].expires_ms > now)
			h->tokens[k++] = h->tokens[i];
	h->ntokens = k;
	/* the user's oldest goes when they hold MAX_TOKENS_PER_USER */
	size_t mine = 0, oldest = 0;
	for (size_t i = 0; i < h->ntokens; i++) {
		if (h->tokens[i].uid != from->uid)
			continue;
		if (!mine++ || h->tokens[i].expires_ms < h->tokens[oldest].expires_ms)
			oldest = i;
	}
	if (mine >= MAX_TOKENS_PER_USER)
		h->tokens[oldest] = h->tokens[--h->ntokens];
	if (h->ntokens == MAX_TOKENS)
		return -1;
	unsigned char rnd[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, rnd, sizeof(rnd)) != (ssize_t)sizeof(rnd)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	for (int i = 0; i < 16; i++)
		sprintf(tok + 2 * i, "%02x", rnd[i]);
	struct token *t = &h->tokens[h->ntokens++];
	token_hash(tok, t->hash);
	t->uid = from->uid;
	t->gid = from->gid;
	*ttl = atomic_load(&h->token_ttl_ms);
	t->expires_ms = now + *ttl;
	return 0;
}

/* Who sent req. 0 with *from filled, or the HTTP status, answered already. A token comes in
 * the Authorization header only, never in the URL (a URL ends up in logs and Referer headers),
 * and cannot mint tokens: POST /api/v1/token needs a MUNGE credential. */
static int authenticate(struct http *h, struct req *req, const char *a, const char *method,
			const char *target, const uint8_t *body, size_t blen,
			const struct api_route *rt, struct gp_sender *from)
{
	if (a && !strncmp(a, "Bearer ", 7)) {
		if (rt->op == API_TOKEN) {
			send_err(req, 403, "ERROR_PERMISSION",
				 "a token cannot mint tokens: ask with a MUNGE credential");
			return 403;
		}
		if (token_find(h, a + 7, from) == 0)
			return 0;
		send_err(req, 401, "ERROR_AUTH", "unknown or expired token");
		return 401;
	}
	if (!a || strncmp(a, "MUNGE ", 6) != 0) {
		send_err(req, 401, "ERROR_AUTH",
			 "authentication required: 'Authorization: MUNGE <credential>' or 'Bearer "
			 "<token>'");
		return 401;
	}
	void *payload = NULL;
	size_t plen = 0;
	enum gp_auth_status st;
	gp_error_t err;
	if (gp_auth_decode(h->auth, a + 6, &payload, &plen, &from->uid, &from->gid, &st, &err) <
	    0) {
		const char *code = st == GP_AUTH_REPLAYED  ? "ERROR_REPLAY"
				   : st == GP_AUTH_EXPIRED ? "ERROR_EXPIRED"
							   : "ERROR_AUTH";
		send_err(req, st == GP_AUTH_UNAVAILABLE ? 503 : 401, code, err.text);
		return 401;
	}
	/* the credential must be for this request: "METHOD TARGET" [LF sha256(body)] */
	char want[8300];
	char hex[65] = "";
	if (blen)
		sha256_hex(body, blen, hex);
	int n = snprintf(want, sizeof(want), "%s %s%s%s", method, target, blen ? "\n" : "", hex);
	bool ok = n > 0 && (size_t)n < sizeof(want) && plen == (size_t)n && payload &&
		  memcmp(payload, want, plen) == 0;
	free(payload);
	if (!ok) {
		send_err(req, 401, "ERROR_AUTH",
			 "the credential's payload is not this request's 'METHOD TARGET' (and "
			 "body hash)");
		return 401;
	}
	return 0;
}

/* ---- requests to the loop ---- */

static int to_loop(struct http *h, struct req *req, enum api_op op, const struct gp_sender *from,
		   Gpool__Msg *m)
{
	if (h->npending >= MAX_PENDING) {
		send_err(req, 503, "ERROR_UNAVAILABLE", "too many requests in flight");
		return -1;
	}
	gp_batch_t b = {{0}, 0};
	if ((m->id = ++h->seq, gp_batch_add(&b, m) < 0)) {
		gp_batch_release(&b);
		send_err(req, 503, "ERROR_UNAVAILABLE", "out of memory");
		return -1;
	}
	uint8_t rid[HTTP_RID_LEN];
	memcpy(rid, HTTP_RID_PREFIX, HTTP_RID_PREFIX_LEN);
	memcpy(rid + HTTP_RID_PREFIX_LEN, &h->seq, 8);
	uint32_t ids[2] = {(uint32_t)from->uid, (uint32_t)from->gid};
	int rc = 0;
	if (zmq_send(h->pair_thr, rid, sizeof(rid), ZMQ_SNDMORE) < 0 ||
	    zmq_send(h->pair_thr, ids, sizeof(ids), ZMQ_SNDMORE) < 0 ||
	    zmq_send(h->pair_thr, b.body.data, b.body.len, 0) < 0)
		rc = -1;
	gp_batch_release(&b);
	if (rc < 0) {
		send_err(req, 503, "ERROR_UNAVAILABLE", "the scheduler loop does not answer");
		return -1;
	}
	req->seq = h->seq;
	req->op = op;
	req->held = true;
	req->next = h->pending;
	h->pending = req;
	h->npending++;
	/* a send may have consumed the edge of ZMQ_FD: look for replies on the next pass (not
	 * now: the reply would end req under its caller) */
	event_active(h->zev, EV_READ, 0);
	return 0;
}

static void send_metrics(struct req *req, const char *text)
{
	reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, text, strlen(text));
}

/* The request's Idempotency-Key header, if any: 1 with its request id (the first 16 bytes of
 * the key's SHA-256 in rid) and a submission token made of them ("idem-" and 32 hex digits),
 * 0 when there is none, -1 when it is empty, longer than 255 bytes or not printable ASCII. */
static int idempotency_key(struct req *r, uint8_t rid[GP_HASH_LEN], char *token, size_t len)
{
	size_t klen = 0;
	const char *k =
	    r->c ? gh_msg_header(gh_conn_request(r->c), "Idempotency-Key", &klen) : NULL;
	if (!k)
		return 0;
	if (klen == 0 || klen > 255)
		return -1;
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] > 0x7e)
			return -1;
	const void *parts[1] = {k};
	gp_sha256(parts, &klen, 1, rid);
	int n = snprintf(token, len, "idem-");
	for (int i = 0; i < 16 && n + 2 < (int)len; i++)
		n += snprintf(token + n, len - (size_t)n, "%02x", rid[i]);
	return 1;
}

/* One API request on its way: its route, its sender once authenticated, the message it
 * becomes for the loop. */
struct call {
	struct http *h;
	struct req *req;
	struct api_route rt;
	struct gp_sender from;
	Gpool__Msg m;
	const uint8_t *body;
	size_t blen;
	uint8_t rid[GP_HASH_LEN]; /* the Idempotency-Key's request id (m.request_id) */
	char token[48];		  /* ... and the submission token made of it */
	bool idem;		  /* an Idempotency-Key came */
};

/* /metrics: the last rendering while fresh, else one asked of the loop for every waiter. */
static void call_metrics(struct call *c)
{
	struct http *h = c->h;
	if (h->metrics && gp_mono_ms() - h->metrics_ms < METRICS_MIN_MS) {
		send_metrics(c->req, h->metrics);
		return;
	}
	if (h->metrics_pending) {
		if (h->nmetrics_wait == METRICS_WAITERS)
			send_err(c->req, 503, "ERROR_UNAVAILABLE", "too many /metrics requests");
		else {
			c->req->held = true;
			h->metrics_wait[h->nmetrics_wait++] = c->req;
		}
		return;
	}
	Gpool__OpsMetricsQuery q = GPOOL__OPS_METRICS_QUERY__INIT;
	c->m.m_case = GPOOL__MSG__M_OPS_METRICS_QUERY;
	c->m.ops_metrics_query = &q;
	h->metrics_pending = true;
	if (to_loop(h, c->req, c->rt.op, &c->from, &c->m) < 0)
		h->metrics_pending = false;
}

static void call_token(struct call *c)
{
	char tok[33];
	int64_t ttl;
	if (token_issue(c->h, &c->from, tok, &ttl) < 0) {
		send_err(c->req, 503, "ERROR_UNAVAILABLE", "cannot issue a token now");
		return;
	}
	send_json(c->req, 200,
		  json_pack("{s:s, s:I, s:i}", "token", tok, "expires_in", (json_int_t)(ttl / 1000),
			    "uid", (int)c->from.uid));
}

static void call_whoami(struct call *c)
{
	char name[64];
	if (gp_uid_name(c->from.uid, name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "%u", (unsigned)c->from.uid);
	send_json(c->req, 200,
		  json_pack("{s:i, s:i, s:s}", "uid", (int)c->from.uid, "gid", (int)c->from.gid,
			    "user", name));
}

static void call_history(struct call *c)
{
	Gpool__OpsHistoryQuery q = GPOOL__OPS_HISTORY_QUERY__INIT;
	c->m.m_case = GPOOL__MSG__M_OPS_HISTORY_QUERY;
	c->m.ops_history_query = &q;
	to_loop(c->h, c->req, c->rt.op, &c->from, &c->m);
}

static void call_nodes(struct call *c)
{
	Gpool__NodeQuery q = GPOOL__NODE_QUERY__INIT;
	c->m.m_case = GPOOL__MSG__M_NODE_QUERY;
	c->m.node_query = &q;
	to_loop(c->h, c->req, c->rt.op, &c->from, &c->m);
}

static void call_jobs(struct call *c)
{
	const struct api_route *rt = &c->rt;
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	Gpool__JobState states[1] = {rt->state};
	uint64_t ids[1] = {rt->id};
	if (rt->op == API_JOB) {
		q.ids = ids;
		q.n_ids = 1;
		q.all = 1;
	} else {
		q.all = rt->all;
		q.user = (char *)rt->user;
		q.limit = rt->limit;
		if (rt->state) {
			q.states = states;
			q.n_states = 1;
		}
	}
	c->m.m_case = GPOOL__MSG__M_JOB_QUERY;
	c->m.job_query = &q;
	to_loop(c->h, c->req, rt->op, &c->from, &c->m);
}

static void call_output(struct call *c)
{
	const struct api_route *rt = &c->rt;
	Gpool__LogQuery q = GPOOL__LOG_QUERY__INIT;
	q.job_id = rt->id;
	q.offset = rt->offset;
	q.offset_err = rt->offset_err;
	q.max_bytes = rt->max_bytes ? rt->max_bytes : 1 << 20;
	q.wait = rt->wait;
	c->m.m_case = GPOOL__MSG__M_LOG_QUERY;
	c->m.log_query = &q;
	to_loop(c->h, c->req, rt->op, &c->from, &c->m);
}

static void call_submit(struct call *c)
{
	char why[256];
	Gpool__JobSpec *sp = api_spec_parse((const char *)c->body, c->blen, why, sizeof(why));
	if (!sp) {
		send_err(c->req, 400, "ERROR_INVALID", why);
		return;
	}
	Gpool__SubmitRequest sr = GPOOL__SUBMIT_REQUEST__INIT;
	sr.spec = sp;
	if (c->idem) /* a submission is found again by its token */
		sr.token = c->token;
	c->m.m_case = GPOOL__MSG__M_SUBMIT;
	c->m.submit = &sr;
	to_loop(c->h, c->req, c->rt.op, &c->from, &c->m);
	api_spec_free(sp);
}

static void call_job_control(struct call *c)
{
	enum api_op op = c->rt.op;
	Gpool__JobControl jc = GPOOL__JOB_CONTROL__INIT;
	uint64_t ids[1] = {c->rt.id};
	jc.action = op == API_CANCEL ? GPOOL__JOB_ACTION__JOB_CANCEL
		    : op == API_HOLD ? GPOOL__JOB_ACTION__JOB_HOLD
				     : GPOOL__JOB_ACTION__JOB_RELEASE;
	jc.ids = ids;
	jc.n_ids = 1;
	c->m.m_case = GPOOL__MSG__M_JOB_CONTROL;
	c->m.job_control = &jc;
	to_loop(c->h, c->req, op, &c->from, &c->m);
}

static void call_node_control(struct call *c)
{
	enum api_op op = c->rt.op;
	Gpool__NodeControl nc = GPOOL__NODE_CONTROL__INIT;
	char reason[256], why[256];
	int card = -1;
	if (op == API_DRAIN && api_drain_parse((const char *)c->body, c->blen, reason,
					       sizeof(reason), &card, why, sizeof(why)) < 0) {
		send_err(c->req, 400, "ERROR_INVALID", why);
		return;
	}
	nc.action =
	    op == API_DRAIN ? GPOOL__NODE_ACTION__NODE_DRAIN : GPOOL__NODE_ACTION__NODE_RESUME;
	nc.name = c->rt.node;
	nc.card = card;
	nc.reason = op == API_DRAIN ? reason : (char *)"";
	c->m.m_case = GPOOL__MSG__M_NODE_CONTROL;
	c->m.node_control = &nc;
	to_loop(c->h, c->req, op, &c->from, &c->m);
}

/* What each authenticated operation does: answered here, or asked of the loop. */
static void (*const calls[])(struct call *c) = {
    [API_NODES] = call_nodes,	      [API_CARDS] = call_nodes,
    [API_JOBS] = call_jobs,	      [API_JOB] = call_jobs,
    [API_OUTPUT] = call_output,	      [API_SUBMIT] = call_submit,
    [API_CANCEL] = call_job_control,  [API_HOLD] = call_job_control,
    [API_RELEASE] = call_job_control, [API_DRAIN] = call_node_control,
    [API_RESUME] = call_node_control, [API_TOKEN] = call_token,
    [API_WHOAMI] = call_whoami,	      [API_HISTORY] = call_history,
};

/* The request's target, NUL-terminated in target (size len): 0, or -1 when answered (too
 * long, or holding a NUL). */
static int read_target(struct req *req, char *target, size_t len)
{
	struct gh_msg *hm = gh_conn_request(req->c);
	size_t tlen = gh_buf_size(&hm->target);
	if (tlen >= len || memchr(gh_buf_data(&hm->target), '\0', tlen)) {
		send_err(req, 400, "ERROR_INVALID", "request target too long");
		return -1;
	}
	memcpy(target, gh_buf_data(&hm->target), tlen);
	target[tlen] = '\0';
	return 0;
}

/* A whole request (head and body): answered now, or handed to the loop (held). */
static void on_request(struct http *h, struct req *req, const char *auth)
{
	struct gh_msg *hm = gh_conn_request(req->c);
	const char *method = gh_msg_method(hm);
	if (hm->p.method != HTTP_GET && hm->p.method != HTTP_POST && hm->p.method != HTTP_DELETE) {
		send_err(req, 405, "ERROR_INVALID", "method not allowed");
		return;
	}
	char target[8192];
	if (read_target(req, target, sizeof(target)) < 0)
		return;
	struct call c = {.h = h, .req = req, .m = GPOOL__MSG__INIT};
	char why[256];
	int st = api_route_parse(method, target, &c.rt, why, sizeof(why));
	if (st) {
		send_err(req, st, st == 404 ? "ERROR_NOT_FOUND" : "ERROR_INVALID", why);
		return;
	}
	if (c.rt.op == API_STATIC) {
		send_static(h, req, c.rt.file);
		return;
	}
	c.blen = gh_buf_size(&req->body);
	c.body = c.blen ? (const uint8_t *)gh_buf_data(&req->body) : NULL;
	/* Idempotency-Key: the request's id (docs/protocol.md, "Request ids"): a POST or DELETE
	 * sent again with the same key by the same user is applied once */
	int idem = idempotency_key(req, c.rid, c.token, sizeof(c.token));
	if (idem < 0) {
		send_err(req, 400, "ERROR_INVALID",
			 "invalid Idempotency-Key (1 to 255 printable characters)");
		return;
	}
	c.idem = idem > 0;
	if (c.idem)
		c.m.request_id = (ProtobufCBinaryData){16, c.rid};
	if (c.rt.op == API_METRICS) {
		call_metrics(&c);
		return;
	}
	if (authenticate(h, req, auth, method, target, c.body, c.blen, &c.rt, &c.from))
		return;
	if ((size_t)c.rt.op < sizeof(calls) / sizeof(calls[0]) && calls[c.rt.op])
		calls[c.rt.op](&c);
	else
		send_err(req, 404, "ERROR_NOT_FOUND", "no such path");
}

/* ---- replies from the loop ---- */

/* The loop's /metrics rendering came: kept for METRICS_MIN_MS, and sent to every request that
 * waited for it. */
static void metrics_came(struct http *h, const Gpool__Msg *m)
{
	h->metrics_pending = false;
	if (m->m_case == GPOOL__MSG__M_OPS_METRICS_REPLY && m->ops_metrics_reply->text) {
		char *t = strdup(m->ops_metrics_reply->text);
		if (t) {
			free(h->metrics);
			h->metrics = t;
			h->metrics_ms = gp_mono_ms();
		}
	}
	for (size_t i = 0; i < h->nmetrics_wait; i++) {
		if (m->m_case == GPOOL__MSG__M_OPS_METRICS_REPLY)
			send_metrics(h->metrics_wait[i], m->ops_metrics_reply->text);
		else
			send_err(h->metrics_wait[i], 503, "ERROR_UNAVAILABLE",
				 "the scheduler did not render /metrics");
		req_end(h->metrics_wait[i]);
	}
	h->nmetrics_wait = 0;
}

static void answer(struct req *req, enum api_op op, const Gpool__Msg *m)
{
	if (m->m_case == GPOOL__MSG__M_ERROR) {
		const Gpool__Error *e = m->error;
		send_err(req, api_status_of(e->code), api_error_code(e->code),
			 e->text ? e->text : "");
		return;
	}
	json_t *a;
	switch (op) {
	case API_METRICS:
		if (m->m_case != GPOOL__MSG__M_OPS_METRICS_REPLY)
			break;
		send_metrics(req, m->ops_metrics_reply->text);
		return;
	case API_NODES:
	case API_CARDS:
		if (m->m_case != GPOOL__MSG__M_NODE_QUERY_REPLY)
			break;
		a = json_array();
		for (size_t i = 0; i < m->node_query_reply->n_nodes; i++) {
			const Gpool__NodeInfo *n = m->node_query_reply->nodes[i];
			if (op == API_NODES) {
				json_array_append_new(a, api_node_json(n));
				continue;
			}
			for (size_t c = 0; c < n->n_cards; c++)
				json_array_append_new(a, api_card_json(n->name, n->cards[c]));
		}
		if (op == API_CARDS) {
			send_json(req, 200, json_pack("{s:o}", "cards", a));
			return;
		}
		json_t *ra = json_array();
		for (size_t i = 0; i < m->node_query_reply->n_refused; i++) {
			const Gpool__OpsRefusedNode *x = m->node_query_reply->refused[i];
			json_array_append_new(ra, json_pack("{s:s, s:s, s:s, s:I, s:f}", "name",
							    x->name, "addr", x->addr, "reason",
							    x->reason, "count",
							    (json_int_t)x->count, "last", x->last));
		}
		send_json(req, 200, json_pack("{s:o, s:o}", "nodes", a, "refused", ra));
		return;
	case API_JOBS:
	case API_JOB:
		if (m->m_case != GPOOL__MSG__M_JOB_QUERY_REPLY)
			break;
		if (op == API_JOB) {
			if (!m->job_query_reply->n_jobs) {
				send_err(req, 404, "ERROR_NOT_FOUND", "no such job");
				return;
			}
			send_json(req, 200, api_job_json(m->job_query_reply->jobs[0]));
			return;
		}
		send_jobs(req, m->job_query_reply);
		return;
	case API_HISTORY:
		if (m->m_case != GPOOL__MSG__M_OPS_HISTORY_REPLY)
			break;
		send_json(req, 200, api_history_json(m->ops_history_reply));
		return;
	case API_OUTPUT:
		if (m->m_case != GPOOL__MSG__M_LOG_QUERY_REPLY)
			break;
		send_json(req, 200, api_output_json(m->log_query_reply));
		return;
	case API_SUBMIT:
		if (m->m_case != GPOOL__MSG__M_SUBMIT_REPLY)
			break;
		send_json(req, 201, json_pack("{s:I}", "id", (json_int_t)m->submit_reply->job_id));
		return;
	case API_CANCEL:
	case API_HOLD:
	case API_RELEASE: {
		if (m->m_case != GPOOL__MSG__M_JOB_CONTROL_REPLY)
			break;
		const Gpool__JobControlReply *r = m->job_control_reply;
		int st = r->n_results ? api_status_of(r->results[0]->code) : 200;
		if (st != 200 && r->n_results) {
			send_err(req, st, api_error_code(r->results[0]->code),
				 r->results[0]->text ? r->results[0]->text : "");
			return;
		}
		send_json(req, 200, api_results_json(r));
		return;
	}
	case API_DRAIN:
	case API_RESUME:
		if (m->m_case != GPOOL__MSG__M_NODE_CONTROL_REPLY)
			break;
		send_json(req, 200, json_pack("{s:b}", "ok", 1));
		return;
	default:
		break;
	}
	send_err(req, 500, "ERROR_UNEXPECTED", "unexpected reply from the scheduler");
}

static void on_reply(struct http *h, const uint8_t *rid, size_t rid_len, const void *body,
		     size_t len)
{
	uint64_t seq;
	if (!http_is_rid(rid, rid_len))
		return;
	memcpy(&seq, rid + HTTP_RID_PREFIX_LEN, 8);
	struct req **pp = &h->pending;
	while (*pp && (*pp)->seq != seq)
		pp = &(*pp)->next;
	if (!*pp)
		return; /* answered already (a second message for the same request) */
	struct req *p = *pp;
	*pp = p->next;
	h->npending--;
	Gpool__Batch *b = gpool__batch__unpack(NULL, len, body);
	if (!b || !b->n_msgs) {
		if (b)
			gpool__batch__free_unpacked(b, NULL);
		send_err(p, 500, "ERROR_MALFORMED", "unreadable reply from the scheduler");
		if (p->op == API_METRICS) {
			Gpool__Msg none = GPOOL__MSG__INIT;
			metrics_came(h, &none);
		}
	} else {
		answer(p, p->op, b->msgs[0]);
		if (p->op == API_METRICS)
			metrics_came(h, b->msgs[0]);
		gpool__batch__free_unpacked(b, NULL);
	}
	req_end(p);
}

/* ---- the server's side ---- */

/* The request is whole: its Authorization copied out (the connection's buffers are the
 * server's), then answered or handed on. */
static void dispatch(struct req *r)
{
	size_t alen = 0;
	const char *a = gh_msg_header(gh_conn_request(r->c), "Authorization", &alen);
	char *auth = a ? strndup(a, alen) : NULL;
	if (a && !auth)
		send_err(r, 503, "ERROR_UNAVAILABLE", "out of memory");
	else
		on_request(r->h, r, auth);
	free(auth);
	if (!r->held)
		req_end(r);
}

static void on_head(gh_conn_t *c, void *arg)
{
	struct http *h = arg;
	struct req *r = calloc(1, sizeof(*r));
	if (!r) {
		gh_conn_answer_text(c, 503, "out of memory");
		return;
	}
	r->h = h;
	r->c = c;
	gh_conn_take(c, r);
	/* the body, decoded whatever its framing (none: on_body comes at once) */
	struct gh_msg *m = gh_conn_request(c);
	m->out = &r->body;
	m->out_frame = GH_FRAME_LENGTH;
	/* a client that waits for a go before its body (curl's POSTs over 1 KiB) gets it: the
	 * body is read whatever it turns out to be (out of memory: it sends after its wait) */
	if (m->expect_continue && m->in != GH_FRAME_NONE)
		gh_buf_add(gh_conn_out(c), "HTTP/1.1 100 Continue\r\n\r\n", 25);
}

static void on_body(void *task, bool done)
{
	if (done)
		dispatch(task);
}

static void on_gone(void *task)
{
	struct req *r = task;
	r->c = NULL;
	if (!r->held)
		req_end(r); /* else its reply ends it */
}

static void drain_replies(struct http *h)
{
	for (;;) {
		int ev = 0;
		size_t evlen = sizeof(ev);
		if (zmq_getsockopt(h->pair_thr, ZMQ_EVENTS, &ev, &evlen) < 0 || !(ev & ZMQ_POLLIN))
			return;
		zmq_msg_t rid, body;
		zmq_msg_init(&rid);
		zmq_msg_init(&body);
		if (zmq_msg_recv(&rid, h->pair_thr, ZMQ_DONTWAIT) >= 0 && zmq_msg_more(&rid) &&
		    zmq_msg_recv(&body, h->pair_thr, ZMQ_DONTWAIT) >= 0)
			on_reply(h, zmq_msg_data(&rid), zmq_msg_size(&rid), zmq_msg_data(&body),
				 zmq_msg_size(&body));
		zmq_msg_close(&rid);
		zmq_msg_close(&body);
	}
}

static void on_zmq(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	drain_replies(arg);
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd, (void)what;
	struct http *h = arg;
	event_base_loopbreak(h->base);
}

struct event_base *http_base(struct http *h)
{
	return h->base;
}

int http_adopt(struct http *h, int fd)
{
	return gh_server_adopt(h->srv, fd, h);
}

static void *thread_main(void *arg)
{
	struct http *h = arg;
	/* Linux: the nice value is per thread. The loop, the agents and the jobs come first when
	 * the CPUs are short; the API takes what they leave (docs/benchmarks.md). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), HTTP_NICE) < 0)
		gp_warn("http: cannot lower the thread's priority: %s", strerror(errno));
	event_base_dispatch(h->base);
	return NULL;
}

int http_split_listen(const char *s, char *host, size_t hlen, uint16_t *port)
{
	const char *c = strrchr(s, ':');
	if (!c)
		return -1;
	size_t n = (size_t)(c - s);
	const char *hs = s;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		hs++, n -= 2;
	if (n >= hlen)
		return -1;
	memcpy(host, hs, n);
	host[n] = '\0';
	if (!*host)
		snprintf(host, hlen, "0.0.0.0");
	char *end;
	long p = strtol(c + 1, &end, 10);
	if (*end || p <= 0 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

struct http *http_create(const struct http_opts *o, void *zctx, gp_error_t *err)
{
	char host[256];
	uint16_t port = 0;
	if (o->listen && http_split_listen(o->listen, host, sizeof(host), &port) < 0) {
		gp_errprintf(err, "invalid http_listen '%s' (address:port)", o->listen);
		return NULL;
	}
	struct http *h = calloc(1, sizeof(*h));
	if (!h) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	h->stop_fds[0] = h->stop_fds[1] = -1;
	snprintf(h->web_dir, sizeof(h->web_dir), "%s", o->web_dir);
	atomic_store(&h->token_ttl_ms, o->token_ttl_ms);
	char ep[64];
	snprintf(ep, sizeof(ep), "inproc://gschedd-http-%p", (void *)h);
	int fd;
	size_t fdlen = sizeof(fd);
	if (!(h->auth = gp_auth_create(NULL, err)))
		goto fail;
	if (o->tls_cert && *o->tls_cert && o->tls_key && *o->tls_key &&
	    !(h->tls = gh_tls_create(o->tls_cert, o->tls_key, err)))
		goto fail;
	if ((o->tls_cert && *o->tls_cert) != (o->tls_key && *o->tls_key)) {
		gp_errprintf(err, "http: http_tls_cert and http_tls_key go together");
		goto fail;
	}
	if (!(h->pair_main = zmq_socket(zctx, ZMQ_PAIR)) || zmq_bind(h->pair_main, ep) < 0 ||
	    !(h->pair_thr = zmq_socket(zctx, ZMQ_PAIR)) || zmq_connect(h->pair_thr, ep) < 0 ||
	    zmq_getsockopt(h->pair_thr, ZMQ_FD, &fd, &fdlen) < 0) {
		gp_errprintf(err, "http: inproc pair: %s", zmq_strerror(errno));
		goto fail;
	}
	static const struct gh_handler handler = {
	    .head = on_head, .body = on_body, .gone = on_gone};
	struct gh_limits lim = {.max_head = MAX_HEAD,
				.max_body = o->max_body,
				.client_timeout_ms = CLIENT_TIMEOUT_MS,
				.max_conns = o->max_conns,
				.max_conns_per_addr = o->max_conns_per_addr};
	if (pipe2(h->stop_fds, O_CLOEXEC | O_NONBLOCK) < 0 || !(h->base = event_base_new()) ||
	    !(h->srv = gh_server_create(h->base, &handler, &lim))) {
		gp_errprintf(err, "http: cannot start libevent");
		goto fail;
	}
	if (h->tls)
		gh_server_set_tls(h->srv, h->tls);
	if (o->listen && gh_server_listen(h->srv, host, port, h) < 0) {
		gp_errprintf(err, "http: cannot listen on '%s': %s", o->listen, strerror(errno));
		goto fail;
	}
	if (!(h->zev = event_new(h->base, fd, EV_READ | EV_PERSIST, on_zmq, h)) ||
	    event_add(h->zev, NULL) < 0 ||
	    !(h->stop_ev = event_new(h->base, h->stop_fds[0], EV_READ, on_stop, h)) ||
	    event_add(h->stop_ev, NULL) < 0) {
		gp_errprintf(err, "http: cannot add events");
		goto fail;
	}
	if (!o->listen)
		return h; /* the caller runs http_base's loop */
	if (pthread_create(&h->th, NULL, thread_main, h) != 0) {
		gp_errprintf(err, "http: cannot start its thread");
		goto fail;
	}
	h->started = true;
	return h;
fail:
	http_destroy(&h);
	return NULL;
}

void http_destroy(struct http **hp)
{
	struct http *h = hp ? *hp : NULL;
	if (!h)
		return;
	if (h->started) {
		if (write(h->stop_fds[1], "x", 1) < 0)
			gp_warn("http: cannot stop the thread: %s", strerror(errno));
		pthread_join(h->th, NULL);
	}
	while (h->pending) {
		struct req *p = h->pending;
		h->pending = p->next;
		send_err(p, 503, "ERROR_UNAVAILABLE", "scheduler stopping");
		req_end(p);
	}
	for (size_t i = 0; i < h->nmetrics_wait; i++) {
		send_err(h->metrics_wait[i], 503, "ERROR_UNAVAILABLE", "scheduler stopping");
		req_end(h->metrics_wait[i]);
	}
	h->nmetrics_wait = 0;
	gh_server_destroy(&h->srv); /* the requests still being read end (on_gone) */
	if (h->zev)
		event_free(h->zev);
	if (h->stop_ev)
		event_free(h->stop_ev);
	if (h->base)
		event_base_free(h->base);
	for (int i = 0; i < 2; i++)
		if (h->stop_fds[i] >= 0)
			close(h->stop_fds[i]);
	int zero = 0;
	if (h->pair_thr) {
		zmq_setsockopt(h->pair_thr, ZMQ_LINGER, &zero, sizeof(zero));
		zmq_close(h->pair_thr);
	}
	if (h->pair_main) {
		zmq_setsockopt(h->pair_main, ZMQ_LINGER, &zero, sizeof(zero));
		zmq_close(h->pair_main);
	}
	gp_auth_destroy(&h->auth);
	gh_tls_destroy(&h->tls);
	free(h->metrics);
	free(h);
	*hp = NULL;
}

void *http_socket(struct http *h)
{
	return h->pair_main;
}

void http_set_token_ttl(struct http *h, int64_t ms)
{
	atomic_store(&h->token_ttl_ms, ms);
}

int http_recv(struct http *h, struct http_msg *m)
{
	zmq_msg_t f[3];
	for (int i = 0; i < 3; i++)
		zmq_msg_init(&f[i]);
	int got = 0;
	if (zmq_msg_recv(&f[0], h->pair_main, ZMQ_DONTWAIT) < 0)
		goto out;
	if (!zmq_msg_more(&f[0]) || zmq_msg_recv(&f[1], h->pair_main, 0) < 0 ||
	    !zmq_msg_more(&f[1]) || zmq_msg_recv(&f[2], h->pair_main, 0) < 0)
		goto out;
	if (zmq_msg_size(&f[0]) != HTTP_RID_LEN || zmq_msg_size(&f[1]) != 8)
		goto out;
	memcpy(m->rid, zmq_msg_data(&f[0]), HTTP_RID_LEN);
	uint32_t ids[2];
	memcpy(ids, zmq_msg_data(&f[1]), 8);
	m->from.uid = ids[0];
	m->from.gid = ids[1];
	m->from.epoch = 0;
	m->batch = gpool__batch__unpack(NULL, zmq_msg_size(&f[2]), zmq_msg_data(&f[2]));
	got = m->batch ? 1 : 0;
out:
	for (int i = 0; i < 3; i++)
		zmq_msg_close(&f[i]);
	return got;
}
