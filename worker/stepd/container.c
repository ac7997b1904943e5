/* container.c: a job's image unpacked into the node's cache, and its tasks' crun bundles
 * (container.h).
 *
 * Who does what, and why: the archive is unpacked by gpool-image running as the account (an
 * image's tar unpacked by root could make setuid files or device nodes), into a directory of
 * the account's, images/u<uid>/tmp.*, made by root in images/u<uid> (root's, 0711: the account
 * cannot make, rename or replace anything there). Once unpacked, root renames it to its key and
 * makes it root's, mode 0700: from then on the account cannot reach the tree outside its
 * containers (it cannot swap rootfs for a link to where crun, as root, would make its mount
 * points), and no other account can reach it at all. crun, which sets the container up inside
 * the task's user namespace (whose root cannot search that entry), gets a bind of it that only
 * the task's mount namespace has (step_container_bind); the bundle is root's, under
 * <state_dir>/containers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fserr.h"
#include "common/imageref.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "worker/node/mps.h"
#include "worker/stepd/container.h"
#include "worker/stepd/ctrdev.h"
#include "worker/stepd/ctrmounts.h"
#include "worker/stepd/pmixsrv.h"
#include "worker/stepd/pull.h"
#include "worker/stepd/step.h"

#define ERR_MAX 480

struct step_ctr {
	int images_fd; /* <state_dir>/images (root's) */
	int user_fd;   /* images/u<uid> (root's, 0711) */
	int entry_fd;  /* images/u<uid>/<key> (root's, 0700), locked shared while the step runs */
	char key[72];  /* the image's key and CACHE_LAYOUT: the entry's name */
	char rootfs[PATH_MAX];
	char *path_env; /* the image's PATH (NULL: the job's) */
	char bundles[2048];
	char crun_root[2048];
	char roots[PATH_MAX]; /* ROOTS_DIR/<node>.<pid>.<job>.<attempt>: the tasks' bind targets */
};

/* Where each task's child binds the image's tree for crun in the user namespace: the path
 * must be searchable by anyone (its root is no one on the host), the tree itself is not. */
#define ROOTS_DIR "/run/gpool/ctr"

static const Gpool__StageEntry *image_entry(const Gpool__JobSpec *spec)
{
	for (size_t i = 0; i < spec->n_stage; i++)
		if (!spec->stage[i]->dir && !strcmp(spec->stage[i]->path, spec->container))
			return spec->stage[i];
	return NULL;
}

/* Appended to an image's key to name its cache entry: a new layout leaves older entries to the
 * cache's eviction. ".2": the tasks' roots are overlays, so nothing crun makes stays in it. */
#define CACHE_LAYOUT ".2"

/* The cache key: the SHA-256 of the size and every chunk hash, in hex. */
static void image_key(const Gpool__StageEntry *e, char out[65])
{
	const void *parts[2] = {&e->size, NULL};
	size_t lens[2] = {sizeof(e->size), 0};
	uint8_t *all = malloc(e->n_chunks * GP_HASH_LEN + 1);
	for (size_t i = 0; all && i < e->n_chunks; i++)
		memcpy(all + i * GP_HASH_LEN, e->chunks[i].data, GP_HASH_LEN);
	parts[1] = all;
	lens[1] = all ? e->n_chunks * GP_HASH_LEN : 0;
	uint8_t h[32];
	gp_sha256(parts, lens, 2, h);
	gp_chunk_hex(h, out);
	free(all);
}

/* Open (making it, mode) directory name under dfd, not following a link; with owner, it must
 * be (and is made) the account's. */
