/* cgroup.c: per-job control groups, v1 and v2. */
#include "worker/node/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "worker/node/cgroup_devices.h"
#include "common/log.h"
#include "common/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CG_ROOT "/sys/fs/cgroup"

/* a group whose job left more memory charged than this is not kept idle */
#define POOL_CHARGE_MAX (1u << 20)

/* snprintf for paths: a path that does not fit is cut (and then simply not found). */
static int fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static int fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n;
}

enum cg_ver { CG_OFF = 0, CG_V1, CG_V2 };

/* v1 hierarchies gpool uses, in the order their cgroup.procs are joined */
static const char *const v1_ctrls[] = {"memory", "cpuset", "pids", "freezer", "devices"};
#define NV1 (sizeof(v1_ctrls) / sizeof(v1_ctrls[0]))
enum { V1_MEMORY = 0, V1_CPUSET, V1_PIDS, V1_FREEZER, V1_DEVICES };

struct gp_cgroup {
	enum cg_ver ver;
	bool strict;		   /* v1/v2 asked explicitly: failures are errors */
	char *dir[NV1];		   /* v2: dir[0] only; v1: per controller, NULL when not used */
	char procs[NV1][PATH_MAX]; /* cgroup.procs of each dir, for attach_self */
	int nprocs;
	bool mem;
	uint64_t oom_seen;
	/* v1: the limits the group holds now (a new group none: 0 and NULL), so that a group
	 * taken again from a pool is written only what differs */
	uint64_t mem_set, pids_set;
	char *cpus_set;
	gp_cgroup_pool_t *pool; /* where the group goes when destroyed, if it may */
	bool poolable;		/* no write to it failed */
};

/* A task shell's idle v1 groups (cgroup.h). */
struct gp_cgroup_pool {
	char *tag;
	gp_cgroup_t **idle;
	size_t n, max;
	unsigned next_id;
	uint64_t taken, parked; /* for gp_cgroup_pool_stats */
};

static int write_str(const char *dir, const char *file, const char *val)
{
	char p[PATH_MAX];
	fmt(p, sizeof(p), "%s/%s", dir, file);
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, val, strlen(val));
	int e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : 0;
}

