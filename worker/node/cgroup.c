/* cgroup.c: per-job control groups, what v1 and v2 have in common: the mode ("auto" takes the
 * first version mounted) and the version's table chosen once for the group (cgroup_int.h;
 * cgroup_v1.c, cgroup_v2.c), a task shell's pool of idle groups (v1: a directory renamed is a
 * group reused), joining, signalling, killing and removing the group, the OOM kills, the CPU
 * list and the cards' device rules.
 */
#include "worker/node/cgroup.h"
#include "worker/node/cards.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "worker/node/cgroup_int.h"
#include "common/log.h"
#include "common/util.h"

/* a group whose job left more memory charged than this is not kept idle */
#define POOL_CHARGE_MAX (1u << 20)

/* the versions, in the order they are probed (cgroup_int.h) */
const struct gp_cg_ops *const gp_cg_versions[GP_CG_NVERSIONS] = {&gp_cg_v2, &gp_cg_v1};

/* A task shell's idle v1 groups (cgroup.h). */
struct gp_cgroup_pool {
	char *tag;
	gp_cgroup_t **idle;
	size_t n, max;
	unsigned next_id;
	uint64_t taken, parked; /* for gp_cgroup_pool_stats */
};

int gp_cg_fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n;
}

int gp_cg_write(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX];
	gp_cg_fmt(p, sizeof(p), "%s/%s", dir, file);
	return gp_cg_write_path(p, val);
}

int gp_cg_write_path(const char *p, const char *val)
{
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, val, strlen(val));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

int gp_cg_read(const char *dir, const char *file, char *buf, size_t len)
{
	char p[PATH_MAX];
	gp_cg_fmt(p, sizeof(p), "%s/%s", dir, file);
	return gp_cg_read_path(p, buf, len);
}

int gp_cg_read_path(const char *p, char *buf, size_t len)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

bool gp_cg_fs_is(const char *path, long magic)
{
	struct statfs s;
	return statfs(path, &s) == 0 && (long)s.f_type == magic;
}

int gp_cpulist_parse(const char *s, uint32_t **cpus, size_t *n)
{
	uint32_t *v = NULL;
	size_t cnt = 0;
	const char *p = s;
	while (p && *p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;
		if (end == p)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (end == p || b < a)
				goto bad;
		}
		if (b - a > 65536 || cnt + (b - a + 1) > 65536)
			goto bad;
		uint32_t *nv = realloc(v, (cnt + (b - a + 1)) * sizeof(*nv));
		if (!nv)
			goto bad;
		v = nv;
		for (unsigned long c = a; c <= b; c++)
			v[cnt++] = (uint32_t)c;
		p = *end == ',' ? end + 1 : end;
		if (*end != ',' && *end && *end != '\n')
			goto bad;
	}
	*cpus = v;
	*n = cnt;
	return 0;
bad:
	free(v);
	errno = EINVAL;
	return -1;
}

int gp_cg_cpuset(const char *parent_list, const struct gp_cgroup_limits *lim, char *out, size_t len)
{
	uint32_t *avail = NULL;
	size_t navail = 0;
	char online[4096];
	if ((!parent_list || gp_cpulist_parse(parent_list, &avail, &navail) < 0 || !navail) &&
	    (gp_cg_read("/sys/devices/system/cpu", "online", online, sizeof(online)) < 0 ||
	     gp_cpulist_parse(online, &avail, &navail) < 0 || !navail)) {
		free(avail);
		return -1;
	}
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < lim->ncpus; i++) {
		uint32_t c = avail[lim->cpus[i] % navail];
		char item[16];
		gp_cg_fmt(item, sizeof(item), "%u", c);
		/* a CPU named twice (more tasks than CPUs) is listed once */
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			if (avail[lim->cpus[j] % navail] == c)
				dup = true;
		if (dup)
			continue;
		int n = gp_cg_fmt(out + o, len - o, "%s%s", o ? "," : "", item);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	free(avail);
	return 0;
}

