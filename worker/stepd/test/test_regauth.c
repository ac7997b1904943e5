/* test_regauth.c: a job owner's registry login (worker/stepd/regauth.c): which entry of an auth
 * file names an image's registry, and that the owner's files are read as the owner (as root: a
 * link from the owner's file to a file only root may read yields nothing of it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "worker/stepd/regauth.h"
#include "worker/test/skip.h"

static char dir[256];

static int pick(const char *json, const char *host, const char *path, char *out)
{
	gp_error_t err = {{0}};
	return gp_regauth_pick(json, strlen(json), host, path, out, GP_REGAUTH_MAX, &err);
}

static void picks_the_most_specific_entry(void **state)
{
	(void)state;
	char out[GP_REGAUTH_MAX];
	const char *doc = "{\"auths\":{\"reg:5000\":{\"auth\":\"aG9zdA==\"},"
			  "\"reg:5000/team\":{\"auth\":\"dGVhbQ==\"},"
			  "\"reg:5000/team/sub\":{\"auth\":\"c3Vi\"},"
			  "\"reg:5001\":{\"auth\":\"b3RoZXI=\"}}}";
	assert_int_equal(pick(doc, "reg:5000", "team/sub/x", out), 1);
	assert_string_equal(out, "c3Vi");
	assert_int_equal(pick(doc, "reg:5000", "team/x", out), 1);
	assert_string_equal(out, "dGVhbQ==");
	/* a prefix is whole components: "team" does not name "teamwork" */
	assert_int_equal(pick(doc, "reg:5000", "teamwork/x", out), 1);
	assert_string_equal(out, "aG9zdA==");
	assert_int_equal(pick(doc, "reg:5001", "x", out), 1);
	assert_string_equal(out, "b3RoZXI=");
	/* another port is another registry; a host is not a prefix of a longer name */
	assert_int_equal(pick(doc, "reg:5002", "x", out), 0);
	assert_int_equal(pick(doc, "reg", "x", out), 0);
	/* docker's keys: a scheme and a trailing slash */
	assert_int_equal(
	    pick("{\"auths\":{\"https://reg:5000/\":{\"auth\":\"ZA==\"}}}", "reg:5000", "a", out),
	    1);
	assert_string_equal(out, "ZA==");
	/* Docker Hub as docker login names it */
	assert_int_equal(pick("{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"aHVi\"}}}",
			      "docker.io", "library/x", out),
			 1);
	assert_string_equal(out, "aHVi");
	/* no auths, an entry a credential helper fills: no login */
	assert_int_equal(pick("{\"credsStore\":\"desktop\"}", "reg:5000", "a", out), 0);
	assert_int_equal(pick("{\"auths\":{\"reg:5000\":{}}}", "reg:5000", "a", out), 0);
}

static void malformed_files_are_refused(void **state)
{
	(void)state;
	char out[GP_REGAUTH_MAX];
	assert_int_equal(pick("not json", "reg:5000", "a", out), -1);
	assert_int_equal(pick("[1]", "reg:5000", "a", out), -1);
	assert_int_equal(pick("{\"auths\":[]}", "reg:5000", "a", out), -1);
	assert_int_equal(pick("{\"auths\":{\"reg:5000\":{\"auth\":7}}}", "reg:5000", "a", out), -1);
	/* nothing but base64 reaches the file skopeo reads */
	assert_int_equal(
	    pick("{\"auths\":{\"reg:5000\":{\"auth\":\"a\\\"}\"}}}", "reg:5000", "a", out), -1);
	assert_int_equal(
	    pick("{\"auths\":{\"reg:5000\":{\"auth\":\"a\"},\"reg:5000\":{\"auth\":\"b\"}}}",
		 "reg:5000", "a", out),
	    -1); /* a key twice */
	char *big = malloc(2 * GP_REGAUTH_MAX);
	assert_non_null(big);
	int n = snprintf(big, 64, "{\"auths\":{\"reg:5000\":{\"auth\":\"");
	memset(big + n, 'A', GP_REGAUTH_MAX);
	strcpy(big + n + GP_REGAUTH_MAX, "\"}}}");
	assert_int_equal(pick(big, "reg:5000", "a", out), -1);
	free(big);
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(gp_write_file(p, text, strlen(text), mode), 0);
}

/* The account's login for reg:5000 is written alone, from file `from`, as `json`. */
static void written(const struct gp_account *a, const char *outdir, const char *want_from,
		    const char *json)
{
	char out[512];
	const char *from = NULL;
	gp_error_t err = {{0}};
	assert_int_equal(
	    gp_regauth_write(a, "reg:5000", "a", outdir, out, sizeof(out), &from, &err), 1);
	assert_string_equal(from, want_from);
	struct stat st;
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	uint8_t *t;
	size_t tlen;
	assert_int_equal(gp_read_file(out, 1 << 20, &t, &tlen), 0);
	assert_string_equal((char *)t, json);
	free(t);
	unlink(out);
}

