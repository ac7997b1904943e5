/* staging.c: working directory and staged files. */
#include "worker/node/staging.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fserr.h"
#include "common/util.h"

bool gp_stage_name_ok(const char *name)
{
	return gp_path_relative_ok(name, false);
}

int gp_stage_scratch_path(const char *scratch_root, uint64_t job_id, uint32_t attempt, char *buf,
			  size_t len)
{
	int n =
	    snprintf(buf, len, "%s/job%llu.%u", scratch_root, (unsigned long long)job_id, attempt);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* Open the scratch root (made when absent) without following a link, and check it: owned by
 * root (or by this process's uid, for an unprivileged agent), not writable by group or other
 * unless sticky. A descriptor / -1 with err. */
static int scratch_open(const char *root, gp_error_t *err)
{
	if (!*root || gp_mkdir_p(root, 0755) < 0)
		return gp_errprintf(err, "cannot make scratch directory '%s': %s", root,
				    *root ? strerror(errno) : "empty name");
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		int e = errno;
		if (lstat(root, &st) == 0 && S_ISLNK(st.st_mode))
			return gp_errprintf(err,
					    "scratch directory '%s' is a symbolic link: refused "
					    "(scratch_dir must name a real directory)",
					    root);
		return gp_errprintf(err, "cannot open scratch directory '%s': %s", root,
				    strerror(e));
	}
	uid_t me = geteuid();
	const char *why = NULL;
	char text[96];
	if (fstat(fd, &st) < 0) {
		why = strerror(errno);
	} else if (st.st_uid != 0 && st.st_uid != me) {
		if (me == 0)
			snprintf(text, sizeof(text), "owned by uid %u, not root",
				 (unsigned)st.st_uid);
		else
			snprintf(text, sizeof(text),
				 "owned by uid %u, not root or uid %u (this agent)",
				 (unsigned)st.st_uid, (unsigned)me);
		why = text;
	} else if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
		snprintf(text, sizeof(text),
			 "writable by group or others without the sticky bit (mode %04o)",
			 (unsigned)(st.st_mode & 07777));
		why = text;
	}
	if (why) {
		close(fd);
		return gp_errprintf(err, "scratch directory '%s' is %s: refused", root, why);
	}
	return fd;
}

