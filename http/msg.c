/* msg.c: one direction of an HTTP/1.x connection through http-parser (see msg.h). The parser
 * is paused in two callbacks, so that gh_msg_feed returns there: after the head, for the
 * caller to choose where the body goes, and after the message, so that the bytes of the next
 * one (a pipelining client) wait until this one is answered. */
#include "http/msg.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Hop-by-hop headers (RFC 9110 7.6.1) are each connection's own; the framing ones are
 * written again for the next hop. Expect is answered by the server itself (ggated). */
static const char *const dropped[] = {
    "Connection",
    "Keep-Alive",
    "Proxy-Connection",
    "Proxy-Authenticate",
    "Proxy-Authorization",
    "TE",
    "Trailer",
    "Transfer-Encoding",
    "Upgrade",
    "Content-Length",
    "Expect",
};

static struct gh_msg *msg_of(http_parser *p)
{
	return p->data;
}

static int fail(struct gh_msg *m, int status, const char *why)
{
	m->status = status;
	m->why = why;
	m->state = GH_MSG_ERROR;
	return -1; /* the parser stops with an error (1 would mean "no body" to it) */
}

static int head_room(struct gh_msg *m, size_t more)
{
	if (m->target.len + m->hdrs.len + more > m->max_head)
		return fail(m, 431, "request header fields too large");
	return 0;
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* RFC 9110 5.6.2: a field name is a token. http-parser, built lenient by Debian, lets a
 * space through ("Transfer-Encoding : chunked" would not be framing to it and could be to
 * the replica): such a name is refused here. */
static bool token(const char *s, size_t n)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= 'A' && ch <= 'Z') || (ch && strchr(extra, ch))))
			return false;
	}
	return true;
}

/* whether the comma-separated list v[0..n) holds want (case-insensitive, spaces around) */
static bool has_token(const char *v, size_t n, const char *want)
{
	size_t wl = strlen(want), i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t b = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = i;
		while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - b == wl && strncasecmp(v + b, want, wl) == 0)
			return true;
	}
	return false;
}

/* The header line in hdrs[line..] is whole: kept (CRLF added) or dropped. -1: a bad name. */
static int end_line(struct gh_msg *m)
{
	if (!m->last)
		return 0;
	if (m->last == 1)
		gh_buf_add(&m->hdrs, ": ", 2);
	const char *l = m->hdrs.p + m->line;
	size_t n = m->hdrs.len - m->line;
	const char *colon = memchr(l, ':', n);
	size_t nl = colon ? (size_t)(colon - l) : n;
	const char *v = colon ? colon + 2 : l + n;
	size_t vl = (size_t)(l + n - v);
	if (!token(l, nl))
		return fail(m, 400, "bad header field name");
	bool drop = false;
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		if (name_is(l, nl, dropped[i])) {
			drop = true;
			break;
		}
	if (name_is(l, nl, "Expect") && vl == 12 && strncasecmp(v, "100-continue", 12) == 0)
		m->expect_continue = true;
	if (name_is(l, nl, "Upgrade")) {
		m->has_upgrade = true;
		if (has_token(v, vl, "websocket"))
			m->upgrade_websocket = true;
	}
	if (drop)
		m->hdrs.len = m->line;
	else
		gh_buf_add(&m->hdrs, "\r\n", 2);
	m->last = 0;
	return 0;
}

static int on_target(http_parser *p, const char *at, size_t n)
{
	struct gh_msg *m = msg_of(p);
	if (m->state != GH_MSG_HEAD)
		return 0;
	if (head_room(m, n) || gh_buf_add(&m->target, at, n) < 0)
		return fail(m, 431, "request target too long");
	return 0;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct gh_msg *m = msg_of(p);
	if (m->state != GH_MSG_HEAD)
		return 0; /* a chunked body's trailer: not forwarded */
	if (m->last == 2 && end_line(m) < 0)
		return -1;
	if (!m->last) {
		m->line = m->hdrs.len;
		m->last = 1;
	}
	if (head_room(m, n + 4) || gh_buf_add(&m->hdrs, at, n) < 0)
		return fail(m, 431, "request header fields too large");
	return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct gh_msg *m = msg_of(p);
	if (m->state != GH_MSG_HEAD)
		return 0;
	if (m->last == 1) {
		gh_buf_add(&m->hdrs, ": ", 2);
		m->last = 2;
	}
	if (head_room(m, n + 2) || gh_buf_add(&m->hdrs, at, n) < 0)
		return fail(m, 431, "request header fields too large");
	/* an obsolete folded line: its line breaks are spaces (RFC 9112 5.2) */
	for (char *c = m->hdrs.p + m->hdrs.len - n; c < m->hdrs.p + m->hdrs.len; c++)
		if (*c == '\r' || *c == '\n')
			*c = ' ';
	return 0;
}

