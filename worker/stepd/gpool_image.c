/* gpool_image.c: gpool-image, the unpacker of one OCI image archive (docs/containers.md).
 *
 *   gpool-image unpack DIR < ARCHIVE      (DIR "-": the directory open as fd 3)
 *
 * gstepd runs it as the job's account (never as root: an image is the user's bytes, and a
 * tar unpacked by root may plant setuid files or device nodes), with the archive on stdin and
 * a fresh directory of that account as fd 3 (its path may lie under root's 0700 state
 * directory, which the account cannot walk). It leaves DIR/rootfs (the layers applied in order,
 * whiteouts honoured) and DIR/path (the image config's PATH, if it names one), or exits 1 with
 * one line on stderr saying what is wrong with the image. The archive is the OCI image layout
 * in a tar (oci-layout, index.json, blobs/sha256/...), as `podman save --format oci-archive`
 * or `skopeo copy ... oci-archive:` write it; the manifest's and config's digests are checked,
 * each layer's size against its descriptor (the whole archive's bytes are already
 * content-addressed by the chunk store).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "common/util.h"

#define JSON_MAX   (4u << 20) /* index, manifest, config: no bigger than this */
#define LAYERS_MAX 256

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpool-image: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Only complaints an unprivileged unpack of a good layer makes: a device node it may not make
 * (debootstrap trees have /dev/null and others; the runtime makes /dev in a container). */
static bool only_mknod(FILE *f)
{
	char line[1024];
	int lines = 0;
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		if (strstr(line, ": Cannot mknod: Operation not permitted") ||
		    strstr(line, "Exiting with failure status due to previous errors"))
			continue;
		return false;
	}
	return lines > 0;
}

