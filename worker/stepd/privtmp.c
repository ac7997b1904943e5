/* privtmp.c: a job's own /tmp, /var/tmp and /dev/shm, bound over the node's in each task's
 * mount namespace (privtmp.h) */
#include "worker/stepd/privtmp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/stepd/step.h"

/* the node's directories a job gets its own of, and their names in its backing directory */
static const struct {
	const char *node, *name;
} dirs[] = {{"/tmp", "tmp"}, {"/var/tmp", "var-tmp"}, {"/dev/shm", "shm"}};
#define NDIRS (sizeof(dirs) / sizeof(dirs[0]))
#define NKEEP 8 /* the scratch directory, the working directory, the node's private_tmp_keep */

struct step_privtmp {
	char *root;
	bool owned;   /* made for this job (a step's is its job's) */
	bool mounted; /* root is the job's tmpfs */
	size_t ndirs;
	char *dir[NDIRS]; /* the job's, bound over target */
	const char *target[NDIRS];
	size_t nkeep;
	char *keep_src[NKEEP]; /* bound at keep_at, inside one of dir[] */
	char *keep_at[NKEEP];
};

/* 2: path is dir, 1: path is under dir, 0: neither */
static int under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (strncmp(path, dir, n))
		return 0;
	return path[n] == '\0' ? 2 : path[n] == '/' ? 1 : 0;
}

static bool real_dir(const char *path, struct stat *st)
{
	return lstat(path, st) == 0 && S_ISDIR(st->st_mode);
}

static void privtmp_free(struct step_privtmp *p)
{
	free(p->root);
	for (size_t i = 0; i < NDIRS; i++)
		free(p->dir[i]);
	for (size_t i = 0; i < NKEEP; i++) {
		free(p->keep_src[i]);
		free(p->keep_at[i]);
	}
	free(p);
}

/* The job's own root: what a gstepd killed before its cleanup left goes first (its contents
 * were the job's to change), then a fresh directory of root's, 0700, or a tmpfs there. */
static int make_root(struct step_privtmp *p, const struct step_privtmp_opts *o, uint64_t mem_limit,
		     gp_error_t *err)
{
	struct stat st;
	if (lstat(p->root, &st) == 0) {
		umount2(p->root, MNT_DETACH);
		if (gp_rm_rf(p->root) < 0)
			return gp_errprintf(err, "cannot remove the old '%s': %s", p->root,
					    strerror(errno));
	}
	if (mkdir(p->root, 0700) < 0)
		return gp_errprintf(err, "cannot make '%s': %s", p->root, strerror(errno));
	if (strcmp(o->mode, "tmpfs"))
		return 0;
	uint64_t size = o->size ? o->size : mem_limit;
	char opts[64];
	if (size)
		snprintf(opts, sizeof(opts), "mode=0700,size=%" PRIu64, size);
	else
		snprintf(opts, sizeof(opts), "mode=0700");
	if (mount("tmpfs", p->root, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		int e = errno;
		rmdir(p->root);
		return gp_errprintf(err, "cannot mount the job's tmpfs on '%s': %s", p->root,
				    strerror(e));
	}
	p->mounted = true;
	return 0;
}

/* The mount point of a path bound back: rel's components under dir, each a directory of root's
 * (made 0755 when missing) that is no link, so that no task of the job can have swapped one
 * for a link to elsewhere by the time a later rank's child mounts on it by path. */
static int keep_point(const char *dir, const char *rel, char **at, gp_error_t *err)
{
	size_t len = strlen(dir) + strlen(rel) + 2;
	char *path = malloc(len);
	if (!path)
		return gp_errprintf(err, "out of memory");
	snprintf(path, len, "%s/%s", dir, rel);
	for (char *q = path + strlen(dir) + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		struct stat st;
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			gp_errprintf(err, "cannot make '%s': %s", path, strerror(errno));
			free(path);
			return -1;
		}
		if (!real_dir(path, &st) || st.st_uid != 0 || (st.st_mode & 022)) {
			gp_errprintf(err, "'%s' in the job's /tmp is not a directory of root's",
				     path);
			free(path);
			return -1;
		}
		*q = c;
		if (!c)
			break;
	}
	*at = path;
	return 0;
}

/* keep[k] comes with another one bound back: under it (or the same, listed before) */
static bool kept_within(const char *const *keep, size_t n, size_t k)
{
	for (size_t j = 0; j < n; j++) {
		int u = j == k || !keep[j] ? 0 : under(keep[k], keep[j]);
		if (u == 1 || (u == 2 && j < k))
			return true;
	}
	return false;
}

/* The node's directories to cover, and the paths of the job's that are under them (keep[]:
 * the scratch directory, the working directory, the node's list) */
