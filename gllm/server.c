/* server.c - the OpenAI-compatible server (server.h).
 *
 * A request is a task shared by the two threads. The HTTP thread parses it (api.c), queues
 * it and keeps the connection; the engine thread tokenizes it (the tokenizer and the engine
 * are the engine thread's alone), submits it, and its callbacks append text and the ending
 * to the task under the lock and mark it dirty; the HTTP thread, woken by the pipe, writes
 * what is new. A task lives while either side holds it (refs). A client that leaves cancels
 * its request; an engine that fails ends every open request with an error, which a stream
 * receives as an SSE error event and no [DONE]. */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "gllm/api.h"
#include "gllm/server.h"
#include "http/server.h"

struct task {
	struct server *s;
	gla_req_t req;
	gla_answer_t ans;
	char id[48];
	/* engine thread */
	int eid;
	/* under s->mu */
	int refs;
	char *pend; /* text not yet written */
	size_t npend, cap;
	int accepted, done, status;
	gl_finish_t why;
	gl_usage_t usage;
	char error[256];
	int dirty, http_gone;
	struct task *qnext, *dnext, *cnext; /* the inbox, the dirty list, the cancels */
	/* HTTP thread */
	gh_conn_t *c;
	struct gh_buf body;
	struct gh_buf text; /* a whole answer's text so far */
	int started, chunked;
	long long last_ms;
	struct task *onext, *oprev; /* open streams (keep-alives) */
};

struct server {
	gllm_rank_t *r;
	gllm_server_opts_t o;
	char **keys;
	char model_id[128];
	long created;
	gl_chat_t chat;
	struct event_base *base;
	struct event *ev_wake, *ev_tick, *ev_sig[2];
	int wake[2];
	struct task *open;
	unsigned long long seq;
	/* shared */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct task *inbox, *cancels, *dirty;
	int woken, stopping, failed;
	char why[512];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the shared part (s->mu held) ---- */

static void task_unref(struct task *t)
{
	if (--t->refs > 0)
		return;
	gla_req_free(&t->req);
	free(t->pend);
	gh_buf_free(&t->body);
	gh_buf_free(&t->text);
	free(t);
}

static void mark_dirty(struct server *s, struct task *t)
{
	if (t->http_gone || t->dirty)
		return;
	t->dirty = 1;
	t->dnext = s->dirty;
	s->dirty = t;
	if (!s->woken) {
		s->woken = 1;
		ssize_t n = write(s->wake[1], "w", 1);
		(void)n; /* a full pipe has a wake-up in it already */
	}
}

/* ---- the engine thread ---- */

static void on_text(void *arg, const char *text, size_t len, int ntokens)
{
	struct task *t = arg;
	struct server *s = t->s;
	(void)ntokens;
	pthread_mutex_lock(&s->mu);
	if (t->npend + len > t->cap) {
		size_t cap = (t->npend + len) * 2 + 64;
		char *p = realloc(t->pend, cap);
		if (!p) {
			pthread_mutex_unlock(&s->mu);
			return; /* on_done follows; the text is short by this piece: logged */
		}
		t->pend = p;
		t->cap = cap;
	}
	memcpy(t->pend + t->npend, text, len);
	t->npend += len;
	mark_dirty(s, t);
	pthread_mutex_unlock(&s->mu);
}

static void end_task(struct server *s, struct task *t, gl_finish_t why, const gl_usage_t *u,
		     int status, const char *error)
{
	pthread_mutex_lock(&s->mu);
	t->done = 1;
	t->why = why;
	t->status = status;
	if (u)
		t->usage = *u;
	snprintf(t->error, sizeof(t->error), "%s", error ? error : "");
	mark_dirty(s, t);
	task_unref(t); /* the engine's reference */
	pthread_mutex_unlock(&s->mu);
}

static void on_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	struct task *t = arg;
	end_task(t->s, t, why, u, why == GL_FINISH_ERROR ? 503 : 200, error);
}