static int on_headers(http_parser *p)
{
	struct gh_msg *m = msg_of(p);
	if (end_line(m) < 0)
		return -1;
	m->has_length = p->content_length != ULLONG_MAX && !(p->flags & F_CHUNKED);
	m->length = m->has_length ? p->content_length : 0;
	if (p->flags & F_CHUNKED)
		m->in = GH_FRAME_CHUNKED;
	else if (m->has_length)
		m->in = GH_FRAME_LENGTH;
	else if (p->type == HTTP_RESPONSE && !m->skip_body && p->status_code / 100 != 1 &&
		 p->status_code != 204 && p->status_code != 304)
		m->in = GH_FRAME_EOF; /* no length given: the body runs to the close */
	else
		m->in = GH_FRAME_NONE;
	if (m->skip_body)
		m->in = GH_FRAME_NONE;
	if (m->max_body && m->in == GH_FRAME_LENGTH && m->length > m->max_body)
		return fail(m, 413, "request body too large");
	m->state = GH_MSG_BODY;
	http_parser_pause(p, 1);
	return m->skip_body ? 1 : 0; /* 1: no body follows (a response to HEAD) */
}

/* the last bytes of the body so far, after data[0..n) */
static void keep_tail(struct gh_msg *m, const char *data, size_t n)
{
	size_t t = sizeof(m->body_tail);
	if (n >= t) {
		memcpy(m->body_tail, data + n - t, t);
		return;
	}
	memmove(m->body_tail, m->body_tail + n, t - n);
	memcpy(m->body_tail + t - n, data, n);
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct gh_msg *m = msg_of(p);
	keep_tail(m, at, n);
	m->body_bytes += n;
	if (m->max_body && m->body_bytes > m->max_body)
		return fail(m, 413, "request body too large");
	if (!m->out || !n)
		return 0;
	int rc = 0;
	if (m->out_frame == GH_FRAME_CHUNKED)
		rc = gh_buf_printf(m->out, "%zx\r\n", n);
	if (rc == 0)
		rc = gh_buf_add(m->out, at, n);
	if (rc == 0 && m->out_frame == GH_FRAME_CHUNKED)
		rc = gh_buf_add(m->out, "\r\n", 2);
	return rc < 0 ? fail(m, 503, "out of memory") : 0;
}

static int on_done(http_parser *p)
{
	struct gh_msg *m = msg_of(p);
	if (m->out && m->out_frame == GH_FRAME_CHUNKED && gh_buf_add(m->out, "0\r\n\r\n", 5) < 0)
		return fail(m, 503, "out of memory");
	m->state = GH_MSG_DONE;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
    .on_url = on_target,
    .on_status = on_target,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers,
    .on_body = on_body,
    .on_message_complete = on_done,
};

void gh_msg_init(struct gh_msg *m, enum http_parser_type type, size_t max_head, uint64_t max_body)
{
	memset(m, 0, sizeof(*m));
	http_parser_init(&m->p, type);
	m->p.data = m;
	m->max_head = max_head;
	m->max_body = max_body;
}

void gh_msg_free(struct gh_msg *m)
{
	gh_buf_free(&m->target);
	gh_buf_free(&m->hdrs);
}

