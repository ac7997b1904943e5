/* agent.h: gworkerd's one context. Per-concern state lives in sched_link.c (the connection to
 * gschedd: registration, heartbeats, batching), supervise.c (the local socket, the gstepd
 * processes and the tasks they hold) and power.c (the cards' energy); relay.c reports
 * screening jobs' results; gworkerd.c holds the loop. */
#ifndef GPOOL_WORKER_AGENT_H
#define GPOOL_WORKER_AGENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "worker/node/cards.h"
#include "common/config.h"
#include "proto/gpool.pb-c.h"
#include "worker/node/ports.h"
#include "common/uidpolicy.h"

struct sched_link;
struct steps;
struct power;
struct gp_sender;

struct agent {
	gp_config_t *cfg;
	void *zctx;
	char node[256];
	char addr[256];
	char iface[64];	 /* the interface that carries addr ("" when none does) */
	char subnet[64]; /* its subnet, ADDR/BITS */
	uint32_t cpus;
	uint64_t mem_mb;
	gp_cards_t cards;
	char state_dir[4096];
	char stepd[4096];
	struct sched_link *link;
	struct steps *steps;
	struct power *power;
	struct share *share; /* MPS daemons of shared cards (card_share.c) */
	struct owner *owner;
	gp_ports_t *ports; /* master ports held for jobs whose rank 0 runs here */
	struct peer *peer;
	/* when the scheduler was last heard (monotonic ms; 0: never since the agent started):
	 * written by the loop, read by the peer thread to answer PeerStatus */
	_Atomic int64_t sched_heard_ms;
	/* before when the scheduler requeues no silent node's jobs, as it last said (monotonic
	 * ms; HeartbeatReply.requeue_in_ms), for the same answer */
	_Atomic int64_t sched_requeue_at_ms;
	struct gp_uid_policy uids; /* the accounts jobs may run as on this PC (account.h) */
	bool quit;
	int argc; /* the command line, read again on SIGHUP */
	char **argv;
};

/* peer.c: the agent serves its chunk cache (<state_dir>/cache) to other agents on
 * tcp://node_addr:peer_port (ChunkGet, the agents' account only) from a thread of its own, so
 * staged files fan out along a chain of nodes instead of every node pulling them all from the
 * scheduler (docs/staging.md). A peer that cannot bind is off: "" endpoint, and jobs fetch
 * from the scheduler alone. */
struct peer *peer_create(struct agent *a);
void peer_destroy(struct peer **p);
const char *peer_endpoint(const struct peer *p);

/* sched_link.c */
struct sched_link *sched_link_create(struct agent *a, gp_error_t *err);
void sched_link_destroy(struct sched_link **l);
void *sched_link_socket(struct sched_link *l);
/* Queue one message for the scheduler (sent with the others at the end of the pass). */
void sched_link_queue(struct agent *a, const Gpool__Msg *m);
/* The same for a task's Output, kept until the scheduler answers for it (outkeep.h). */
void sched_link_forward_output(struct agent *a, const Gpool__Msg *m);
/* Registered (the scheduler accepts task events and output). */
bool sched_link_up(const struct sched_link *l);
void sched_link_recv(struct agent *a);
/* One opened batch from the scheduler link: dropped unless signed by sched_uid, else each
 * message through the dispatch table (sched_link_recv; tests/fuzz/fuzz_gworkerd.c). */
void sched_link_handle(struct agent *a, const struct gp_sender *from, const Gpool__Batch *b);
/* Timers: registration retries, heartbeats. Returns the next wakeup (monotonic ms). */
int64_t sched_link_tick(struct agent *a, int64_t now);
/* Something the scheduler should hear of soon (a replica's port changed hands): the next
 * heartbeat goes at the next tick. */
void sched_link_soon(struct agent *a);
/* Seal and send the pass's batch. */
void sched_link_flush(struct agent *a);

/* power.c: each card's energy for the scheduler: its own counter, or the integral of its
 * power draw sampled every power_sample_interval (fake cards: their simulated draw). */
struct power *power_create(struct agent *a, gp_error_t *err);
void power_destroy(struct power **p);
/* A new sampling period (SIGHUP), 10 ms to 1 h. 0 / -1 (EINVAL). */
int power_set_interval(struct power *p, int64_t interval_ms);
/* Sample the cards that are due. Returns the next wakeup (monotonic ms). */
int64_t power_tick(struct agent *a, int64_t now);
/* The cards' energy for a heartbeat: fills up to max entries of p and their pointers in pp;
 * cards with no reading are left out (the scheduler bounds them by their power limit). */
size_t power_report(struct agent *a, Gpool__CardPower *p, Gpool__CardPower **pp, size_t max);

/* supervise.c */
struct steps *steps_create(struct agent *a, gp_error_t *err);
void steps_destroy(struct steps **s);
void *steps_socket(struct steps *s);
void steps_recv(struct agent *a);
/* One opened batch from the supervisor with routing id rid ("<job>.<attempt>", len bytes):
 * each message through the dispatch table (steps_recv; tests/fuzz/fuzz_gworkerd.c). */
void steps_handle(struct agent *a, const char *rid, size_t len, const Gpool__Batch *b);
void steps_launch(struct agent *a, const Gpool__Launch *l);
/* The configuration was reloaded: later supervisors get its kill_grace, log_level, log_file.
 * 0 / -1 (out of memory: the old arguments stay). */
