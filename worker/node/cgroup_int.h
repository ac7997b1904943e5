/* cgroup_int.h: what the files of the per-job control groups share (internal; cgroup.h is the
 * interface). What cgroup v1 and v2 each do their own way is a table of operations
 * (struct gp_cg_ops: cgroup_v1.c, cgroup_v2.c), chosen once when a group is made; cgroup.c
 * holds the common logic (the mode, the pool of idle groups, attach, signal, destroy),
 * cgroup_freeze.c the freezer that acts on a group by name.
 */
#ifndef GPOOL_WORKER_CGROUP_INT_H
#define GPOOL_WORKER_CGROUP_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/node/cgroup.h"
#include "common/error.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CG_ROOT "/sys/fs/cgroup"

/* A group's directories: v2 dir[0] only; v1 one per hierarchy (cgroup_v1.c), in the order
 * their cgroup.procs are joined. */
enum { V1_MEMORY = 0, V1_CPUSET, V1_PIDS, V1_FREEZER, V1_DEVICES, CG_NDIRS };

struct gp_cg_ops;

struct gp_cgroup {
	const struct gp_cg_ops *ops; /* its version; NULL: off */
	bool strict;		     /* v1/v2 asked explicitly: failures are errors */
	char *dir[CG_NDIRS];	     /* v2: dir[0] only; v1: per controller, NULL when not used */
	char procs[CG_NDIRS][PATH_MAX]; /* cgroup.procs of each dir, for attach_self */
	int nprocs;
	bool mem;
	uint64_t oom_seen;
	/* v1: the limits the group holds now (a new group none: 0 and NULL), so that a group
	 * taken again from a pool is written only what differs */
	uint64_t mem_set, pids_set;
	char *cpus_set;
	gp_cgroup_pool_t *pool; /* where the group goes when destroyed, if it may */
	bool nested;		/* inside another job's group (gp_cgroup_create_in) */
	bool poolable;		/* no write to it failed */
};

/* What a cgroup version does its own way. */
struct gp_cg_ops {
	const char *name;   /* "v1", "v2" (gp_cgroup_version, the cgroups mode) */
	const char *absent; /* the error when the mode names it and it is not mounted */
	bool (*mounted)(void);
	/* make the group name with its limits (cg->strict: a limit not set is an error) */
	int (*setup)(gp_cgroup_t *cg, const char *name, const struct gp_cgroup_limits *lim,
		     gp_error_t *err);
	/* write the limits where they differ from what the group holds (a group taken again
	 * from a pool); NULL: the version cannot rename a group, so never pools one */
	int (*limits)(gp_cgroup_t *cg, const struct gp_cgroup_limits *lim, gp_error_t *err);
	/* the OOM kills the group has seen so far; *hint: the kernel does not count them and
	 * the total says only whether the limit was ever hit. 0 / -1 when unknown */
	int (*oom_total)(const gp_cgroup_t *cg, uint64_t *total, bool *hint);
	/* SIGKILL to everything in the group (it holds some directory) */
	void (*kill)(gp_cgroup_t *cg);
	/* the cgroup.procs file of the existing group name into buf: 0 / -1 (none here) */
	int (*procs_path)(const char *name, char *buf, size_t len);
	/* the freezer (cgroup_freeze.c): CG_ROOT<freeze_dir>/gpool/<name>/<freeze_file> is
	 * written freeze_val[frozen], then <settle_file> there says settled[frozen] */
	const char *freeze_dir;
	const char *freeze_file;
	const char *freeze_val[2];
	const char *settle_file;
	const char *settled[2];
};

extern const struct gp_cg_ops gp_cg_v1, gp_cg_v2;
#define GP_CG_NVERSIONS 2
/* the versions, in the order they are probed: v2, v1 */
extern const struct gp_cg_ops *const gp_cg_versions[GP_CG_NVERSIONS];

/* cgroup.c: the helpers */
/* snprintf for paths: a path that does not fit is cut (and then simply not found). */
int gp_cg_fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
/* dir/file written val, or read into buf (trailing newlines and spaces cut). 0 / -1. */
int gp_cg_write(const char *dir, const char *file, const char *val);
/* path written val, in one write (a cgroup file takes a value per write). 0 / -1. */
int gp_cg_write_path(const char *path, const char *val);
int gp_cg_read(const char *dir, const char *file, char *buf, size_t len);
/* path read into buf, as gp_cg_read. 0 / -1. */
int gp_cg_read_path(const char *path, char *buf, size_t len);
bool gp_cg_fs_is(const char *path, long magic);
/* Map the node's logical CPU indices onto the CPUs the parent group allows. */
int gp_cg_cpuset(const char *parent_list, const struct gp_cgroup_limits *lim, char *out,
		 size_t len);
/* A limit that cannot be set: an error when strict, one debug line when auto. */
int gp_cg_limit_failed(gp_cgroup_t *cg, const char *what, gp_error_t *err);
/* Signal every pid in the group; returns how many were signalled. */
int gp_cg_each_pid(gp_cgroup_t *cg, int sig);
/* SIGKILL the group's pids again and again (up to 50 passes) while some are left. */
void gp_cg_kill_loop(gp_cgroup_t *cg);
void gp_cg_sleep_ms(long ms);

#endif