int gp_stage_scratch_check(const char *scratch_root, gp_error_t *err)
{
	int fd = scratch_open(scratch_root, err);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int gp_stage_workdir(const Gpool__Launch *l, const char *scratch_root, const struct gp_account *a,
		     char **dir, bool *owned, gp_error_t *err)
{
	struct stat st;
	*dir = NULL;
	*owned = false;
	if (l->spec && l->spec->chdir && *l->spec->chdir) {
		if (stat(l->spec->chdir, &st) < 0 || !S_ISDIR(st.st_mode))
			return gp_errprintf(err, "working directory '%s' does not exist",
					    l->spec->chdir);
		if (!(*dir = strdup(l->spec->chdir)))
			return gp_errprintf(err, "out of memory");
		return 0;
	}
	char path[4096], name[64];
	if (gp_stage_scratch_path(scratch_root, l->job_id, l->attempt, path, sizeof(path)) < 0)
		return gp_errprintf(err, "scratch directory '%s' is too long", scratch_root);
	snprintf(name, sizeof(name), "job%llu.%u", (unsigned long long)l->job_id, l->attempt);
	int rfd = scratch_open(scratch_root, err);
	if (rfd < 0)
		return -1;
	/* everything from here by descriptor: a name swapped for a link on the way is refused,
	 * never followed, and root's chown and chmod land on the directory made here */
	if (mkdirat(rfd, name, 0700) < 0 && errno != EEXIST) {
		gp_fs_errprintf(err, errno, scratch_root, 0, "cannot make '%s'", path);
		close(rfd);
		return -1;
	}
	int dfd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rfd);
	/* a gstepd of this attempt killed before its cleanup may have left it: accept only a
	 * real directory, made by us or given to the account already */
	if (dfd < 0 || fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    (st.st_uid != geteuid() && st.st_uid != a->uid)) {
		gp_errprintf(err, "'%s' is not a directory of this agent or of '%s': refused", path,
			     a->name);
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	if (((st.st_uid != a->uid || st.st_gid != a->gid) && fchown(dfd, a->uid, a->gid) < 0) ||
	    fchmod(dfd, 0700) < 0) {
		gp_errprintf(err, "cannot give '%s' to '%s': %s", path, a->name, strerror(errno));
		close(dfd);
		return -1;
	}
	close(dfd);
	if (!(*dir = strdup(path)))
		return gp_errprintf(err, "out of memory");
	*owned = true;
	return 0;
}

static int mkparents(int dfd, const char *name)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", name);
	for (char *p = strchr(buf, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (*buf && mkdirat(dfd, buf, 0700) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

static int write_one(int dfd, const char *name, const uint8_t *data, size_t len, mode_t mode)
{
	if (mkparents(dfd, name) < 0)
		return -1;
	unlinkat(dfd, name, 0);
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, mode & GP_MODE_BITS) < 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* Runs in the child, as the account: report a failure through fd as text. */
static int stage_as_user(const Gpool__JobSpec *spec, const char *dir, int fd)
{
	char msg[512];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(msg, sizeof(msg), "cannot open '%s': %s", dir, strerror(errno));
		goto fail;
	}
	if (spec->script.len && spec->n_argv) {
		const char *name = spec->argv[0];
		if (!strncmp(name, "./", 2))
			name += 2;
		if (!gp_stage_name_ok(name)) {
			snprintf(msg, sizeof(msg), "invalid script name '%s'", spec->argv[0]);
			goto fail;
		}
		if (write_one(dfd, name, spec->script.data, spec->script.len, 0700) < 0) {
			char why[400];
			snprintf(msg, sizeof(msg), "cannot write script '%s': %s", name,
				 gp_fs_why(errno, dir, spec->script.len, why, sizeof(why)));
			goto fail;
		}
	}
	for (size_t i = 0; i < spec->n_files; i++) {
		const Gpool__StagedFile *f = spec->files[i];
		if (write_one(dfd, f->name, f->content.data, f->content.len,
			      gp_mode_plain(f->mode, 0600)) < 0) {
			char why[400];
			snprintf(msg, sizeof(msg), "cannot write staged file '%s': %s", f->name,
				 gp_fs_why(errno, dir, f->content.len, why, sizeof(why)));
			goto fail;
		}
	}
	return 0;
fail:
	if (write(fd, msg, strlen(msg)) < 0) {
		/* nothing more to say */
	}
	return 1;
}

/* Fork a staging child with a pipe p for its error message: 0 in the child (the read end
 * closed), its pid in the parent, -1 with err. */
static pid_t child_start(int p[2], gp_error_t *err)
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return gp_errprintf(err, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return gp_errprintf(err, "fork: %s", strerror(errno));
	}
	if (pid == 0)
		close(p[0]);
	return pid;
}

/* The parent's side of a staging child: its message on the pipe p (written end closed here)
 * is the error when it does not exit 0. */
static int child_result(pid_t pid, int p[2], gp_error_t *err)
{
	close(p[1]);
	char msg[512];
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(msg) - 1 && (n = read(p[0], msg + got, sizeof(msg) - 1 - got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	msg[got] = '\0';
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return gp_errprintf(err, "%s", got ? msg : "staging files failed");
	return 0;
}

int gp_stage_files(const Gpool__JobSpec *spec, const char *dir, const struct gp_account *a,
		   gp_error_t *err)
{
	if (!spec || (!spec->script.len && !spec->n_files))
		return 0;
	for (size_t i = 0; i < spec->n_files; i++)
		if (!gp_stage_name_ok(spec->files[i]->name))
			return gp_errprintf(err, "invalid staged file name '%s'",
					    spec->files[i]->name);
	int p[2];
	pid_t pid = child_start(p, err);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (geteuid() == 0 && a->uid != 0) {
			if (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0) {
				const char *m = "cannot switch to the task account";
				if (write(p[1], m, strlen(m)) < 0) {
				}
				_exit(1);
			}
		}
		umask(077);
		_exit(stage_as_user(spec, dir, p[1]));
	}
	return child_result(pid, p, err);
}

/* ---- a manifest from the chunk cache ---- */

struct open_chunk {
	const uint8_t *h;
	int fd;
};

static int oc_cmp(const void *a, const void *b)
{
	return memcmp(((const struct open_chunk *)a)->h, ((const struct open_chunk *)b)->h,
		      GP_HASH_LEN);
}

static int copy_chunks(int out, const Gpool__StageEntry *e, struct open_chunk *oc, size_t noc,
		       uint8_t *buf)
{
	for (size_t k = 0; k < e->n_chunks; k++) {
		struct open_chunk key = {e->chunks[k].data, -1};
		struct open_chunk *c = bsearch(&key, oc, noc, sizeof(*oc), oc_cmp);
		if (!c || c->fd < 0) {
			errno = ENOENT;
			return -1;
		}
		uint64_t want = e->size - k * GP_CHUNK_SIZE;
		if (want > GP_CHUNK_SIZE)
			want = GP_CHUNK_SIZE;
		/* in the kernel when it can (no copy through this process); else read + write */
		loff_t in = 0;
		size_t moved = 0;
		while (moved < want) {
			ssize_t n = copy_file_range(c->fd, &in, out, NULL, want - moved, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			moved += (size_t)n;
		}
		if (moved == want)
			continue;
		if (moved) { /* a partial copy: start this chunk again the plain way */
			if (lseek(out, -(off_t)moved, SEEK_CUR) < 0)
				return -1;
		}
		size_t got = 0;
		while (got < want) {
			ssize_t n = pread(c->fd, buf + got, want - got, (off_t)got);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				errno = n < 0 ? errno : EIO;
				return -1;
			}
			got += (size_t)n;
		}
		size_t off = 0;
		while (off < got) {
			ssize_t n = write(out, buf + off, got - off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -1;
			off += (size_t)n;
		}
	}
	return 0;
}

/* The container image's entry (JobSpec.container): fetched into the cache, never written into
 * the working directory (worker/stepd/container.c unpacks it). */
static bool is_image(const Gpool__JobSpec *spec, const Gpool__StageEntry *e)
{
	return spec->container && *spec->container && !strcmp(spec->container, e->path);
}

/* Chunks copied from the cache now: not a directory's, the image's or a lazy file's. */
static bool copied(const Gpool__JobSpec *spec, const Gpool__StageEntry *e)
{
	return !e->dir && !e->lazy && !is_image(spec, e);
}

/* Runs in the child: the chunks are open already, the account is ours. */
static int write_manifest(const Gpool__JobSpec *spec, const char *dir, struct open_chunk *oc,
			  size_t noc, char *msg, size_t len)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint8_t *buf = malloc(GP_CHUNK_SIZE);
	if (dfd < 0 || !buf) {
		snprintf(msg, len, "cannot open '%s': %s", dir, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < spec->n_stage; i++) {
		const Gpool__StageEntry *e = spec->stage[i];
		if (is_image(spec, e))
			continue;
		if (mkparents(dfd, e->path) < 0) {
			snprintf(msg, len, "cannot make the directories of '%s': %s", e->path,
				 strerror(errno));
			return -1;
		}
		if (e->dir) {
			/* its own mode comes last: a read-only directory still gets its files */
			if (mkdirat(dfd, e->path, 0700) < 0 && errno != EEXIST) {
				snprintf(msg, len, "cannot make directory '%s': %s", e->path,
					 strerror(errno));
				return -1;
			}
			continue;
		}
		unlinkat(dfd, e->path, 0);
		int fd = openat(dfd, e->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		/* a lazy file: sparse, of its size; its tasks ask for the ranges they read */
		int filled = fd < 0    ? -1
			     : e->lazy ? ftruncate(fd, (off_t)e->size)
				       : copy_chunks(fd, e, oc, noc, buf);
		char why[400];
		if (filled < 0 || fchmod(fd, gp_mode_plain(e->mode, 0600)) < 0) {
			snprintf(msg, len, "cannot write staged file '%s': %s", e->path,
				 gp_fs_why(errno, dir, e->size, why, sizeof(why)));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		if (close(fd) < 0) {
			snprintf(msg, len, "cannot write staged file '%s': %s", e->path,
				 gp_fs_why(errno, dir, e->size, why, sizeof(why)));
			return -1;
		}
	}
	for (size_t i = spec->n_stage; i-- > 0;)
		if (spec->stage[i]->dir)
			fchmodat(dfd, spec->stage[i]->path,
				 gp_mode_plain(spec->stage[i]->mode, 0700), 0);
	free(buf);
	close(dfd);
	return 0;
}

static int manifest_child(const Gpool__JobSpec *spec, const char *dir, const struct gp_account *a,
			  const char *cache_dir, int fd)
{
	char msg[512];
	size_t total = 0;
	for (size_t i = 0; i < spec->n_stage; i++)
		total += copied(spec, spec->stage[i]) ? spec->stage[i]->n_chunks : 0;
	struct open_chunk *oc = calloc(total ? total : 1, sizeof(*oc));
	if (!oc) {
		snprintf(msg, sizeof(msg), "out of memory");
		goto fail;
	}
	size_t n = 0;
	for (size_t i = 0; i < spec->n_stage; i++)
		for (size_t k = 0; copied(spec, spec->stage[i]) && k < spec->stage[i]->n_chunks;
		     k++)
			oc[n++] = (struct open_chunk){spec->stage[i]->chunks[k].data, -1};
	qsort(oc, n, sizeof(*oc), oc_cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || memcmp(oc[i].h, oc[u - 1].h, GP_HASH_LEN))
			oc[u++] = oc[i];
	/* every chunk open before the account is ours: the cache is root's alone */
	struct rlimit rl = {u + 64, u + 64};
	struct rlimit cur;
	if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_cur < rl.rlim_cur &&
	    setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		snprintf(msg, sizeof(msg), "cannot open %zu chunks at once: %s", u,
			 strerror(errno));
		goto fail;
	}
	for (size_t i = 0; i < u; i++) {
		char path[4200];
		if (gp_chunk_path(cache_dir, oc[i].h, path, sizeof(path)) < 0 ||
		    (oc[i].fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			snprintf(msg, sizeof(msg), "chunk missing from the cache '%s': %s",
				 cache_dir, strerror(errno));
			goto fail;
		}
	}
	if (geteuid() == 0 && a->uid != 0) {
		if (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0) {
			snprintf(msg, sizeof(msg), "cannot switch to the task account");
			goto fail;
		}
	}
	umask(077);
	if (write_manifest(spec, dir, oc, u, msg, sizeof(msg)) < 0)
		goto fail;
	return 0;
fail:
	if (write(fd, msg, strlen(msg)) < 0) {
		/* nothing more to say */
	}
	return 1;
}

int gp_stage_manifest(const Gpool__JobSpec *spec, const char *dir, const struct gp_account *a,
		      const char *cache_dir, gp_error_t *err)
{
	if (!spec || !spec->n_stage)
		return 0;
	for (size_t i = 0; i < spec->n_stage; i++)
		if (!gp_entry_ok(spec->stage[i]))
			return gp_errprintf(err, "invalid staged entry '%s'", spec->stage[i]->path);
	int p[2];
	pid_t pid = child_start(p, err);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		_exit(manifest_child(spec, dir, a, cache_dir, p[1]));
	}
	return child_result(pid, p, err);
}

int gp_stage_lazy_fill(int fd, const Gpool__StageEntry *e, uint64_t k0, uint64_t k1,
		       const char *cache_dir, gp_error_t *err)
{
	if (e->dir || k0 > k1 || k1 > e->n_chunks || !gp_entry_ok(e))
		return errno = EINVAL,
		       gp_errprintf(err, "chunks %llu..%llu of '%s': out of range",
				    (unsigned long long)k0, (unsigned long long)k1, e->path);
	for (uint64_t k = k0; k < k1; k++) {
		uint8_t *data;
		size_t len;
		/* the cache's copy is hashed again here: a chunk damaged since it was fetched is
		 * removed and refused, and none of its bytes reach the task's file */
		if (gp_chunk_read(cache_dir, e->chunks[k].data, &data, &len) < 0)
			return gp_errprintf(err, "chunk %llu of '%s' %s", (unsigned long long)k,
					    e->path,
					    errno == EBADMSG ? "does not match its hash: refused"
							     : "is not in the node's cache");
		uint64_t want = e->size - k * GP_CHUNK_SIZE;
		if (len != (want < GP_CHUNK_SIZE ? want : GP_CHUNK_SIZE)) {
			free(data);
			return errno = EBADMSG,
			       gp_errprintf(err, "chunk %llu of '%s' has the wrong length: refused",
					    (unsigned long long)k, e->path);
		}
		size_t off = 0;
		while (off < len) {
			ssize_t n =
			    pwrite(fd, data + off, len - off, (off_t)(k * GP_CHUNK_SIZE + off));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				int er = n < 0 ? errno : EIO;
				free(data);
				return errno = er, gp_errprintf(err, "cannot write '%s': %s",
								e->path, strerror(er));
			}
			off += (size_t)n;
		}
		free(data);
	}
	return 0;
}
