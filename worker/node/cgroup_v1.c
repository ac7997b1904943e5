/* cgroup_v1.c: what cgroup v1 does its own way (cgroup_int.h's table): the group is the same
 * path under each of the memory, cpuset, pids and freezer hierarchies (and devices, only for a
 * job that must be denied the device files of some cards, with devices.deny); a cpuset group
 * copies its parent's cpus and mems; its limits are rewritten where they differ (a group taken
 * again from a task shell's pool, cgroup.c); OOM kills from memory.oom_control (or the hint of
 * memory.failcnt); a kill freezes first; the idle groups a killed shell left are swept here.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/cgroup_int.h"
#include "common/log.h"

/* v1 hierarchies gpool uses, in the order their cgroup.procs are joined (cgroup_int.h: V1_*) */
static const char *const v1_ctrls[] = {"memory", "cpuset", "pids", "freezer", "devices"};
_Static_assert(sizeof(v1_ctrls) / sizeof(v1_ctrls[0]) == CG_NDIRS, "a dir per hierarchy");

static bool v1_mounted(void)
{
	char probe[PATH_MAX];
	gp_cg_fmt(probe, sizeof(probe), "%s/memory", CG_ROOT);
	return gp_cg_fs_is(probe, CGROUP_SUPER_MAGIC) ||
	       gp_cg_fs_is(CG_ROOT "/pids", CGROUP_SUPER_MAGIC) ||
	       gp_cg_fs_is(CG_ROOT "/freezer", CGROUP_SUPER_MAGIC);
}