static int read_str(const char *dir, const char *file, char *buf, size_t len)
{
	char p[PATH_MAX];
	fmt(p, sizeof(p), "%s/%s", dir, file);
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

static bool fs_is(const char *path, long magic)
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

/* Map the node's logical CPU indices onto the CPUs the parent group allows. */
static int cpuset_string(const char *parent_list, const struct gp_cgroup_limits *lim, char *out,
			 size_t len)
{
	uint32_t *avail = NULL;
	size_t navail = 0;
	char online[4096];
	if ((!parent_list || gp_cpulist_parse(parent_list, &avail, &navail) < 0 || !navail) &&
	    (read_str("/sys/devices/system/cpu", "online", online, sizeof(online)) < 0 ||
	     gp_cpulist_parse(online, &avail, &navail) < 0 || !navail)) {
		free(avail);
		return -1;
	}
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < lim->ncpus; i++) {
		uint32_t c = avail[lim->cpus[i] % navail];
		char item[16];
		fmt(item, sizeof(item), "%u", c);
		/* a CPU named twice (more tasks than CPUs) is listed once */
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			if (avail[lim->cpus[j] % navail] == c)
				dup = true;
		if (dup)
			continue;
		int n = fmt(out + o, len - o, "%s%s", o ? "," : "", item);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	free(avail);
	return 0;
}

/* A limit that cannot be set: an error when strict, one debug line when auto. */
static int limit_failed(gp_cgroup_t *cg, const char *what, gp_error_t *err)
{
	if (cg->strict)
		return gp_errprintf(err, "cannot set cgroup %s: %s", what, strerror(errno));
	gp_debug("cgroup: %s not writable (%s): skipped", what, strerror(errno));
	return 0;
}

static int v2_setup(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		    gp_error_t *err)
{
	char top[PATH_MAX], dir[PATH_MAX], buf[4096];
	fmt(top, sizeof(top), "%s/gpool", CG_ROOT);
	if (mkdir(top, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", top, strerror(errno));
	static const char *const ctrls[] = {"+memory", "+cpuset", "+pids"};
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		if (write_str(CG_ROOT, "cgroup.subtree_control", ctrls[i]) < 0 ||
		    write_str(top, "cgroup.subtree_control", ctrls[i]) < 0)
			gp_debug("cgroup: cannot enable %s: %s", ctrls[i] + 1, strerror(errno));
	}
	fmt(dir, sizeof(dir), "%s/%s", top, name);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", dir, strerror(errno));
	if (!(cg->dir[0] = strdup(dir)))
		return gp_errprintf(err, "out of memory");
	fmt(cg->procs[0], PATH_MAX, "%s/cgroup.procs", dir);
	cg->nprocs = 1;
	/* before any process joins: v2 has no devices.deny, a BPF program does its work */
	gp_error_t e2;
	if (gp_cgdev_deny(dir, lim->deny, lim->ndeny, &e2) < 0) {
		if (cg->strict)
			return gp_errprintf(err, "cannot deny card device files: %s", e2.text);
		gp_info(
		    "cgroup v2: cannot deny %zu card device file(s): %s: the card binding is by "
		    "environment only",
		    lim->ndeny, e2.text);
	}
	if (lim->mem_bytes) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		if (write_str(dir, "memory.max", buf) < 0) {
			if (limit_failed(cg, "memory.max", err) < 0)
				return -1;
		} else {
			cg->mem = true;
			write_str(dir, "memory.swap.max", "0");
		}
	}
	if (lim->ncpus) {
		char parent[4096];
		const char *pl = read_str(top, "cpuset.cpus.effective", parent, sizeof(parent)) == 0
				     ? parent
				     : NULL;
		if (cpuset_string(pl, lim, buf, sizeof(buf)) == 0 &&
		    write_str(dir, "cpuset.cpus", buf) < 0 &&
		    limit_failed(cg, "cpuset.cpus", err) < 0)
			return -1;
	}
	if (lim->pids_max) {
		fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		if (write_str(dir, "pids.max", buf) < 0 && limit_failed(cg, "pids.max", err) < 0)
			return -1;
	}
	return 0;
}

/* v1 cpuset groups need cpus and mems before a process may join: copy them from the parent. */
static int v1_cpuset_inherit(const char *parent, const char *dir)
{
	char buf[4096];
	if (read_str(dir, "cpuset.cpus", buf, sizeof(buf)) == 0 && !*buf &&
	    (read_str(parent, "cpuset.cpus", buf, sizeof(buf)) < 0 ||
	     write_str(dir, "cpuset.cpus", buf) < 0))
		return -1;
	if (read_str(dir, "cpuset.mems", buf, sizeof(buf)) == 0 && !*buf &&
	    (read_str(parent, "cpuset.mems", buf, sizeof(buf)) < 0 ||
	     write_str(dir, "cpuset.mems", buf) < 0))
		return -1;
	return 0;
}

/* Write the limits of a v1 group where they differ from what it holds: everything a new group
 * is given, and for a group taken again from a pool what its last job had otherwise. */
static int v1_limits(gp_cgroup_t *cg, const struct gp_cgroup_limits *lim, gp_error_t *err)
{
	char buf[4096];
	const char *mdir = cg->dir[V1_MEMORY];
	if (mdir && lim->mem_bytes != cg->mem_set) {
		if (lim->mem_bytes)
			fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		else
			fmt(buf, sizeof(buf), "-1");
		/* memory+swap may never be below memory: raised first, lowered last (absent
		 * without swap accounting: then swap is not limited) */
		bool up = !lim->mem_bytes || (cg->mem_set && lim->mem_bytes > cg->mem_set);
		if (up && cg->mem_set)
			write_str(mdir, "memory.memsw.limit_in_bytes", buf);
		if (write_str(mdir, "memory.limit_in_bytes", buf) < 0) {
			cg->poolable = false;
			if (limit_failed(cg, "memory.limit_in_bytes", err) < 0)
				return -1;
		} else {
			cg->mem_set = lim->mem_bytes;
			if (!up)
				write_str(mdir, "memory.memsw.limit_in_bytes", buf);
		}
	}
	cg->mem = mdir && cg->mem_set;
	if (cg->dir[V1_CPUSET] && (lim->ncpus || cg->cpus_set)) {
		char parent[4096], ptop[PATH_MAX];
		fmt(ptop, sizeof(ptop), "%s/cpuset/gpool", CG_ROOT);
		const char *pl =
		    read_str(ptop, "cpuset.cpus", parent, sizeof(parent)) == 0 ? parent : NULL;
		/* no cpus asked: a reused group gets its parent's back */
		int ok = lim->ncpus ? cpuset_string(pl, lim, buf, sizeof(buf))
				    : (pl ? (fmt(buf, sizeof(buf), "%s", pl), 0) : -1);
		if (ok == 0 && (!cg->cpus_set || strcmp(cg->cpus_set, buf))) {
			if (write_str(cg->dir[V1_CPUSET], "cpuset.cpus", buf) < 0) {
				cg->poolable = false;
				if (limit_failed(cg, "cpuset.cpus", err) < 0)
					return -1;
			} else {
				free(cg->cpus_set);
				cg->cpus_set = lim->ncpus ? strdup(buf) : NULL;
				if (lim->ncpus && !cg->cpus_set)
					cg->poolable = false;
			}
		}
	}
	for (size_t i = 0; i < lim->ndeny; i++) {
		if (!cg->dir[V1_DEVICES]) {
			if (limit_failed(cg, "devices.deny", err) < 0)
				return -1;
			break;
		}
		if (write_str(cg->dir[V1_DEVICES], "devices.deny", lim->deny[i]) < 0 &&
		    limit_failed(cg, "devices.deny", err) < 0)
			return -1;
	}
	if (cg->dir[V1_PIDS] && lim->pids_max != cg->pids_set) {
		if (lim->pids_max)
			fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		else
			fmt(buf, sizeof(buf), "max");
		if (write_str(cg->dir[V1_PIDS], "pids.max", buf) < 0) {
			cg->poolable = false;
			if (limit_failed(cg, "pids.max", err) < 0)
				return -1;
		} else {
			cg->pids_set = lim->pids_max;
		}
	}
	return 0;
}

static int v1_setup(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		    gp_error_t *err)
{
	char base[PATH_MAX], top[PATH_MAX], dir[PATH_MAX];
	for (size_t c = 0; c < NV1; c++) {
		if (c == V1_DEVICES && !lim->ndeny)
			continue; /* only jobs that must not see some cards pay for it */
		fmt(base, sizeof(base), "%s/%s", CG_ROOT, v1_ctrls[c]);
		if (!fs_is(base, CGROUP_SUPER_MAGIC)) {
			gp_debug("cgroup: v1 %s hierarchy not mounted: skipped", v1_ctrls[c]);
			continue;
		}
		fmt(top, sizeof(top), "%s/gpool", base);
		fmt(dir, sizeof(dir), "%s/%s", top, name);
		if ((mkdir(top, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(dir, 0755) < 0 && errno != EEXIST)) {
			if (cg->strict)
				return gp_errprintf(err, "cannot make '%s': %s", dir,
						    strerror(errno));
			gp_debug("cgroup: cannot make '%s': %s: skipped", dir, strerror(errno));
			continue;
		}
		if (c == V1_CPUSET &&
		    (v1_cpuset_inherit(base, top) < 0 || v1_cpuset_inherit(top, dir) < 0)) {
			/* a cpuset group without cpus cannot hold processes: do not join it */
			gp_debug("cgroup: cannot prepare cpuset '%s': skipped", dir);
			rmdir(dir);
			continue;
		}
		if (!(cg->dir[c] = strdup(dir)))
			return gp_errprintf(err, "out of memory");
		fmt(cg->procs[cg->nprocs++], PATH_MAX, "%s/cgroup.procs", dir);
	}
	if (cg->strict && !cg->nprocs)
		return gp_errprintf(err, "no cgroup v1 hierarchy is usable");
	return v1_limits(cg, lim, err);
}

/* The OOM kills the group has seen so far; *hint: the kernel does not count them and the total
 * says only whether the limit was ever hit. 0 / -1 when unknown. */
static int oom_total(const gp_cgroup_t *cg, uint64_t *total, bool *hint)
{
	char buf[2048];
	const char *dir = cg->ver == CG_V2 ? cg->dir[0] : cg->dir[V1_MEMORY];
	const char *file = cg->ver == CG_V2 ? "memory.events" : "memory.oom_control";
	*hint = false;
	if (read_str(dir, file, buf, sizeof(buf)) < 0)
		return -1;
	char *p = strstr(buf, "oom_kill ");
	if (p) {
		*total = strtoull(p + 9, NULL, 10);
		return 0;
	}
	if (cg->ver != CG_V1 || read_str(dir, "memory.failcnt", buf, sizeof(buf)) < 0)
		return -1;
	/* old kernels do not count kills: hitting the limit is the best hint */
	*total = strtoull(buf, NULL, 10) ? 1 : 0;
	*hint = true;
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
	if (oom_total(cg, &total, &hint) < 0)
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
	for (size_t c = 0; c < NV1; c++) {
		if (!cg->dir[c])
			continue;
		const char *slash = strrchr(cg->dir[c], '/');
		int len = slash ? (int)(slash - cg->dir[c]) : 0;
		int n = fmt(to, sizeof(to), "%.*s/%s", len, cg->dir[c], name);
		char *copy = n > 0 && (size_t)n < sizeof(to) ? strdup(to) : NULL;
		if (!copy || rename(cg->dir[c], to) < 0) {
			free(copy);
			return -1;
		}
		free(cg->dir[c]);
		cg->dir[c] = copy;
	}
	cg->nprocs = 0;
	for (size_t c = 0; c < NV1; c++)
		if (cg->dir[c])
			fmt(cg->procs[cg->nprocs++], PATH_MAX, "%s/cgroup.procs", cg->dir[c]);
	return 0;
}

int gp_cgroup_procs_path(const char *name, char *buf, size_t len)
{
	if ((size_t)fmt(buf, len, "%s/gpool/%s/cgroup.procs", CG_ROOT, name) < len &&
	    fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC) && access(buf, R_OK) == 0)
		return 0;
	static const int order[] = {V1_PIDS, V1_FREEZER, V1_MEMORY, V1_CPUSET};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((size_t)fmt(buf, len, "%s/%s/gpool/%s/cgroup.procs", CG_ROOT,
				v1_ctrls[order[i]], name) < len &&
		    access(buf, R_OK) == 0)
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

/* "idle.s<pid>.<node>.<n>": the pid of the shell that kept it, or 0 when not one of node's. */
static pid_t idle_owner(const char *name, const char *node)
{
	if (strncmp(name, "idle.s", 6))
		return 0;
	char *end;
	long pid = strtol(name + 6, &end, 10);
	size_t nl = strlen(node);
	if (end == name + 6 || *end != '.' || pid <= 0 || pid > INT_MAX ||
	    strncmp(end + 1, node, nl) || end[1 + nl] != '.')
		return 0;
	const char *n = end + 2 + nl;
	if (!*n || strspn(n, "0123456789") != strlen(n))
		return 0;
	return (pid_t)pid;
}

int gp_cgroup_sweep_idle(const char *node, pid_t shell)
{
	int removed = 0;
	char dir[PATH_MAX], path[PATH_MAX];
	for (size_t c = 0; c < NV1; c++) {
		fmt(dir, sizeof(dir), "%s/%s/gpool", CG_ROOT, v1_ctrls[c]);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			pid_t pid = idle_owner(e->d_name, node);
			if (!pid || (shell > 0 && pid != shell) ||
			    (shell <= 0 && (kill(pid, 0) == 0 || errno != ESRCH)))
				continue;
			fmt(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (rmdir(path) == 0)
				removed++;
		}
		closedir(d);
	}
	return removed;
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
	    v1_limits(cg, lim, &err) < 0) {
		gp_debug("cgroup: idle group not reused (%s): a new one", err.text);
		cg->pool = NULL;
		gp_cgroup_destroy(&cg);
		return NULL;
	}
	cg->strict = strict;
	uint64_t total;
	bool hint;
	if (cg->mem && oom_total(cg, &total, &hint) == 0) {
		/* the kills of earlier jobs are not this one's */
		cg->oom_seen = total;
		if (hint && write_str(cg->dir[V1_MEMORY], "memory.failcnt", "0") == 0)
			cg->oom_seen = 0;
	}
	pool->taken++;
	return cg;
}

/* Keep an emptied group for the next job, renamed idle. */
static bool pool_park(gp_cgroup_t *cg)
{
	gp_cgroup_pool_t *pool = cg->pool;
	if (!pool || !cg->poolable || cg->ver != CG_V1 || !cg->nprocs || cg->dir[V1_DEVICES] ||
	    pool->n >= pool->max)
		return false;
	for (int i = 0; i < cg->nprocs; i++)
		if (!procs_empty(cg->procs[i], false))
			return false;
	/* what the job left charged (its files' pages) would count against the next job's limit:
	 * a group holding more than a little is removed (writing memory.force_empty would empty
	 * it, but costs more than a new group: it drains every CPU's page lists) */
	char buf[64];
	if (cg->dir[V1_MEMORY] &&
	    (read_str(cg->dir[V1_MEMORY], "memory.usage_in_bytes", buf, sizeof(buf)) < 0 ||
	     strtoull(buf, NULL, 10) > POOL_CHARGE_MAX))
		return false;
	char name[PATH_MAX];
	fmt(name, sizeof(name), "idle.%s.%u", pool->tag, pool->next_id++);
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
	gp_cgroup_t *cg = pool_take(pool, name, lim);
	if (cg)
		return cg;
	if (!(cg = calloc(1, sizeof(*cg)))) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	cg->poolable = true;
	cg->pool = pool;
	bool v2 = fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC);
	char probe[PATH_MAX];
	fmt(probe, sizeof(probe), "%s/memory", CG_ROOT);
	bool v1 = !v2 &&
		  (fs_is(probe, CGROUP_SUPER_MAGIC) || fs_is(CG_ROOT "/pids", CGROUP_SUPER_MAGIC) ||
		   fs_is(CG_ROOT "/freezer", CGROUP_SUPER_MAGIC));
	int rc = 0;
	if (!mode || !strcmp(mode, "off")) {
		return cg;
	} else if (!strcmp(mode, "auto")) {
		if (v2)
			cg->ver = CG_V2;
		else if (v1)
			cg->ver = CG_V1;
		else {
			gp_info("cgroup file system not mounted under %s: running without cgroups",
				CG_ROOT);
			return cg;
		}
	} else if (!strcmp(mode, "v2")) {
		if (!v2) {
			gp_errprintf(err, "cgroups v2 asked for, but %s is not a cgroup2 mount",
				     CG_ROOT);
			goto fail;
		}
		cg->ver = CG_V2;
		cg->strict = true;
	} else if (!strcmp(mode, "v1")) {
		if (!v1) {
			gp_errprintf(
			    err, "cgroups v1 asked for, but no v1 hierarchy is mounted under %s",
			    CG_ROOT);
			goto fail;
		}
		cg->ver = CG_V1;
		cg->strict = true;
	} else {
		gp_errprintf(err, "invalid cgroups mode '%s' (auto, v1, v2 or off)", mode);
		goto fail;
	}
	rc = cg->ver == CG_V2 ? v2_setup(cg, name, lim, err) : v1_setup(cg, name, lim, err);
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
	static const char *const names[] = {[CG_OFF] = "off", [CG_V1] = "v1", [CG_V2] = "v2"};
	return cg->nprocs ? names[cg->ver] : "off";
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

/* Call f for every pid in the group. */
static int each_pid(gp_cgroup_t *cg, int sig)
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
	return each_pid(cg, sig);
}

