/* test_screen.c: the screening result file the agent reads: a good document, every truncation
 * of it, garbage (random bytes, wrong types, values out of range, deep nesting, duplicate keys
 * and cards), oversized input, and the file checks (owner, links, FIFOs, size). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cards/screen.h"

/* What gcheck --json writes (cards/check.c), two cards. */
static const char good_doc[] =
    "{\n"
    "  \"node\": \"pc1\",\n"
    "  \"duration_s\": 10.0,\n"
    "  \"profile\": null,\n"
    "  \"thresholds\": {\"fluct_warn_pct\": 5.0, \"fluct_fail_pct\": 10.0, \"spec_gbps\": 0.0},\n"
    "  \"cards\": [\n"
    "    {\"card\": 0, \"backend\": \"cuda\", \"device\": \"NVIDIA H200\",\n"
    "     \"bandwidth\": {\"mean_gbps\": 4012.5, \"fluct_pct\": 0.8, \"min_gbps\": 3990.0,\n"
    "                   \"max_gbps\": 4030.0, \"samples\": 200, \"fluct\": \"(max-min)/2/mean\"},\n"
    "     \"memtest\": {\"bytes\": 120000000000, \"errors\": 0,\n"
    "                 \"patterns\": [\"walking_ones\", \"moving_inversions\", \"address\", "
    "\"random\"]},\n"
    "     \"f32_gflops\": 51000.0, \"f16_gflops\": 190000.0, \"temperature_c\": 41.0,\n"
    "     \"power_w\": 402.5, \"grade\": \"good\", \"reason\": \"\", \"reported\": false},\n"
    "    {\"card\": 3, \"backend\": \"profile\", \"device\": \"erroring\",\n"
    "     \"bandwidth\": {\"mean_gbps\": 400, \"fluct_pct\": 3.2, \"samples\": 20},\n"
    "     \"memtest\": {\"bytes\": 268435456, \"errors\": 3},\n"
    "     \"f32_gflops\": 1000.0, \"f16_gflops\": 2000.0, \"temperature_c\": null,\n"
    "     \"power_w\": null, \"grade\": \"fail\", \"reason\": \"3 memory errors\"}\n"
    "  ]\n"
    "}\n";

static char dir[] = "/tmp/gpool-screen-test.XXXXXX";

static int parse(const char *s, gp_error_t *err)
{
	struct gp_screen_result r;
	return gp_screen_parse(s, strlen(s), &r, err);
}

static void good(void **state)
{
	struct gp_screen_result r;
	gp_error_t err;
	assert_int_equal(gp_screen_parse(good_doc, strlen(good_doc), &r, &err), 0);
	assert_string_equal(r.node, "pc1");
	assert_int_equal(r.n, 2);
	const struct gp_screen_card *c = gp_screen_find(&r, 0);
	assert_non_null(c);
	assert_string_equal(c->grade, "good");
	assert_string_equal(c->device, "NVIDIA H200");
	assert_true(c->bw_mean_gbps == 4012.5);
	assert_true(c->temperature_c == 41.0);
	assert_int_equal(c->mem_tested_bytes, 120000000000ull);
	c = gp_screen_find(&r, 3);
	assert_non_null(c);
	assert_string_equal(c->grade, "fail");
	assert_string_equal(c->reason, "3 memory errors");
	assert_int_equal(c->mem_errors, 3);
	assert_true(c->bw_mean_gbps == 400); /* an integer is a number too */
	assert_true(c->temperature_c < 0);   /* null: not reported */
	assert_true(c->power_w < 0);
	assert_null(gp_screen_find(&r, 1));
}

static void truncated(void **state)
{
	size_t len = strlen(good_doc);
	for (size_t k = 0; k < len - 2; k++) { /* the last two bytes are "}\n" */
		struct gp_screen_result r;
		gp_error_t err;
		if (gp_screen_parse(good_doc, k, &r, &err) != -1 || errno != EINVAL)
			fail_msg("a document cut at %zu bytes was accepted", k);
		assert_int_equal(r.n, 0); /* nothing half-filled is left */
	}
}