/* The prompt's tokens: a completion's text as it is, a chat rendered by its template. */
static int32_t *tokenize(struct server *s, struct task *t, int *n, char *why, size_t cap)
{
	const gl_tok_t *tok = s->r->tok;
	gp_error_t err = {{0}};
	char *text = t->req.prompt;
	if (t->req.kind == GLA_CHAT &&
	    !(text = gl_chat_render(s->chat, t->req.msgs, t->req.nmsgs, 1, NULL, &err))) {
		snprintf(why, cap, "%.250s", err.text);
		return NULL;
	}
	int parse_special = t->req.kind == GLA_CHAT, max = s->r->o.n_ctx + 1;
	int32_t *ids = malloc((size_t)max * sizeof(int32_t));
	*n = ids ? gl_tok_encode(tok, text, strlen(text), gl_tok_add_bos(tok), parse_special, ids,
				 max)
		 : -1;
	if (text != t->req.prompt)
		free(text);
	if (*n < 1 || *n > s->r->o.n_ctx - 1) {
		snprintf(why, cap, "the prompt has %d tokens, the context holds %d with the answer",
			 *n, s->r->o.n_ctx);
		free(ids);
		return NULL;
	}
	return ids;
}

static void start_task(struct server *s, gl_engine_t *e, struct task *t)
{
	char why[256] = "";
	int n = 0;
	if (s->failed) {
		end_task(s, t, GL_FINISH_ERROR, NULL, 503, s->why);
		return;
	}
	int32_t *ids = tokenize(s, t, &n, why, sizeof(why));
	if (!ids) {
		end_task(s, t, GL_FINISH_ERROR, NULL, 400, why);
		return;
	}
	const char *stops[GLA_MAX_STOPS + 8];
	int nstop = 0;
	for (int i = 0; i < t->req.nstop; i++)
		stops[nstop++] = t->req.stop[i];
	const char *const *cs = t->req.kind == GLA_CHAT ? gl_chat_stops(s->chat) : NULL;
	for (int i = 0; cs && cs[i] && nstop < GLA_MAX_STOPS + 8; i++)
		stops[nstop++] = cs[i];
	gl_request_t rq = {.prompt = ids,
			   .nprompt = n,
			   .max_tokens = t->req.max_tokens,
			   .sp = t->req.sp,
			   .stop = stops,
			   .nstop = nstop,
			   .on_text = on_text,
			   .on_done = on_done,
			   .arg = t};
	gp_error_t err = {{0}};
	t->eid = gl_engine_submit(e, &rq, &err);
	free(ids);
	if (t->eid < 0) {
		end_task(s, t, GL_FINISH_ERROR, NULL, 400, err.text);
		return;
	}
	pthread_mutex_lock(&s->mu);
	t->accepted = 1;
	mark_dirty(s, t);
	pthread_mutex_unlock(&s->mu);
}

/* Take the queues; wait for work while the engine has none. 0: go on, -1: stop. */
static int take(struct server *s, gl_engine_t *e, struct task **in, struct task **cancels)
{
	pthread_mutex_lock(&s->mu);
	while (!s->inbox && !s->cancels && !s->stopping && gl_engine_open(e) == 0)
		pthread_cond_wait(&s->cv, &s->mu);
	*in = s->inbox;
	*cancels = s->cancels;
	s->inbox = s->cancels = NULL;
	int stop = s->stopping && gl_engine_open(e) == 0 && !*in;
	pthread_mutex_unlock(&s->mu);
	return stop ? -1 : 0;
}