int gp_cg_limit_failed(gp_cgroup_t *cg, const char *what, gp_error_t *err)
{
	if (cg->strict)
		return gp_errprintf(err, "cannot set cgroup %s: %s", what, strerror(errno));
	gp_debug("cgroup: %s not writable (%s): skipped", what, strerror(errno));
	return 0;
}

uint64_t gp_cgroup_oom_kills(gp_cgroup_t *cg)
{
	if (!cg)
		return 0;
	if (!cg->mem)
		return 0;
	uint64_t total = 0;
	bool hint;
	if (cg->ops->oom_total(cg, &total, &hint) < 0)
		return 0;
	uint64_t d = total > cg->oom_seen ? total - cg->oom_seen : 0;
	if (total > cg->oom_seen)
		cg->oom_seen = total;
	return d;
}

/* ---- a task shell's idle groups (v1: a directory renamed is a group reused) ---- */

gp_cgroup_pool_t *gp_cgroup_pool_create(const char *tag, size_t max)
{
	gp_cgroup_pool_t *pool = calloc(1, sizeof(*pool));
	if (!pool || !(pool->tag = strdup(tag)) ||
	    !(pool->idle = calloc(max ? max : 1, sizeof(*pool->idle)))) {
		if (pool)
			free(pool->tag);
		free(pool);
		errno = ENOMEM;
		return NULL;
	}
	pool->max = max;
	return pool;
}

void gp_cgroup_pool_destroy(gp_cgroup_pool_t **p)
{
	if (!p || !*p)
		return;
	gp_cgroup_pool_t *pool = *p;
	while (pool->n) {
		gp_cgroup_t *cg = pool->idle[--pool->n];
		cg->pool = NULL;
		gp_cgroup_destroy(&cg);
	}
	free(pool->idle);
	free(pool->tag);
	free(pool);
	*p = NULL;
}

void gp_cgroup_pool_stats(const gp_cgroup_pool_t *pool, size_t *idle, uint64_t *taken,
			  uint64_t *parked)
{
	*idle = pool ? pool->n : 0;
	*taken = pool ? pool->taken : 0;
	*parked = pool ? pool->parked : 0;
}

/* Rename each of the group's directories to NAME beside it; the paths follow each rename that
 * succeeded (so that a failure leaves paths that name what is there). 0 / -1. */
static int rename_all(gp_cgroup_t *cg, const char *name)
{
	char to[PATH_MAX];
	for (size_t c = 0; c < CG_NDIRS; c++) {
		if (!cg->dir[c])
			continue;
		const char *slash = strrchr(cg->dir[c], '/');
		int len = slash ? (int)(slash - cg->dir[c]) : 0;
		int n = gp_cg_fmt(to, sizeof(to), "%.*s/%s", len, cg->dir[c], name);
		char *copy = n > 0 && (size_t)n < sizeof(to) ? strdup(to) : NULL;
		if (!copy || rename(cg->dir[c], to) < 0) {
			free(copy);
			return -1;
		}
		free(cg->dir[c]);
		cg->dir[c] = copy;
	}
	cg->nprocs = 0;
	for (size_t c = 0; c < CG_NDIRS; c++)
		if (cg->dir[c])
			gp_cg_fmt(cg->procs[cg->nprocs++], PATH_MAX, "%s/cgroup.procs", cg->dir[c]);
	return 0;
}

int gp_cgroup_procs_path(const char *name, char *buf, size_t len)
{
	for (size_t i = 0; i < GP_CG_NVERSIONS; i++)
		if (gp_cg_versions[i]->procs_path(name, buf, len) == 0)
			return 0;
	errno = ENOENT;
	return -1;
}