/* v1 cpuset groups need cpus and mems before a process may join: copy them from the parent. */
static int v1_cpuset_inherit(const char *parent, const char *dir)
{
	char buf[4096];
	if (gp_cg_read(dir, "cpuset.cpus", buf, sizeof(buf)) == 0 && !*buf &&
	    (gp_cg_read(parent, "cpuset.cpus", buf, sizeof(buf)) < 0 ||
	     gp_cg_write(dir, "cpuset.cpus", buf) < 0))
		return -1;
	if (gp_cg_read(dir, "cpuset.mems", buf, sizeof(buf)) == 0 && !*buf &&
	    (gp_cg_read(parent, "cpuset.mems", buf, sizeof(buf)) < 0 ||
	     gp_cg_write(dir, "cpuset.mems", buf) < 0))
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
			gp_cg_fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		else
			gp_cg_fmt(buf, sizeof(buf), "-1");
		/* memory+swap may never be below memory: raised first, lowered last (absent
		 * without swap accounting: then swap is not limited) */
		bool up = !lim->mem_bytes || (cg->mem_set && lim->mem_bytes > cg->mem_set);
		if (up && cg->mem_set)
			gp_cg_write(mdir, "memory.memsw.limit_in_bytes", buf);
		if (gp_cg_write(mdir, "memory.limit_in_bytes", buf) < 0) {
			cg->poolable = false;
			if (gp_cg_limit_failed(cg, "memory.limit_in_bytes", err) < 0)
				return -1;
		} else {
			cg->mem_set = lim->mem_bytes;
			if (!up)
				gp_cg_write(mdir, "memory.memsw.limit_in_bytes", buf);
		}
	}
	cg->mem = mdir && cg->mem_set;
	if (cg->dir[V1_CPUSET] && (lim->ncpus || cg->cpus_set)) {
		char parent[4096], ptop[PATH_MAX];
		gp_cg_fmt(ptop, sizeof(ptop), "%s/cpuset/gpool", CG_ROOT);
		const char *pl =
		    gp_cg_read(ptop, "cpuset.cpus", parent, sizeof(parent)) == 0 ? parent : NULL;
		/* no cpus asked: a reused group gets its parent's back */
		int ok = lim->ncpus ? gp_cg_cpuset(pl, lim, buf, sizeof(buf))
				    : (pl ? (gp_cg_fmt(buf, sizeof(buf), "%s", pl), 0) : -1);
		if (ok == 0 && (!cg->cpus_set || strcmp(cg->cpus_set, buf))) {
			if (gp_cg_write(cg->dir[V1_CPUSET], "cpuset.cpus", buf) < 0) {
				cg->poolable = false;
				if (gp_cg_limit_failed(cg, "cpuset.cpus", err) < 0)
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
			if (gp_cg_limit_failed(cg, "devices.deny", err) < 0)
				return -1;
			break;
		}
		if (gp_cg_write(cg->dir[V1_DEVICES], "devices.deny", lim->deny[i]) < 0 &&
		    gp_cg_limit_failed(cg, "devices.deny", err) < 0)
			return -1;
	}
	if (cg->dir[V1_PIDS] && lim->pids_max != cg->pids_set) {
		if (lim->pids_max)
			gp_cg_fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		else
			gp_cg_fmt(buf, sizeof(buf), "max");
		if (gp_cg_write(cg->dir[V1_PIDS], "pids.max", buf) < 0) {
			cg->poolable = false;
			if (gp_cg_limit_failed(cg, "pids.max", err) < 0)
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
	for (size_t c = 0; c < CG_NDIRS; c++) {
		if (c == V1_DEVICES && !lim->ndeny)
			continue; /* only jobs that must not see some cards pay for it */
		gp_cg_fmt(base, sizeof(base), "%s/%s", CG_ROOT, v1_ctrls[c]);
		if (!gp_cg_fs_is(base, CGROUP_SUPER_MAGIC)) {
			gp_debug("cgroup: v1 %s hierarchy not mounted: skipped", v1_ctrls[c]);
			continue;
		}
		gp_cg_fmt(top, sizeof(top), "%s/gpool", base);
		gp_cg_fmt(dir, sizeof(dir), "%s/%s", top, name);
		/* the group's parent: gpool's, or the job's that a step's group is inside */
		char up[PATH_MAX];
		gp_cg_fmt(up, sizeof(up), "%s", dir);
		*strrchr(up, '/') = '\0';
		int made = mkdir(top, 0755) < 0 && errno != EEXIST ? -1 : mkdir(dir, 0755);
		/* a step's: its job's gone meanwhile (the last step's gstepd removed it, empty), or
		 * never made in this hierarchy: made again, empty, the step's own limits hold */
		if (made < 0 && errno == ENOENT && cg->nested &&
		    (mkdir(up, 0755) == 0 || errno == EEXIST))
			made = mkdir(dir, 0755);
		if (made < 0 && errno != EEXIST) {
			if (cg->strict)
				return gp_errprintf(err, "cannot make '%s': %s", dir,
						    strerror(errno));
			gp_debug("cgroup: cannot make '%s': %s: skipped", dir, strerror(errno));
			continue;
		}
		if (c == V1_CPUSET &&
		    (v1_cpuset_inherit(base, top) < 0 || v1_cpuset_inherit(top, up) < 0 ||
		     v1_cpuset_inherit(up, dir) < 0)) {
			/* a cpuset group without cpus cannot hold processes: do not join it */
			gp_debug("cgroup: cannot prepare cpuset '%s': skipped", dir);
			rmdir(dir);
			continue;
		}
		if (!(cg->dir[c] = strdup(dir)))
			return gp_errprintf(err, "out of memory");
		gp_cg_fmt(cg->procs[cg->nprocs++], PATH_MAX, "%s/cgroup.procs", dir);
	}
	if (cg->strict && !cg->nprocs)
		return gp_errprintf(err, "no cgroup v1 hierarchy is usable");
	return v1_limits(cg, lim, err);
}

/* The OOM kills the group has seen so far; *hint: the kernel does not count them and the total
 * says only whether the limit was ever hit. 0 / -1 when unknown. */
static int v1_oom_total(const gp_cgroup_t *cg, uint64_t *total, bool *hint)
{
	char buf[2048];
	const char *dir = cg->dir[V1_MEMORY];
	*hint = false;
	if (gp_cg_read(dir, "memory.oom_control", buf, sizeof(buf)) < 0)
		return -1;
	char *p = strstr(buf, "oom_kill ");
	if (p) {
		*total = strtoull(p + 9, NULL, 10);
		return 0;
	}
	if (gp_cg_read(dir, "memory.failcnt", buf, sizeof(buf)) < 0)
		return -1;
	/* old kernels do not count kills: hitting the limit is the best hint */
	*total = strtoull(buf, NULL, 10) ? 1 : 0;
	*hint = true;
	return 0;
}

static void v1_kill(gp_cgroup_t *cg)
{
	const char *fz = cg->dir[V1_FREEZER];
	if (!fz) {
		gp_cg_kill_loop(cg);
		return;
	}
	/* freezing first stops a fork bomb from outrunning the kill loop */
	if (gp_cg_write(fz, "freezer.state", "FROZEN") == 0) {
		char st[32] = "";
		for (int i = 0; i < 100; i++) {
			if (gp_cg_read(fz, "freezer.state", st, sizeof(st)) == 0 &&
			    !strcmp(st, "FROZEN"))
				break;
			gp_cg_sleep_ms(5);
		}
	}
	gp_cg_each_pid(cg, SIGKILL); /* frozen: one pass reaches them all */
	gp_cg_write(fz, "freezer.state", "THAWED");
}

static int v1_procs_path(const char *name, char *buf, size_t len)
{
	static const int order[] = {V1_PIDS, V1_FREEZER, V1_MEMORY, V1_CPUSET};
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if ((size_t)gp_cg_fmt(buf, len, "%s/%s/gpool/%s/cgroup.procs", CG_ROOT,
				      v1_ctrls[order[i]], name) < len &&
		    access(buf, R_OK) == 0)
			return 0;
	return -1;
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
	for (size_t c = 0; c < CG_NDIRS; c++) {
		gp_cg_fmt(dir, sizeof(dir), "%s/%s/gpool", CG_ROOT, v1_ctrls[c]);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			pid_t pid = idle_owner(e->d_name, node);
			if (!pid || (shell > 0 && pid != shell) ||
			    (shell <= 0 && (kill(pid, 0) == 0 || errno != ESRCH)))
				continue;
			gp_cg_fmt(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (rmdir(path) == 0)
				removed++;
		}
		closedir(d);
	}
	return removed;
}

const struct gp_cg_ops gp_cg_v1 = {
    .name = "v1",
    .absent = "cgroups v1 asked for, but no v1 hierarchy is mounted under " CG_ROOT,
    .mounted = v1_mounted,
    .setup = v1_setup,
    .limits = v1_limits,
    .oom_total = v1_oom_total,
    .kill = v1_kill,
    .procs_path = v1_procs_path,
    .freeze_dir = "/freezer",
    .freeze_file = "freezer.state",
    .freeze_val = {"THAWED", "FROZEN"},
    .settle_file = "freezer.state",
    .settled = {"THAWED", "FROZEN"},
};
