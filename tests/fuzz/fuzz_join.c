/* fuzz_join: what `gpool join` brings to the decoders. gschedd's side (scheduler/join.c): an
 * envelope with no credential, at most GP_EP_UNSEALED_MAX bytes, the only one it reads
 * before a credential; the joining side's (common/jointoken.h, common/joinseal.h): the
 * token text a user pastes, a bundle gschedd (or someone on the LAN) hands back, and the
 * payload inside it. Properties: join_take answers a join request with an envelope that holds
 * a JoinBundle and nothing else and takes nothing that is not one; a parsed token formats back
 * to its own text; a bundle never opens under a token that did not seal it; an unpacked
 * payload's key and conf lie within the bounds. */
#include "tests/fuzz/fuzz.h"
#include "common/endpoint.h"
#include "common/joinseal.h"
#include "common/jointoken.h"
#include "scheduler/shell/join.h"

static struct join *the_join(void)
{
	static struct join *j;
	if (!j && !(j = join_create("/nonexistent/gpool-fuzz-join"))) /* every id is unknown */
		abort();
	return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int64_t now_ms;
	now_ms += 60000; /* a minute apart: the rate limit never hides the decoder */
	uint8_t *reply = NULL;
	size_t rlen = 0;
	size_t n = size < GP_EP_UNSEALED_MAX ? size : GP_EP_UNSEALED_MAX;
	int took = join_take(the_join(), "198.18.0.99", data, n, now_ms, 1000, &reply, &rlen);
	FUZZ_CHECK(took == 0 || took == 1);
	if (took == 0)
		FUZZ_CHECK(!reply);
	if (reply) {
		Gpool__Envelope *e = gpool__envelope__unpack(NULL, rlen, reply);
		FUZZ_CHECK(e && e->join_bundle && !e->join_fetch && !e->cred.len && !e->body.len);
		FUZZ_CHECK(e->join_bundle->code != GPOOL__ERROR_CODE__ERROR_NONE); /* none exist */
		gpool__envelope__free_unpacked(e, NULL);
		free(reply);
	}

	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	struct gp_join_token t;
	if (gp_join_token_parse(text, &t, NULL) == 0) {
		char again[GP_JOIN_TOKEN_LEN + 1];
		gp_join_token_format(&t, again);
		FUZZ_CHECK(strstr(text, again) != NULL);
	}
	free(text);

	static const struct gp_join_token fixed = {{1, 2, 3}, {4, 5, 6}};
	struct gp_join_header h;
	uint8_t *plain = NULL;
	size_t plen = 0;
	if (gp_join_header_parse(data, size, &h, NULL) == 0)
		FUZZ_CHECK(size >= GP_JOIN_HEADER_LEN + GP_JOIN_TAG_LEN &&
			   size <= GP_JOIN_MAX_BUNDLE);
	FUZZ_CHECK(gp_join_open(&fixed, data, size, &h, &plain, &plen, NULL) < 0);
	FUZZ_CHECK(!plain);

	const uint8_t *key;
	size_t klen;
	char *conf = NULL;
	if (gp_join_payload_unpack(data, size, &key, &klen, &conf, NULL) == 0) {
		FUZZ_CHECK(klen >= GP_JOIN_KEY_MIN && klen <= GP_JOIN_KEY_MAX);
		FUZZ_CHECK(key == data + 4 && 4 + klen + strlen(conf) == size);
		free(conf);
	}
	return 0;
}
