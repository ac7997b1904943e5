/* cgroup_v2.c: what cgroup v2 does its own way (cgroup_int.h's table): one group
 * <root>/gpool/<name> with the memory, cpuset and pids controllers enabled above it, card device
 * files denied by a BPF device program (cgroup_devices.h), OOM kills from memory.events, a kill
 * by cgroup.kill, the freezer in cgroup.freeze. v2 cannot rename a group: no pooling.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/cgroup_int.h"
#include "worker/node/cgroup_devices.h"
#include "common/log.h"

static bool v2_mounted(void)
{
	return gp_cg_fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC);
}

static int v2_setup(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		    gp_error_t *err)
{
	char top[PATH_MAX], dir[PATH_MAX], buf[4096];
	gp_cg_fmt(top, sizeof(top), "%s/gpool", CG_ROOT);
	if (mkdir(top, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", top, strerror(errno));
	static const char *const ctrls[] = {"+memory", "+cpuset", "+pids"};
	for (size_t i = 0; i < sizeof(ctrls) / sizeof(ctrls[0]); i++) {
		if (gp_cg_write(CG_ROOT, "cgroup.subtree_control", ctrls[i]) < 0 ||
		    gp_cg_write(top, "cgroup.subtree_control", ctrls[i]) < 0)
			gp_debug("cgroup: cannot enable %s: %s", ctrls[i] + 1, strerror(errno));
	}
	gp_cg_fmt(dir, sizeof(dir), "%s/%s", top, name);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return gp_errprintf(err, "cannot make '%s': %s", dir, strerror(errno));
	if (!(cg->dir[0] = strdup(dir)))
		return gp_errprintf(err, "out of memory");
	gp_cg_fmt(cg->procs[0], PATH_MAX, "%s/cgroup.procs", dir);
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
		gp_cg_fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->mem_bytes);
		if (gp_cg_write(dir, "memory.max", buf) < 0) {
			if (gp_cg_limit_failed(cg, "memory.max", err) < 0)
				return -1;
		} else {
			cg->mem = true;
			gp_cg_write(dir, "memory.swap.max", "0");
		}
	}
	if (lim->ncpus) {
		char parent[4096];
		const char *pl =
		    gp_cg_read(top, "cpuset.cpus.effective", parent, sizeof(parent)) == 0 ? parent
											  : NULL;
		if (gp_cg_cpuset(pl, lim, buf, sizeof(buf)) == 0 &&
		    gp_cg_write(dir, "cpuset.cpus", buf) < 0 &&
		    gp_cg_limit_failed(cg, "cpuset.cpus", err) < 0)
			return -1;
	}
	if (lim->pids_max) {
		gp_cg_fmt(buf, sizeof(buf), "%llu", (unsigned long long)lim->pids_max);
		if (gp_cg_write(dir, "pids.max", buf) < 0 &&
		    gp_cg_limit_failed(cg, "pids.max", err) < 0)
			return -1;
	}
	return 0;
}

static int v2_oom_total(const gp_cgroup_t *cg, uint64_t *total, bool *hint)
{
	char buf[2048];
	*hint = false;
	if (gp_cg_read(cg->dir[0], "memory.events", buf, sizeof(buf)) < 0)
		return -1;
	char *p = strstr(buf, "oom_kill ");
	if (!p)
		return -1;
	*total = strtoull(p + 9, NULL, 10);
	return 0;
}

static void v2_kill(gp_cgroup_t *cg)
{
	if (gp_cg_write(cg->dir[0], "cgroup.kill", "1") == 0)
		return;
	gp_cg_kill_loop(cg);
}

static int v2_procs_path(const char *name, char *buf, size_t len)
{
	if ((size_t)gp_cg_fmt(buf, len, "%s/gpool/%s/cgroup.procs", CG_ROOT, name) < len &&
	    gp_cg_fs_is(CG_ROOT, CGROUP2_SUPER_MAGIC) && access(buf, R_OK) == 0)
		return 0;
	return -1;
}

const struct gp_cg_ops gp_cg_v2 = {
    .name = "v2",
    .absent = "cgroups v2 asked for, but " CG_ROOT " is not a cgroup2 mount",
    .mounted = v2_mounted,
    .setup = v2_setup,
    .limits = NULL,
    .oom_total = v2_oom_total,
    .kill = v2_kill,
    .procs_path = v2_procs_path,
    .freeze_dir = "",
    .freeze_file = "cgroup.freeze",
    .freeze_val = {"0", "1"},
    .settle_file = "cgroup.events",
    .settled = {"frozen 0", "frozen 1"},
};