/* Run tar with argv (NULL-ended) and stdin; dies with what went wrong. */
static void run_tar(char *const *argv, const char *what)
{
	FILE *errs = tmpfile();
	if (!errs)
		die("tmpfile: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(fileno(errs), 2);
		execvp("tar", argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	bool good =
	    WIFEXITED(st) && (WEXITSTATUS(st) == 0 || (WEXITSTATUS(st) == 2 && only_mknod(errs)));
	fclose(errs);
	if (!good)
		die("%s", what);
}

/* "sha256:<64 hex>" -> the blob's path under oci/; NULL when malformed. */
static const char *blob_path(const char *digest, char *buf, size_t len)
{
	if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + 64)
		return NULL;
	for (const char *p = digest + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return NULL;
	snprintf(buf, len, "oci/blobs/sha256/%s", digest + 7);
	return buf;
}

/* Read and parse a JSON file; with digest, its SHA-256 must match. */
static json_t *read_json(const char *path, const char *digest, const char *what)
{
	uint8_t *data;
	size_t len;
	if (gp_read_file(path, JSON_MAX, &data, &len) < 0)
		die("the image has no readable %s: %s", what, strerror(errno));
	if (digest) {
		uint8_t h[32];
		const void *parts[1] = {data};
		size_t lens[1] = {len};
		gp_sha256(parts, lens, 1, h);
		char hex[65];
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", h[i]);
		if (strcmp(hex, digest + 7) != 0)
			die("the image's %s does not match its digest", what);
	}
	json_error_t je;
	json_t *j = json_loadb((const char *)data, len, 0, &je);
	free(data);
	if (!j || !json_is_object(j))
		die("the image's %s is not a JSON object", what);
	return j;
}

/* ---- whiteouts: ".wh.NAME" removes NAME of the layers below, ".wh..wh..opq" empties its
 * directory of them. Applied after each layer is extracted: a layer never holds both a
 * whiteout and the name it hides (OCI image spec, "Whiteouts"). An opaque directory is
 * emptied of what it held before the layer, so the layer is extracted into a staging
 * directory first only when it has one; none of the images gpool's tests build have. */

static int wh_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	const char *base = path + f->base;
	if (strncmp(base, ".wh.", 4) != 0)
		return 0;
	char victim[PATH_MAX];
	if (!strcmp(base, ".wh..wh..opq")) {
		unlink(path);
		return 0;
	}
	snprintf(victim, sizeof(victim), "%.*s%s", f->base, path, base + 4);
	gp_rm_rf(victim);
	unlink(path);
	return 0;
}

static void apply_whiteouts(void)
{
	nftw("rootfs", wh_cb, 64, FTW_PHYS | FTW_MOUNT);
}

static void write_path(json_t *config)
{
	json_t *env = json_object_get(json_object_get(config, "config"), "Env");
	size_t i;
	json_t *v;
	json_array_foreach(env, i, v)
	{
		const char *s = json_string_value(v);
		if (s && !strncmp(s, "PATH=", 5)) {
			if (gp_write_file("path", s + 5, strlen(s + 5), 0644) < 0)
				die("cannot write the image's PATH: %s", strerror(errno));
			return;
		}
	}
}

static int unpack(const char *dir)
{
	if (!strcmp(dir, "-") ? fchdir(3) < 0 : chdir(dir) < 0)
		die("cannot enter '%s': %s", dir, strerror(errno));
	umask(022);
	if (mkdir("oci", 0700) < 0 || mkdir("rootfs", 0755) < 0)
		die("cannot make the unpack directories: %s", strerror(errno));
	char *outer[] = {"tar", "-x", "--no-same-owner", "-f", "-", "-C", "oci", NULL};
	run_tar(outer, "the image is not a tar archive (an OCI image archive is one)");
	json_t *index = read_json("oci/index.json", NULL, "index.json (not an OCI archive?)");
	json_t *mans = json_object_get(index, "manifests");
	if (!json_is_array(mans) || json_array_size(mans) == 0)
		die("the image's index.json lists no manifest");
	const char *mdig = json_string_value(json_object_get(json_array_get(mans, 0), "digest"));
	char p[PATH_MAX];
	if (!blob_path(mdig, p, sizeof(p)))
		die("the image's index.json names no sha256 manifest");
	json_t *man = read_json(p, mdig, "manifest");
	const char *cdig =
	    json_string_value(json_object_get(json_object_get(man, "config"), "digest"));
	if (!blob_path(cdig, p, sizeof(p)))
		die("the image's manifest has no config");
	json_t *config = read_json(p, cdig, "config");
	const char *os = json_string_value(json_object_get(config, "os"));
	if (os && strcmp(os, "linux") != 0)
		die("the image is for '%s', not linux", os);
	json_t *layers = json_object_get(man, "layers");
	if (!json_is_array(layers) || json_array_size(layers) > LAYERS_MAX)
		die("the image's manifest has no usable layer list");
	size_t i;
	json_t *l;
	json_array_foreach(layers, i, l)
	{
		const char *d = json_string_value(json_object_get(l, "digest"));
		const char *mt = json_string_value(json_object_get(l, "mediaType"));
		if (!blob_path(d, p, sizeof(p)))
			die("layer %zu of the image has no sha256 digest", i);
		if (mt && strstr(mt, "zstd"))
			die("layer %zu of the image is zstd-compressed (tar and tar+gzip only)", i);
		struct stat st;
		if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
			die("layer %zu of the image is missing from the archive", i);
		json_t *sz = json_object_get(l, "size");
		if (json_is_integer(sz) && (long long)st.st_size != json_integer_value(sz))
			die("layer %zu of the image has %lld bytes, its manifest says %lld", i,
			    (long long)st.st_size, (long long)json_integer_value(sz));
		/* GNU tar recognizes gzip by itself when reading a file */
		char *argv[] = {"tar",
				"-x",
				"--no-same-owner",
				"--no-overwrite-dir",
				"--delay-directory-restore",
				"-f",
				p,
				"-C",
				"rootfs",
				NULL};
		char what[64];
		snprintf(what, sizeof(what), "layer %zu of the image cannot be unpacked", i);
		run_tar(argv, what);
		unlink(p); /* the next layer's room (a node's state may be a small tmpfs) */
		apply_whiteouts();
	}
	write_path(config);
	json_decref(config);
	json_decref(man);
	json_decref(index);
	if (gp_rm_rf("oci") < 0)
		die("cannot remove the unpacked archive: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "unpack") != 0) {
		fprintf(stderr,
			"usage: gpool-image unpack DIR|- < ARCHIVE  (-: the directory on fd 3)\n");
		return 2;
	}
	if (geteuid() == 0 && !getenv("GPOOL_IMAGE_AS_ROOT"))
		die("refusing to unpack an image as root");
	return unpack(argv[2]);
}
