/* fuzz_route: ggated's request-target routing (gateway/route.c) on any string. Properties:
 * a service route names 1..256 bytes of [A-Za-z0-9._-] inside the target, and the target sent
 * to the replica starts with '/' and is the rest of the request target. */
#include "tests/fuzz/fuzz.h"
#include "gateway/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strdup(data, size);
	struct gw_route r;
	enum gw_route_kind k = gw_route_parse(s, &r);
	FUZZ_CHECK(k == r.kind);
	if (k == GW_ROUTE_SERVICE) {
		FUZZ_CHECK(r.name_len >= 1 && r.name_len <= 256);
		FUZZ_CHECK(r.name == s + 5);
		FUZZ_CHECK(r.target && r.target[0] == '/');
		FUZZ_CHECK(!r.owned || r.target == r.owned);
		const char *rest = s + 5 + r.name_len;
		FUZZ_CHECK(strcmp(r.target + (*rest == '/' ? 0 : 1), rest) == 0);
	} else if (k == GW_ROUTE_BAD) {
		FUZZ_CHECK(r.why && r.target == NULL && r.owned == NULL);
	}
	gw_route_release(&r);
	free(s);
	return 0;
}
