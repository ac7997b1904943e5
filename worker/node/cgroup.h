/* cgroup.h: one control group per job attempt, enforcing its memory, CPU and process limits
 * and holding every process the job starts, so that a kill reaches all of them.
 *
 * v2: <root>/gpool/job<id>.<attempt>.<node>/ (memory.max, cpuset.cpus, pids.max, cgroup.kill).
 * v1: the same path under each of the memory, cpuset, pids and freezer hierarchies (and
 * devices, only for a job that must be denied the device files of some cards).
 * Device files are denied with devices.deny on v1 and with a BPF device program on v2
 * (cgroup_devices.h).
 * Mode "auto" uses what is mounted and writable and skips the rest; "v1"/"v2" insist;
 * "off" makes an object that holds nothing (every call is then a successful no-op).
 */
#ifndef GPOOL_WORKER_CGROUP_H
#define GPOOL_WORKER_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

typedef struct gp_cgroup gp_cgroup_t;

struct gp_cgroup_limits {
	uint64_t mem_bytes;   /* 0: none */
	const uint32_t *cpus; /* logical CPU indices offered by the node, mapped modulo online */
	size_t ncpus;	      /* 0: no cpuset */
	uint64_t pids_max;    /* 0: none */
	/* device rules to deny ("c 195:1 rwm": the device files of cards the job was not
	 * given): v1 devices.deny, v2 a BPF device program attached to the group */
	const char *const *deny;
	size_t ndeny;
};

/* The deny rules for the cards of a node that the tasks were not given (real cards only:
 * NVIDIA /dev/nvidia<M> is char 195:M, AMD /dev/dri/renderD<M> char 226:M, with M from
 * gp_card_dev_minor; dev_node may be NULL: every card's unknown). Writes up to max rules into
 * buf and their pointers into rules; returns the count. */
size_t gp_cgroup_card_rules(const uint32_t *given, size_t ngiven, const int *vendor,
			    const bool *fake, const uint32_t *dev_node, size_t ncards,
			    char (*buf)[32], const char **rules, size_t max);

/* A task shell's idle groups, v1 only. A group made with a pool goes back to it when destroyed
 * (emptied, its directories renamed "idle.TAG.N") instead of being removed, while the pool holds
 * fewer than max and the group has at most 1 MiB of memory still charged (its job's files'
 * pages); the next group made with the pool is an idle one
 * renamed to its name, written only the limits that differ. A job denied some cards' device
 * files neither takes nor leaves one (device rules can only be added). A group whose limit
 * could not be written, or that still holds a process, is removed as without a pool. Saves a
 * mkdir and an rmdir in each hierarchy per job. v2 cannot rename a group: no pooling there. */
typedef struct gp_cgroup_pool gp_cgroup_pool_t;
gp_cgroup_pool_t *gp_cgroup_pool_create(const char *tag, size_t max);
/* Remove every idle group. */
void gp_cgroup_pool_destroy(gp_cgroup_pool_t **pool);
/* Idle groups now, and how many were taken and parked so far. */
void gp_cgroup_pool_stats(const gp_cgroup_pool_t *pool, size_t *idle, uint64_t *taken,
			  uint64_t *parked);

/* Remove the idle groups a shell of node kept (v1, "idle.s<pid>.<node>.<n>"): shell's, or with
 * shell 0 those of every shell that is no longer running (a shell killed before it could remove
 * its own). Returns the directories removed. */
int gp_cgroup_sweep_idle(const char *node, pid_t shell);

/* name: "job<id>.<attempt>.<node>"; pool: NULL or where the group may come from and go back to.
 * NULL with err filled when the mode cannot be honoured. */
gp_cgroup_t *gp_cgroup_create(const char *mode, const char *name,
			      const struct gp_cgroup_limits *lim, gp_cgroup_pool_t *pool,
			      gp_error_t *err);
/* The same, made inside the existing group parent (a name as above: a job step's group inside
 * its job's, so that the job's memory, cpus and pids bound its steps' together), where the
 * version allows it: v1 (whose groups may hold processes beside child groups). On v2 (whose
 * inner groups may not), or when parent is not there, the group is made as gp_cgroup_create
 * makes it, said in the log. A group made inside another is never pooled; removed, it removes
 * its parent too when that is left empty (its job's gstepd, gone first, could not). */
gp_cgroup_t *gp_cgroup_create_in(const char *mode, const char *parent, const char *name,
				 const struct gp_cgroup_limits *lim, gp_cgroup_pool_t *pool,
				 gp_error_t *err);
/* The name of group name made with parent by gp_cgroup_create_in: "parent/name" when that
 * group exists, else name. */
void gp_cgroup_name_in(const char *parent, const char *name, char *buf, size_t len);
/* Inside its parent (gp_cgroup_create_in nested it). */
bool gp_cgroup_nested(const gp_cgroup_t *cg);

/* Kill what is left, remove the group (or give it back to its pool). */
void gp_cgroup_destroy(gp_cgroup_t **cg);

/* The cgroup.procs file of the existing group name (as gp_cgroup_create was given it) into
 * buf: v2's, else that of one v1 hierarchy that has it. 0 / -1 (ENOENT: no such group, as
 * with cgroups off). */
int gp_cgroup_procs_path(const char *name, char *buf, size_t len);

/* "v1", "v2" or "off". */
const char *gp_cgroup_version(const gp_cgroup_t *cg);

/* Move the calling process into the group. Async-signal-safe (for use between fork and exec).
 * 0 / -1 with errno. */
int gp_cgroup_attach_self(const gp_cgroup_t *cg);

/* Signal every process in the group; returns how many were signalled (0 when none / off). */
int gp_cgroup_signal(gp_cgroup_t *cg, int sig);
/* Kill the whole group with SIGKILL (cgroup.kill on v2; freeze, kill, thaw on v1). */
void gp_cgroup_kill(gp_cgroup_t *cg);
bool gp_cgroup_empty(gp_cgroup_t *cg);

/* Number of OOM kills since the last call (0 when unknown). */
uint64_t gp_cgroup_oom_kills(gp_cgroup_t *cg);

/* Parse a CPU list "0-3,6" into a malloc'd array. 0 / -1. (Exposed for tests.) */
int gp_cpulist_parse(const char *s, uint32_t **cpus, size_t *n);

#endif
