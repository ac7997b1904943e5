/* supervise_int.h: what the files of the agent's supervisors share (internal; agent.h is the
 * interface): the records of the supervisors (gstepd, task shells), of the job attempts they run
 * and of their tasks, and the few functions one file calls in another.
 *
 *   supervise.c          the records: their life, re-adoption after a restart, the lease, vacates,
 *                        the cards in use, the replicas' ports, the tick
 *   supervise_channel.c  the local socket the supervisors speak on: hello and events, kills,
 *                        a supervisor reaped or gone
 *   supervise_held.c     exits held until the scheduler acknowledges them (the exit files,
 *                        StepAck, the held list of Heartbeat and NodeRegister)
 *   supervise_launch.c   launching: gstepd and its command line, refusals, task shells and the
 *                        jobs handed to them
 */
#ifndef GPOOL_WORKER_AGENT_SUPERVISE_INT_H
#define GPOOL_WORKER_AGENT_SUPERVISE_INT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker/agent/agent.h"
#include "worker/node/account.h"
#include "worker/node/shellkey.h"
#include "worker/node/svcport.h"
#include "common/endpoint.h"

/* gstepd's exit status when its exec failed (supervise_launch.c), told apart when reaped */
#define STEPD_EXEC_FAILED 127

struct task_rec {
	Gpool__HeldTask ht;
	Gpool__Rusage ru;
	uint64_t cards;		  /* a bit per card index the task holds */
	uint64_t carried;	  /* first fresh register/heartbeat id that listed its exit */
	bool acked;		  /* the scheduler has its exit on disk: no longer held */
	bool dropped;		  /* its supervisor vanished before it exited: no longer held */
	struct gp_port_seen seen; /* a replica: who listens on its port (ht.port_state) */
};

/* One supervisor process and its channel: a gstepd of one job attempt (routing id
 * "<job>.<attempt>") or a task shell (routing id "s<pid>") that runs several attempts of one
 * account (of one array, or single-task jobs that are not array tasks), one sequence of messages
 * for all of them. */
struct sup {
	char rid[48];
	size_t rid_len;
	pid_t pid;	   /* gstepd (known from the fork, or from its hello) */
	bool child;	   /* pid is our child: its end comes as SIGCHLD */
	bool ours;	   /* launched by this agent (not re-adopted after a restart) */
	uint64_t last_seq; /* highest sequence number forwarded */
	bool seq_known;	   /* last_seq is the supervisor's acknowledged position */
	bool ack_due;
	bool ack_blocked; /* an exit file could not be written: no acknowledgement this pass */
	bool hello_seen;
	int64_t last_heard_ms;
	size_t nsteps; /* step records that name it */
	/* a task shell */
	bool shell;
	bool closing;		 /* told to close: hands nothing more */
	struct gp_shell_key key; /* the jobs it takes (shellkey.h) */
	int64_t idle_since_ms;	 /* when its last step went (0: it holds some) */
};

struct step_rec {
	uint64_t job;
	uint32_t attempt;
	char rid[48]; /* "<job>.<attempt>", for the log */
	struct sup *sup;
	bool seen;	   /* its supervisor has it (hello or an event named it) */
	bool handover_due; /* to be handed to its shell once the shell says hello */
	struct task_rec *tasks;
	size_t ntasks;
	bool requeueable; /* !spec.no_requeue: killed when the lease runs out */
	bool fenced;	  /* killed when the lease ran out: its exits say so */
	bool exit_dirty;  /* the exit file must be written (or removed) */
	bool kill_pending;
	Gpool__Kill kill;
	bool screen;   /* a screening job: its tasks' results are reported (relay.c) */
	uid_t owner;   /* the account its tasks run as (who writes the results) */
	uint32_t port; /* the master port its rank 0 here binds (0: no rank 0 here) */
	/* the PC's owner (owner.h): stopped by a vacate (its exits say so); never frozen (gsub
	 * --no-suspend, or a job of several nodes); its checkpoint signal and grace */
	bool vacated;
	char *stop_reason; /* stopped by its agent (a slice over its VRAM budget): its exits say why
			    */
	double stopped_at; /* when fenced, vacated or stopped (gp_now()): steps_exit_is_stop */
	bool no_suspend;
	int ckpt_signal;
	uint32_t ckpt_sec;
	uint64_t step_of; /* a job step: the job and attempt it runs in */
	uint32_t step_of_attempt;
};