static void *engine_main(void *arg)
{
	struct server *s = arg;
	gp_error_t err = {{0}};
	gl_engine_opts_t eo = {.max_seqs = s->r->o.parallel,
			       .max_batch_tokens = s->r->o.max_batch_tokens,
			       .n_ctx = s->r->o.n_ctx};
	gl_engine_t *e = gl_engine_create(s->r->tok, &s->r->hp, s->r->ops, s->r->exec, &eo, &err);
	if (!e) {
		pthread_mutex_lock(&s->mu);
		s->failed = 1;
		snprintf(s->why, sizeof(s->why), "engine: %.480s", err.text);
		pthread_mutex_unlock(&s->mu);
	}
	struct task *in, *cancels;
	while (e && take(s, e, &in, &cancels) == 0) {
		/* the inbox is newest first: start the oldest first */
		struct task *rev = NULL;
		for (struct task *nx; in; in = nx) {
			nx = in->qnext;
			in->qnext = rev;
			rev = in;
		}
		for (struct task *nx; rev; rev = nx) {
			nx = rev->qnext;
			start_task(s, e, rev);
		}
		for (struct task *nx; cancels; cancels = nx) {
			nx = cancels->cnext;
			if (cancels->eid >= 0)
				gl_engine_cancel(e, cancels->eid);
			pthread_mutex_lock(&s->mu);
			task_unref(cancels); /* the cancel's hold */
			pthread_mutex_unlock(&s->mu);
		}
		if (gl_engine_open(e) > 0 && gl_engine_run(e, 20, &err) < 0) {
			gp_err("the engine failed: %s", err.text);
			pthread_mutex_lock(&s->mu);
			s->failed = 1;
			snprintf(s->why, sizeof(s->why), "%s", err.text);
			pthread_mutex_unlock(&s->mu);
		}
	}
	gl_engine_destroy(&e);
	pthread_mutex_lock(&s->mu);
	s->failed = 1; /* no engine any more: whatever comes is refused */
	if (!s->why[0])
		snprintf(s->why, sizeof(s->why), "the server is stopping");
	ssize_t n = write(s->wake[1], "w", 1);
	(void)n;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- the HTTP thread ---- */

static void open_link(struct server *s, struct task *t)
{
	t->onext = s->open;
	t->oprev = NULL;
	if (s->open)
		s->open->oprev = t;
	s->open = t;
}

static void open_unlink(struct server *s, struct task *t)
{
	if (t->oprev)
		t->oprev->onext = t->onext;
	else if (s->open == t)
		s->open = t->onext;
	if (t->onext)
		t->onext->oprev = t->oprev;
	t->onext = t->oprev = NULL;
}

static void answer_error(gh_conn_t *c, const gla_err_t *e)
{
	char *js = gla_error_json(e);
	const char *hdr = e->status == 401 ? "WWW-Authenticate: Bearer\r\n" : NULL;
	if (js)
		gh_conn_answer_hdrs(c, e->status, "application/json", hdr, js, strlen(js));
	else
		gh_conn_answer_text(c, 500, "out of memory");
	free(js);
}

/* Write LEN bytes of a stream's body: a chunk of the chunked coding, or as they are. */
static void stream_write(struct task *t, const char *p, size_t len)
{
	struct gh_buf *o = gh_conn_out(t->c);
	if (t->chunked)
		gh_buf_printf(o, "%zx\r\n", len);
	gh_buf_add(o, p, len);
	if (t->chunked)
		gh_buf_add(o, "\r\n", 2);
	t->last_ms = now_ms();
}

static void sse(struct task *t, char *json)
{
	if (!json)
		return; /* out of memory: the piece is lost, the stream goes on */
	size_t n = strlen(json);
	char *ev = malloc(n + 8);
	if (ev) {
		memcpy(ev, "data: ", 6);
		memcpy(ev + 6, json, n);
		memcpy(ev + 6 + n, "\n\n", 2);
		stream_write(t, ev, n + 8);
	}
	free(ev);
	free(json);
}

static void stream_start(struct task *t)
{
	gh_conn_started(t->c);
	t->chunked = gh_conn_minor(t->c) >= 1;
	gh_buf_printf(gh_conn_out(t->c),
		      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		      "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n%s\r\n",
		      t->chunked ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n");
	t->started = 1;
	if (t->req.kind == GLA_CHAT)
		sse(t, gla_chunk_json(&t->ans, GLA_CHUNK_ROLE, NULL, 0, NULL, NULL));
	open_link(t->s, t);
}

/* The end of a stream: a finish chunk, usage when asked, [DONE]; or an error event and no
 * [DONE], so no client takes a broken answer for a whole one. */
static void stream_end(struct task *t)
{
	if (t->why == GL_FINISH_STOP || t->why == GL_FINISH_LENGTH) {
		sse(t, gla_chunk_json(&t->ans, GLA_CHUNK_FINISH, NULL, 0, gl_finish_name(t->why),
				      NULL));
		if (t->req.include_usage)
			sse(t, gla_chunk_json(&t->ans, GLA_CHUNK_USAGE, NULL, 0, NULL, &t->usage));
		stream_write(t, "data: [DONE]\n\n", 14);
	} else {
		gla_err_t e;
		gla_fail(&e, 503, "server_error", NULL, "engine_failed", "the answer broke off: %s",
			 t->error[0] ? t->error : "the engine stopped");
		sse(t, gla_error_json(&e));
	}
	if (t->chunked)
		gh_buf_add(gh_conn_out(t->c), "0\r\n\r\n", 5);
	open_unlink(t->s, t);
}

static void whole_end(struct task *t)
{
	if (t->why == GL_FINISH_STOP || t->why == GL_FINISH_LENGTH) {
		char *js =
		    gla_answer_json(&t->ans, gh_buf_size(&t->text) ? gh_buf_data(&t->text) : "",
				    gh_buf_size(&t->text), gl_finish_name(t->why), &t->usage);
		if (js) {
			gh_conn_answer(t->c, 200, "application/json", js, strlen(js));
			free(js);
			return;
		}
		snprintf(t->error, sizeof(t->error), "out of memory");
	}
	gla_err_t e;
	gla_fail(&e, 503, "server_error", NULL, "engine_failed", "no answer: %s",
		 t->error[0] ? t->error : "the engine stopped");
	answer_error(t->c, &e);
}

/* What the engine thread left on T: written to its client. */
static void deliver(struct server *s, struct task *t, const char *text, size_t n, int accepted,
		    int done)
{
	if (done && !t->started && !accepted) { /* refused before the engine took it */
		gla_err_t e;
		if (t->status == 400)
			gla_fail(&e, 400, "invalid_request_error",
				 t->req.kind == GLA_CHAT ? "messages" : "prompt", NULL, "%s",
				 t->error);
		else
			gla_fail(&e, 503, "server_error", NULL, "engine_failed", "%s", t->error);
		answer_error(t->c, &e);
	} else if (t->req.stream) {
		if (!t->started && (accepted || n || done))
			stream_start(t);
		if (n)
			sse(t, gla_chunk_json(&t->ans, GLA_CHUNK_TEXT, text, n, NULL, NULL));
		if (done)
			stream_end(t);
	} else {
		gh_buf_add(&t->text, text, n);
		if (done)
			whole_end(t);
	}
	if (!done) {
		gh_conn_flush(t->c);
		return;
	}
	gh_conn_t *c = t->c;
	int keep = t->why != GL_FINISH_ERROR && (!t->req.stream || t->chunked);
	t->c = NULL;
	pthread_mutex_lock(&s->mu);
	t->http_gone = 1;
	task_unref(t); /* the HTTP side's reference */
	pthread_mutex_unlock(&s->mu);
	gh_conn_next(c, keep);
}

static void stop_when_idle(struct server *s)
{
	pthread_mutex_lock(&s->mu);
	int stop = (s->failed || s->stopping) && !s->open && !s->dirty;
	pthread_mutex_unlock(&s->mu);
	if (stop) {
		struct timeval grace = {0, 300000}; /* the last answers' bytes leave first */
		event_base_loopexit(s->base, &grace);
	}
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	char buf[256];
	(void)what;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&s->mu);
	struct task *list = s->dirty;
	s->dirty = NULL;
	s->woken = 0;
	for (struct task *t = list; t; t = t->dnext)
		t->refs++; /* a client leaving while its task waits here frees nothing */
	pthread_mutex_unlock(&s->mu);
	/* newest first in the list; each task's own events are whole, so order across tasks
	 * does not matter */
	for (struct task *t = list, *nx; t; t = nx) {
		pthread_mutex_lock(&s->mu);
		nx = t->dnext;
		t->dirty = 0;
		char *text = t->pend;
		size_t n = t->npend;
		t->pend = NULL;
		t->npend = t->cap = 0;
		int accepted = t->accepted, done = t->done;
		pthread_mutex_unlock(&s->mu);
		if (t->c)
			deliver(s, t, text ? text : "", n, accepted, done);
		free(text);
		pthread_mutex_lock(&s->mu);
		task_unref(t);
		pthread_mutex_unlock(&s->mu);
	}
	stop_when_idle(s);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;
	(void)fd, (void)what;
	long long now = now_ms();
	for (struct task *t = s->open, *nx; t; t = nx) {
		nx = t->onext; /* a client that is gone on this write leaves the list */
		if (t->c && now - t->last_ms >= s->o.keepalive_ms) {
			stream_write(t, ": keep-alive\n\n", 14);
			gh_conn_flush(t->c);
		}
	}
	stop_when_idle(s);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;
	(void)what;
	pthread_mutex_lock(&s->mu);
	int again = s->stopping;
	s->stopping = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	gp_info("signal %d: %s", (int)sig,
		again ? "stopping now" : "finishing the open answers (again: stop now)");
	if (again)
		event_base_loopexit(s->base, NULL);
	else
		stop_when_idle(s);
}

static void on_gone(void *task)
{
	struct task *t = task;
	struct server *s = t->s;
	t->c = NULL;
	open_unlink(s, t);
	pthread_mutex_lock(&s->mu);
	if (t->dirty) { /* out of the dirty list: nobody writes to this client any more */
		for (struct task **p = &s->dirty; *p; p = &(*p)->dnext)
			if (*p == t) {
				*p = t->dnext;
				break;
			}
		t->dirty = 0;
	}
	t->http_gone = 1;
	if (t->refs > 1 && !t->done) { /* the engine holds it: cancel, holding it till then */
		t->refs++;
		t->cnext = s->cancels;
		s->cancels = t;
		pthread_cond_broadcast(&s->cv);
	}
	task_unref(t);
	pthread_mutex_unlock(&s->mu);
}

static void new_id(struct server *s, struct task *t)
{
	uint64_t r = 0;
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint64_t)now_ms();
	snprintf(t->id, sizeof(t->id), "%s-%llx%04llx",
		 t->req.kind == GLA_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)(r >> 16),
		 ++s->seq & 0xffff);
	t->ans = (gla_answer_t){
	    .kind = t->req.kind, .id = t->id, .model = s->model_id, .created = (long)time(NULL)};
	if (!t->req.seeded)
		t->req.sp.seed = r;
}