static int plan(struct step_privtmp *p, const char *const *keep, size_t nkeep, gp_error_t *err)
{
	for (size_t i = 0; i < NDIRS; i++) {
		struct stat st;
		/* a link (/var/tmp -> /tmp) or none: left as it is; one to keep whole: too */
		bool whole = false;
		for (size_t k = 0; k < nkeep; k++)
			whole |= keep[k] && under(keep[k], dirs[i].node) == 2;
		if (whole || !real_dir(dirs[i].node, &st))
			continue;
		size_t len = strlen(p->root) + strlen(dirs[i].name) + 2;
		char *d = malloc(len);
		if (!d)
			return gp_errprintf(err, "out of memory");
		snprintf(d, len, "%s/%s", p->root, dirs[i].name);
		p->dir[p->ndirs] = d;
		p->target[p->ndirs++] = dirs[i].node;
		/* as the node's: everyone's, sticky (the job's own uids, a setuid program) */
		if (p->owned && (mkdir(d, 0700) < 0 || chmod(d, 01777) < 0))
			return gp_errprintf(err, "cannot make '%s': %s", d, strerror(errno));
		if (!real_dir(d, &st) || st.st_uid != 0)
			return gp_errprintf(err, "'%s' is not a directory of root's", d);
		for (size_t k = 0; k < nkeep; k++) {
			if (!keep[k] || under(keep[k], dirs[i].node) != 1 ||
			    kept_within(keep, nkeep, k))
				continue;
			if (!(p->keep_src[p->nkeep] = strdup(keep[k])))
				return gp_errprintf(err, "out of memory");
			if (keep_point(d, keep[k] + strlen(dirs[i].node) + 1, &p->keep_at[p->nkeep],
				       err) < 0) {
				free(p->keep_src[p->nkeep]);
				p->keep_src[p->nkeep] = NULL;
				return -1;
			}
			p->nkeep++;
		}
	}
	return 0;
}

int step_privtmp_prepare(struct step *s, const char *scratch_root,
			 const struct step_privtmp_opts *o, gp_error_t *err)
{
	const Gpool__Launch *l = s->launch;
	/* an agent that is not root can make no mount namespace: its jobs keep the node's */
	if (!o->mode || !strcmp(o->mode, "off") || l->spec->no_private_tmp || s->ctr ||
	    geteuid() != 0)
		return 0;
	struct step_privtmp *p = calloc(1, sizeof(*p));
	size_t len = strlen(scratch_root) + 64;
	if (!p || !(p->root = malloc(len))) {
		free(p);
		return gp_errprintf(err, "out of memory");
	}
	/* a job step: its job's directories, when the job has them here */
	struct stat st;
	if (l->spec->step_of && l->step_of_attempt) {
		snprintf(p->root, len, "%s/tmp-job%" PRIu64 ".%u", scratch_root, l->spec->step_of,
			 l->step_of_attempt);
		p->owned = !(real_dir(p->root, &st) && st.st_uid == 0);
	} else {
		p->owned = true;
	}
	if (p->owned)
		snprintf(p->root, len, "%s/tmp-job%" PRIu64 ".%u", scratch_root, l->job_id,
			 l->attempt);
	/* the paths the job must still reach: the node's list, comma-separated */
	const char *keep[NKEEP] = {scratch_root, s->workdir};
	size_t nkeep = 2;
	char list[1024];
	snprintf(list, sizeof(list), "%s", o->keep ? o->keep : "");
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t && nkeep < NKEEP;
	     t = strtok_r(NULL, ",", &save))
		if (*t == '/')
			keep[nkeep++] = t;
	/* compared as the kernel resolves them: a working directory reached through a link into
	 * /tmp is under /tmp */
	static char real[NKEEP][PATH_MAX];
	for (size_t k = 0; k < nkeep; k++)
		if (keep[k] && realpath(keep[k], real[k]))
			keep[k] = real[k];
	if ((p->owned && make_root(p, o, l->mem_limit_mb << 20, err) < 0) ||
	    plan(p, keep, nkeep, err) < 0) {
		int e = errno;
		char why[sizeof(err->text)];
		snprintf(why, sizeof(why), "%s", err->text);
		if (p->owned && p->mounted)
			umount2(p->root, MNT_DETACH);
		if (p->owned)
			gp_rm_rf(p->root);
		privtmp_free(p);
		errno = e;
		return gp_errprintf(err, "the job's own /tmp: %s", why);
	}
	s->ptmp = p;
	return 0;
}

int step_privtmp_enter(const struct step *s)
{
	const struct step_privtmp *p = s->ptmp;
	if (!p)
		return 0;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -1;
	/* the paths bound back first, so that each directory's bind carries them (MS_REC) */
	for (size_t i = 0; i < p->nkeep; i++)
		if (mount(p->keep_src[i], p->keep_at[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			return -1;
	for (size_t i = 0; i < p->ndirs; i++)
		if (mount(p->dir[i], p->target[i], NULL, MS_BIND | MS_REC, NULL) < 0)
			return -1;
	return 0;
}

void step_privtmp_release(struct step *s)
{
	struct step_privtmp *p = s->ptmp;
	if (!p)
		return;
	s->ptmp = NULL;
	if (p->owned) {
		if (p->mounted && umount2(p->root, MNT_DETACH) < 0)
			gp_warn("cannot unmount '%s': %s", p->root, strerror(errno));
		if (gp_rm_rf(p->root) < 0)
			gp_warn("cannot remove '%s': %s", p->root, strerror(errno));
	}
	privtmp_free(p);
}