static int open_dir(int dfd, const char *name, mode_t mode, const struct gp_account *owner)
{
	if (mkdirat(dfd, name, mode) == 0 && owner &&
	    fchownat(dfd, name, owner->uid, owner->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		goto bad;
	uid_t want = owner ? owner->uid : geteuid();
	if (st.st_uid != want || (st.st_mode & 022)) {
		errno = EPERM;
		goto bad;
	}
	return fd;
bad:
	if (fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return -1;
}

/* Write the archive (its chunks, hash checked) into an unlinked file of root's: its fd. */
static int archive_fd(int images_fd, const Gpool__StageEntry *e, const char *cache_dir,
		      const char *images, gp_error_t *err)
{
	int fd = openat(images_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return gp_fs_errprintf(err, errno, images, 0, "cannot make the image's archive");
	for (size_t i = 0; i < e->n_chunks; i++) {
		uint8_t *data;
		size_t len;
		if (gp_chunk_read(cache_dir, e->chunks[i].data, &data, &len) < 0) {
			gp_errprintf(err, "the image's chunk %zu is not in the cache: %s", i,
				     strerror(errno));
			close(fd);
			return -1;
		}
		int rc = gp_write_all(fd, data, len);
		free(data);
		if (rc < 0) {
			gp_fs_errprintf(err, errno, images, e->size,
					"cannot write the image's archive");
			close(fd);
			return -1;
		}
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return gp_errprintf(err, "lseek: %s", strerror(errno));
	}
	return fd;
}

/* The PATH crun runs with (task.c runs each container task's crun with it too). */
static const char crun_environ_path[] =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/* Whether an executable crun is in that PATH. */
static bool crun_installed(void)
{
	char dirs[sizeof(crun_environ_path)], path[PATH_MAX];
	snprintf(dirs, sizeof(dirs), "%s", crun_environ_path + 5);
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/crun", d);
		if (access(path, X_OK) == 0)
			return true;
	}
	return false;
}

/* gpool-image, beside this executable. */
static int helper_path(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = n > 0 ? (self[n] = '\0', strrchr(self, '/')) : NULL;
	if (!slash)
		return -1;
	*slash = '\0';
	return snprintf(buf, len, "%s/gpool-image", self) < (int)len ? 0 : -1;
}

/* Run gpool-image unpack as the account, the archive on stdin and the directory dfd as fd 3;
 * its complaint in err. */
static int run_unpack(const struct step *s, int in, int dfd, const char *images, gp_error_t *err)
{
	char helper[PATH_MAX];
	if (helper_path(helper, sizeof(helper)) < 0)
		return gp_errprintf(err, "cannot find gpool-image");
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return gp_errprintf(err, "pipe: %s", strerror(errno));
	char *argv[] = {"gpool-image", "unpack", "-", (char *)images, NULL};
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "GPOOL_IMAGE_AS_ROOT=1", NULL};
	bool root = s->account.uid == 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return gp_errprintf(err, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (dup2(in, 0) < 0 || dup2(p[1], 2) < 0 || dup2(dfd, 3) < 0)
			_exit(125);
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		if (geteuid() == 0 && !root &&
		    (setgroups(0, NULL) < 0 || setgid(s->account.gid) < 0 ||
		     setuid(s->account.uid) < 0))
			_exit(125);
		if (!root)
			envp[1] = NULL;
		execve(helper, argv, envp);
		_exit(126);
	}
	close(p[1]);
	char msg[ERR_MAX];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(msg) - 1 && (n = read(p[0], msg + got, sizeof(msg) - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		got += (size_t)n;
	}
	msg[got] = '\0';
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	char *nl = strchr(msg, '\n');
	if (nl)
		*nl = '\0';
	const char *why = msg;
	if (!strncmp(why, "gpool-image: ", 13))
		why += 13;
	if (!*why)
		why = WIFEXITED(st) && WEXITSTATUS(st) == 126 ? "cannot execute gpool-image"
							      : "gpool-image failed";
	return gp_errprintf(err, "container image '%s': %s", s->launch->spec->container, why);
}

/* Whether the image can be unpacked at all, said before it is. Unpacking writes at the least
 * the archive's blobs (its size) and, for a staged image, the archive itself first (its size
 * again: archive_fd), then each layer's files, gzip-compressed in the archive: more than the
 * room under images, or than the cache's bound, cannot fit. e: the staged archive, else pulled
 * (a file on the node already). 0 / -1 with err. */
static int fits(const struct step *s, const char *images, const Gpool__StageEntry *e, int pulled,
		const struct step_ctr_opts *o, gp_error_t *err)
{
	struct stat st;
	uint64_t need;
	if (e)
		need = 2 * e->size;
	else if (pulled >= 0 && fstat(pulled, &st) == 0 && S_ISREG(st.st_mode))
		need = (uint64_t)st.st_size;
	else
		return 0; /* not known here: gpool-image says what goes wrong */
	int64_t avail = gp_fs_free(images);
	if (avail >= 0 && (uint64_t)avail < need) {
		errno = ENOSPC;
		return gp_fs_errprintf(err, ENOSPC, images, need,
				       "container image '%s' does not fit on this node (checked "
				       "before unpacking it)",
				       s->launch->spec->container);
	}
	if (o->cache_max && need > o->cache_max) {
		errno = EFBIG;
		return gp_errprintf(err,
				    "container image '%s' does not fit: its archive alone (%llu "
				    "bytes) is over the node's image_cache (%llu bytes)",
				    s->launch->spec->container, (unsigned long long)need,
				    (unsigned long long)o->cache_max);
	}
	return 0;
}

/* ---- the bound on the cache's size ---- */

static uint64_t walk_bytes;
static int walk_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)flag;
	(void)f;
	walk_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

struct entry {
	char path[2048 + 2 * 256 + 8];
	uint64_t bytes;
	time_t used;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->used < y->used ? -1 : x->used > y->used;
}

/* Remove unlocked entries, least recently used first, while the cache holds more than max
 * bytes. Runs as root over the accounts' trees: nftw with FTW_PHYS never follows a link, and
 * gp_rm_rf removes through descriptors. */
static void evict(const char *images, uint64_t max)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	DIR *top = opendir(images);
	struct dirent *u;
	while (top && (u = readdir(top))) {
		if (u->d_name[0] != 'u')
			continue;
		char ud[2048 + 256 + 4];
		snprintf(ud, sizeof(ud), "%s/%s", images, u->d_name);
		DIR *dd = opendir(ud);
		struct dirent *k;
		while (dd && (k = readdir(dd))) {
			if (k->d_name[0] == '.')
				continue;
			if (n == cap) {
				struct entry *nv =
				    realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
				if (!nv)
					break;
				v = nv;
			}
			struct entry *e = &v[n];
			snprintf(e->path, sizeof(e->path), "%s/%s", ud, k->d_name);
			struct stat st;
			if (lstat(e->path, &st) < 0 || !S_ISDIR(st.st_mode))
				continue;
			e->used = st.st_mtime;
			walk_bytes = 0;
			nftw(e->path, walk_cb, 16, FTW_PHYS | FTW_MOUNT);
			e->bytes = walk_bytes;
			total += e->bytes;
			n++;
		}
		if (dd)
			closedir(dd);
	}
	if (top)
		closedir(top);
	qsort(v, n, sizeof(*v), entry_cmp);
	for (size_t i = 0; i < n && total > max; i++) {
		int fd = open(v[i].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			/* unfinished unpacks (tmp.*) are skipped above; a held entry is in use */
			if (gp_rm_rf(v[i].path) == 0) {
				gp_info("image cache: removed %s (%llu bytes, over %llu)",
					v[i].path, (unsigned long long)v[i].bytes,
					(unsigned long long)max);
				total -= v[i].bytes;
			}
		}
		close(fd);
	}
	free(v);
}

static char *read_path_env(int entry_fd)
{
	int fd = openat(entry_fd, "path", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return strdup(buf);
}

/* The image unpacked into a fresh directory of the account's and renamed into place as the
 * cache's entry c->key (two jobs that unpack the same image at once both succeed, one entry
 * stays), then made root's: c->entry_fd. The archive is the staged entry e or the pulled
 * pr->fd (closed here). */
static int unpack_entry(struct step *s, const char *images, const char *uname,
			const Gpool__StageEntry *e, struct gp_pull_result *pr,
			const struct step_ctr_opts *o, gp_error_t *err)
{
	struct step_ctr *c = s->ctr;
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "tmp.%d.%llu", (int)getpid(),
		 (unsigned long long)s->launch->job_id);
	int tfd = open_dir(c->user_fd, tmp, 0700, &s->account);
	if (tfd < 0)
		return gp_errprintf(err, "cannot make an unpack directory: %s", strerror(errno));
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s/%s", images, uname, tmp);
	int in = -1;
	if (fits(s, images, e, pr->fd, o, err) == 0)
		in = e ? archive_fd(c->images_fd, e, s->cache_dir, images, err) : pr->fd;
	else if (pr->fd >= 0)
		close(pr->fd);
	pr->fd = -1;
	int rc = in < 0 ? -1 : run_unpack(s, in, tfd, images, err);
	close(tfd);
	if (in >= 0)
		close(in);
	if (rc == 0 && renameat(c->user_fd, tmp, c->user_fd, c->key) < 0 && errno != EEXIST &&
	    errno != ENOTEMPTY)
		rc = gp_errprintf(err, "cannot keep the unpacked image: %s", strerror(errno));
	gp_rm_rf(dir); /* what failed, or lost the race to the same image */
	if (rc < 0)
		return -1;
	c->entry_fd = openat(c->user_fd, c->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* root's now: the account's jobs see it only as their containers' root */
	if (c->entry_fd >= 0 && (fchown(c->entry_fd, 0, 0) < 0 || fchmod(c->entry_fd, 0700) < 0))
		return gp_errprintf(err, "cannot take the unpacked image: %s", strerror(errno));
	return 0;
}

int step_container_prepare(struct step *s, const char *state_dir, const struct step_ctr_opts *o,
			   gp_error_t *err)
{
	const Gpool__JobSpec *spec = s->launch->spec;
	const Gpool__StageEntry *e = image_entry(spec);
	/* a staged archive's name is a file's base name; a registry's names a host and a '/' */
	bool registry = !e && gp_imageref_like(spec->container);
	if (!e && !registry)
		return gp_errprintf(err, "container image '%s' was not staged", spec->container);
	/* said before anything is fetched or unpacked: without crun no container runs here */
	if (!crun_installed())
		return gp_errprintf(err,
				    "container image '%s': crun is not installed on this node "
				    "(Debian's package crun; looked for in %s)",
				    spec->container, crun_environ_path + 5);
	struct step_ctr *c = calloc(1, sizeof(*c));
	if (!c)
		return gp_errprintf(err, "out of memory");
	c->images_fd = c->user_fd = c->entry_fd = -1;
	s->ctr = c;
	struct gp_pull_result pr = {.fd = -1};
	if (e)
		image_key(e, c->key);
	char images[2048], uname[32];
	snprintf(images, sizeof(images), "%s/images", state_dir);
	snprintf(c->crun_root, sizeof(c->crun_root), "%s/crun", state_dir);
	snprintf(c->bundles, sizeof(c->bundles), "%s/containers/job%llu.%u", state_dir,
		 (unsigned long long)s->launch->job_id, s->launch->attempt);
	snprintf(uname, sizeof(uname), "u%u", (unsigned)s->account.uid);
	/* this gstepd's pid in it: agents of other pools on this PC (test clusters) may have a
	 * node of the same name running a job of the same id */
	snprintf(c->roots, sizeof(c->roots), "%s/%s.%d.%llu.%u", ROOTS_DIR, s->node ? s->node : "",
		 (int)getpid(), (unsigned long long)s->launch->job_id, s->launch->attempt);
	if (gp_mkdir_p(images, 0711) < 0 || gp_mkdir_p(c->crun_root, 0700) < 0 ||
	    gp_mkdir_p(c->bundles, 0700) < 0)
		return gp_errprintf(err, "cannot make the container directories under '%s': %s",
				    state_dir, strerror(errno));
	if (gp_mkdir_p(c->roots, 0711) < 0 || chmod(ROOTS_DIR, 0711) < 0 ||
	    chmod(c->roots, 0711) < 0)
		return gp_errprintf(err, "cannot make '%s': %s", c->roots, strerror(errno));
	chmod(images, 0711);
	if ((c->images_fd = open_dir(AT_FDCWD, images, 0711, NULL)) < 0 ||
	    (c->user_fd = open_dir(c->images_fd, uname, 0711, NULL)) < 0)
		return gp_errprintf(err, "image cache '%s' is unsafe or unusable: %s", images,
				    strerror(errno));
	if (registry) {
		struct gp_pull_opts po = {.images_dir = images,
					  .insecure = o->insecure_registries,
					  .max_bytes = o->pull_max,
					  .keep_bytes = o->cache_max,
					  .skopeo = o->skopeo,
					  .owner = &s->account};
		if (gp_pull_image(spec->container, &po, &pr, err) < 0)
			return -1;
		memcpy(c->key, pr.key, sizeof(pr.key));
		gp_info("job %llu.%u: image %s (%s) %s: %llu bytes in %.3f s",
			(unsigned long long)s->launch->job_id, s->launch->attempt, spec->container,
			pr.digest, pr.pulled ? "pulled" : "already on the node",
			(unsigned long long)pr.bytes, pr.seconds);
	}
	/* entries made before the tasks' roots were overlays hold crun's old mount points (an
	 * empty libcuda.so.1): the layout is part of the entry's name, so those are not used */
	size_t kl = strnlen(c->key, 65);
	snprintf(c->key + kl, sizeof(c->key) - kl, "%s", CACHE_LAYOUT);
	double t0 = gp_now();
	bool unpacked = false;
	c->entry_fd = openat(c->user_fd, c->key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->entry_fd < 0) {
		if (unpack_entry(s, images, uname, e, &pr, o, err) < 0)
			return -1;
		unpacked = true;
	}
	if (pr.fd >= 0)
		close(pr.fd); /* unpacked before: the pulled archive was not needed */
	if (c->entry_fd < 0)
		return gp_errprintf(err, "cannot open the unpacked image: %s", strerror(errno));
	if (flock(c->entry_fd, LOCK_SH) < 0)
		return gp_errprintf(err, "cannot hold the unpacked image: %s", strerror(errno));
	futimens(c->entry_fd, NULL); /* used now: the least recently used goes first */
	struct stat st;
	if (fstat(c->entry_fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 077) ||
	    fstatat(c->entry_fd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return gp_errprintf(err, "container image '%s': its unpacked tree is unusable",
				    spec->container);
	snprintf(c->rootfs, sizeof(c->rootfs), "%s/%s/%s/rootfs", images, uname, c->key);
	c->path_env = read_path_env(c->entry_fd);
	gp_info("job %llu.%u: image %.12s %s in %.3f s", (unsigned long long)s->launch->job_id,
		s->launch->attempt, c->key, unpacked ? "unpacked" : "cached", gp_now() - t0);
	if (unpacked && o->cache_max)
		evict(images, o->cache_max);
	return 0;
}

/* ---- the bundle ---- */

static json_t *devices_of(const struct step *s, const struct task *t)
{
	const Gpool__Launch *l = s->launch;
	int vendor[64];
	bool fake[64];
	uint32_t dev_node[64];
	size_t ncards = l->n_cards < 64 ? l->n_cards : 64;
	for (size_t i = 0; i < ncards; i++) {
		vendor[i] = l->cards[i]->vendor;
		fake[i] = l->cards[i]->fake;
		dev_node[i] = l->cards[i]->dev_node;
	}
	char paths[80][GP_CTRDEV_PATH];
	size_t n = gp_ctrdev_paths(t->tp->cards, t->tp->n_cards, vendor, fake, dev_node, ncards,
				   paths, 80);
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0 || !S_ISCHR(st.st_mode))
			continue; /* not on this host (nvidia-modeset, say) */
		/* the job's user owns its container's nodes: crun makes them, as root, with
		 * fileMode less its umask (0666 became 0644 on an H100: root's, read-only to the
		 * user, and CUDA found no device); which card it may open is the devices
		 * cgroup's and this list's to say, not the node's mode */
		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:I, s:I, s:i, s:I, s:I}", "path", paths[i], "type",
				 "c", "major", (json_int_t)major(st.st_rdev), "minor",
				 (json_int_t)minor(st.st_rdev), "fileMode",
				 (int)(st.st_mode & 0777), "uid", (json_int_t)s->account.uid, "gid",
				 (json_int_t)s->account.gid));
	}
	return a;
}

