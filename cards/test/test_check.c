/* gcheck's measuring core and its JSON writer: documents the writer makes parse back (jansson
 * reads them), strings are escaped, misuse is refused rather than written; profile results
 * grade, print as a table and as JSON, and the result file is written whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cards/check.h"
#include "common/jsonw.h"

/* What a writer made, as a string (the stream is closed). */
static char *written(FILE *f, char **buf)
{
	fclose(f);
	return *buf;
}

static void writer_nested(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	gp_jw_t *w = gp_jw_create(f);
	gp_jw_object(w);
	gp_jw_key(w, "s");
	gp_jw_string(w, "quote \" backslash \\ tab \t newline \n bell \a ±");
	gp_jw_key(w, "n");
	gp_jw_int(w, -42);
	gp_jw_key(w, "u");
	gp_jw_uint(w, 1ull << 40);
	gp_jw_key(w, "r");
	gp_jw_real(w, 400);
	gp_jw_key(w, "nan");
	gp_jw_real(w, NAN);
	gp_jw_key(w, "inf");
	gp_jw_real(w, INFINITY);
	gp_jw_key(w, "null");
	gp_jw_string(w, NULL);
	gp_jw_key(w, "empty");
	gp_jw_array(w);
	gp_jw_end_array(w);
	gp_jw_key(w, "list");
	gp_jw_array(w);
	gp_jw_bool(w, true);
	gp_jw_object(w);
	gp_jw_end_object(w);
	gp_jw_null(w);
	gp_jw_end_array(w);
	gp_jw_end_object(w);
	assert_int_equal(gp_jw_finish(&w), 0);
	assert_null(w);
	char *text = written(f, &buf);
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "s")),
			    "quote \" backslash \\ tab \t newline \n bell \a ±");
	assert_int_equal(json_integer_value(json_object_get(v, "n")), -42);
	assert_int_equal(json_integer_value(json_object_get(v, "u")), 1ll << 40);
	assert_true(json_is_real(json_object_get(v, "r")));
	assert_true(json_real_value(json_object_get(v, "r")) == 400.0);
	assert_true(json_is_null(json_object_get(v, "nan")));
	assert_true(json_is_null(json_object_get(v, "inf")));
	assert_true(json_is_null(json_object_get(v, "null")));
	assert_int_equal(json_array_size(json_object_get(v, "empty")), 0);
	assert_int_equal(json_array_size(json_object_get(v, "list")), 3);
	/* the indentation gp_json_print uses */
	assert_non_null(strstr(text, "{\n  \"s\": "));
	assert_non_null(strstr(text, "\"empty\": []"));
	json_decref(v);
	free(buf);
}

static void writer_misuse(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	gp_jw_t *w = gp_jw_create(f);
	gp_jw_object(w);
	gp_jw_int(w, 1); /* a value without its key */
	gp_jw_end_object(w);
	assert_int_equal(gp_jw_finish(&w), -1);
	w = gp_jw_create(f);
	gp_jw_array(w); /* never closed */
	assert_int_equal(gp_jw_finish(&w), -1);
	w = gp_jw_create(f);
	gp_jw_array(w);
	gp_jw_end_object(w); /* the wrong end */
	assert_int_equal(gp_jw_finish(&w), -1);
	w = gp_jw_create(f);
	for (int i = 0; i < GP_JW_MAX_DEPTH + 1; i++)
		gp_jw_array(w);
	assert_int_equal(gp_jw_finish(&w), -1);
	w = gp_jw_create(f);
	assert_int_equal(gp_jw_finish(&w), -1); /* no document at all */
	assert_int_equal(gp_jw_finish(NULL), 0);
	fclose(f);
	free(buf);
}

static void profile_card(struct gp_check_opts *o, const char *profile, int card,
			 struct gp_check_result *r)
{
	gp_check_defaults(o);
	o->profile = profile;
	struct gp_check_target t = {card, 0};
	gp_error_t err;
	assert_int_equal(gp_check_card(o, &t, r, &err), 0);
}

