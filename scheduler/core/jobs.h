/* jobs.h: the job table (id -> job), the pending queue in priority order, and the state
 * machine. A job keeps in memory only what scheduling needs (about 300 bytes); its full spec
 * (command, environment, staged files) stays in the store until launch.
 */
#ifndef GPOOL_JOBS_H
#define GPOOL_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/gpool.pb-c.h"

/* Why a pending job waits: a fixed list, each tested. */
enum pend_reason {
	PEND_NONE = 0,
	PEND_PRIORITY,	     /* a job ahead of it holds the resources or a reservation */
	PEND_RESOURCES,	     /* it fits the cluster, but not the free resources now */
	PEND_HELD,	     /* --hold or gpool hold */
	PEND_NODE_NOT_AVAIL, /* a node it must run on is down, drained or unknown */
	PEND_NO_NODES,	     /* no node is up */
	PEND_TOO_LARGE,	     /* no set of up nodes could ever hold it */
	PEND_REQUEUED,	     /* back in the queue after an attempt ended */
	PEND_NO_CARD,	     /* no card in the cluster matches what it asks */
	PEND_POWER,	     /* its cards would take the cluster over power_cap_watts */
	PEND_DEPENDENCY,     /* a job it depends on has not reached the state it waits for */
	PEND_DEP_NEVER,	     /* a dependency can no longer be satisfied */
	PEND_ARRAY_LIMIT,    /* its array already runs as many tasks as its %N allows */
	PEND_USER_LIMIT,     /* its user's running jobs, CPUs or cards are at user_limits */
	PEND_BEGIN_TIME,     /* gsub --begin: not before a time still to come */
	PEND_NREASONS,
};
const char *pend_reason_name(enum pend_reason r);

struct task {
	int node; /* index into the node table */
	uint16_t local_rank;
	uint8_t state; /* 0 not started, 1 started, 2 exited */
	bool oom;
	int32_t status;		   /* wait status */
	uint64_t out_off, err_off; /* next expected output offsets */
	uint16_t cpu_first;	   /* first CPU index on the node, cpus_per_task of them */
	uint64_t cards;		   /* the node's cards it holds, a bit each */
	uint8_t missing;	   /* heartbeats in a row that did not list it */
};