static bool has_nvidia(const struct step *s, const struct task *t)
{
	for (size_t k = 0; k < t->tp->n_cards; k++) {
		uint32_t i = t->tp->cards[k];
		if (i < s->launch->n_cards && s->launch->cards[i]->vendor == 1 &&
		    !s->launch->cards[i]->fake)
			return true;
	}
	return false;
}

/* The MPS pipe directory of a task that shares its one real NVIDIA card (--gpu-share), made
 * from the launch as env.c makes the task's CUDA_MPS_PIPE_DIRECTORY: never read from the
 * task's environment, which the submitter sets (root binds this path into the container).
 * false for any other task. */
static bool mps_pipe_dir(const struct step *s, const struct task *t, char *out, size_t len)
{
	const Gpool__Launch *l = s->launch;
	if (!l->spec || !l->spec->gpu_share || t->tp->n_cards != 1 || !s->mps_root[0])
		return false;
	const Gpool__Card *card = NULL;
	for (size_t i = 0; i < l->n_cards; i++)
		if (l->cards[i]->index == t->tp->cards[0])
			card = l->cards[i];
	char dir[4200];
	if (!card || card->vendor != GPOOL__VENDOR__VENDOR_NVIDIA || card->fake ||
	    gp_mps_dir(s->mps_root, card->index, dir, sizeof(dir)) < 0)
		return false;
	return snprintf(out, len, "%s/pipe", dir) < (int)len;
}

