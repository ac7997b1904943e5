/* sse.c: keep-alive comments and the error event of a broken stream (see sse.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gateway/sse.h"

bool gw_sse_is(const struct gh_msg *m)
{
	static const char type[] = "text/event-stream";
	size_t n = 0;
	const char *v = gh_msg_header(m, "Content-Type", &n);
	if (!v)
		return false;
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	size_t tl = sizeof(type) - 1;
	if (n < tl || strncasecmp(v, type, tl) != 0)
		return false;
	return n == tl || v[tl] == ';' || v[tl] == ' ' || v[tl] == '\t';
}

bool gw_sse_at_boundary(const char *tail, size_t n)
{
	if (n == 0)
		return true;
	const char *e = tail + n;
	if (n >= 2 && e[-1] == '\n' && e[-2] == '\n')
		return true;
	if (n >= 2 && e[-1] == '\r' && e[-2] == '\r')
		return true;
	return n >= 4 && memcmp(e - 4, "\r\n\r\n", 4) == 0;
}

/* bytes text[0..n) into out as one piece of the client's framing */
static int framed(struct gh_buf *out, enum gh_frame frame, const char *text, size_t n)
{
	if (frame != GH_FRAME_CHUNKED && frame != GH_FRAME_EOF) {
		errno = EINVAL;
		return -1;
	}
	if (frame == GH_FRAME_CHUNKED && gh_buf_printf(out, "%zx\r\n", n) < 0)
		return -1;
	if (gh_buf_add(out, text, n) < 0)
		return -1;
	return frame == GH_FRAME_CHUNKED ? gh_buf_add(out, "\r\n", 2) : 0;
}

int gw_sse_keepalive(struct gh_buf *out, enum gh_frame frame)
{
	static const char ka[] = ": keep-alive\n\n";
	return framed(out, frame, ka, sizeof(ka) - 1);
}

int gw_sse_error(struct gh_buf *out, enum gh_frame frame, const char *tail, size_t n,
		 const char *who)
{
	char text[512];
	size_t k = 0;
	if (!gw_sse_at_boundary(tail, n)) {
		char last = tail[n - 1];
		if (last != '\n' && last != '\r')
			text[k++] = '\n'; /* the line the replica had begun */
		text[k++] = '\n';	  /* and its event */
	}
	char clean[160];
	size_t c = 0;
	for (const char *p = who ? who : ""; *p && c < sizeof(clean) - 1; p++)
		if (isprint((unsigned char)*p) && *p != '"' && *p != '\\')
			clean[c++] = *p;
	clean[c] = '\0';
	int w = snprintf(text + k, sizeof(text) - k,
			 "data: {\"error\": {\"message\": \"upstream %s closed mid-stream\", "
			 "\"type\": \"upstream_error\"}}\n\n",
			 clean);
	if (w < 0 || (size_t)w >= sizeof(text) - k) {
		errno = EINVAL;
		return -1;
	}
	return framed(out, frame, text, k + (size_t)w);
}