void gh_msg_next(struct gh_msg *m)
{
	gh_buf_clear(&m->target);
	gh_buf_clear(&m->hdrs);
	m->state = GH_MSG_IDLE;
	m->last = 0;
	m->line = 0;
	m->expect_continue = m->has_upgrade = m->skip_body = m->has_length = false;
	m->upgrade_websocket = false;
	m->head_bytes = 0;
	m->body_bytes = 0;
	memset(m->body_tail, 0, sizeof(m->body_tail));
	m->length = 0;
	m->in = GH_FRAME_NONE;
	m->out = NULL;
	m->out_frame = GH_FRAME_NONE;
}

static const struct {
	enum http_errno e;
	int status;
	const char *why;
} errors[] = {
    {HPE_HEADER_OVERFLOW, 431, "request header fields too large"},
    {HPE_INVALID_METHOD, 501, "method not implemented"},
    {HPE_INVALID_VERSION, 505, "http version not supported"},
    {HPE_UNEXPECTED_CONTENT_LENGTH, 400, "both content-length and chunked"},
    {HPE_INVALID_CONTENT_LENGTH, 400, "invalid content-length"},
};

size_t gh_msg_feed(struct gh_msg *m, const char *data, size_t n)
{
	if (m->state == GH_MSG_DONE || m->state == GH_MSG_ERROR)
		return 0;
	if (m->state == GH_MSG_IDLE) {
		if (!n)
			return 0; /* closed between messages */
		m->state = GH_MSG_HEAD;
	}
	bool in_head = m->state == GH_MSG_HEAD;
	size_t used = http_parser_execute(&m->p, &settings, data, n);
	enum http_errno e = HTTP_PARSER_ERRNO(&m->p);
	if (e == HPE_PAUSED)
		http_parser_pause(&m->p, 0);
	else if (e != HPE_OK && m->state != GH_MSG_ERROR) {
		fail(m, 400, "bad request");
		for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
			if (errors[i].e == e) {
				m->status = errors[i].status;
				m->why = errors[i].why;
			}
		if (!n)
			m->why = "closed before the message was whole";
	}
	if (in_head) {
		m->head_bytes += used;
		if (m->state == GH_MSG_HEAD && m->head_bytes > m->max_head)
			fail(m, 431, "request header fields too large");
	}
	return used;
}

int gh_msg_frame_header(const struct gh_msg *m, struct gh_buf *b)
{
	if (m->out_frame == GH_FRAME_CHUNKED)
		return gh_buf_add(b, "Transfer-Encoding: chunked\r\n", 28);
	if (m->out_frame == GH_FRAME_LENGTH)
		return gh_buf_printf(b, "Content-Length: %llu\r\n", (unsigned long long)m->length);
	return 0;
}

bool gh_msg_keep_alive(const struct gh_msg *m)
{
	return http_should_keep_alive(&m->p) && !m->has_upgrade && !m->p.upgrade;
}

const char *gh_msg_header(const struct gh_msg *m, const char *name, size_t *len)
{
	const char *p = gh_buf_data(&m->hdrs), *end = p + gh_buf_size(&m->hdrs);
	size_t nl = strlen(name);
	while (p < end) {
		const char *eol = memchr(p, '\r', (size_t)(end - p));
		if (!eol)
			eol = end;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (colon && (size_t)(colon - p) == nl && strncasecmp(p, name, nl) == 0) {
			const char *v = colon + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = eol;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*len = (size_t)(ve - v);
			return v;
		}
		p = eol + 2;
	}
	return NULL;
}

const char *gh_msg_method(const struct gh_msg *m)
{
	return http_method_str((enum http_method)m->p.method);
}

/* the methods a proxy forwards (ggated), and which of them may be sent again (RFC 9110 9.2.2) */
static const struct {
	enum http_method m;
	bool idempotent;
} methods[] = {
    {HTTP_GET, true},	 {HTTP_HEAD, true},    {HTTP_POST, false},  {HTTP_PUT, true},
    {HTTP_DELETE, true}, {HTTP_OPTIONS, true}, {HTTP_PATCH, false},
};

bool gh_msg_allowed(const struct gh_msg *m)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].m == (enum http_method)m->p.method)
			return true;
	return false;
}

bool gh_msg_idempotent(const struct gh_msg *m)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].m == (enum http_method)m->p.method)
			return methods[i].idempotent;
	return false;
}
