/* api.c - OpenAI's request and answer JSON (api.h). Every field is looked up by name in a
 * table of what gllm takes and how each is checked; the JSON is parsed only after its
 * nesting depth was bounded by a scan, so a hostile body costs at most its bytes. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gllm/api.h"

int gla_fail(gla_err_t *e, int status, const char *type, const char *param, const char *code,
	     const char *fmt, ...)
{
	e->status = status;
	e->type = type;
	e->param = param;
	e->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	/* jansson's messages quote the bytes near a fault, which need not be UTF-8: the error
	 * JSON must still be made */
	for (char *p = e->message; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	errno = EINVAL;
	return -1;
}

#define BAD(e, param, ...) gla_fail(e, 400, "invalid_request_error", param, NULL, __VA_ARGS__)

/* Deepest nesting of arrays and objects in the text, strings skipped. */
static int depth_of(const char *s, size_t n)
{
	int d = 0, max = 0, in_str = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (++d > max)
				max = d;
		} else if (c == ']' || c == '}') {
			d--;
		}
	}
	return max;
}

/* ---- the fields ---- */
typedef int (*field_f)(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e);

static int num(json_t *v, const char *name, double lo, double hi, double *out, gla_err_t *e)
{
	if (!json_is_number(v))
		return BAD(e, name, "'%s' must be a number", name);
	double x = json_number_value(v);
	if (!(x >= lo && x <= hi))
		return BAD(e, name, "'%s' is %g, it must be within %g and %g", name, x, lo, hi);
	*out = x;
	return 0;
}

static int f_temperature(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	double x = 0;
	if (num(v, name, 0, 2, &x, e) < 0)
		return -1;
	r->sp.temperature = (float)x;
	return 0;
}

static int f_top_p(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	double x = 0;
	if (num(v, name, 0, 1, &x, e) < 0)
		return -1;
	r->sp.top_p = (float)x;
	return 0;
}

static int f_min_p(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	double x = 0;
	if (num(v, name, 0, 1, &x, e) < 0)
		return -1;
	r->sp.min_p = (float)x;
	return 0;
}

static int f_repeat_penalty(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	double x = 0;
	if (num(v, name, 0.01, 10, &x, e) < 0)
		return -1;
	r->sp.repeat_penalty = (float)x;
	return 0;
}

static int integer(json_t *v, const char *name, long long lo, long long hi, long long *out,
		   gla_err_t *e)
{
	if (!json_is_integer(v))
		return BAD(e, name, "'%s' must be an integer", name);
	long long x = json_integer_value(v);
	if (x < lo || x > hi)
		return BAD(e, name, "'%s' is %lld, it must be within %lld and %lld", name, x, lo,
			   hi);
	*out = x;
	return 0;
}

static int f_top_k(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	long long x = 0;
	if (integer(v, name, 0, 1 << 20, &x, e) < 0)
		return -1;
	r->sp.top_k = (int)x;
	return 0;
}

static int f_max_tokens(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	long long x = 0;
	if (json_is_null(v))
		return 0;
	if (integer(v, name, 1, cap, &x, e) < 0)
		return -1;
	r->max_tokens = (int)x;
	return 0;
}

static int f_seed(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	if (json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return BAD(e, name, "'seed' must be an integer");
	r->sp.seed = (uint64_t)json_integer_value(v);
	r->seeded = 1;
	return 0;
}

static int f_n(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)r, (void)cap;
	long long x = 0;
	if (json_is_null(v))
		return 0;
	if (integer(v, name, 1, 1 << 20, &x, e) < 0)
		return -1;
	if (x != 1)
		return BAD(e, name, "'%s' must be 1: gllm gives one answer a request", name);
	return 0;
}