static void garbage(void **state)
{
	static const struct {
		const char *doc;
		const char *why;
	} cases[] = {
	    {"", "not JSON"},
	    {"null", "not JSON"},
	    {"[]", "not a JSON object"},
	    {"{}", "no 'cards' list"},
	    {"{\"cards\": 5}", "no 'cards' list"},
	    {"{\"cards\": [5]}", "cards[0] is not an object"},
	    {"{\"cards\": [{}]}", "'card' is not a card index"},
	    {"{\"cards\": [{\"card\": -1}]}", "'card' is not a card index"},
	    {"{\"cards\": [{\"card\": 64}]}", "'card' is not a card index"},
	    {"{\"cards\": [{\"card\": \"0\"}]}", "'card' is not a card index"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"excellent\"}]}", "'grade' is not good"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": 1}]}", "'grade' is not good"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\"}]}", "'bandwidth' is missing"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": []}]}",
	     "'bandwidth' is not an object"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": {}}]}",
	     "'mean_gbps' is missing"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": "
	     "1e300}}]}",
	     "'mean_gbps' is out of range"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": "
	     "-1}}]}",
	     "'mean_gbps' is out of range"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": "
	     "\"9\"}}]}",
	     "'mean_gbps' is not a number"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": "
	     "NaN}}]}",
	     "not JSON"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"fail\", \"bandwidth\": {\"mean_gbps\": 1},"
	     " \"memtest\": {\"errors\": -3}}]}",
	     "'errors' is not a count"},
	    {"{\"cards\": [{\"card\": 0, \"grade\": \"fail\", \"bandwidth\": {\"mean_gbps\": 1},"
	     " \"reason\": 7}]}",
	     "'reason' is not a string"},
	    {"{\"cards\": [{\"card\": 1, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": 1}},"
	     " {\"card\": 1, \"grade\": \"fail\", \"bandwidth\": {\"mean_gbps\": 1}}]}",
	     "card 1 listed twice"},
	    {"{\"cards\": [], \"cards\": []}", "not JSON"},	      /* a duplicate key */
	    {"{\"node\": \"a\\u0000b\", \"cards\": []}", "not JSON"}, /* NUL in a string */
	    {"{\"cards\": []} trailing", "not JSON"},
	    {"\x01\x02\xff\xfe", "not JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gp_error_t err = {{0}};
		if (parse(cases[i].doc, &err) != -1 || errno != EINVAL ||
		    !strstr(err.text, cases[i].why))
			fail_msg("case %zu: '%s' gave '%s'", i, cases[i].doc, err.text);
	}
	/* an empty list is a valid (if useless) result */
	gp_error_t err;
	assert_int_equal(parse("{\"cards\": []}", &err), 0);
	/* deep nesting ends in jansson's depth limit, not in a crash */
	size_t depth = 100000;
	char *deep = malloc(2 * depth + 32);
	assert_non_null(deep);
	char *p = deep + sprintf(deep, "{\"cards\": ");
	for (size_t i = 0; i < depth; i++)
		*p++ = '[';
	for (size_t i = 0; i < depth; i++)
		*p++ = ']';
	strcpy(p, "}");
	assert_int_equal(gp_screen_parse(deep, strlen(deep) < GP_SCREEN_MAX ? strlen(deep) : 0,
					 &(struct gp_screen_result){0}, &err),
			 -1);
	p = deep + sprintf(deep, "{\"cards\": ");
	for (size_t i = 0; i < 20000; i++)
		*p++ = '[';
	for (size_t i = 0; i < 20000; i++)
		*p++ = ']';
	strcpy(p, "}");
	assert_int_equal(parse(deep, &err), -1);
	free(deep);
	/* random bytes, and the good document with random bytes flipped: never a crash */
	srand(42);
	char buf[512];
	for (int n = 0; n < 2000; n++) {
		size_t len = (size_t)(rand() % (int)sizeof(buf));
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(rand() & 0xff);
		struct gp_screen_result r;
		gp_screen_parse(buf, len, &r, &err);
	}
	size_t glen = strlen(good_doc);
	char *mut = malloc(glen);
	assert_non_null(mut);
	for (int n = 0; n < 5000; n++) {
		memcpy(mut, good_doc, glen);
		for (int k = 0; k < 1 + rand() % 4; k++)
			mut[rand() % (int)glen] = (char)(rand() & 0xff);
		struct gp_screen_result r;
		if (gp_screen_parse(mut, glen, &r, &err) == 0) {
			/* whatever was accepted is within bounds */
			assert_true(r.n <= GP_SCREEN_MAX_CARDS);
			for (size_t i = 0; i < r.n; i++) {
				assert_true(r.cards[i].card < GP_SCREEN_MAX_CARDS);
				assert_true(r.cards[i].bw_mean_gbps >= 0 &&
					    r.cards[i].bw_mean_gbps <= 1e7);
				assert_true(strlen(r.cards[i].reason) < sizeof(r.cards[i].reason));
			}
		}
	}
	free(mut);
}

