/* nodes.h: the agents gschedd knows. Nodes are never removed (a node index stays valid for
 * the life of the daemon); a node that falls silent is DOWN until it registers again. A node's
 * cards are what its agent last reported, with the state gschedd owns kept (card_state.h). */
#ifndef GPOOL_NODES_H
#define GPOOL_NODES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/gpool.pb-c.h"
#include "scheduler/core/node_owner.h"
#include "scheduler/core/card_share.h"

struct node {
	char *name;
	char *addr;
	char *peer_ep; /* where its agent serves its chunk cache ("": nowhere) */
	char *version;
	uint8_t rid[256]; /* ZeroMQ routing id of the agent's socket */
	size_t rid_len;
	uint64_t reg_msg_id; /* the NodeRegister last taken: a copy of it is only answered */
	Gpool__NodeState state;
	char *reason;
	bool drain;	    /* admin drain: finishes its jobs, takes no new ones */
	char *drain_reason; /* why (kept in the store with the drain), NULL when not drained */
	uint32_t cpus;
	uint64_t mem_mb;
	uint32_t cpus_used;
	uint64_t mem_used_mb;
	uint8_t *cpu_busy;	 /* cpus entries */
	uint64_t card_busy;	 /* a bit per card held by a task */
	struct share_view share; /* its cards' slices of --gpu-share jobs (card_card_share.h) */
	Gpool__Card **cards;
	size_t n_cards;
	uint32_t psu_watts;
	int64_t last_heard_ms;
	double last_heard;
	uint32_t njobs;
	bool registered;	/* registered with this scheduler process at least once */
	bool cards_reported;	/* cards holds its agent's report, not yet the store's */
	bool state_in_txn;	/* its drain and cards' state are written in the open transaction */
	int64_t energy_ms;	/* when its cards' energy was last accounted */
	uint64_t energy_mj[64]; /* last counter (or sampled integral) per card */
	uint8_t energy_src[64]; /* its Gpool__EnergySource, 0: no reading yet */
	uint32_t *free_ports;	/* master ports its agent last said it holds free */
	size_t n_free_ports;
	double watts[64]; /* present draw per card, from the last heartbeat */
	/* the accounts its agent says jobs may run as there, by uid (NodeRegister.accounts);
	 * accounts_known is false for an agent that sent none (then only its launch checks) */
	struct node_account {
		uid_t uid;
		char name[33];
	} * accounts;
	size_t n_accounts;
	bool accounts_known, accounts_truncated;
	struct node_owner owner; /* the PC's owner (owner.h) */
};

struct nodes;

struct nodes *nodes_create(void);
/* The clock a node's registration is timed by (clock.h; none: 0). */
struct sched_clock;
void nodes_use_clock(struct nodes *ns, const struct sched_clock *c);
void nodes_destroy(struct nodes **ns);

int nodes_count(const struct nodes *ns);
struct node *nodes_get(struct nodes *ns, int idx);
const char *nodes_name(struct nodes *ns, int idx);
/* The agent's latest report of the master ports it holds free (replaces the last one). */
void node_set_free_ports(struct node *n, const uint32_t *ports, size_t n_ports);
/* What node n's agent said about its accounts (bounded, kept sorted by uid). */
void node_set_accounts(struct node *n, const Gpool__NodeRegister *reg);
/* n's name for uid: NULL when its agent does not have it (or reported no accounts). */
const char *node_account_name(const struct node *n, uid_t uid);
/* -1 when unknown */
int nodes_find(const struct nodes *ns, const char *name);
/* Find by routing id (-1 when unknown). */
int nodes_find_rid(const struct nodes *ns, const uint8_t *rid, size_t len);
/* Register (or re-register) a node; returns its index or -1. Resources in use are kept, and so
 * is the state gschedd owns of each card the report matches (the card's state from an earlier
 * registration, or from the store at the first one of this process). */
int nodes_register(struct nodes *ns, const Gpool__NodeRegister *reg, const uint8_t *rid,
		   size_t rid_len);

/* The owned state of one of node `name`'s cards, from the store at start-up: the node's first
 * registration matches its reported cards against these. Takes `card` (freed with
 * gpool__card__free_unpacked), also on failure. 0 / -1 (ENOMEM). */
int nodes_restore_card(struct nodes *ns, const char *name, Gpool__Card *card);

/* A node that registered with an earlier scheduler process (the store's list): it counts
 * towards the cluster's capacity once it registers again, and comes back drained (with its
 * reason) if it was. 0 / -1 (ENOMEM). */
int nodes_expect(struct nodes *ns, const char *name, bool drain, const char *reason, bool member);
/* The expected nodes (nodes_expect): the i-th's name when it was a member (not DOWN) and has
 * not registered with this process yet, else NULL (quorum.c counts them). */
size_t nodes_expected_count(const struct nodes *ns);
const char *nodes_expected_member(const struct nodes *ns, size_t i);
/* gnodes drain NODE / resume: the drain, its reason (shown as the node's reason), and its state
 * (DRAINED or UP) unless it is DOWN or not registered yet. 0 / -1 (ENOMEM: nothing changed). */
int node_set_drain(struct node *n, bool drain, const char *reason);
/* Whether the whole cluster's capacity is known: some node has registered, every node known
 * (expected from the store, or a placeholder for a running job) has registered with this
 * process. Until then no job can be told it will never fit. */
bool nodes_capacity_known(const struct nodes *ns);

/* A node known only from the jobs the store says run there (after a scheduler restart): state
 * UNKNOWN until its agent registers, DOWN if it does not within node_timeout. */
int nodes_placeholder(struct nodes *ns, const char *name);

/* Allocate n CPUs in one run of free indices if possible; returns the first or -1. */
int node_cpus_alloc(struct node *n, uint32_t count);
void node_cpus_free(struct node *n, uint32_t first, uint32_t count);
/* Is the node usable for new work? */
bool node_usable(const struct node *n);
/* Mark CPUs [first, first+count) busy (re-adoption after a restart). */
void node_cpus_mark(struct node *n, uint32_t first, uint32_t count);

void nodeinfo_fill(Gpool__NodeInfo *ni, const struct node *n);

#endif