static void on_body(void *task, bool done)
{
	struct task *t = task;
	struct server *s = t->s;
	if (!done)
		return;
	gla_err_t e;
	if (gla_parse(gh_buf_size(&t->body) ? gh_buf_data(&t->body) : "", gh_buf_size(&t->body),
		      t->req.kind, s->r->o.n_ctx, &t->req, &e) < 0) {
		gh_conn_t *c = t->c;
		answer_error(c, &e);
		pthread_mutex_lock(&s->mu);
		task_unref(t);
		pthread_mutex_unlock(&s->mu);
		gh_conn_next(c, true);
		return;
	}
	gh_buf_free(&t->body);
	new_id(s, t);
	t->last_ms = now_ms();
	pthread_mutex_lock(&s->mu);
	t->refs = 2; /* the HTTP side's and the engine's */
	t->qnext = s->inbox;
	s->inbox = t;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* ---- requests ---- */

char **gllm_read_keys(const char *path, gp_error_t *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		gp_errprintf(err, "api key file '%s': %s", path, strerror(errno));
		return NULL;
	}
	char **keys = calloc(1, sizeof(char *)), line[1024];
	int n = 0;
	while (keys && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		char *k = line + strspn(line, " \t");
		if (!*k || *k == '#')
			continue;
		char **nk = realloc(keys, (size_t)(n + 2) * sizeof(char *));
		if (!nk || !(nk[n] = strdup(k))) {
			keys = nk;
			break;
		}
		keys = nk;
		keys[++n] = NULL;
	}
	fclose(f);
	if (!keys || n == 0) {
		for (int i = 0; keys && keys[i]; i++)
			free(keys[i]);
		free(keys);
		errno = keys ? EINVAL : ENOMEM;
		gp_errprintf(err, "api key file '%s': %s", path,
			     keys ? "no key in it" : "out of memory");
		return NULL;
	}
	return keys;
}

