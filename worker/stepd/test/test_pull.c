/* test_pull.c: registry pulls (worker/stepd/pull.c) against a stand-in for skopeo, a shell
 * script that answers as skopeo 1.9 does (its messages copied from real runs, t1323 runs the
 * real one against a real registry): the digest and cache key, one copy per node and digest
 * also when pulls run at once, TLS unless the host is listed, the declared size refused before
 * a copy, the reasons a job fails with, and a private registry's login. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/sha256.h"
#include "common/util.h"
#include "worker/stepd/pull.h"

static char dir[256], images[300], skopeo[300];

static const char *const script =
    "#!/bin/sh\n"
    "d=$(dirname \"$0\")\n"
    "mode=$(cat \"$d/mode\")\n"
    "echo \"$@\" >>\"$d/args\"\n"
    "cmd=; last=; auth=; prev=\n"
    "for a; do case $a in inspect|copy) cmd=${cmd:-$a};; esac\n"
    "  case $prev in --authfile|--src-authfile) auth=$a; cat \"$a\" >>\"$d/authseen\"; "
    "echo >>\"$d/authseen\";; esac\n"
    "  prev=$a; last=$a; done\n"
    "if [ \"$mode\" = private ] && ! grep -q YWxpY2U6czNjcmV0 \"${auth:-/dev/null}\"; then\n"
    "  echo 'time=\"2026-12-06T13:27:07Z\" level=fatal msg=\"Error parsing image name "
    "\\\"docker://reg:5000/priv/x:1\\\": reading manifest 1 in reg:5000/priv/x: unauthorized: "
    "authentication required\"' >&2; exit 1\n"
    "fi\n"
    "if [ \"$cmd\" = inspect ]; then\n"
    "  case $mode in\n"
    "  missing) echo 'time=\"2026-12-06T07:17:47Z\" level=fatal msg=\"Error parsing image name "
    "\\\"docker://reg:5000/a:nope\\\": reading manifest nope in reg:5000/a: manifest unknown: "
    "manifest unknown\"' >&2; exit 1;;\n"
    "  http) echo 'time=\"x\" level=fatal msg=\"pinging container registry reg:5000: Get "
    "\\\"https://reg:5000/v2/\\\": http: server gave HTTP response to HTTPS client\"' >&2; exit "
    "1;;\n"
    "  esac\n"
    "  cat \"$d/manifest.json\"; exit 0\n"
    "fi\n"
    "echo x >>\"$d/copies\"\n"
    "if [ \"$mode\" = tamper ]; then\n"
    "  echo 'time=\"x\" level=fatal msg=\"writing blob: happened during read: Digest did not "
    "match, expected sha256:aa, got sha256:bb\"' >&2; exit 1\n"
    "fi\n"
    "sleep 0.3\n"
    "printf archive >\"${last#oci-archive:}\"\n";

static const char *const manifest =
    "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
    "\"config\":{\"digest\":\"sha256:e4f2\",\"size\":258},\"layers\":[{\"digest\":\"sha256:"
    "e6a9\",\"size\":%s}]}";

static void put(const char *name, const char *text)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(gp_write_file(p, text, strlen(text), 0755), 0);
}

static int count(const char *name)
{
	char p[400], line[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gp-test-pull.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(images, sizeof(images), "%s/images", dir);
	snprintf(skopeo, sizeof(skopeo), "%s/skopeo", dir);
	assert_int_equal(mkdir(images, 0711), 0);
	put("skopeo", script);
	char m[512];
	snprintf(m, sizeof(m), manifest, "94433094");
	put("manifest.json", m);
	put("mode", "ok");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gp_rm_rf(dir);
	return 0;
}

static void pulled_once(void **state)
{
	(void)state;
	struct gp_pull_opts o = {.images_dir = images,
				 .insecure = "reg:5000",
				 .max_bytes = 1ull << 30,
				 .skopeo = skopeo};
	struct gp_pull_result r;
	gp_error_t err = {{0}};
	assert_int_equal(gp_pull_image("reg:5000/team/a:1", &o, &r, &err), 0);
	assert_true(r.pulled);
	char buf[16] = {0};
	assert_int_equal(read(r.fd, buf, sizeof(buf) - 1), 7);
	assert_string_equal(buf, "archive");
	close(r.fd);
	/* the digest is the manifest's bytes' */
	char m[512], hex[65];
	snprintf(m, sizeof(m), manifest, "94433094");
	uint8_t h[32];
	const void *p[1] = {m};
	size_t l[1] = {strlen(m)};
	gp_sha256(p, l, 1, h);
	gp_chunk_hex(h, hex);
	assert_string_equal(r.digest + 7, hex);
	assert_int_equal(strlen(r.key), 64);
	assert_string_not_equal(r.key, hex);
	/* the second use resolves the tag again but copies nothing */
	assert_int_equal(gp_pull_image("reg:5000/team/a:1", &o, &r, &err), 0);
	assert_false(r.pulled);
	close(r.fd);
	assert_int_equal(count("copies"), 1);
	/* listed: plain HTTP; the copy is by digest */
	char args[400];
	snprintf(args, sizeof(args), "%s/args", dir);
	uint8_t *a;
	size_t alen;
	assert_int_equal(gp_read_file(args, 1 << 20, &a, &alen), 0);
	/* no login: no one's at all (root's own is never looked for) */
	assert_non_null(
	    strstr((char *)a, "--tls-verify=false --no-creds docker://reg:5000/team/a:1"));
	char bydigest[200];
	snprintf(bydigest, sizeof(bydigest),
		 "--src-tls-verify=false --src-no-creds docker://reg:5000/team/a@%s", r.digest);
	assert_non_null(strstr((char *)a, bydigest));
	assert_null(strstr((char *)a, "--tls-verify=true"));
	free(a);
	/* not listed: TLS */
	o.insecure = "other:5000";
	assert_int_equal(gp_pull_image("reg:5000/team/a:1", &o, &r, &err), 0);
	close(r.fd);
	assert_int_equal(gp_read_file(args, 1 << 20, &a, &alen), 0);
	assert_non_null(
	    strstr((char *)a, "--tls-verify=true --no-creds docker://reg:5000/team/a:1"));
	free(a);
}