static json_t *bundle_config(struct step *s, struct task *t, const char *rootfs)
{
	struct step_ctr *c = s->ctr;
	const Gpool__JobSpec *spec = s->launch->spec;
	json_t *args = json_array();
	/* an --mpi=mpirun job's tasks are gpool-launch's (task.c), which the image lacks */
	for (size_t i = 0; i < spec->n_argv; i++)
		json_array_append_new(args, json_string(spec->argv[i]));
	json_t *env = json_array();
	for (char **e = t->env; e && *e; e++) {
		if (c->path_env && !strncmp(*e, "PATH=", 5))
			continue;
		json_array_append_new(env, json_string(*e));
	}
	if (c->path_env) {
		char *p;
		if (asprintf(&p, "PATH=%s", c->path_env) > 0) {
			json_array_append_new(env, json_string(p));
			free(p);
		}
	}
	gid_t groups[256];
	int ng = 256;
	json_t *gids = json_array();
	/* the user namespace maps the account's uid and its groups to themselves, nothing else:
	 * the task is the user inside as outside, and no id in it is anyone else's */
	json_t *uidmap = json_pack("[{s:I, s:I, s:i}]", "containerID", (json_int_t)s->account.uid,
				   "hostID", (json_int_t)s->account.uid, "size", 1);
	json_t *gidmap = json_pack("[{s:I, s:I, s:i}]", "containerID", (json_int_t)s->account.gid,
				   "hostID", (json_int_t)s->account.gid, "size", 1);
	if (s->account.uid != 0 && getgrouplist(s->account.name, s->account.gid, groups, &ng) >= 0)
		for (int i = 0; i < ng; i++)
			if (groups[i] != s->account.gid) {
				json_array_append_new(gids, json_integer(groups[i]));
				json_array_append_new(gidmap,
						      json_pack("{s:I, s:I, s:i}", "containerID",
								(json_int_t)groups[i], "hostID",
								(json_int_t)groups[i], "size", 1));
			}
	json_t *caps = json_array();
	json_t *proc =
	    json_pack("{s:b, s:{s:I, s:I, s:o}, s:o, s:o, s:s, s:b, s:{s:o, s:o, s:o, s:o, s:o}}",
		      "terminal", 0, "user", "uid", (json_int_t)s->account.uid, "gid",
		      (json_int_t)s->account.gid, "additionalGids", gids, "args", args, "env", env,
		      "cwd", s->workdir, "noNewPrivileges", 1, "capabilities", "bounding",
		      json_copy(caps), "effective", json_copy(caps), "inheritable", json_copy(caps),
		      "permitted", json_copy(caps), "ambient", json_copy(caps));
	json_decref(caps);
	char pipe_dir[4300];
	const char *mps = mps_pipe_dir(s, t, pipe_dir, sizeof(pipe_dir)) ? pipe_dir : NULL;
	static const char *const etc_all[] = {"/etc/hosts", "/etc/resolv.conf"};
	const char *etc[2];
	size_t netc = 0;
	for (size_t i = 0; i < 2; i++)
		if (access(etc_all[i], R_OK) == 0)
			etc[netc++] = etc_all[i];
	struct gp_ctrdev_file files[128];
	size_t nfiles = 0;
	if (has_nvidia(s, t)) {
		/* found as gstepd's own loader would find them (the agent's environment) */
		nfiles = gp_ctrdev_nvidia_files("", getenv("LD_LIBRARY_PATH"), getenv("PATH"),
						gp_ctrdev_image_libdir(s->ctr->rootfs), files, 128);
		if (nfiles == 128)
			gp_warn(
			    "job %llu: more than 128 driver files: the container gets the first",
			    (unsigned long long)s->launch->job_id);
	}
	const char *pmixdir = gp_pmixsrv_dir(s->pmix);
	struct gp_ctr_mounts_in in = {.workdir = s->workdir,
				      .pmixdir = pmixdir,
				      .mps_pipe = mps,
				      .driver = files,
				      .ndriver = nfiles,
				      .etc = etc,
				      .netc = netc};
	json_t *mounts = gp_ctr_mounts(&in);
	char why[300];
	if (mounts && gp_ctr_mounts_check(mounts, why, sizeof(why)) < 0) {
		/* a hidden mount (an MPS pipe directory: the budget not enforced): no container */
		gp_err("job %llu: %s", (unsigned long long)s->launch->job_id, why);
		json_decref(mounts);
		mounts = NULL;
	}
	json_t *masked = json_pack("[s,s,s,s,s,s]", "/proc/kcore", "/proc/keys", "/proc/timer_list",
				   "/proc/sched_debug", "/sys/firmware", "/proc/scsi");
	json_t *ro = json_pack("[s,s,s,s,s]", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
			       "/proc/sysrq-trigger");
	/* a user namespace, and no pid, network or uts one: gstepd's kills reach the task's
	 * processes as ever (a pid namespace's init would ignore a cancel's SIGTERM), and the
	 * task has the node's name and addresses, which its peers use. In the user namespace
	 * crun binds the cards' device nodes from the host instead of making them (mknod) */
	json_t *ns = json_pack("[{s:s},{s:s}]", "type", "user", "type", "mount");
	if (!mps)
		json_array_append_new(ns, json_pack("{s:s}", "type", "ipc"));
	json_t *lnx = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "namespaces", ns, "uidMappings",
				uidmap, "gidMappings", gidmap, "devices", devices_of(s, t),
				"maskedPaths", masked, "readonlyPaths", ro);
	return json_pack("{s:s, s:o, s:{s:s, s:b}, s:o, s:o}", "ociVersion", "1.0.2", "process",
			 proc, "root", "path", rootfs, "readonly", 1, "mounts", mounts, "linux",
			 lnx);
}