/* Compare every byte whatever the first difference: the time says nothing of the key. */
static int same(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b);
	unsigned d = na != nb;
	for (size_t i = 0; i < na; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i < nb ? i : 0];
	return d == 0;
}

int gllm_key_ok(char *const *keys, const char *auth, size_t len)
{
	if (!auth || len < 7 || strncasecmp(auth, "Bearer ", 7) != 0)
		return 0;
	auth += 7, len -= 7;
	while (len && auth[0] == ' ')
		auth++, len--;
	while (len && (auth[len - 1] == ' ' || auth[len - 1] == '\t'))
		len--;
	int ok = 0;
	for (int i = 0; keys && keys[i]; i++)
		ok |= same(auth, len, keys[i]);
	return ok;
}

static void take_post(struct server *s, gh_conn_t *c, gla_kind_t kind)
{
	struct gh_msg *m = gh_conn_request(c);
	pthread_mutex_lock(&s->mu);
	int refuse = s->failed || s->stopping;
	pthread_mutex_unlock(&s->mu);
	struct task *t = refuse ? NULL : calloc(1, sizeof(*t));
	if (!t) {
		gla_err_t e;
		gla_fail(&e, 503, "server_error", NULL, NULL, "%s",
			 refuse ? "the server is stopping" : "out of memory");
		answer_error(c, &e);
		return;
	}
	t->s = s;
	t->c = c;
	t->eid = -1;
	t->refs = 1;
	t->req.kind = kind;
	m->out = &t->body;
	m->out_frame = GH_FRAME_LENGTH; /* the body as it is, within the server's max_body */
	gh_conn_take(c, t);
}

