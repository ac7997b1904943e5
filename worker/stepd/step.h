/* step.h: gstepd's one context: the job attempt it supervises on this node, its tasks, and
 * its link to the agent. Per-concern code lives in task.c (start, reap, kill), output.c
 * (pipes to Output messages) and stepd.c (the agent link and the run loop). */
#ifndef GPOOL_WORKER_STEP_H
#define GPOOL_WORKER_STEP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include "worker/node/account.h"
#include "worker/node/cgroup.h"
#include "common/error.h"
#include "common/xfer.h"
#include "proto/gpool.pb-c.h"
#include "worker/node/outbox.h"
#include "worker/stepd/container.h"
#include "worker/stepd/privtmp.h"
#include "worker/stepd/pmixsrv.h"
#include "worker/stepd/ptyserv.h"

#define STEP_CHUNK	(64 * 1024) /* largest Output chunk */
#define STEP_OUTBOX_MAX (8u << 20)  /* stop reading pipes above this much unacknowledged */
#define STEP_DRAIN_MS	3000	    /* after a task exits, wait this long for its pipes' EOF */
#define STEP_LINE_MS	200	    /* a line's start waits this long for its end (output.c) */

enum task_state {
	TASK_NEW = 0,
	TASK_RUNNING, /* started, not reaped */
	TASK_REAPED,  /* wait4 done, pipes may still hold output */
	TASK_DONE,    /* TASK_EXITED or TASK_FAILED_TO_START queued */
};

struct task {
	const Gpool__TaskPlacement *tp;
	enum task_state state;
	pid_t pid;
	char **env;
	int fd[3]; /* [1] stdout, [2] stderr read ends; -1 when closed */
	uint64_t off[3];
	uint8_t *part[3]; /* read, not sent: the start of a line (output.c) */
	size_t partlen[3];
	int64_t part_ms[3]; /* when part began waiting for its newline */
	int status;
	bool failed; /* never started */
	bool oom;
	struct rusage ru;
	int64_t reaped_ms;
	char **cargv; /* a --container task: the crun command that runs it (container.h) */
	char *croot;  /* and where its child binds the image's tree for crun (container.h) */
};

struct step {
	Gpool__Launch *launch;
	char *launch_path; /* removed when the step is done */
	const char *node;
	const char *iface;	    /* the interface that joins the nodes (NULL: unknown) */
	const char *subnet;	    /* its subnet, ADDR/BITS (NULL: unknown) */
	char mps_root[4200];	    /* shared cards' MPS directories: SCRATCH_DIR/mps (mps.h) */
	struct gp_config *xfer_cfg; /* for the chunk store's client (NULL: no staging) */
	const char *cache_dir;	    /* this node's chunk cache */
	struct gp_account account;
	char *workdir;
	bool workdir_owned;
	gp_cgroup_t *cg;
	struct task *tasks;
	size_t ntasks;
	gp_outbox_t *out;	   /* the supervisor's one outbox (shared by a shell's steps) */
	uint64_t last_seq;	   /* the sequence number of the last message queued for it */
	int64_t kill_deadline_ms;  /* 0: no SIGKILL escalation pending */
	bool killed;		   /* a kill arrived: tasks ending now end by it */
	uint64_t oom_kills;	   /* OOM kills seen in the job's cgroup so far */
	gp_pmixsrv_t *pmix;	   /* --mpi=pmix: the job's PMIx server on this node */
	gp_ptyserv_t *pty;	   /* gsub --pty: rank 0's terminal and its client (ptyserv.h) */
	struct step_ctr *ctr;	   /* gsub --container: the held image (container.h), else NULL */
	struct step_lazy *lazy;	   /* gsub --stage-lazy: ranged reads' server (lazy.h), or NULL */
	struct step_privtmp *ptmp; /* the job's own /tmp (privtmp.h), or NULL: the node's */
};

/* gstepd's main: the gstepd executable, or a child gworkerd forked (fresh ZeroMQ context). */
int gp_stepd_main(int argc, char **argv);

/* Queue a message for the agent (numbered, kept until acknowledged). Here rather than in
 * stepd.c: task.c and output.c send too, and stepd.c calls them, not the other way. */
static inline int step_send(struct step *s, Gpool__Msg *m)
{
	if (gp_outbox_push(s->out, m) < 0)
		return -1;
	s->last_seq = m->id;
	return 0;
}

/* The nodes the launch stages from (stage_peers), for gp_xfer_fetch_*: the chain's whole-file
 * fetch as it is; lazy staging sets any. Here rather than in stepd.c: lazy.c needs it too, and
 * stepd.c calls lazy.c, not the other way. */
static inline struct gp_xfer_peers step_stage_peers(const struct step *s)
{
	const Gpool__Launch *l = s->launch;
	return (struct gp_xfer_peers){.eps = l->stage_peers,
				      .n = l->n_stage_peers,
				      .self = l->stage_index,
				      .cfg = s->xfer_cfg,
				      .uid = geteuid()};
}

/* collect.c */
/* Upload what rank t's --collect patterns match in the working directory to the scheduler's
 * store (before its exit is reported); failures are logged, never fatal. */
void step_collect(struct step *s, const struct task *t);

/* task.c */
/* Start every task; failures become TASK_FAILED_TO_START. */
void tasks_start(struct step *s);
/* Fail every task with reason (setup before any task started failed). */
void tasks_fail_all(struct step *s, const char *reason);
/* The child pid ended with wait status st: true when it was one of s's tasks. */
bool tasks_reaped(struct step *s, pid_t pid, int st, const struct rusage *ru);
/* Tasks whose output is drained: queue TASK_EXITED. */
void tasks_finish(struct step *s, int64_t now);
/* Signal every task's process tree; grace_ms > 0 schedules SIGKILL. */
void tasks_kill(struct step *s, int sig, uint32_t grace_ms);
/* SIGKILL everything left of the job. */
void tasks_kill_hard(struct step *s);
bool tasks_all_done(const struct step *s);
/* The soonest time something in task.c must happen, or INT64_MAX. */
int64_t tasks_next_deadline(const struct step *s);

/* output.c */
/* Read what fd i of task t has (non-blocking); queue Output messages, eof once. */
void output_read(struct step *s, struct task *t, int i);
/* Close a stream that will never see EOF (a process escaped with it) and send eof. */
void output_close(struct step *s, struct task *t, int i);
/* Send the start of a line that waited STEP_LINE_MS for its end; the next such time, or
 * INT64_MAX. */
int64_t output_tick(struct step *s, struct task *t, int64_t now);

#endif