int steps_reconfigure(struct agent *a);
void steps_kill(struct agent *a, const Gpool__Kill *k);
/* The tasks held, for NodeRegister and Heartbeat with Msg.id msg_id (valid until the next
 * steps_* call): running ones and exited ones the scheduler has not acknowledged. fresh: the
 * id is new (not a resend), so a reply to it acknowledges every exit listed. */
Gpool__HeldTask **steps_held(struct agent *a, size_t *n, uint64_t msg_id, bool fresh);
/* The scheduler answered the register or heartbeat msg_id: it has committed every exit
 * listed in it (or in an earlier fresh one); those are forgotten. */
void steps_acked(struct agent *a, uint64_t msg_id);
/* A gstepd we started ended (SIGCHLD). */
void steps_reaped(struct agent *a, pid_t pid, int status);
/* No word from the scheduler for the lease: SIGKILL every requeueable job still running. */
void steps_lease_expired(struct agent *a, int64_t silent_ms);
int64_t steps_tick(struct agent *a, int64_t now);
/* The cards (a bit per card index) held by tasks that have not exited. */
uint64_t steps_cards_busy(const struct agent *a);
/* Those of one job attempt (0: it has none, or is not held here). */
uint64_t steps_cards_of(const struct agent *a, uint64_t job, uint32_t attempt);
/* The processes of one job attempt here (its cgroup's, else its tasks' sessions'), up to max. */
size_t steps_pids_of(struct agent *a, uint64_t job, uint32_t attempt, pid_t *out, size_t max);
/* Stop one attempt (SIGKILL) because of why (a slice over its VRAM budget): its exits carry
 * why as their reason, and the job fails with it. 0 / -1 (ENOENT). */
int steps_stop(struct agent *a, uint64_t job, uint32_t attempt, const char *why);
/* Send the pass's acknowledgements. */
void steps_flush(struct agent *a);
/* A step held here was handed port as its master port (it is not offered while so). */
bool steps_port_busy(uint32_t port, void *agent);
/* The job attempts held here with a task still running (not being vacated or fenced), up to
 * max into out; returns how many. */
struct steps_live {
	uint64_t job;
	uint32_t attempt;
	bool no_suspend; /* never frozen: vacated instead (gsub --no-suspend, several nodes) */
	int ckpt_signal; /* gsub --signal=SIG@SECONDS (0: none) */
	uint32_t ckpt_sec;
	/* a job step: the job and attempt it runs in (its cgroup may be inside theirs) */
	uint64_t step_of;
	uint32_t step_of_attempt;
};
size_t steps_live(const struct agent *a, struct steps_live *out, size_t max);
/* Vacate one attempt: sig to its tasks, SIGKILL after grace_ms; its exits are reported
 * vacated (the scheduler queues it again, not counting the attempt). 0 / -1 (ENOENT). */
int steps_vacate(struct agent *a, uint64_t job, uint32_t attempt, int sig, uint32_t grace_ms);

/* owner.c: the PC's owner (docs/owner.md). The sources (file, logind, cards, cpu) are read
 * every owner_poll; by owner_policy, running jobs are frozen (their cgroups' freezer) while
 * the owner is active and thawed after owner_idle of quiet, or vacated, or left alone; the
 * windows owner_never / owner_always override. */
struct owner;
struct owner *owner_create(struct agent *a, gp_error_t *err);
void owner_destroy(struct owner **o);
/* The configuration was reloaded: policy, sources, windows, times. 0 / -1 with err (the
 * old settings stay). */
int owner_reconfigure(struct agent *a, gp_error_t *err);
/* Read the sources that are due and act on a change. Returns the next wakeup (monotonic ms). */
int64_t owner_tick(struct agent *a, int64_t now);
/* The state for a register or heartbeat (valid until the next owner_* call); hours of
 * activity ended since the last report go with it once (fresh: a new message, not a resend). */
Gpool__OwnerState *owner_report(struct agent *a, bool fresh);
/* Is the attempt frozen now? frozen_ms: its time frozen so far (ongoing freeze included). */
bool owner_step_frozen(struct agent *a, uint64_t job, uint32_t attempt, uint64_t *frozen_ms);

/* card_share.c: cards shared by small jobs (docs/gpu-share.md): an MPS control daemon per shared
 * NVIDIA card, as the user whose jobs share it, from the first sharing job's launch until the
 * last one's tasks have ended. */
struct share;
struct share *share_create(struct agent *a);
void share_destroy(struct share **s); /* the daemons stay: their jobs outlive the agent */
/* Before a --gpu-share launch's tasks start: the daemons of its NVIDIA cards, running as uid.
 * 0 / -1 with why filled (the launch is refused with it). */
int share_launch(struct agent *a, const Gpool__Launch *l, uid_t uid, gid_t gid, char *why,
		 size_t len);
/* Sample each slice's card memory (stopping an AMD slice over its budget) and stop the daemons
 * of cards whose sharing jobs have ended. Returns the next wakeup. */
int64_t share_tick(struct agent *a, int64_t now);
/* The slices' card memory as last sampled, for a heartbeat: up to max into v (pv pointing at
 * each); how many. */
size_t share_report(struct agent *a, Gpool__CardMemory *v, Gpool__CardMemory **pv, size_t max);
/* relay.c */
/* A task of screening job `job` ended: report the result it wrote for each of its cards (a
 * bit each) to the scheduler, if it is a regular file of uid owner that parses. */
void screen_relay(struct agent *a, uint64_t job, uint32_t attempt, uint32_t rank, uint64_t cards,
		  uid_t owner);

#endif