static void on_head(gh_conn_t *c, void *arg)
{
	struct server *s = arg;
	struct gh_msg *m = gh_conn_request(c);
	const char *t = gh_buf_data(&m->target);
	size_t tl = gh_buf_size(&m->target), pl = strcspn(t, "?");
	pl = pl < tl ? pl : tl;
#define PATH_IS(lit) (pl == sizeof(lit) - 1 && memcmp(t, lit, pl) == 0)
	enum http_method meth = (enum http_method)m->p.method;
	gla_err_t e;
	size_t alen = 0;
	const char *auth = gh_msg_header(m, "Authorization", &alen);
	if (PATH_IS("/health")) {
		gh_conn_answer_text(c, s->failed ? 503 : 200, "%s", s->failed ? s->why : "ok");
	} else if (s->keys && !gllm_key_ok(s->keys, auth, alen)) {
		gla_fail(&e, 401, "invalid_request_error", NULL, "invalid_api_key", "%s",
			 auth ? "incorrect API key provided"
			      : "no API key: send "
				"'Authorization: Bearer KEY'");
		answer_error(c, &e);
	} else if (PATH_IS("/v1/models") && (meth == HTTP_GET || meth == HTTP_HEAD)) {
		char *js = gla_models_json(s->model_id, s->created);
		gh_conn_answer(c, js ? 200 : 500, "application/json", js ? js : "",
			       js ? strlen(js) : 0);
		free(js);
	} else if ((PATH_IS("/v1/completions") || PATH_IS("/v1/chat/completions")) &&
		   meth == HTTP_POST) {
		take_post(s, c, PATH_IS("/v1/completions") ? GLA_COMPLETION : GLA_CHAT);
	} else if (PATH_IS("/v1/completions") || PATH_IS("/v1/chat/completions") ||
		   PATH_IS("/v1/models")) {
		gla_fail(&e, 405, "invalid_request_error", NULL, NULL, "use %s",
			 PATH_IS("/v1/models") ? "GET" : "POST");
		answer_error(c, &e);
	} else {
		gla_fail(&e, 404, "invalid_request_error", NULL, "unknown_url",
			 "no such path: GET /v1/models, POST /v1/completions, "
			 "POST /v1/chat/completions");
		answer_error(c, &e);
	}
#undef PATH_IS
}

/* ---- the server ---- */

