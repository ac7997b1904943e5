/* fuzz_api: the REST API's decoders (scheduler/http/api_json.h) on untrusted input: the first
 * byte picks one. 0: a request line ("METHOD TARGET", as http.c passes it on) through
 * api_route_parse; 1: a submission body through api_spec_parse, whose JobSpec must pack and
 * unpack again; 2: a drain body through api_drain_parse. Properties checked: a refused route
 * is answered 400/404/405 with a reason; an accepted one has an operation and, for a job, an
 * id; an accepted spec has a command; a drain's card is -1 or 0..63. */
#include "scheduler/http/api_json.h"
#include "tests/fuzz/fuzz.h"

static void route(const uint8_t *d, size_t n)
{
	char buf[4096];
	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	memcpy(buf, d, n);
	buf[n] = '\0';
	char *sp = strchr(buf, ' ');
	const char *method = "GET", *target = buf;
	if (sp) {
		*sp = '\0';
		method = buf;
		target = sp + 1;
	}
	struct api_route r;
	char why[256] = "";
	int st = api_route_parse(method, target, &r, why, sizeof(why));
	if (st) {
		FUZZ_CHECK(st == 400 || st == 404 || st == 405);
		FUZZ_CHECK(why[0] != '\0');
		return;
	}
	FUZZ_CHECK(r.op != API_NONE);
	if (r.op >= API_JOB && r.op <= API_RELEASE && r.op != API_SUBMIT && r.op != API_JOBS)
		FUZZ_CHECK(r.id != 0);
	if (r.op == API_STATIC)
		FUZZ_CHECK(r.file[0] && r.file[0] != '.' && !strchr(r.file, '/'));
	FUZZ_CHECK(strlen(r.node) < sizeof(r.node) && strlen(r.user) < sizeof(r.user));
}

static void spec(const uint8_t *d, size_t n)
{
	char why[256] = "";
	Gpool__JobSpec *sp = api_spec_parse((const char *)d, n, why, sizeof(why));
	if (!sp) {
		FUZZ_CHECK(why[0] != '\0');
		return;
	}
	FUZZ_CHECK(sp->n_argv >= 1 && sp->argv[0]);
	size_t len = gpool__job_spec__get_packed_size(sp);
	uint8_t *buf = malloc(len ? len : 1);
	FUZZ_CHECK(buf);
	gpool__job_spec__pack(sp, buf);
	Gpool__JobSpec *back = gpool__job_spec__unpack(NULL, len, buf);
	FUZZ_CHECK(back && back->n_argv == sp->n_argv && back->ntasks == sp->ntasks);
	gpool__job_spec__free_unpacked(back, NULL);
	free(buf);
	api_spec_free(sp);
}

static void drain(const uint8_t *d, size_t n)
{
	char reason[256], why[256] = "";
	int card = 99;
	if (api_drain_parse((const char *)d, n, reason, sizeof(reason), &card, why, sizeof(why)) <
	    0) {
		FUZZ_CHECK(why[0] != '\0');
		return;
	}
	FUZZ_CHECK(card >= -1 && card < 64);
	FUZZ_CHECK(strlen(reason) < sizeof(reason));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		route(data + 1, size - 1);
		break;
	case 1:
		spec(data + 1, size - 1);
		break;
	default:
		drain(data + 1, size - 1);
		break;
	}
	return 0;
}