struct job {
	uint64_t id;
	uint32_t uid, gid;
	char *user;
	char *name;
	char *out_pattern, *err_pattern;
	Gpool__JobState state;
	uint32_t attempt;
	int32_t priority;
	bool hold;
	bool no_requeue;
	bool screen;  /* a screening job (root or the agents' account submitted it) */
	bool durable; /* its submission is committed */
	bool in_txn;  /* written in the open transaction */
	enum pend_reason reason;
	char *end_reason; /* free text: why it ended or failed to start */
	double submit_time, start_time, end_time, reserved_start;
	int32_t exit_code;
	uint32_t ntasks, cpus_per_task, nodes_min, nodes_max;
	uint64_t mem_mb;     /* per node */
	uint32_t time_limit; /* seconds, 0: none */
	struct gpu_req *gpu; /* NULL: no card asked */
	char *reason_detail; /* more about a pending reason ("waiting for 4 cards") */
	char **nodelist, **exclude;
	int n_nodelist, n_exclude;
	/* while running */
	struct task *tasks; /* ntasks of them */
	uint32_t master_port;
	Gpool__JobState kill_reason; /* CANCELLED, TIMEOUT, FAILED, NODE_FAIL when killing */
	int64_t deadline_ms;	     /* monotonic time limit, 0: none */
	/* the PC's owner (owner.h): frozen now; frozen time over every attempt (not counted
	 * against the limit) and this attempt's part of it as its agent last said; attempts
	 * ended by a vacate (not counted against max_attempts) */
	bool frozen;
	uint64_t frozen_ms, frozen_attempt_ms;
	uint32_t vacates;
	bool vacated;	     /* this attempt is being vacated */
	bool ckpt_signalled; /* --signal sent before the time limit */
	int32_t ckpt_signal; /* gsub --signal=SIG@SECONDS (0: none) */
	uint32_t ckpt_sec;
	int64_t kill_sent_ms;
	double cpu_sec;
	uint64_t max_rss_kb;
	double energy_j;	 /* of its cards: counters, else power samples, else power limits */
	uint32_t energy_sources; /* a bit (1 << Gpool__EnergySource) per way energy_j was found */
	uint32_t tasks_exited;
	size_t qpos;	      /* position in the pending queue, or SIZE_MAX */
	char *placement_text; /* as loaded from the store, until resolved into tasks */
	/* job arrays (docs/arrays.md): every task is a job of its own */
	uint64_t array_job_id; /* the array's id (its first task's id), 0: not an array task */
	uint32_t array_task_id;
	uint32_t array_limit; /* at most this many of the array's tasks at once, 0: any */
	/* dependencies not yet known to be satisfied (freed once they are) */
	struct gp_dep *deps;
	uint8_t n_deps;
	bool deps_any;	     /* '?': one satisfied is enough */
	uint64_t deps_epoch; /* gsched's dep_epoch when last evaluated */
	/* what the spec says of services (service.c keeps their state in its own tables) */
	bool service;	       /* a service job (JobSpec.service without service_of) */
	uint64_t svc_of;       /* a replica: its service's id (JobSpec.service_of); 0: none */
	uint32_t svc_index;    /* a replica: which one (JobSpec.replica_index) */
	uint32_t port;	       /* the port its agent gave its task (--port), 0: not known */
	int64_t not_before_ms; /* not placed before this (gp_mono_ms; a feature's backoff), 0 */
	/* allocations and job steps (steps.c) */
	bool alloc;		/* an allocation (gsub --alloc): steps may run in it (steps.h) */
	uint64_t step_of;	/* a job step: its allocation's id; 0 for any other job */
	bool pty;		/* gsub --pty: its task's terminal (docs/interactive.md) */
	uint32_t pty_keep_sec;	/* gsub --pty-keep: a detached terminal waits this long */
	uint32_t steps_started; /* steps started in it since gschedd started */
	/* gsub --begin (unix s, 0: none) and --exclusive (whole nodes, nobody else's job there) */
	double begin_time;
	bool exclusive;
	/* preempted (priority.h): the attempt it was in, and when it is stopped (monotonic ms) */
	uint32_t preempt_attempt;
	int64_t preempt_kill_ms;
};

struct jobs;
struct gsched;

struct jobs *jobs_create(uint64_t next_id);
void jobs_destroy(struct jobs **js);

uint64_t jobs_next_id(struct jobs *js);
struct job *jobs_get(struct jobs *js, uint64_t id);
size_t jobs_count(struct jobs *js);
/* Add a job to the table (and to the queue when pending). */
int jobs_add(struct jobs *js, struct job *j);
/* Remove a final job from memory (it stays in the store). */
void jobs_forget(struct jobs *js, struct job *j);
void job_free(struct job *j);
/* What a job keeps in memory of its spec's array and dependency fields: the array's task
 * limit, and (while it is pending) its dependencies. 0 / -1 (ENOMEM; EINVAL: a field that does
 * not parse, which check_spec refuses before a job exists). */
int job_take_spec_extras(struct job *j, const Gpool__JobSpec *sp);

/* A spec's --array text, parsed: the one place gschedd reads it (the submission's checks, its
 * tasks, the task limit kept in memory, the Launch's array fields). *a is malloc'd (free it),
 * NULL when the spec has no array. 0 / -1 with errno (EINVAL, E2BIG: as gp_array_parse; ENOMEM),
 * then *a is NULL. */
struct gp_array;
int job_array_of(const Gpool__JobSpec *sp, struct gp_array **a);

/* The pending queue, ordered by priority (high first) then id. */
size_t jobs_queue_len(struct jobs *js);
struct job *jobs_queue_at(struct jobs *js, size_t i);
int jobs_queue_insert(struct jobs *js, struct job *j);
void jobs_queue_remove(struct jobs *js, struct job *j);

/* Iterate over every job in memory. */
struct job *jobs_iter(struct jobs *js, size_t *pos);

/* Fill a JobInfo for replies; the strings point into j, tasks are allocated into *arena
 * (free with jobinfo_release). */
struct nodes;
void jobinfo_fill(Gpool__JobInfo *ji, const struct job *j, struct nodes *ns);
void jobinfo_release(Gpool__JobInfo *ji);

#endif
