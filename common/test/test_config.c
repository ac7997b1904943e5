#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static void defaults(void **state)
{
	gp_config_t *c = gp_config_create(GP_SCHED);
	assert_non_null(c);
	assert_string_equal(gp_config_str(c, "listen"), "tcp://*:7820");
	assert_int_equal(gp_config_int(c, "heartbeat_interval"), 2000);
	assert_int_equal(gp_config_int(c, "commit_delay"), 2);
	assert_int_equal(gp_config_int(c, "max_message"), 80 << 20);
	gp_config_destroy(&c);
	assert_null(c);
}

static char *tmpfile_with(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/gpconfXXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	return path;
}

static void file_then_flags(void **state)
{
	char *p = tmpfile_with("# comment\nstate_dir = /x/y  \n\nnode_timeout=30s # trailing\n"
			       "fake_cards = nvidia:A:6GiB:7.5:125W\n");
	gp_config_t *c = gp_config_create(GP_SCHED);
	char *argv[] = { "gschedd", "--config", p, "--node-timeout=5s", "--state-dir", "/z", NULL };
	int help;
	gp_error_t err;
	assert_int_equal(gp_config_parse_args(c, 6, argv, &help, &err), 0);
	assert_int_equal(help, 0);
	assert_string_equal(gp_config_str(c, "state_dir"), "/z");
	assert_int_equal(gp_config_int(c, "node_timeout"), 5000);
	gp_config_destroy(&c);
	unlink(p);
}

static void rejects(void **state)
{
	gp_error_t err;
	int help;
	gp_config_t *c = gp_config_create(GP_SCHED);
	char *p = tmpfile_with("no_such_key = 1\n");
	assert_int_equal(gp_config_load_file(c, p, &err), -1);
	assert_non_null(strstr(err.text, "unknown key 'no_such_key'"));
	unlink(p);
	p = tmpfile_with("node_timeout = soon\n");
	assert_int_equal(gp_config_load_file(c, p, &err), -1);
	assert_non_null(strstr(err.text, ":1: invalid duration"));
	unlink(p);
	p = tmpfile_with("just words\n");
	assert_int_equal(gp_config_load_file(c, p, &err), -1);
	unlink(p);
	/* a worker key is not a scheduler flag */
	char *argv[] = { "gschedd", "--fake-cards=x", NULL };
	assert_int_equal(gp_config_parse_args(c, 2, argv, &help, &err), -1);
	assert_non_null(strstr(err.text, "unknown option"));
	char *argv2[] = { "gschedd", "--state-dir", NULL };
	assert_int_equal(gp_config_parse_args(c, 2, argv2, &help, &err), -1);
	char *argv3[] = { "gschedd", "--allow-root=maybe", NULL };
	assert_int_equal(gp_config_parse_args(c, 2, argv3, &help, &err), -1);
	gp_config_destroy(&c);
}

static void help_flag(void **state)
{
	gp_error_t err;
	int help;
	gp_config_t *c = gp_config_create(GP_WORKER);
	char *argv[] = { "gworkerd", "--help", "--allow-root", NULL };
	assert_int_equal(gp_config_parse_args(c, 3, argv, &help, &err), 0);
	assert_int_equal(help, 1);
	assert_int_equal(gp_config_bool(c, "allow_root"), 1);
	gp_config_destroy(&c);
}

int main(void)
{
	setenv("GPOOL_CONF", "/nonexistent-gpool.conf", 1);
	unsetenv("GPOOL_CONF");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(file_then_flags),
		cmocka_unit_test(rejects),
		cmocka_unit_test(help_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