static void written_alone_for_skopeo(void **state)
{
	(void)state;
	struct gp_account me = {.uid = geteuid(), .gid = getegid(), .name = "tester"};
	snprintf(me.home, sizeof(me.home), "%.200s/home", dir);
	char p[512], out[512];
	snprintf(p, sizeof(p), "%s/home/.docker", dir);
	assert_int_equal(gp_mkdir_p(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/out", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	const char *from = NULL;
	gp_error_t err = {{0}};
	/* no file: no login */
	assert_int_equal(gp_regauth_write(&me, "reg:5000", "a", p, out, sizeof(out), &from, &err),
			 0);
	/* docker's file is read when the containers tools' is absent */
	put("home/.docker/config.json",
	    "{\"auths\":{\"reg:5000\":{\"auth\":\"ZG9ja2Vy\"},\"x:1\":{\"auth\":\"eA==\"}}}", 0600);
	written(&me, p, ".docker/config.json",
		"{\"auths\":{\"reg:5000\":{\"auth\":\"ZG9ja2Vy\"}}}");
	/* the containers tools' file comes first */
	snprintf(p, sizeof(p), "%s/home/.config/containers", dir);
	assert_int_equal(gp_mkdir_p(p, 0700), 0);
	put("home/.config/containers/auth.json", "{\"auths\":{\"reg:5000\":{\"auth\":\"Y3Ry\"}}}",
	    0600);
	snprintf(p, sizeof(p), "%s/out", dir);
	written(&me, p, ".config/containers/auth.json",
		"{\"auths\":{\"reg:5000\":{\"auth\":\"Y3Ry\"}}}");
	/* the containers tools' file without an entry for the registry: docker's is read next */
	put("home/.config/containers/auth.json", "{\"auths\":{\"other:5000\":{\"auth\":\"eA==\"}}}",
	    0600);
	written(&me, p, ".docker/config.json",
		"{\"auths\":{\"reg:5000\":{\"auth\":\"ZG9ja2Vy\"}}}");
	/* a malformed one is an error that names it */
	put("home/.config/containers/auth.json", "{\"auths\":", 0600);
	assert_int_equal(gp_regauth_write(&me, "reg:5000", "a", p, out, sizeof(out), &from, &err),
			 -1);
	assert_non_null(
	    strstr(err.text, "tester's ~/.config/containers/auth.json: not a JSON object"));
	/* a FIFO (a reader would wait on it for ever) is not read */
	char fifo[512];
	snprintf(fifo, sizeof(fifo), "%s/home/.config/containers/auth.json", dir);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(gp_regauth_write(&me, "reg:5000", "a", p, out, sizeof(out), &from, &err),
			 -1);
	assert_non_null(strstr(err.text, "cannot read tester's registry logins: Invalid argument"));
}

/* As root, for an account that is not: its files are read with its uid. A link from its auth
 * file to root's own (mode 0600) is not followed into root's secrets. */
static void read_as_the_owner(void **state)
{
	(void)state;
	if (geteuid() != 0)
		GP_SKIP("not root: cannot take another uid");
	struct gp_account nobody = {.uid = 65534, .gid = 65534, .name = "nobody"};
	snprintf(nobody.home, sizeof(nobody.home), "%.200s/nobody", dir);
	char p[512], out[512];
	snprintf(p, sizeof(p), "%s/nobody/.config/containers", dir);
	assert_int_equal(gp_mkdir_p(p, 0755), 0);
	assert_int_equal(chmod(dir, 0755), 0);
	put("root.json", "{\"auths\":{\"reg:5000\":{\"auth\":\"cm9vdA==\"}}}", 0600);
	snprintf(p, sizeof(p), "%s/root.json", dir);
	char l[512];
	snprintf(l, sizeof(l), "%s/nobody/.config/containers/auth.json", dir);
	assert_int_equal(symlink(p, l), 0);
	snprintf(p, sizeof(p), "%s/out", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	gp_error_t err = {{0}};
	assert_int_equal(
	    gp_regauth_write(&nobody, "reg:5000", "a", p, out, sizeof(out), NULL, &err), -1);
	assert_non_null(
	    strstr(err.text, "cannot read nobody's registry logins: Permission denied"));
	/* the link itself is sound: read as root (an account of uid 0), it gives root's login */
	struct gp_account root = nobody;
	root.uid = 0;
	root.gid = 0;
	assert_int_equal(gp_regauth_write(&root, "reg:5000", "a", p, out, sizeof(out), NULL, &err),
			 1);
	unlink(out);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gp-test-regauth.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gp_rm_rf(dir);
	return 0;
}

/* test_regauth: the tests that run anywhere; test_regauth NAME: the one that needs root, alone
 * (77 when it cannot run here) */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(picks_the_most_specific_entry),
	    cmocka_unit_test(malformed_files_are_refused),
	    cmocka_unit_test_setup_teardown(written_alone_for_skopeo, setup, teardown),
	};
	const struct CMUnitTest root_tests[] = {
	    cmocka_unit_test_setup_teardown(read_as_the_owner, setup, teardown),
	};
	if (argc > 1)
		return gp_run_only(root_tests, argv[1], NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