static void strings_made_safe(void **state)
{
	char doc[2048];
	char reason[1000];
	memset(reason, 'x', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	snprintf(
	    doc, sizeof(doc),
	    "{\"cards\": [{\"card\": 2, \"grade\": \"warn\", \"bandwidth\": {\"mean_gbps\": 1},"
	    " \"reason\": \"a\\nb\\u001b[31mc\", \"device\": \"%s\"}]}",
	    reason);
	struct gp_screen_result r;
	gp_error_t err;
	assert_int_equal(gp_screen_parse(doc, strlen(doc), &r, &err), 0);
	assert_string_equal(r.cards[0].reason, "a?b?[31mc");
	assert_int_equal(strlen(r.cards[0].device), sizeof(r.cards[0].device) - 1);
}

static void too_many_and_oversized(void **state)
{
	/* 65 cards */
	size_t cap = 65 * 80 + 64;
	char *doc = malloc(cap);
	assert_non_null(doc);
	char *p = doc + sprintf(doc, "{\"cards\": [");
	for (int i = 0; i < 65; i++)
		p += sprintf(
		    p, "%s{\"card\": %d, \"grade\": \"good\", \"bandwidth\": {\"mean_gbps\": 1}}",
		    i ? "," : "", i % 64);
	strcpy(p, "]}");
	gp_error_t err;
	assert_int_equal(parse(doc, &err), -1);
	assert_non_null(strstr(err.text, "65 cards"));
	free(doc);
	/* a valid document padded past the limit: refused before it is parsed */
	doc = malloc(GP_SCREEN_MAX + 2);
	assert_non_null(doc);
	memset(doc, ' ', GP_SCREEN_MAX + 1);
	memcpy(doc, "{\"cards\": []}", 13);
	struct gp_screen_result r;
	assert_int_equal(gp_screen_parse(doc, GP_SCREEN_MAX + 1, &r, &err), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(gp_screen_parse(doc, GP_SCREEN_MAX, &r, &err), 0); /* at the limit */
	free(doc);
}

static char *path_in_dir(const char *name)
{
	static char path[8][256];
	static int k;
	char *p = path[k++ % 8];
	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void files(void **state)
{
	struct gp_screen_result r;
	gp_error_t err;
	char *ok = path_in_dir("ok.json");
	write_text(ok, good_doc, strlen(good_doc));
	assert_int_equal(gp_screen_read(ok, getuid(), &r, &err), 0);
	assert_int_equal(r.n, 2);
	/* someone else's file */
	assert_int_equal(gp_screen_read(ok, getuid() + 1, &r, &err), -1);
	assert_non_null(strstr(err.text, "not a regular file of uid"));
	/* a hard link: two links */
	char *hard = path_in_dir("hard.json");
	assert_int_equal(link(ok, hard), 0);
	assert_int_equal(gp_screen_read(ok, getuid(), &r, &err), -1);
	unlink(hard);
	/* a symbolic link is not followed */
	char *sym = path_in_dir("sym.json");
	assert_int_equal(symlink(ok, sym), 0);
	assert_int_equal(gp_screen_read(sym, getuid(), &r, &err), -1);
	assert_non_null(strstr(err.text, "symbolic link"));
	/* a FIFO does not block the agent */
	char *fifo = path_in_dir("fifo.json");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(gp_screen_read(fifo, getuid(), &r, &err), -1);
	/* none written */
	assert_int_equal(gp_screen_read(path_in_dir("none.json"), getuid(), &r, &err), -1);
	assert_int_equal(errno, ENOENT);
	/* garbage and an oversized file */
	char *junk = path_in_dir("junk.json");
	write_text(junk,
		   "\x7f"
		   "ELF\x02\x01",
		   6);
	assert_int_equal(gp_screen_read(junk, getuid(), &r, &err), -1);
	assert_non_null(strstr(err.text, "not JSON"));
	char *big = malloc(GP_SCREEN_MAX + 10);
	assert_non_null(big);
	memset(big, ' ', GP_SCREEN_MAX + 10);
	memcpy(big, "{\"cards\": []}", 13);
	write_text(junk, big, GP_SCREEN_MAX + 10);
	free(big);
	assert_int_equal(gp_screen_read(junk, getuid(), &r, &err), -1);
	assert_int_equal(errno, EFBIG);
	unlink(ok);
	unlink(sym);
	unlink(fifo);
	unlink(junk);
}

static void paths(void **state)
{
	char buf[64];
	assert_int_equal(gp_screen_path("/var/tmp/gpool/job7", 2, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/var/tmp/gpool/job7/.gpool-screen.2.0.json");
	assert_int_equal(gp_screen_path("/var/tmp/gpool/job7", 2, 0, buf, 20), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(good),
	    cmocka_unit_test(truncated),
	    cmocka_unit_test(garbage),
	    cmocka_unit_test(strings_made_safe),
	    cmocka_unit_test(too_many_and_oversized),
	    cmocka_unit_test(files),
	    cmocka_unit_test(paths),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
