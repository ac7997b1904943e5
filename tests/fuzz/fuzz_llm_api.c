/* fuzz_llm_api: an OpenAI request body as a client sends it to gllm (gllm/api.h); the first
 * byte picks /v1/completions (even) or /v1/chat/completions (odd). Checks: a refusal has a
 * 4xx/5xx status and a message, and its error JSON is made; a request taken holds its prompt
 * or 1..GLA_MAX_MESSAGES messages, at most GLA_MAX_STOPS non-empty bounded stop strings,
 * sampling parameters in OpenAI's ranges and max_tokens within the cap; its text (valid
 * UTF-8, as jansson checked) makes an answer's JSON, and so do the input's raw bytes as a
 * chunk's text. */
#include "gllm/api.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	gla_kind_t kind = data[0] & 1 ? GLA_CHAT : GLA_COMPLETION;
	gla_req_t r;
	gla_err_t e;
	/* any bytes a model produces make a chunk (invalid UTF-8 replaced) */
	gla_answer_t raw = {.kind = kind, .id = "x", .model = "m", .created = 1};
	char *chunk = gla_chunk_json(&raw, GLA_CHUNK_TEXT, (const char *)data, size, NULL, NULL);
	FUZZ_CHECK(chunk != NULL);
	free(chunk);
	if (gla_parse((const char *)data + 1, size - 1, kind, 4096, &r, &e) < 0) {
		FUZZ_CHECK(e.status >= 400 && e.status < 600 && e.message[0]);
		char *j = gla_error_json(&e);
		FUZZ_CHECK(j != NULL);
		free(j);
		return 0;
	}
	FUZZ_CHECK(r.nstop >= 0 && r.nstop <= GLA_MAX_STOPS);
	for (int i = 0; i < r.nstop; i++)
		FUZZ_CHECK(strlen(r.stop[i]) >= 1 && strlen(r.stop[i]) <= GLA_MAX_STOP_LEN);
	FUZZ_CHECK(r.max_tokens >= 0 && r.max_tokens <= 4096);
	FUZZ_CHECK(r.sp.temperature >= 0 && r.sp.temperature <= 2);
	FUZZ_CHECK(r.sp.top_p >= 0 && r.sp.top_p <= 1 && r.sp.min_p >= 0 && r.sp.min_p <= 1);
	FUZZ_CHECK(r.sp.top_k >= 0);
	const char *text = r.prompt;
	if (kind == GLA_COMPLETION) {
		FUZZ_CHECK(r.prompt != NULL && r.msgs == NULL);
	} else {
		FUZZ_CHECK(r.prompt == NULL && r.nmsgs >= 1 && r.nmsgs <= GLA_MAX_MESSAGES);
		for (int i = 0; i < r.nmsgs; i++)
			FUZZ_CHECK(r.msgs[i].role && r.msgs[i].content);
		text = r.msgs[r.nmsgs - 1].content;
	}
	gla_answer_t a = {.kind = kind, .id = "x", .model = "m", .created = 1};
	gl_usage_t u = {0};
	/* a text with a NUL (allowed in neither) ends at it for the answer */
	char *j = gla_answer_json(&a, text, strlen(text), "stop", &u);
	FUZZ_CHECK(j != NULL);
	free(j);
	gla_req_free(&r);
	return 0;
}