char **step_container_argv(struct step *s, struct task *t, gp_error_t *err)
{
	struct step_ctr *c = s->ctr;
	char dir[PATH_MAX], cfg[PATH_MAX + 16], id[128];
	snprintf(dir, sizeof(dir), "%s/%u", c->bundles, t->tp->rank);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		gp_errprintf(err, "cannot make the bundle '%s': %s", dir, strerror(errno));
		return NULL;
	}
	char root[PATH_MAX + 16];
	snprintf(root, sizeof(root), "%s/%u", c->roots, t->tp->rank);
	if (mkdir(root, 0700) < 0 && errno != EEXIST) {
		gp_errprintf(err, "cannot make '%s': %s", root, strerror(errno));
		return NULL;
	}
	free(t->croot);
	if (!(t->croot = strdup(root))) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	json_t *j = bundle_config(s, t, root);
	snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
	if (!j || json_dump_file(j, cfg, JSON_COMPACT) < 0) {
		json_decref(j);
		gp_errprintf(err, "cannot write the bundle '%s'", cfg);
		return NULL;
	}
	json_decref(j);
	/* one crun state directory per node (its --root), and an id no other job shares */
	snprintf(id, sizeof(id), "gpool-%llu.%u.%u", (unsigned long long)s->launch->job_id,
		 s->launch->attempt, t->tp->rank);
	const char *v[] = {"crun", "--root",   c->crun_root, "--cgroup-manager=disabled",
			   "run",  "--bundle", dir,	     "--no-new-keyring",
			   id,	   NULL};
	size_t n = sizeof(v) / sizeof(v[0]);
	char **argv = calloc(n, sizeof(char *));
	for (size_t i = 0; argv && i + 1 < n; i++)
		if (!(argv[i] = strdup(v[i]))) {
			step_container_argv_free(argv);
			argv = NULL;
		}
	if (!argv)
		gp_errprintf(err, "out of memory");
	return argv;
}

