/* test_config.c - gpool.conf (common/config.c): defaults, a file then flags over it, bad
 * keys and values refused, choices, --help and reload */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"

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
	char *argv[] = {"gschedd", "--config", p, "--node-timeout=5s", "--state-dir", "/z", NULL};
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
	char *argv[] = {"gschedd", "--fake-cards=x", NULL};
	assert_int_equal(gp_config_parse_args(c, 2, argv, &help, &err), -1);
	assert_non_null(strstr(err.text, "unknown option"));
	char *argv2[] = {"gschedd", "--state-dir", NULL};
	assert_int_equal(gp_config_parse_args(c, 2, argv2, &help, &err), -1);
	char *argv3[] = {"gschedd", "--allow-root=maybe", NULL};
	assert_int_equal(gp_config_parse_args(c, 2, argv3, &help, &err), -1);
	gp_config_destroy(&c);
}

static void help_flag(void **state)
{
	gp_error_t err;
	int help;
	gp_config_t *c = gp_config_create(GP_WORKER);
	char *argv[] = {"gworkerd", "--help", "--allow-root", NULL};
	assert_int_equal(gp_config_parse_args(c, 3, argv, &help, &err), 0);
	assert_int_equal(help, 1);
	assert_int_equal(gp_config_bool(c, "allow_root"), 1);
	gp_config_destroy(&c);
}

static void choices_and_check(void **state)
{
	gp_error_t err;
	int help;
	gp_config_t *c = gp_config_create(GP_SCHED);
	assert_int_equal(gp_config_set(c, "sync", "fast", &err), -1);
	assert_non_null(strstr(err.text, "invalid value 'fast' for sync"));
	assert_int_equal(gp_config_set(c, "sync", "normal", &err), 0);
	assert_int_equal(gp_config_set(c, "log_level", "loud", &err), -1);
	char *argv[] = {"gschedd", "--check-config", NULL};
	assert_int_equal(gp_config_check_only(c), 0);
	assert_int_equal(gp_config_parse_args(c, 2, argv, &help, &err), 0);
	assert_int_equal(gp_config_check_only(c), 1);
	gp_config_destroy(&c);
}

struct seen {
	char keys[8][32];
	int applied[8];
	int n;
};

static void note(const char *key, int applied, void *arg)
{
	struct seen *s = arg;
	if (s->n < 8) {
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
		s->applied[s->n++] = applied;
	}
}

static void reload(void **state)
{
	gp_error_t err;
	int help;
	char *p = tmpfile_with("max_attempts = 3\nlisten = tcp://*:1\n");
	char path[64];
	strcpy(path, p);
	gp_config_t *c = gp_config_create(GP_SCHED);
	char *argv[] = {"gschedd", "--config", path, "--node-timeout=20s", NULL};
	assert_int_equal(gp_config_parse_args(c, 4, argv, &help, &err), 0);
	FILE *f = fopen(path, "w");
	fputs("max_attempts = 7\nlisten = tcp://*:2\nnode_timeout = 1s\n", f);
	fclose(f);
	struct seen s = {.n = 0};
	assert_int_equal(gp_config_reload(c, 4, argv, note, &s, &err), 1);
	assert_int_equal(gp_config_int(c, "max_attempts"), 7);	      /* applied live */
	assert_string_equal(gp_config_str(c, "listen"), "tcp://*:1"); /* needs a restart */
	assert_int_equal(gp_config_int(c, "node_timeout"), 20000);    /* the flag still wins */
	assert_int_equal(s.n, 2);
	assert_string_equal(s.keys[0], "listen");
	assert_int_equal(s.applied[0], 0);
	assert_string_equal(s.keys[1], "max_attempts");
	assert_int_equal(s.applied[1], 1);
	/* a bad file changes nothing */
	f = fopen(path, "w");
	fputs("max_attempts = many\n", f);
	fclose(f);
	assert_int_equal(gp_config_reload(c, 4, argv, note, &s, &err), -1);
	assert_non_null(strstr(err.text, "max_attempts"));
	assert_int_equal(gp_config_int(c, "max_attempts"), 7);
	unlink(path);
	gp_config_destroy(&c);
}

int main(void)
{
	setenv("GPOOL_CONF", "/nonexistent-gpool.conf", 1);
	unsetenv("GPOOL_CONF");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(defaults),		 cmocka_unit_test(file_then_flags),
	    cmocka_unit_test(rejects),		 cmocka_unit_test(help_flag),
	    cmocka_unit_test(choices_and_check), cmocka_unit_test(reload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