static int setup(struct server *s, gh_server_t **http, gp_error_t *err)
{
	static const struct gh_handler h = {.head = on_head, .body = on_body, .gone = on_gone};
	struct gh_limits lim = {.max_head = 16384,
				.max_body = s->o.max_body ? s->o.max_body : (1u << 20),
				.client_timeout_ms = 60000,
				.max_conns = 1024,
				.max_conns_per_addr = 256};
	if (pipe(s->wake) < 0 || fcntl(s->wake[0], F_SETFL, O_NONBLOCK) < 0 ||
	    fcntl(s->wake[1], F_SETFL, O_NONBLOCK) < 0)
		return gp_errprintf(err, "pipe: %s", strerror(errno));
	int tick_ms = s->o.keepalive_ms / 2 < 1000 ? s->o.keepalive_ms / 2 : 1000;
	struct timeval sec = {tick_ms / 1000, (tick_ms % 1000) * 1000};
	if (!(s->base = event_base_new()) || !(*http = gh_server_create(s->base, &h, &lim)) ||
	    !(s->ev_wake = event_new(s->base, s->wake[0], EV_READ | EV_PERSIST, on_wake, s)) ||
	    !(s->ev_tick = event_new(s->base, -1, EV_PERSIST, on_tick, s)) ||
	    !(s->ev_sig[0] = evsignal_new(s->base, SIGINT, on_signal, s)) ||
	    !(s->ev_sig[1] = evsignal_new(s->base, SIGTERM, on_signal, s)) ||
	    event_add(s->ev_wake, NULL) < 0 || event_add(s->ev_tick, &sec) < 0 ||
	    event_add(s->ev_sig[0], NULL) < 0 || event_add(s->ev_sig[1], NULL) < 0)
		return gp_errprintf(err, "cannot make the event loop");
	const char *lfds = getenv("LISTEN_FDS"), *lpid = getenv("LISTEN_PID");
	int handed = lfds && lpid && !strcmp(lfds, "1") && atol(lpid) == (long)getpid();
	if (handed ? gh_server_listen_fd(*http, 3, s) < 0
		   : gh_server_listen(*http, s->o.host, (uint16_t)s->o.port, s) < 0)
		return gp_errprintf(err, "cannot listen on %s:%d", s->o.host, s->o.port);
	return 0;
}

static void teardown(struct server *s, gh_server_t **http)
{
	gh_server_destroy(http); /* every taken request's gone: cancels queued */
	for (int i = 0; i < 2; i++)
		if (s->ev_sig[i])
			event_free(s->ev_sig[i]);
	if (s->ev_wake)
		event_free(s->ev_wake);
	if (s->ev_tick)
		event_free(s->ev_tick);
	if (s->base)
		event_base_free(s->base);
	for (int i = 0; i < 2; i++)
		if (s->wake[i] > 0)
			close(s->wake[i]);
	for (int i = 0; s->keys && s->keys[i]; i++)
		free(s->keys[i]);
	free(s->keys);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

int gllm_serve(gllm_rank_t *r, const gllm_server_opts_t *so, gp_error_t *err)
{
	struct server s = {.r = r, .o = *so, .chat = so->chat, .created = (long)time(NULL)};
	if (!s.o.host)
		s.o.host = "127.0.0.1";
	const char *ka = getenv("GLLM_KEEPALIVE_MS"); /* tests: a shorter silence */
	if (s.o.keepalive_ms <= 0)
		s.o.keepalive_ms = ka && atoi(ka) >= 100 ? atoi(ka) : 5000;
	snprintf(s.model_id, sizeof(s.model_id), "%s", so->model_id ? so->model_id : r->hp.name);
	pthread_mutex_init(&s.mu, NULL);
	pthread_cond_init(&s.cv, NULL);
	s.wake[0] = s.wake[1] = -1;
	gh_server_t *http = NULL;
	pthread_t th;
	int rc = -1;
	if ((so->api_key_file && !(s.keys = gllm_read_keys(so->api_key_file, err))) ||
	    setup(&s, &http, err) < 0) {
		teardown(&s, &http);
		return -1;
	}
	if (pthread_create(&th, NULL, engine_main, &s) != 0) {
		gp_errprintf(err, "cannot start the engine's thread");
		teardown(&s, &http);
		return -1;
	}
	gp_info("serving '%s' on http://%s:%d/v1 (%d ranks, %d requests at once, context %d)",
		s.model_id, s.o.host, s.o.port, r->size, r->o.parallel, r->o.n_ctx);
	event_base_dispatch(s.base);
	pthread_mutex_lock(&s.mu);
	s.stopping = 1;
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.mu);
	gh_server_destroy(&http); /* open requests are cancelled: the engine ends */
	pthread_join(th, NULL);
	rc = s.failed && strcmp(s.why, "the server is stopping") ? -1 : 0;
	if (rc < 0)
		gp_errprintf(err, "%s", s.why);
	teardown(&s, &http);
	return rc;
}
