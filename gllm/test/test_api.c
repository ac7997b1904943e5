/* test_api.c - OpenAI requests into engine requests (what is taken, what is refused with which
 * param), and the answers' and chunks' JSON read back. */
#include <jansson.h>
#include <string.h>

#include "gllm/api.h"
#include "gllm/test/check.h"

static int parse(const char *body, gla_kind_t kind, gla_req_t *r, gla_err_t *e)
{
	return gla_parse(body, strlen(body), kind, 1000, r, e);
}

/* BODY must be refused with a 400 naming PARAM (NULL: none). */
static void refused(const char *body, gla_kind_t kind, const char *param)
{
	gla_req_t r;
	gla_err_t e = {0};
	CHECK(parse(body, kind, &r, &e) == -1);
	CHECK(e.status == 400 && !strcmp(e.type, "invalid_request_error"));
	if (!param ? e.param != NULL : !e.param || strcmp(e.param, param)) {
		fprintf(stderr, "%s: param %s, want %s (%s)\n", body, e.param ? e.param : "null",
			param ? param : "null", e.message);
		exit(1);
	}
	CHECK(r.prompt == NULL && r.msgs == NULL && r.nstop == 0); /* nothing left behind */
}

static void completion(void)
{
	gla_req_t r;
	gla_err_t e;
	CHECK(
	    parse("{\"model\":\"x\",\"prompt\":\"Once upon\",\"max_tokens\":16,"
		  "\"temperature\":0,\"top_k\":40,\"min_p\":0.05,\"seed\":7,"
		  "\"stop\":\"\\n\\n\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
		  "\"user\":\"ignored\",\"n\":1}",
		  GLA_COMPLETION, &r, &e) == 0);
	CHECK(!strcmp(r.prompt, "Once upon") && r.max_tokens == 16);
	CHECK(r.sp.temperature == 0 && r.sp.top_k == 40 && r.sp.min_p > 0.049f);
	CHECK(r.sp.top_p == 1.0f && r.seeded && r.sp.seed == 7);
	CHECK(r.nstop == 1 && !strcmp(r.stop[0], "\n\n") && r.stream && r.include_usage);
	gla_req_free(&r);
	CHECK(parse("{\"prompt\":[\"one\"],\"stop\":[\"a\",\"b\"]}", GLA_COMPLETION, &r, &e) == 0);
	CHECK(!strcmp(r.prompt, "one") && r.nstop == 2 && !r.stream && r.max_tokens == 0);
	CHECK(r.sp.temperature == 1.0f && !r.seeded);
	gla_req_free(&r);
}

static void chat(void)
{
	gla_req_t r;
	gla_err_t e;
	CHECK(parse("{\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},"
		    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi \"},"
		    "{\"type\":\"text\",\"text\":\"there\"}]}],\"max_completion_tokens\":5}",
		    GLA_CHAT, &r, &e) == 0);
	CHECK(r.nmsgs == 2 && !strcmp(r.msgs[0].role, "system"));
	CHECK(!strcmp(r.msgs[1].content, "hi there") && r.max_tokens == 5);
	gla_req_free(&r);
	/* prompt is not a chat field: ignored, messages still required */
	refused("{\"prompt\":\"x\"}", GLA_CHAT, "messages");
}

static void refusals(void)
{
	refused("{\"prompt\":", GLA_COMPLETION, NULL);			      /* not JSON */
	refused("[1,2]", GLA_COMPLETION, NULL);				      /* not an object */
	refused("{\"prompt\":\"a\",\"prompt\":\"b\"}", GLA_COMPLETION, NULL); /* duplicate */
	refused("{}", GLA_COMPLETION, "prompt");
	refused("{\"prompt\":5}", GLA_COMPLETION, "prompt");
	refused("{\"prompt\":[\"a\",\"b\"]}", GLA_COMPLETION, "prompt");
	refused("{\"prompt\":\"a\",\"max_tokens\":1001}", GLA_COMPLETION, "max_tokens");
	refused("{\"prompt\":\"a\",\"max_tokens\":0}", GLA_COMPLETION, "max_tokens");
	refused("{\"prompt\":\"a\",\"max_tokens\":1.5}", GLA_COMPLETION, "max_tokens");
	refused("{\"prompt\":\"a\",\"temperature\":2.5}", GLA_COMPLETION, "temperature");
	refused("{\"prompt\":\"a\",\"temperature\":\"hot\"}", GLA_COMPLETION, "temperature");
	refused("{\"prompt\":\"a\",\"top_p\":-0.1}", GLA_COMPLETION, "top_p");
	refused("{\"prompt\":\"a\",\"top_k\":-1}", GLA_COMPLETION, "top_k");
	refused("{\"prompt\":\"a\",\"n\":2}", GLA_COMPLETION, "n");
	refused("{\"prompt\":\"a\",\"logprobs\":3}", GLA_COMPLETION, "logprobs");
	refused("{\"prompt\":\"a\",\"echo\":true}", GLA_COMPLETION, "echo");
	refused("{\"prompt\":\"a\",\"presence_penalty\":0.5}", GLA_COMPLETION, "presence_penalty");
	refused("{\"prompt\":\"a\",\"stop\":[\"1\",\"2\",\"3\",\"4\",\"5\"]}", GLA_COMPLETION,
		"stop");
	refused("{\"prompt\":\"a\",\"stop\":\"\"}", GLA_COMPLETION, "stop");
	refused("{\"prompt\":\"a\",\"stop\":[\"ok\",7]}", GLA_COMPLETION, "stop");
	refused("{\"prompt\":\"a\",\"stream\":1}", GLA_COMPLETION, "stream");
	refused("{\"messages\":[]}", GLA_CHAT, "messages");
	refused("{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", GLA_CHAT, "messages");
	refused("{\"messages\":[{\"role\":\"user\"}]}", GLA_CHAT, "messages");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
		GLA_CHAT, "messages");
	refused("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{}]}", GLA_CHAT,
		"tools");
	/* nesting past the bound is refused before jansson reads it */
	char deep[200] = "{\"prompt\":\"a\",\"x\":";
	for (int i = 0; i < 20; i++)
		strcat(deep, "[");
	for (int i = 0; i < 20; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	refused(deep, GLA_COMPLETION, NULL);
	/* brackets inside strings do not count */
	gla_req_t r;
	gla_err_t e;
	CHECK(parse("{\"prompt\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[\"}", GLA_COMPLETION, &r,
		    &e) == 0);
	gla_req_free(&r);
}