void step_container_argv_free(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

/* d[at..] = src, within cap (NUL kept); the new length, or cap when it does not fit.
 * Async-signal-safe. */
static size_t put_str(char *d, size_t at, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (at >= cap || n >= cap - at)
		return cap;
	memcpy(d + at, src, n + 1);
	return at + n;
}

/* An overlay of the image's tree at t->croot whose upper layer is a tmpfs of this task's: what
 * crun makes in the root (the mount points of the driver's files, of the working directory)
 * lands there, not in the node's cached copy, where a later job would find them as empty files
 * (an H100 run: a job without a card found an empty libcuda.so.1). The tmpfs is mounted at
 * croot first and holds the upper and work directories; the overlay then covers it (overlayfs
 * keeps its own references to them). The upper root takes the image root's owner and mode, so
 * crun, as the user in the namespace, may make entries at the top as before. -1 with errno
 * when the kernel or the paths (a ',' or ':' in them) do not allow it: the caller binds. */
static int overlay_root(const struct step *s, const struct task *t)
{
	const char *low = s->ctr->rootfs, *root = t->croot;
	struct stat st;
	if (strpbrk(low, ",:\\") || strpbrk(root, ",:\\") || stat(low, &st) < 0)
		return errno = EINVAL, -1;
	char up[PATH_MAX + 8], wk[PATH_MAX + 8], opts[3 * PATH_MAX + 64];
	size_t n = put_str(up, 0, sizeof(up), root);
	n = put_str(up, n, sizeof(up), "/u");
	size_t k = put_str(wk, 0, sizeof(wk), root);
	k = put_str(wk, k, sizeof(wk), "/w");
	size_t o = put_str(opts, 0, sizeof(opts), "lowerdir=");
	o = put_str(opts, o, sizeof(opts), low);
	o = put_str(opts, o, sizeof(opts), ",upperdir=");
	o = put_str(opts, o, sizeof(opts), up);
	o = put_str(opts, o, sizeof(opts), ",workdir=");
	o = put_str(opts, o, sizeof(opts), wk);
	if (n == sizeof(up) || k == sizeof(wk) || o == sizeof(opts))
		return errno = ENAMETOOLONG, -1;
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64m") < 0)
		return -1;
	if (mkdir(up, 0755) < 0 || mkdir(wk, 0700) < 0 || chown(up, st.st_uid, st.st_gid) < 0 ||
	    chmod(up, st.st_mode & 07777) < 0 ||
	    mount("overlay", root, "overlay", MS_NOSUID | MS_NODEV, opts) < 0) {
		int e = errno;
		umount2(root, MNT_DETACH);
		return errno = e, -1;
	}
	return 0;
}

int step_container_bind(const struct step *s, const struct task *t)
{
	if (!s->ctr || !t->croot)
		return errno = EINVAL, -1;
	if (overlay_root(s, t) == 0)
		return 0;
	/* said on the task's stderr (the job's), once a task: what crun makes will stay in
	 * the node's copy of the image */
	static const char msg[] = "gstepd: overlayfs could not be used: the image's tree is "
				  "bound as it is\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do about it */
	}
	return mount(s->ctr->rootfs, t->croot, NULL, MS_BIND | MS_REC, NULL);
}