/* The archives kept are bounded: after a pull the least recently used goes, unless a pull of it
 * holds its lock; the one just pulled stays. */
static void kept_archives_bounded(void **state)
{
	(void)state;
	struct gp_pull_opts o = {
	    .images_dir = images, .insecure = "reg:5000", .keep_bytes = 10, .skopeo = skopeo};
	struct gp_pull_result a, b, c;
	gp_error_t err = {{0}};
	char m[512];
	assert_int_equal(gp_pull_image("reg:5000/team/a:1", &o, &a, &err), 0);
	assert_true(a.pulled);
	/* a's archive stays readable for the job that opened it, whatever happens to its name */
	snprintf(m, sizeof(m), manifest, "1000");
	put("manifest.json", m); /* another image: another digest */
	assert_int_equal(gp_pull_image("reg:5000/team/b:1", &o, &b, &err), 0);
	assert_true(b.pulled);
	char p[600];
	snprintf(p, sizeof(p), "%s/pulled/%s.tar", images, a.digest + 7);
	assert_int_not_equal(access(p, F_OK), 0); /* 14 bytes over 10: a, the older, went */
	snprintf(p, sizeof(p), "%s/pulled/%s.tar", images, b.digest + 7);
	assert_int_equal(access(p, F_OK), 0);
	char buf[16] = {0};
	assert_int_equal(pread(a.fd, buf, sizeof(buf) - 1, 0), 7);
	close(a.fd);
	close(b.fd);
	/* b held by a pull under way (its lock): pulling a again keeps b too */
	char lock[600];
	snprintf(lock, sizeof(lock), "%s/pulled/%s.lock", images, b.digest + 7);
	int lfd = open(lock, O_RDWR);
	assert_true(lfd >= 0);
	assert_int_equal(flock(lfd, LOCK_EX), 0);
	snprintf(m, sizeof(m), manifest, "94433094");
	put("manifest.json", m);
	assert_int_equal(gp_pull_image("reg:5000/team/a:1", &o, &c, &err), 0);
	assert_true(c.pulled); /* fetched again */
	close(c.fd);
	assert_int_equal(access(p, F_OK), 0);
	close(lfd);
	assert_int_equal(count("copies"), 3);
}

static void concurrent_pulls_coalesce(void **state)
{
	(void)state;
	struct gp_pull_opts o = {.images_dir = images, .insecure = "reg:5000", .skopeo = skopeo};
	pid_t kids[4];
	for (int i = 0; i < 4; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0) {
			struct gp_pull_result r;
			gp_error_t err;
			_exit(gp_pull_image("reg:5000/team/a:1", &o, &r, &err) == 0 ? 0 : 1);
		}
	}
	for (int i = 0; i < 4; i++) {
		int st;
		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(count("copies"), 1);
}

