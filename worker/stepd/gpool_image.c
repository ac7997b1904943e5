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
#include "common/fserr.h"
#include "common/util.h"
#include "worker/stepd/oci.h"

#define JSON_MAX (4u << 20) /* index, manifest, config: no bigger than this */

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

/* the unpack directory as messages name it (argv[3]: the image cache's path) */
static const char *dir_name = ".";

/* tar's complaint about the file system it writes (fserr.h), or 0 */
static int fs_cause(FILE *f)
{
	static const struct {
		const char *text;
		int e;
	} causes[] = {{"No space left on device", ENOSPC},
		      {"Disk quota exceeded", EDQUOT},
		      {"Read-only file system", EROFS}};
	char line[1024];
	rewind(f);
	while (fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(causes) / sizeof(causes[0]); i++)
			if (strstr(line, causes[i].text))
				return causes[i].e;
	return 0;
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
	int e = good ? 0 : fs_cause(errs);
	fclose(errs);
	char why[400];
	if (e)
		die("%s: %s", what, gp_fs_why(e, dir_name, 0, why, sizeof(why)));
	if (!good)
		die("%s", what);
}

/* A blob's path under oci/ (digest checked by gp_oci_digest_ok already). */
static const char *blob_path(const char *digest, char *buf, size_t len)
{
	snprintf(buf, len, "oci/blobs/sha256/%.64s", digest + 7);
	return buf;
}

/* Read a JSON file (bounded); with digest, its SHA-256 must match. Malloc'd, *len set. */
static char *read_doc(const char *path, const char *digest, const char *what, size_t *len)
{
	uint8_t *data;
	if (gp_read_file(path, JSON_MAX, &data, len) < 0)
		die("the image has no readable %s: %s", what, strerror(errno));
	if (digest) {
		uint8_t h[32];
		const void *parts[1] = {data};
		size_t lens[1] = {*len};
		gp_sha256(parts, lens, 1, h);
		char hex[65];
		for (int i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", h[i]);
		if (strcmp(hex, digest + 7) != 0)
			die("the image's %s does not match its digest", what);
	}
	return (char *)data;
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

static int unpack(const char *dir)
{
	if (!strcmp(dir, "-") ? fchdir(3) < 0 : chdir(dir) < 0)
		die("cannot enter '%s': %s", dir, strerror(errno));
	umask(022);
	if (mkdir("oci", 0700) < 0 || mkdir("rootfs", 0755) < 0)
		die("cannot make the unpack directories: %s", strerror(errno));
	char *outer[] = {"tar", "-x", "--no-same-owner", "-f", "-", "-C", "oci", NULL};
	run_tar(outer, "the image is not a tar archive (an OCI image archive is one)");
	gp_error_t err;
	size_t len;
	char mdig[GP_OCI_DIGEST], p[PATH_MAX], path[4096];
	char *doc = read_doc("oci/index.json", NULL, "index.json (not an OCI archive?)", &len);
	if (gp_oci_index(doc, len, mdig, &err) < 0)
		die("%s", err.text);
	free(doc);
	static struct gp_oci_manifest man;
	doc = read_doc(blob_path(mdig, p, sizeof(p)), mdig, "manifest", &len);
	if (gp_oci_manifest(doc, len, &man, &err) < 0)
		die("%s", err.text);
	free(doc);
	doc = read_doc(blob_path(man.config, p, sizeof(p)), man.config, "config", &len);
	if (gp_oci_config(doc, len, path, sizeof(path), &err) < 0)
		die("%s", err.text);
	free(doc);
	for (size_t i = 0; i < man.nlayers; i++) {
		const struct gp_oci_layer *l = &man.layers[i];
		blob_path(l->digest, p, sizeof(p));
		if (l->zstd)
			die("layer %zu of the image is zstd-compressed (tar and tar+gzip only)", i);
		struct stat st;
		if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode))
			die("layer %zu of the image is missing from the archive", i);
		if (l->size >= 0 && (long long)st.st_size != (long long)l->size)
			die("layer %zu of the image has %lld bytes, its manifest says %lld", i,
			    (long long)st.st_size, (long long)l->size);
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
	if (path[0] && gp_write_file("path", path, strlen(path), 0644) < 0)
		die("cannot write the image's PATH: %s", strerror(errno));
	if (gp_rm_rf("oci") < 0)
		die("cannot remove the unpacked archive: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc != 3 && argc != 4) || strcmp(argv[1], "unpack") != 0) {
		fprintf(stderr,
			"usage: gpool-image unpack DIR|- [NAME] < ARCHIVE  (-: the directory "
			"on fd 3; NAME: its name in messages)\n");
		return 2;
	}
	dir_name = argc == 4 ? argv[3] : strcmp(argv[2], "-") ? argv[2] : ".";
	if (geteuid() == 0 && !getenv("GPOOL_IMAGE_AS_ROOT"))
		die("refusing to unpack an image as root");
	return unpack(argv[2]);
}