void step_container_release(struct step *s)
{
	struct step_ctr *c = s ? s->ctr : NULL;
	if (!c)
		return;
	if (c->bundles[0])
		gp_rm_rf(c->bundles);
	/* the bind targets: empty here (each bind lived in its task's mount namespace) */
	for (size_t i = 0; c->roots[0] && i < s->ntasks; i++) {
		free(s->tasks[i].croot);
		s->tasks[i].croot = NULL;
		char r[PATH_MAX + 16];
		snprintf(r, sizeof(r), "%s/%u", c->roots, s->tasks[i].tp->rank);
		rmdir(r);
	}
	if (c->roots[0])
		rmdir(c->roots);
	/* crun's state of a container whose crun was killed stays: remove ours */
	for (size_t i = 0; i < s->ntasks; i++) {
		char st[PATH_MAX + 160];
		snprintf(st, sizeof(st), "%s/gpool-%llu.%u.%u", c->crun_root,
			 (unsigned long long)s->launch->job_id, s->launch->attempt,
			 s->tasks[i].tp->rank);
		gp_rm_rf(st);
	}
	if (c->entry_fd >= 0)
		close(c->entry_fd); /* and its lock */
	if (c->user_fd >= 0)
		close(c->user_fd);
	if (c->images_fd >= 0)
		close(c->images_fd);
	free(c->path_env);
	free(c);
	s->ctr = NULL;
}