static int f_stream(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	if (json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return BAD(e, name, "'stream' must be true or false");
	r->stream = json_is_true(v);
	return 0;
}

static int f_stream_options(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return BAD(e, name, "'stream_options' must be an object");
	json_t *u = json_object_get(v, "include_usage");
	if (u && !json_is_boolean(u))
		return BAD(e, name, "'stream_options.include_usage' must be true or false");
	r->include_usage = u && json_is_true(u);
	return 0;
}

static int add_stop(json_t *s, const char *name, gla_req_t *r, gla_err_t *e)
{
	if (!json_is_string(s))
		return BAD(e, name, "'stop' must be a string or a list of strings");
	size_t l = json_string_length(s);
	if (l == 0 || l > GLA_MAX_STOP_LEN || memchr(json_string_value(s), 0, l))
		return BAD(e, name, "a stop string must have 1 to %d bytes", GLA_MAX_STOP_LEN);
	if (r->nstop >= GLA_MAX_STOPS)
		return BAD(e, name, "at most %d stop strings", GLA_MAX_STOPS);
	if (!(r->stop[r->nstop] = strdup(json_string_value(s))))
		return gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	r->nstop++;
	return 0;
}

static int f_stop(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	if (json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return add_stop(v, name, r, e);
	if (json_array_size(v) > GLA_MAX_STOPS)
		return BAD(e, name, "at most %d stop strings", GLA_MAX_STOPS);
	for (size_t i = 0; i < json_array_size(v); i++)
		if (add_stop(json_array_get(v, i), name, r, e) < 0)
			return -1;
	return 0;
}

/* Fields gllm cannot honour: refused unless absent, null, false or 0 (their defaults). */
static int f_unsupported(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)r, (void)cap;
	if (json_is_null(v) || json_is_false(v) || (json_is_number(v) && json_number_value(v) == 0))
		return 0;
	if ((json_is_array(v) && json_array_size(v) == 0) ||
	    (!strcmp(name, "best_of") && json_is_integer(v) && json_integer_value(v) == 1))
		return 0;
	return BAD(e, name, "'%s' is not supported by this server", name);
}

/* The text of a chat message's content: a string, or a list of {"type": "text"} parts. */
static int content_text(json_t *c, char **out, gla_err_t *e)
{
	if (json_is_string(c)) {
		*out = strndup(json_string_value(c), json_string_length(c));
		return *out ? 0 : gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	}
	if (!json_is_array(c))
		return BAD(e, "messages",
			   "a message's content must be a string or a list of parts");
	size_t total = 0;
	for (size_t i = 0; i < json_array_size(c); i++) {
		json_t *p = json_array_get(c, i), *t = json_object_get(p, "text");
		const char *ty = json_string_value(json_object_get(p, "type"));
		if (!ty || strcmp(ty, "text") || !json_is_string(t))
			return BAD(e, "messages", "only text parts are supported");
		total += json_string_length(t);
	}
	char *s = malloc(total + 1);
	if (!s)
		return gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	size_t k = 0;
	for (size_t i = 0; i < json_array_size(c); i++) {
		json_t *t = json_object_get(json_array_get(c, i), "text");
		memcpy(s + k, json_string_value(t), json_string_length(t));
		k += json_string_length(t);
	}
	s[k] = 0;
	*out = s;
	return 0;
}

static int f_messages(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	static const char *const roles[] = {"system", "user", "assistant", "developer"};
	size_t n = json_array_size(v);
	if (!json_is_array(v) || n == 0 || n > GLA_MAX_MESSAGES)
		return BAD(e, name, "'messages' must be a list of 1 to %d messages",
			   GLA_MAX_MESSAGES);
	if (!(r->msgs = calloc(n, sizeof(*r->msgs))))
		return gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *m = json_array_get(v, i);
		const char *role = json_string_value(json_object_get(m, "role"));
		int known = -1;
		for (size_t k = 0; role && k < sizeof(roles) / sizeof(roles[0]); k++)
			if (!strcmp(role, roles[k]))
				known = (int)k;
		if (known < 0)
			return BAD(e, name,
				   "message %zu: the role must be system, user or assistant", i);
		/* OpenAI's newer name for system */
		r->msgs[i].role = strdup(known == 3 ? "system" : roles[known]);
		r->nmsgs = (int)i + 1;
		char *text;
		if (!r->msgs[i].role)
			return gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
		if (content_text(json_object_get(m, "content"), &text, e) < 0)
			return -1;
		r->msgs[i].content = text;
	}
	return 0;
}

static int f_prompt(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)cap;
	if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)))
		v = json_array_get(v, 0);
	if (!json_is_string(v))
		return BAD(e, name, "'prompt' must be a string (one prompt a request)");
	if (!(r->prompt = strndup(json_string_value(v), json_string_length(v))))
		return gla_fail(e, 500, "server_error", NULL, NULL, "out of memory");
	return 0;
}

/* model is accepted as any string: one model is served, and the answer names it */
static int f_model(json_t *v, const char *name, gla_req_t *r, int cap, gla_err_t *e)
{
	(void)r, (void)cap;
	return json_is_string(v) || json_is_null(v) ? 0 : BAD(e, name, "'model' must be a string");
}

