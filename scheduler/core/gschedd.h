/* gschedd.h: the scheduler daemon's context. One struct per concern, each a .c/.h pair in
 * scheduler/core/ (decides), shell/ (acts), store/ (keeps) or features/ (plugs into the core;
 * docs/architecture.md, "The folders"):
 *   net.c       the ROUTER socket, cheap checks, per-address rate bounds, per-peer outboxes
 *   store.c     SQLite (WAL) with group commit: durable before acknowledged
 *   jobs.c      the job table and the priority queue
 *   nodes.c     registered agents and their resources
 *   card_state.c the cards' state gschedd owns, kept over registrations (and in store.c)
 *   plan.c      placement: priority order, all-or-nothing allocation, EASY backfill
 *   priority.c  the order of the queue from fair share (fairshare.c), per-user limits
 *   lifecycle.c job state changes: start, task events, kill, end, node failure
 *   orders.c    what the core decided for the shell to do: send, launch, save, reply
 *   events.c    the core's job and node events and their subscribers (services, metrics...)
 *   launch.c    an attempt's Launch messages, built from the stored spec (the shell)
 *   effects.c   the shell carrying out the orders after each event
 *   core.c      making the core (jobs, nodes, running set, orders, events) and its watchers
 *   output.c    per-job output files and log queries (long poll)
 *   rdv.c       the rendezvous of a job's ranks: put/get/fence, in memory
 *   agent.c     messages from agents; client.c messages from commands
 *   handlers.c  the table: message type -> handler and who may send it
 *   loop.c      the event loop and replies; commit.c the group commit
 *   settings.c  the settings, read at start-up and again on SIGHUP
 *   http.c      the HTTP server thread: REST API, /metrics, dashboard (api_json.c: JSON)
 *   metrics.c   /metrics in Prometheus' text format
 *   retention.c purging of finished jobs older than job_retention
 */
#ifndef GPOOL_GSCHEDD_H
#define GPOOL_GSCHEDD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "common/uidpolicy.h"
#include "proto/gpool.pb-c.h"
#include "scheduler/core/clock.h"
#include "scheduler/core/jobs.h"
#include "scheduler/core/orders.h"
#include "common/wire.h"

struct net;
struct store;
struct nodes;
struct output;
struct rdv;
struct metrics;
struct http;
struct retention;
struct orders;
struct gp_dep_target;
struct services;
struct sched_events;
struct admit_chain;

/* A submission waiting for its transaction to commit before it is acknowledged. */
struct pending_submit {
	struct job *job;
	uint8_t rid[256];
	size_t rid_len;
	uint64_t msg_id;
	uint32_t array_count; /* an array: its tasks are job->id .. job->id + array_count - 1 */
};

struct gsched {
	gp_config_t *cfg;
	gp_auth_t *auth;
	struct net *net;
	struct store *store;
	struct repl *repl; /* NULL: one scheduler (no sched_peers) */
	struct jobs *jobs;
	struct nodes *nodes;
	struct output *output;
	struct rdv *rdv; /* NULL: no rendezvous served */
	struct metrics *metrics;
	struct http *http; /* NULL: no HTTP server (http_listen empty) */
	struct retention *retention;
	struct orders *orders;	     /* what the core decided, for the loop to do (orders.h) */
	struct sched_events *events; /* who watches jobs and nodes (events.h); NULL: nobody */
	struct admit_chain *admit;   /* the checks a submission passes (admit.h); NULL: none */
	struct sched_clock clock;    /* the time, given to the core (clock.h) */
	struct gp_u64map *running;   /* id -> job, RUNNING or COMPLETING */
	struct services *services;   /* services' own state: replica sets, replicas (service.c) */
	struct svcrep *svcrep;	     /* the gateways' word on the replicas (svcreport.c) */
	struct fairshare *fairshare; /* users' usage, shares and limits (fairshare.h); NULL: none */
	struct card_mem *card_mem;   /* slices' card memory as reported (card_memory.h) */
	double plan_wake;	     /* unix time a pass is due (a --begin time), 0: none */
	struct budget *lists;	     /* records a user's listings may walk (budget.h); NULL: none */
	uint64_t svcrep_refused;     /* reports from one who is not a gateway, ignored */
	int64_t svcrep_warned_ms;    /* when that was last logged (monotonic) */
	bool plan_dirty;	     /* queue or resources changed since the last placement pass */
	uint64_t members_version;    /* the pool's members (quorum.h), as agents are sent them */
	int64_t quorum_since_ms; /* a majority heard without a break since (monotonic; 0: none) */
	uint64_t dep_epoch;	 /* changes with every job saved: dependencies may have changed */
	/* how far a dependency's target got: the shell's port to the store (effects_dep_target;
	 * a test gives its own); NULL: not known, the dependency waits. 0 / -1. */
	int (*dep_target)(struct gsched *s, uint64_t id, bool has_task, uint32_t task,
			  struct gp_dep_target *t);
	/* how many of replica rep's siblings run on node (spread over the nodes): the services'
	 * port (service_subscribe); NULL: no services, 0 */
	int (*siblings_on)(struct gsched *s, const struct job *rep, int node);
	volatile int stop;
	bool restart;	     /* leadership lost: start again as a standby (main.c) */
	volatile int reload; /* SIGHUP seen: settings_reload at the next pass */
	int argc;	     /* the command line, read again on reload */
	char **argv;
	/* group commit */
	int64_t txn_first_ms; /* when the first change of the open transaction was made, 0: none */
	struct job **touched; /* jobs written in the open transaction */
	size_t ntouched, captouched;
	struct pending_submit *subs;
	size_t nsubs, capsubs;
	uint64_t submitted, completed;
	/* settings (settings.c: reloaded on SIGHUP) */
	uid_t sched_uid, agent_uid;
	struct gp_uid_policy uids; /* the accounts jobs may run as (identity.c) */
	/* the scheduler PC's name for a uid (identity.h); NULL: its passwd (tests give theirs) */
	int (*owner_name)(uid_t uid, char *name, size_t len);
	uid_t gateway_uid; /* ServiceQuery.reports are taken from it (and root) alone */
	int64_t heartbeat_ms, node_timeout_ms, kill_grace_ms, commit_delay_ms;
	int64_t service_drain_ms;     /* a replica leaving: draining this long, then stopped */
	int64_t service_drain_max_ms; /* ... or up to this long while gateways report requests */
	uint32_t default_time_limit, max_time_limit; /* seconds */
	uint64_t max_jobs;
	bool requeue;
	uint32_t max_attempts;
	uint32_t power_cap_watts; /* 0: none */
	bool preempt;		  /* fair-share preemption (priority.h) */
	int64_t preempt_grace_ms;
	char state_dir[1024];
};

/* A request being handled: who sent it and where the reply goes. */
struct req {
	struct gsched *s;
	const uint8_t *rid; /* ZeroMQ routing id of the sender */
	size_t rid_len;
	struct gp_sender from;
	const char *addr; /* source address */
	Gpool__Msg *msg;
	int node; /* index of the sending agent's node, -1 for clients */
};

/* handlers.c */
/* Take up to max envelopes off the ROUTER socket and handle their messages (handlers.c).
 * Returns how many were taken, 0 when none was waiting. */
int gsched_recv(struct gsched *s, int max);
void handle_batch(struct gsched *s, const uint8_t *rid, size_t rid_len, const char *addr,
		  const struct gp_sender *from, Gpool__Batch *b);

#endif