/* Whether a cgroup.procs file lists no process; unreadable: as the caller says. */
static bool procs_empty(const char *procs, bool unreadable)
{
	char buf[64];
	int fd = open(procs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return unreadable;
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	return n < 0 ? unreadable : n == 0;
}

/* An idle group under NAME with the new limits, or NULL (make a new one). Only v1 groups are
 * ever parked, and a shell keeps one mode: the pool holds groups of this mode. */
static gp_cgroup_t *pool_take(gp_cgroup_pool_t *pool, const char *name,
			      const struct gp_cgroup_limits *lim)
{
	/* device rules are only ever added: a job denied some cards gets a new group */
	if (!pool || !pool->n || lim->ndeny)
		return NULL;
	gp_cgroup_t *cg = pool->idle[--pool->n];
	bool strict = cg->strict;
	gp_error_t err;
	cg->strict = true; /* a limit that cannot be changed: not this group */
	if ((rename_all(cg, name) < 0 &&
	     gp_errprintf(&err, "cannot rename: %s", strerror(errno)) < 0) ||
	    cg->ops->limits(cg, lim, &err) < 0) {
		gp_debug("cgroup: idle group not reused (%s): a new one", err.text);
		cg->pool = NULL;
		gp_cgroup_destroy(&cg);
		return NULL;
	}
	cg->strict = strict;
	uint64_t total;
	bool hint;
	if (cg->mem && cg->ops->oom_total(cg, &total, &hint) == 0) {
		/* the kills of earlier jobs are not this one's */
		cg->oom_seen = total;
		if (hint && gp_cg_write(cg->dir[V1_MEMORY], "memory.failcnt", "0") == 0)
			cg->oom_seen = 0;
	}
	pool->taken++;
	return cg;
}

/* The group of procs (its cgroup.procs path) holds a group of its own: a job step's, made
 * inside it (gp_cgroup_create_in). Such a group is never parked: renamed, the step's group
 * would move under the next job's. */
static bool has_children(const char *procs)
{
	char dir[PATH_MAX];
	gp_cg_fmt(dir, sizeof(dir), "%s", procs);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	DIR *d = opendir(dir);
	if (!d)
		return false;
	bool any = false;
	struct dirent *e;
	while (!any && (e = readdir(d)))
		any = e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return any;
}

/* Keep an emptied group for the next job, renamed idle. */
static bool pool_park(gp_cgroup_t *cg)
{
	gp_cgroup_pool_t *pool = cg->pool;
	if (!pool || !cg->poolable || !cg->ops || !cg->ops->limits || !cg->nprocs ||
	    cg->dir[V1_DEVICES] || pool->n >= pool->max)
		return false;
	for (int i = 0; i < cg->nprocs; i++)
		if (!procs_empty(cg->procs[i], false) || has_children(cg->procs[i]))
			return false;
	/* what the job left charged (its files' pages) would count against the next job's limit:
	 * a group holding more than a little is removed (writing memory.force_empty would empty
	 * it, but costs more than a new group: it drains every CPU's page lists) */
	char buf[64];
	if (cg->dir[V1_MEMORY] &&
	    (gp_cg_read(cg->dir[V1_MEMORY], "memory.usage_in_bytes", buf, sizeof(buf)) < 0 ||
	     strtoull(buf, NULL, 10) > POOL_CHARGE_MAX))
		return false;
	char name[PATH_MAX];
	gp_cg_fmt(name, sizeof(name), "idle.%s.%u", pool->tag, pool->next_id++);
	if (rename_all(cg, name) < 0)
		return false;
	pool->idle[pool->n++] = cg;
	pool->parked++;
	return true;
}

gp_cgroup_t *gp_cgroup_create(const char *mode, const char *name,
			      const struct gp_cgroup_limits *lim, gp_cgroup_pool_t *pool,
			      gp_error_t *err)
{
	return gp_cgroup_create_in(mode, NULL, name, lim, pool, err);
}

void gp_cgroup_name_in(const char *parent, const char *name, char *buf, size_t len)
{
	char nested[PATH_MAX], procs[PATH_MAX];
	if (parent && *parent &&
	    (size_t)gp_cg_fmt(nested, sizeof(nested), "%s/%s", parent, name) < sizeof(nested) &&
	    gp_cgroup_procs_path(nested, procs, sizeof(procs)) == 0) {
		gp_cg_fmt(buf, len, "%s", nested);
		return;
	}
	gp_cg_fmt(buf, len, "%s", name);
}

bool gp_cgroup_nested(const gp_cgroup_t *cg)
{
	return cg && cg->nested;
}

/* Where a group asked to be inside parent is made: "parent/name" (*nested set) when the
 * version nests and parent is there; else name, said why. */
static void place(const gp_cgroup_t *cg, const char *parent, const char *name, char *out,
		  size_t len, bool *nested)
{
	char procs[PATH_MAX];
	*nested = false;
	gp_cg_fmt(out, len, "%s", name);
	if (!parent || !*parent || !cg->ops)
		return;
	if (cg->ops != &gp_cg_v1) {
		gp_info("cgroup %s: not inside %s: cgroup %s inner groups cannot hold processes "
			"beside child groups",
			name, parent, cg->ops->name);
		return;
	}
	if (cg->ops->procs_path(parent, procs, sizeof(procs)) < 0) {
		gp_info("cgroup %s: not inside %s: there is no such group on this node", name,
			parent);
		return;
	}
	if ((size_t)gp_cg_fmt(out, len, "%s/%s", parent, name) >= len) {
		gp_cg_fmt(out, len, "%s", name);
		return;
	}
	*nested = true;
}

gp_cgroup_t *gp_cgroup_create_in(const char *mode, const char *parent, const char *name,
				 const struct gp_cgroup_limits *lim, gp_cgroup_pool_t *pool,
				 gp_error_t *err)
{
	gp_cgroup_t *cg = parent ? NULL : pool_take(pool, name, lim);
	if (cg)
		return cg;
	if (!(cg = calloc(1, sizeof(*cg)))) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	cg->poolable = true;
	cg->pool = pool;
	/* which versions are mounted: v1 only where v2 is not */
	bool up[GP_CG_NVERSIONS];
	for (size_t i = 0; i < GP_CG_NVERSIONS; i++)
		up[i] = !(i && up[i - 1]) && gp_cg_versions[i]->mounted();
	int rc = 0;
	if (!mode || !strcmp(mode, "off")) {
		return cg;
	} else if (!strcmp(mode, "auto")) {
		for (size_t i = 0; i < GP_CG_NVERSIONS && !cg->ops; i++)
			if (up[i])
				cg->ops = gp_cg_versions[i];
		if (!cg->ops) {
			gp_info("cgroup file system not mounted under %s: running without cgroups",
				CG_ROOT);
			return cg;
		}
	} else {
		for (size_t i = 0; i < GP_CG_NVERSIONS && !cg->ops; i++) {
			if (strcmp(mode, gp_cg_versions[i]->name))
				continue;
			if (!up[i]) {
				gp_errprintf(err, "%s", gp_cg_versions[i]->absent);
				goto fail;
			}
			cg->ops = gp_cg_versions[i];
			cg->strict = true;
		}
		if (!cg->ops) {
			gp_errprintf(err, "invalid cgroups mode '%s' (auto, v1, v2 or off)", mode);
			goto fail;
		}
	}
	char where[PATH_MAX];
	place(cg, parent, name, where, sizeof(where), &cg->nested);
	if (cg->nested)
		cg->pool = NULL; /* v1 renames a group only beside itself */
	rc = cg->ops->setup(cg, where, lim, err);
	if (rc < 0) {
		if (cg->strict)
			goto fail;
		gp_info("cgroups unusable (%s): running without them", err ? err->text : "?");
	}
	return cg;
fail:
	gp_cgroup_destroy(&cg);
	errno = EINVAL;
	return NULL;
}

const char *gp_cgroup_version(const gp_cgroup_t *cg)
{
	if (!cg)
		return "off";
	return cg->nprocs ? cg->ops->name : "off";
}

int gp_cgroup_attach_self(const gp_cgroup_t *cg)
{
	if (!cg)
		return 0;
	char pid[24];
	int n = 0;
	char tmp[24];
	for (long v = (long)getpid(); v > 0; v /= 10)
		tmp[n++] = (char)('0' + v % 10);
	for (int i = 0; i < n; i++)
		pid[i] = tmp[n - 1 - i];
	for (int i = 0; i < cg->nprocs; i++) {
		int fd = open(cg->procs[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		if (write(fd, pid, (size_t)n) < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		close(fd);
	}
	return 0;
}

int gp_cg_each_pid(gp_cgroup_t *cg, int sig)
{
	if (!cg)
		return 0;
	if (!cg->nprocs)
		return 0;
	FILE *f = fopen(cg->procs[0], "re");
	if (!f)
		return 0;
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid > 0 && pid != getpid() && kill((pid_t)pid, sig) == 0)
			n++;
	}
	fclose(f);
	return n;
}

int gp_cgroup_signal(gp_cgroup_t *cg, int sig)
{
	return gp_cg_each_pid(cg, sig);
}

bool gp_cgroup_empty(gp_cgroup_t *cg)
{
	/* unreadable: nothing to wait for (destroy's kill loop ends) */
	return !cg || !cg->nprocs || procs_empty(cg->procs[0], true);
}

void gp_cg_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

void gp_cgroup_kill(gp_cgroup_t *cg)
{
	if (!cg)
		return;
	if (!cg->nprocs)
		return;
	cg->ops->kill(cg);
}

void gp_cg_kill_loop(gp_cgroup_t *cg)
{
	for (int i = 0; i < 50 && gp_cg_each_pid(cg, SIGKILL) > 0; i++)
		gp_cg_sleep_ms(2);
}

void gp_cgroup_destroy(gp_cgroup_t **p)
{
	if (!p || !*p)
		return;
	gp_cgroup_t *cg = *p;
	*p = NULL;
	if (cg->nprocs) {
		for (int i = 0; i < 100 && !gp_cgroup_empty(cg); i++) {
			gp_cgroup_kill(cg);
			gp_cg_sleep_ms(10);
		}
	}
	if (pool_park(cg))
		return;
	for (size_t c = 0; c < CG_NDIRS; c++) {
		if (!cg->dir[c])
			continue;
		for (int i = 0; i < 50 && rmdir(cg->dir[c]) < 0 && errno == EBUSY; i++)
			gp_cg_sleep_ms(10);
		/* a step's group: its job's, when that job's gstepd could not remove it while
		 * this one was in it and nothing else is, goes too (EBUSY while it holds any) */
		char *slash = cg->nested ? strrchr(cg->dir[c], '/') : NULL;
		if (slash) {
			*slash = '\0';
			if (rmdir(cg->dir[c]) == 0)
				gp_debug("cgroup: removed %s, left empty by its job", cg->dir[c]);
		}
		free(cg->dir[c]);
	}
	free(cg->cpus_set);
	free(cg);
}

size_t gp_cgroup_card_rules(const uint32_t *given, size_t ngiven, const int *vendor,
			    const bool *fake, const uint32_t *dev_node, size_t ncards,
			    char (*buf)[32], const char **rules, size_t max)
{
	size_t n = 0;
	int nv = 0, amd = 0;
	for (size_t i = 0; i < ncards; i++) {
		int ord = vendor[i] == 1 ? nv++ : vendor[i] == 2 ? amd++ : -1;
		bool mine = false;
		for (size_t k = 0; k < ngiven; k++)
			mine |= given[k] == i;
		if (mine || fake[i] || ord < 0 || n == max)
			continue;
		snprintf(buf[n], 32, vendor[i] == 1 ? "c 195:%d rwm" : "c 226:%d rwm",
			 gp_card_dev_minor(vendor[i], dev_node ? dev_node[i] : 0, ord));
		rules[n] = buf[n];
		n++;
	}
	return n;
}