static const struct field {
	const char *name;
	unsigned kinds; /* 1 << gla_kind_t */
	field_f f;
} fields[] = {
    {"model", 3, f_model},
    {"prompt", 1 << GLA_COMPLETION, f_prompt},
    {"messages", 1 << GLA_CHAT, f_messages},
    {"max_tokens", 3, f_max_tokens},
    {"max_completion_tokens", 1 << GLA_CHAT, f_max_tokens},
    {"temperature", 3, f_temperature},
    {"top_p", 3, f_top_p},
    {"top_k", 3, f_top_k},
    {"min_p", 3, f_min_p},
    {"repeat_penalty", 3, f_repeat_penalty},
    {"seed", 3, f_seed},
    {"n", 3, f_n},
    {"stop", 3, f_stop},
    {"stream", 3, f_stream},
    {"stream_options", 3, f_stream_options},
    {"logprobs", 3, f_unsupported},
    {"top_logprobs", 1 << GLA_CHAT, f_unsupported},
    {"echo", 1 << GLA_COMPLETION, f_unsupported},
    {"best_of", 1 << GLA_COMPLETION, f_unsupported},
    {"suffix", 1 << GLA_COMPLETION, f_unsupported},
    {"tools", 1 << GLA_CHAT, f_unsupported},
    {"functions", 1 << GLA_CHAT, f_unsupported},
    {"presence_penalty", 3, f_unsupported},
    {"frequency_penalty", 3, f_unsupported},
    {"logit_bias", 3, f_unsupported},
};

static void defaults(gla_req_t *r, gla_kind_t kind)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->sp = (gl_sample_params_t){.temperature = 1.0f,
				     .top_k = 0,
				     .top_p = 1.0f,
				     .min_p = 0.0f,
				     .repeat_penalty = 1.0f,
				     .repeat_last_n = 64};
}

int gla_parse(const char *body, size_t len, gla_kind_t kind, int max_tokens_cap, gla_req_t *r,
	      gla_err_t *e)
{
	defaults(r, kind);
	if (depth_of(body, len) > GLA_MAX_DEPTH)
		return BAD(e, NULL, "the JSON nests deeper than %d", GLA_MAX_DEPTH);
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return BAD(e, NULL, "the body is not JSON: %s (line %d)", je.text, je.line);
	int rc = 0;
	if (!json_is_object(root))
		rc = BAD(e, NULL, "the body must be a JSON object");
	for (size_t i = 0; rc == 0 && i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *v = json_object_get(root, fields[i].name);
		if (v && (fields[i].kinds & (1u << kind)))
			rc = fields[i].f(v, fields[i].name, r, max_tokens_cap, e);
	}
	if (rc == 0 && kind == GLA_COMPLETION && !r->prompt)
		rc = BAD(e, "prompt", "'prompt' is required");
	if (rc == 0 && kind == GLA_CHAT && !r->msgs)
		rc = BAD(e, "messages", "'messages' is required");
	json_decref(root);
	if (rc < 0)
		gla_req_free(r);
	return rc;
}

void gla_req_free(gla_req_t *r)
{
	free(r->prompt);
	for (int i = 0; i < r->nmsgs; i++) {
		free((char *)r->msgs[i].role);
		free((char *)r->msgs[i].content);
	}
	free(r->msgs);
	for (int i = 0; i < r->nstop; i++)
		free(r->stop[i]);
	gla_kind_t kind = r->kind;
	memset(r, 0, sizeof(*r));
	r->kind = kind;
}

/* ---- answers ---- */