static void profiles_grade(void **state)
{
	struct gp_check_opts o;
	struct gp_check_result r;
	profile_card(&o, "stable", 0, &r);
	assert_int_equal(r.grade, GP_GRADE_GOOD);
	assert_string_equal(r.backend, "profile");
	profile_card(&o, "erroring", 3, &r);
	assert_int_equal(r.grade, GP_GRADE_FAIL);
	assert_int_equal(r.t.card, 3);
	assert_string_equal(r.reason, "3 memory errors");
	profile_card(&o, "fluctuating", 0, &r);
	assert_int_equal(r.grade, GP_GRADE_FAIL);
	gp_check_defaults(&o);
	o.profile = "nonsense";
	gp_error_t err;
	struct gp_check_target t = {0, 0};
	assert_int_equal(gp_check_card(&o, &t, &r, &err), -1);
	gp_check_defaults(&o);
	o.profile = "stable";
	o.inject_fault = true;
	assert_int_equal(gp_check_finish(&o, &err), -1);
	assert_non_null(strstr(err.text, "--inject-fault"));
}

static void outputs(void **state)
{
	struct gp_check_opts o;
	struct gp_check_result rs[2];
	profile_card(&o, "stable", 0, &rs[0]);
	profile_card(&o, "erroring", 1, &rs[1]);
	rs[1].reported = "no";
	snprintf(rs[1].report_err, sizeof(rs[1].report_err), "refused");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(gp_check_print_table(rs, 2, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "CARD"));
	assert_non_null(strstr(buf, "3 memory errors"));
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_int_equal(gp_check_print_json(&o, "pc1", rs, 2, f), 0);
	fclose(f);
	json_error_t e;
	json_t *v = json_loads(buf, 0, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "node")), "pc1");
	json_t *cards = json_object_get(v, "cards");
	assert_int_equal(json_array_size(cards), 2);
	json_t *c1 = json_array_get(cards, 1);
	assert_string_equal(json_string_value(json_object_get(c1, "grade")), "fail");
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(c1, "memtest"), "errors")), 3);
	assert_true(json_real_value(
			json_object_get(json_object_get(c1, "bandwidth"), "mean_gbps")) == 400.0);
	assert_true(json_is_null(json_object_get(c1, "temperature_c")));
	assert_false(json_is_true(json_object_get(c1, "reported")));
	assert_string_equal(json_string_value(json_object_get(c1, "report_error")), "refused");
	json_decref(v);
	free(buf);
}

static void result_file(void **state)
{
	char dir[] = "/tmp/test_check.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/result.json", dir);
	struct gp_check_opts o;
	struct gp_check_result r;
	profile_card(&o, "erroring", 2, &r);
	gp_error_t err;
	assert_int_equal(gp_check_write_json(&o, "pc2", &r, 1, path, &err), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	json_error_t e;
	json_t *v = json_load_file(path, 0, &e);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(v, "cards"), 0), "grade")),
			    "fail");
	json_decref(v);
	/* a link in its place is not followed: the file is replaced */
	unlink(path);
	assert_int_equal(symlink("/nonexistent/target", path), 0);
	assert_int_equal(gp_check_write_json(&o, "pc2", &r, 1, path, &err), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	unlink(path);
	/* a directory that does not exist: an error, nothing left behind */
	char bad[300];
	snprintf(bad, sizeof(bad), "%s/none/result.json", dir);
	assert_int_equal(gp_check_write_json(&o, "pc2", &r, 1, bad, &err), -1);
	assert_non_null(strstr(err.text, "cannot write"));
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(writer_nested),  cmocka_unit_test(writer_misuse),
	    cmocka_unit_test(profiles_grade), cmocka_unit_test(outputs),
	    cmocka_unit_test(result_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