static json_t *load(char *s)
{
	CHECK(s);
	json_t *j = json_loads(s, 0, NULL);
	free(s);
	CHECK(j);
	return j;
}

static const char *str(json_t *j, const char *path1, const char *path2)
{
	json_t *v = json_object_get(j, path1);
	if (path2)
		v = json_object_get(v, path2);
	return json_string_value(v);
}

static void answers(void)
{
	gla_err_t e;
	gla_fail(&e, 401, "invalid_request_error", NULL, "invalid_api_key", "bad key");
	json_t *j = load(gla_error_json(&e));
	CHECK(!strcmp(str(j, "error", "message"), "bad key"));
	CHECK(!strcmp(str(j, "error", "code"), "invalid_api_key"));
	CHECK(json_is_null(json_object_get(json_object_get(j, "error"), "param")));
	json_decref(j);

	gl_usage_t u = {.prompt_tokens = 3, .completion_tokens = 4};
	gla_answer_t a = {.kind = GLA_CHAT, .id = "chatcmpl-1", .model = "m", .created = 5};
	j = load(gla_answer_json(&a, "hello", 5, "stop", &u));
	CHECK(!strcmp(str(j, "object", NULL), "chat.completion"));
	json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(c0, "message", "content"), "hello"));
	CHECK(!strcmp(str(c0, "finish_reason", NULL), "stop"));
	CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")) ==
	      7);
	json_decref(j);

	j = load(gla_chunk_json(&a, GLA_CHUNK_ROLE, NULL, 0, NULL, NULL));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(j, "object", NULL), "chat.completion.chunk"));
	CHECK(!strcmp(str(c0, "delta", "role"), "assistant"));
	CHECK(json_is_null(json_object_get(c0, "finish_reason")));
	json_decref(j);
	j = load(gla_chunk_json(&a, GLA_CHUNK_TEXT, "h\xc3\xa9", 3, NULL, NULL));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(c0, "delta", "content"), "h\xc3\xa9"));
	json_decref(j);
	j = load(gla_chunk_json(&a, GLA_CHUNK_FINISH, NULL, 0, "length", NULL));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(c0, "finish_reason", NULL), "length"));
	CHECK(json_object_size(json_object_get(c0, "delta")) == 0);
	json_decref(j);
	j = load(gla_chunk_json(&a, GLA_CHUNK_USAGE, NULL, 0, NULL, &u));
	CHECK(json_array_size(json_object_get(j, "choices")) == 0);
	CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")) ==
	      3);
	json_decref(j);

	/* a lone byte (a byte token) is not UTF-8: U+FFFD in its place, the answer still made */
	j = load(gla_answer_json(&a, "a\x8f\xc3", 3, "length", &u));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(c0, "message", "content"), "a\xef\xbf\xbd\xef\xbf\xbd"));
	json_decref(j);
	j = load(gla_chunk_json(&a, GLA_CHUNK_TEXT, "\xed\xa0\x80z", 4, NULL, NULL));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(c0, "delta", "content"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"));
	json_decref(j);

	a.kind = GLA_COMPLETION;
	j = load(gla_chunk_json(&a, GLA_CHUNK_TEXT, "abc", 2, NULL, NULL));
	c0 = json_array_get(json_object_get(j, "choices"), 0);
	CHECK(!strcmp(str(j, "object", NULL), "text_completion") &&
	      !strcmp(str(c0, "text", NULL), "ab"));
	json_decref(j);
	j = load(gla_models_json("tiny", 9));
	CHECK(!strcmp(str(json_array_get(json_object_get(j, "data"), 0), "id", NULL), "tiny"));
	json_decref(j);
}

int main(void)
{
	completion();
	chat();
	refusals();
	answers();
	printf("ok: api\n");
	return 0;
}
