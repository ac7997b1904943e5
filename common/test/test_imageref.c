/* test_imageref.c: registry image names (common/imageref.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "common/imageref.h"

static void names(void **state)
{
	(void)state;
	struct gp_imageref r;
	gp_error_t err;
	assert_int_equal(gp_imageref_parse("198.18.0.1:5000/gpool/minbase:1", &r, &err), 0);
	assert_string_equal(r.host, "198.18.0.1:5000");
	assert_string_equal(r.path, "gpool/minbase");
	assert_string_equal(r.tag, "1");
	assert_string_equal(r.digest, "");
	assert_int_equal(gp_imageref_parse("registry.lan/team/py-torch_2", &r, &err), 0);
	assert_string_equal(r.tag, "latest");
	assert_int_equal(gp_imageref_parse("localhost:5000/a__b", &r, &err), 0);
	const char *dg = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char s[300], t[400];
	snprintf(s, sizeof(s), "reg:5000/x/y:v2@%s", dg);
	assert_int_equal(gp_imageref_parse(s, &r, &err), 0);
	assert_string_equal(r.tag, "v2");
	assert_string_equal(r.digest, dg);
	assert_int_equal(gp_imageref_transport(&r, NULL, t, sizeof(t)), 0);
	assert_string_equal(t, "docker://reg:5000/x/y@sha256:0123456789abcdef0123456789abcdef"
			       "0123456789abcdef0123456789abcdef");
	assert_int_equal(gp_imageref_parse("reg:5000/x/y:v2", &r, &err), 0);
	assert_int_equal(gp_imageref_transport(&r, NULL, t, sizeof(t)), 0);
	assert_string_equal(t, "docker://reg:5000/x/y:v2");
	assert_int_equal(gp_imageref_transport(&r, dg, t, 20), -1);
}

static void refused(void **state)
{
	(void)state;
	struct gp_imageref r;
	gp_error_t err;
	static const char *const bad[] = {
	    "",
	    "img.tar",
	    "dir/img.tar",    /* no host: a path */
	    "./x/img.tar",    /* "." is no host */
	    "../x/img",	      /* nor ".." */
	    "reg:5000/",      /* no name */
	    "reg:5000/UPPER", /* names are lowercase */
	    "reg:5000/a//b",
	    "reg:5000/a/",
	    "reg:5000/-a",
	    "reg:5000/a:",	   /* empty tag */
	    "reg:5000/a:-x",	   /* a tag starts with a word character */
	    "reg:5000/a:x y",	   /* a space */
	    "reg:5000/a;rm -rf /", /* what a shell would run */
	    "reg:5000/a@sha256:12",
	    "reg:5000/a@md5:0123456789abcdef0123456789abcdef",
	    "reg:0/a",
	    "reg:65536/a",
	    "reg:5x/a",
	    "-reg.lan/a",
	    "reg..lan/a",
	    "--option=x/a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.text[0] = '\0';
		if (gp_imageref_parse(bad[i], &r, &err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		assert_true(strstr(err.text, "invalid image name") != NULL);
	}
	assert_false(gp_imageref_like("img.tar"));
	assert_false(gp_imageref_like("./x/img.tar"));
	assert_false(gp_imageref_like("images/img.tar"));
	assert_false(gp_imageref_like("reg:5000/"));
	assert_true(gp_imageref_like("reg:5000/a"));
	assert_true(gp_imageref_like("registry.lan/a"));
	assert_true(gp_imageref_like("localhost/a"));
}

static void insecure_list(void **state)
{
	(void)state;
	const char *l = "198.18.0.1:5000, registry.lan";
	assert_true(gp_imageref_host_listed("198.18.0.1:5000", l));
	assert_false(gp_imageref_host_listed("198.18.0.1:5001", l));
	assert_false(gp_imageref_host_listed("198.18.0.1", l));
	assert_true(gp_imageref_host_listed("registry.lan", l));
	assert_true(gp_imageref_host_listed("registry.lan:443", l));
	assert_false(gp_imageref_host_listed("registry.la", l));
	assert_false(gp_imageref_host_listed("registry.lan", ""));
	assert_false(gp_imageref_host_listed("registry.lan", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(names), cmocka_unit_test(refused),
					   cmocka_unit_test(insecure_list)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