static void reasons(void **state)
{
	(void)state;
	struct gp_pull_opts o = {.images_dir = images,
				 .insecure = "reg:5000",
				 .max_bytes = 1ull << 30,
				 .skopeo = skopeo};
	struct gp_pull_result r;
	gp_error_t err = {{0}};
	put("mode", "missing");
	assert_int_equal(gp_pull_image("reg:5000/a:nope", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "container image 'reg:5000/a:nope': the registry has no "
					 "such image (Error parsing image name "
					 "\"docker://reg:5000/a:nope\": reading manifest nope in "
					 "reg:5000/a: manifest unknown"));
	put("mode", "http");
	assert_int_equal(gp_pull_image("reg:5000/a:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "speaks plain HTTP and is not in "
					 "container_insecure_registries"));
	put("mode", "tamper");
	assert_int_equal(gp_pull_image("reg:5000/a:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "does not match its digest, refused (writing blob: "
					 "happened during read: Digest did not match"));
	assert_int_equal(r.fd, -1);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "ls %s/pulled | grep -q tar", images);
	assert_int_not_equal(system(cmd), 0); /* nothing of it kept */
	put("mode", "ok");
	char m[512];
	snprintf(m, sizeof(m), manifest, "1000000000000");
	put("manifest.json", m);
	assert_int_equal(gp_pull_image("reg:5000/a:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "larger than container_pull_max"));
	put("manifest.json", "<html>not a manifest</html>");
	assert_int_equal(gp_pull_image("reg:5000/a:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "is not an image manifest"));
	assert_int_equal(count("copies"), 1); /* only the tampered one was copied */
	assert_int_equal(gp_pull_image("reg:5000/a;id", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "invalid image name"));
	char wrong[200];
	snprintf(wrong, sizeof(wrong), "reg:5000/a@sha256:%064d", 0);
	snprintf(m, sizeof(m), manifest, "1");
	put("manifest.json", m);
	assert_int_equal(gp_pull_image(wrong, &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "not the digest asked for, refused"));
	o.skopeo = "/nonexistent/skopeo";
	assert_int_equal(gp_pull_image("reg:5000/a:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "skopeo is not installed on the node"));
}

/* A private registry: the tag is resolved, and the blobs fetched, with the owner's login for
 * that registry alone (regauth.c), in a file that is gone afterwards; without one the reason
 * says so. */
static void private_registry_login(void **state)
{
	(void)state;
	struct gp_account me = {.uid = geteuid(), .gid = getegid(), .name = "tester"};
	assert_true(strlen(dir) + 6 <= sizeof(me.home));
	memcpy(me.home, dir, strlen(dir));
	strcat(me.home, "/home");
	assert_int_equal(mkdir(me.home, 0755), 0);
	struct gp_pull_opts o = {
	    .images_dir = images, .insecure = "reg:5000", .skopeo = skopeo, .owner = &me};
	struct gp_pull_result r;
	gp_error_t err = {{0}};
	put("mode", "private");
	assert_int_equal(gp_pull_image("reg:5000/priv/x:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "the registry refused an anonymous pull (Error parsing "));
	assert_non_null(strstr(err.text, "unauthorized: authentication required): the owner has "
					 "no login for it on this node"));
	assert_int_equal(count("authseen"), 0);
	/* alice's login for reg:5000 (base64 "alice:s3cret") beside another registry's */
	char p[600];
	snprintf(p, sizeof(p), "%s/.config/containers", me.home);
	assert_int_equal(gp_mkdir_p(p, 0700), 0);
	snprintf(p, sizeof(p), "home/.config/containers/auth.json");
	put(p, "{\"auths\":{\"other:5000\":{\"auth\":\"b3RoZXI6eA==\"},"
	       "\"reg:5000\":{\"auth\":\"YWxpY2U6czNjcmV0\"}}}");
	assert_int_equal(gp_pull_image("reg:5000/priv/x:1", &o, &r, &err), 0);
	assert_true(r.pulled);
	close(r.fd);
	/* skopeo saw that login alone, for the resolve and for the copy */
	uint8_t *a;
	size_t alen;
	snprintf(p, sizeof(p), "%s/authseen", dir);
	assert_int_equal(gp_read_file(p, 1 << 20, &a, &alen), 0);
	assert_string_equal((char *)a,
			    "{\"auths\":{\"reg:5000\":{\"auth\":\"YWxpY2U6czNjcmV0\"}}}\n"
			    "{\"auths\":{\"reg:5000\":{\"auth\":\"YWxpY2U6czNjcmV0\"}}}\n");
	free(a);
	snprintf(p, sizeof(p), "%s/args", dir);
	assert_int_equal(gp_read_file(p, 1 << 20, &a, &alen), 0);
	assert_non_null(strstr((char *)a, "--tls-verify=false --authfile "));
	assert_non_null(strstr((char *)a, "--src-tls-verify=false --src-authfile "));
	free(a);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "ls %s/pulled/tmp | grep -q auth", images);
	assert_int_not_equal(system(cmd), 0); /* the login's file is gone */
	/* the archive is on the node now: a job of an owner without the login still cannot use it
	 */
	snprintf(p, sizeof(p), "home/.config/containers/auth.json");
	put(p, "{\"auths\":{\"reg:5000/other-team\":{\"auth\":\"YWxpY2U6czNjcmV0\"}}}");
	assert_int_equal(gp_pull_image("reg:5000/priv/x:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "refused an anonymous pull"));
	/* a malformed file is the job's reason, named */
	put(p, "{\"auths\":{\"reg:5000\":{\"auth\":\"not base64!\"}}}");
	assert_int_equal(gp_pull_image("reg:5000/priv/x:1", &o, &r, &err), -1);
	assert_non_null(strstr(err.text, "container image 'reg:5000/priv/x:1': tester's "
					 "~/.config/containers/auth.json: the \"auth\" of "
					 "\"reg:5000\" is not a base64 login"));
	assert_int_equal(count("copies"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(pulled_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(concurrent_pulls_coalesce, setup, teardown),
	    cmocka_unit_test_setup_teardown(kept_archives_bounded, setup, teardown),
	    cmocka_unit_test_setup_teardown(reasons, setup, teardown),
	    cmocka_unit_test_setup_teardown(private_registry_login, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