struct steps {
	char *argv[48]; /* gstepd's command line, argv[2] set per launch */
	char *ep;
	char grace[32];
	char sched_uid[32];
	char image_cache[32]; /* --image-cache: the bound on unpacked container images */
	char pull_max[32];    /* --pull-max: the largest image pulled from a registry */
	char ptmp_size[32];   /* --private-tmp-size: a job's tmpfs (private_tmp = tmpfs) */
	int shell_arg;	      /* argv[shell_arg] is "--shell" for a task shell, else NULL */
	bool fork_only;	      /* gstepd is the one beside us: run its code without exec */
	void *sock;
	gp_endpoint_t *endpoint; /* over sock: local, unsealed; one routing id per step */
	struct step_rec **v;
	size_t n;
	struct sup **sups;
	size_t nsups;
	bool share; /* share_stepd: small jobs of one account share task shells */
	Gpool__HeldTask **held;
	size_t nheld;
	char sock_path[4200];
	int64_t next_port_ms; /* the replicas' ports are checked then (ports_tick) */
};

/* supervise.c: the records */
struct step_rec *steps_rec_find(struct steps *ss, uint64_t job, uint32_t attempt);
/* A record of job attempt (tasks tp), supervised by nobody yet; NULL: out of memory. */
struct step_rec *steps_rec_add(struct steps *ss, uint64_t job, uint32_t attempt,
			       const Gpool__TaskPlacement *const *tp, size_t ntp);
/* A record with a supervisor of its own (routing id "<job>.<attempt>"). */
struct step_rec *steps_rec_add_own(struct steps *ss, uint64_t job, uint32_t attempt,
				   const Gpool__TaskPlacement *const *tp, size_t ntp);
/* ss->v[i] goes (the last record takes its place). */
void steps_rec_forget(struct steps *ss, size_t i);
struct sup *steps_sup_find(struct steps *ss, const char *rid, size_t len);
struct sup *steps_sup_new(struct steps *ss, const char *rid);
void steps_sup_free(struct steps *ss, struct sup *u);
/* r is supervised by u from now on (the one it had is let go). */
void steps_attach(struct steps *ss, struct step_rec *r, struct sup *u);
struct task_rec *steps_task_of(struct step_rec *r, uint32_t rank);
/* The master port rank 0 binds, when rank 0 is one of the launch's tasks (else 0). */
uint32_t steps_port_here(const Gpool__Launch *l);
/* Whether the lease running out stops a job's tasks. */
bool steps_lease_kills(const Gpool__JobSpec *spec);
/* Whether the owner's return vacates the job of launch l instead of freezing it. */
bool steps_owner_vacates(const Gpool__Launch *l);
/* Whether an exit of r's tasks reaped at exit_time (gp_now(); 0: not known) is the agent's stop
 * (fenced, vacated, stopped), which the scheduler requeues, rather than the task's own end. */
bool steps_exit_is_stop(const struct step_rec *r, double exit_time);
void steps_set_owner_prefs(struct step_rec *r, const Gpool__Launch *l);
void steps_set_requeueable(struct step_rec *r, bool yes);
void steps_set_screen(struct step_rec *r, const Gpool__Launch *l, const struct gp_account *acct);

/* supervise_held.c: exits held until the scheduler acknowledges them */
/* Record an exit (once): it is held until the scheduler acknowledges it. exit_time: when its
 * supervisor reaped it (0: not known), for steps_exit_is_stop. */
void steps_task_exited(struct step_rec *r, struct task_rec *t, int status, bool oom,
		       const Gpool__Rusage *ru, double exit_time);
/* Whether every task of r is acknowledged or dropped. */
bool steps_all_settled(const struct step_rec *r);
void steps_exits_load(struct steps *ss, DIR *d, const char *dir);

/* supervise_channel.c: the local socket */
gp_endpoint_t *steps_endpoint(struct agent *a, struct steps *ss);
int steps_send_sup(struct steps *ss, struct sup *u, const Gpool__Msg *m);
/* r's kill (r->kill) to its supervisor, now or once it can take it. */
void steps_deliver_kill(struct steps *ss, struct step_rec *r);
/* Every job of supervisor u: it is gone. */
void steps_sup_gone(struct agent *a, struct sup *u, const char *why);

/* supervise_launch.c: launching */
int steps_stepd_argv(struct agent *a, struct steps *ss);
/* Answer every task of r TASK_FAILED_TO_START (why); they stay held as exited. */
void steps_fail_tasks(struct agent *a, struct step_rec *r, const char *why);
/* The jobs handed to shell u before it said hello (and kills that came for them). */
void steps_handovers_flush(struct agent *a, struct sup *u);

#endif