/* Length of the valid UTF-8 character at P (N bytes left), 0 if none starts there. */
static size_t utf8_char(const unsigned char *p, size_t n)
{
	size_t len = p[0] < 0x80	     ? 1
		     : (p[0] & 0xe0) == 0xc0 ? 2
		     : (p[0] & 0xf0) == 0xe0 ? 3
		     : (p[0] & 0xf8) == 0xf0 ? 4
					     : 0;
	if (len == 0 || len > n || (len == 2 && p[0] < 0xc2))
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	uint32_t c = len == 1	? p[0]
		     : len == 2 ? (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f)
		     : len == 3 ? (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 |
				      (p[2] & 0x3f)
				: (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
				      (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
	int overlong = (len == 3 && c < 0x800) || (len == 4 && c < 0x10000);
	if (overlong || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c == 0)
		return 0;
	return len;
}

/* TEXT as a JSON string: a byte that is not part of a valid UTF-8 character (a model may
 * produce a lone byte token) becomes U+FFFD, so the answer is always made. */
static json_t *text_json(const char *text, size_t len)
{
	json_t *j = json_stringn(text, len);
	if (j || !text)
		return j;
	char *b = malloc(len * 3 + 1);
	size_t k = 0;
	if (!b)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t c = utf8_char((const unsigned char *)text + i, len - i);
		if (c) {
			memcpy(b + k, text + i, c);
			k += c, i += c;
		} else {
			memcpy(b + k, "\xef\xbf\xbd", 3);
			k += 3, i++;
		}
	}
	j = json_stringn(b, k);
	free(b);
	return j;
}
static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	return s;
}

static json_t *nullable(const char *s)
{
	return s ? json_string(s) : json_null();
}

char *gla_error_json(const gla_err_t *e)
{
	return dump(json_pack("{s:{s:s,s:s,s:o,s:o}}", "error", "message", e->message, "type",
			      e->type ? e->type : "invalid_request_error", "param",
			      nullable(e->param), "code", nullable(e->code)));
}

char *gla_models_json(const char *model, long created)
{
	return dump(json_pack("{s:s,s:[{s:s,s:s,s:I,s:s}]}", "object", "list", "data", "id", model,
			      "object", "model", "created", (json_int_t)created, "owned_by",
			      "gpool"));
}

static json_t *usage(const gl_usage_t *u)
{
	return json_pack("{s:i,s:i,s:i}", "prompt_tokens", u->prompt_tokens, "completion_tokens",
			 u->completion_tokens, "total_tokens",
			 u->prompt_tokens + u->completion_tokens);
}

static json_t *head(const gla_answer_t *a, int chunk)
{
	static const char *const objects[2][2] = {{"text_completion", "text_completion"},
						  {"chat.completion", "chat.completion.chunk"}};
	return json_pack("{s:s,s:s,s:I,s:s}", "id", a->id, "object", objects[a->kind][chunk],
			 "created", (json_int_t)a->created, "model", a->model);
}

char *gla_answer_json(const gla_answer_t *a, const char *text, size_t len, const char *finish,
		      const gl_usage_t *u)
{
	json_t *j = head(a, 0);
	json_t *ch =
	    a->kind == GLA_CHAT
		? json_pack("{s:i,s:{s:s,s:o},s:n,s:s}", "index", 0, "message", "role", "assistant",
			    "content", text_json(text, len), "logprobs", "finish_reason", finish)
		: json_pack("{s:i,s:o,s:n,s:s}", "index", 0, "text", text_json(text, len),
			    "logprobs", "finish_reason", finish);
	if (!j || !ch || json_object_set_new(j, "choices", json_pack("[o]", ch)) < 0 ||
	    json_object_set_new(j, "usage", usage(u)) < 0) {
		json_decref(j);
		return NULL;
	}
	return dump(j);
}

static json_t *chunk_choice(const gla_answer_t *a, gla_chunk_t what, const char *text, size_t len,
			    const char *finish)
{
	json_t *fin = what == GLA_CHUNK_FINISH ? json_string(finish) : json_null();
	if (a->kind == GLA_COMPLETION)
		return json_pack(
		    "{s:i,s:o,s:n,s:o}", "index", 0, "text",
		    text_json(what == GLA_CHUNK_TEXT ? text : "", what == GLA_CHUNK_TEXT ? len : 0),
		    "logprobs", "finish_reason", fin);
	json_t *delta =
	    what == GLA_CHUNK_ROLE   ? json_pack("{s:s,s:s}", "role", "assistant", "content", "")
	    : what == GLA_CHUNK_TEXT ? json_pack("{s:o}", "content", text_json(text, len))
				     : json_object();
	return json_pack("{s:i,s:o,s:n,s:o}", "index", 0, "delta", delta, "logprobs",
			 "finish_reason", fin);
}

char *gla_chunk_json(const gla_answer_t *a, gla_chunk_t what, const char *text, size_t len,
		     const char *finish, const gl_usage_t *u)
{
	json_t *j = head(a, 1);
	if (!j)
		return NULL;
	if (what == GLA_CHUNK_USAGE) {
		if (json_object_set_new(j, "choices", json_array()) < 0 ||
		    json_object_set_new(j, "usage", usage(u)) < 0) {
			json_decref(j);
			return NULL;
		}
		return dump(j);
	}
	json_t *ch = chunk_choice(a, what, text, len, finish);
	if (!ch || json_object_set_new(j, "choices", json_pack("[o]", ch)) < 0) {
		json_decref(j);
		return NULL;
	}
	return dump(j);
}