bool gp_cgroup_empty(gp_cgroup_t *cg)
{
	/* unreadable: nothing to wait for (destroy's kill loop ends) */
	return !cg || !cg->nprocs || procs_empty(cg->procs[0], true);
}

static void sleep_ms(long ms)
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
	if (cg->ver == CG_V2 && write_str(cg->dir[0], "cgroup.kill", "1") == 0)
		return;
	const char *fz = cg->ver == CG_V1 ? cg->dir[V1_FREEZER] : NULL;
	/* freezing first stops a fork bomb from outrunning the kill loop */
	if (fz && write_str(fz, "freezer.state", "FROZEN") == 0) {
		char st[32] = "";
		for (int i = 0; i < 100; i++) {
			if (read_str(fz, "freezer.state", st, sizeof(st)) == 0 &&
			    !strcmp(st, "FROZEN"))
				break;
			sleep_ms(5);
		}
	}
	for (int i = 0; i < 50 && each_pid(cg, SIGKILL) > 0; i++) {
		if (fz)
			break;
		sleep_ms(2);
	}
	if (fz)
		write_str(fz, "freezer.state", "THAWED");
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
			sleep_ms(10);
		}
	}
	if (pool_park(cg))
		return;
	for (size_t c = 0; c < NV1; c++) {
		if (!cg->dir[c])
			continue;
		for (int i = 0; i < 50 && rmdir(cg->dir[c]) < 0 && errno == EBUSY; i++)
			sleep_ms(10);
		free(cg->dir[c]);
	}
	free(cg->cpus_set);
	free(cg);
}

size_t gp_cgroup_card_rules(const uint32_t *given, size_t ngiven, const int *vendor,
			    const bool *fake, size_t ncards, char (*buf)[32], const char **rules,
			    size_t max)
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
			 vendor[i] == 1 ? ord : 128 + ord);
		rules[n] = buf[n];
		n++;
	}
	return n;
}
