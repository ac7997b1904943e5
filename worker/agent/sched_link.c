/* sched_link.c: gworkerd's connection to gschedd.
 *
 * One DEALER socket; every envelope sealed with MUNGE; messages are accepted only from
 * sched_uid. Registration (NodeRegister, id R) is sent until NodeRegisterReply with id R
 * arrives, again after 1 s, 2 s, 4 s, then every 5 s (while gschedd is away ZeroMQ queues
 * them: gschedd answers the copies of one registration without taking it again); then a
 * Heartbeat (own id) every heartbeat_ms. An Error ERROR_UNEXPECTED for a message sent since
 * the last registration (the scheduler restarted and does not know us) or three unanswered
 * heartbeats in a row start registration again. Message ids start from the time the agent
 * started, so a restarted agent's never repeat its last life's. Everything for the scheduler
 * in one pass of the loop goes out as one batch under one credential.
 *
 * The lease (docs/reliability.md, "Scheduler outages"): silent for lease_ms, the agent asks
 * the pool's members whether they hear the scheduler (witness.h) and stops its requeueable
 * jobs unless a majority answers and none does (fence.h); while the scheduler stays away it
 * asks again every heartbeat_ms.
 *
 * Several schedulers (docs/reliability.md, "A standby scheduler"): `scheduler` may list them
 * (common/schedlist.h). The agent registers with one; a standby's ERROR_NOT_LEADER moves it to
 * the leader it names (else the next of the list) and a registration left unanswered for
 * REGISTER_SWITCH_MS to the next; it registers again there. With one scheduler nothing moves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "worker/agent/agent.h"
#include "worker/node/account.h"
#include "worker/agent/fence.h"
#include "worker/agent/outkeep.h"
#include "worker/agent/witness.h"
#include "common/auth.h"
#include "common/endpoint.h"
#include "common/log.h"
#include "common/schedlist.h"
#include "worker/node/sysinfo.h"
#include "common/util.h"
#include "common/wire.h"

#define REGISTER_RETRY_MS     1000
#define REGISTER_RETRY_MAX_MS 5000
#define HEARTBEAT_MISSES      3
#define BATCH_FLUSH_BYTES     (8u << 20)
/* with several schedulers: a registration unanswered this long goes to the next one */
#define REGISTER_SWITCH_MS 3000
/* NOT_LEADER moves the agent at most this often */
#define NOT_LEADER_PAUSE_MS 500

enum link_state { LINK_REGISTERING, LINK_UP };

struct sched_link {
	void *sock;
	gp_auth_t *auth;
	gp_endpoint_t *ep; /* over sock: sealed, only sched_uid's envelopes are taken */
	gp_batch_t batch;
	uid_t sched_uid;
	enum link_state state;
	uint64_t next_id;
	uint64_t reg_id;
	int64_t next_reg_ms;
	int64_t reg_started_ms; /* when this registration was first sent to this scheduler */
	int64_t switched_ms;	/* when it last moved to another scheduler on NOT_LEADER */
	struct gp_schedlist scheds;
	uint32_t hb_ms;
	int64_t next_hb_ms;
	int missed;
	uint32_t lease_ms;     /* 0: none known yet */
	int64_t last_heard_ms; /* any message from the scheduler */
	bool lease_expired;    /* silent past the lease: asking the peers, or fenced */
	bool fenced;	       /* requeueable jobs stopped in this silence */
	bool keeping;	       /* the peers said the scheduler is away: jobs run on */
	bool waiting;	       /* ... or back but unable to requeue yet (FENCE_WAIT) */
	bool reg_fresh;	       /* the register id has not been sent yet */
	uint32_t reg_retry_ms; /* the wait before the next copy of this registration */
	char lease_path[4200];
	/* the pool's members as the scheduler last sent them (kept in <state_dir>/members) */
	Gpool__PoolMembers *members;
	char members_path[4200];
	struct witness *witness; /* NULL: peers cannot be asked: a lease ends in a fence */
	/* with several schedulers: output forwarded, until answered for (outkeep.h); NULL with
	 * one (what a restarted gschedd missed of it is not sent twice into its files) */
	struct outkeep *outkeep;
	bool round_running;
	bool round_stale; /* the round out is for a silence that is over: its answer is dropped */
	int64_t round_end_ms, next_round_ms;
};

static gp_endpoint_t *link_endpoint(struct agent *a, struct sched_link *l);

struct sched_link *sched_link_create(struct agent *a, gp_error_t *err)
{
	struct sched_link *l = calloc(1, sizeof(*l));
	if (!l) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	if (gp_schedlist_parse(&l->scheds, gp_config_str(a->cfg, "scheduler"), err) < 0)
		goto fail;
	const char *ep = gp_schedlist_current(&l->scheds);
	l->sched_uid = (uid_t)gp_config_int(a->cfg, "sched_uid");
	l->hb_ms = (uint32_t)gp_config_int(a->cfg, "heartbeat_interval");
	/* microseconds since the epoch: never an id the last life of this agent used */
	l->next_id = (uint64_t)(gp_now() * 1e6);
	if (!(l->auth = gp_auth_create(NULL, err)))
		goto fail;
	if (!(l->sock = zmq_socket(a->zctx, ZMQ_DEALER))) {
		gp_errprintf(err, "zmq socket: %s", zmq_strerror(errno));
		goto fail;
	}
	int linger = 500, ivl = 200, ivlmax = 2000;
	zmq_setsockopt(l->sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(l->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof(ivl));
	zmq_setsockopt(l->sock, ZMQ_RECONNECT_IVL_MAX, &ivlmax, sizeof(ivlmax));
	if (zmq_connect(l->sock, ep) < 0) {
		gp_errprintf(err, "cannot connect to scheduler '%s': %s", ep, zmq_strerror(errno));
		goto fail;
	}
	if (!(l->ep = link_endpoint(a, l))) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	/* the lease of our previous life holds until the scheduler says otherwise: counted
	 * from now, so a restarted agent never outlives it by more than its restart */
	snprintf(l->lease_path, sizeof(l->lease_path), "%s/lease", a->state_dir);
	char buf[32];
	uint8_t *data = NULL;
	size_t len = 0;
	if (gp_read_file(l->lease_path, 31, &data, &len) == 0) {
		memcpy(buf, data, len);
		buf[len] = '\0';
		l->lease_ms = (uint32_t)strtoul(buf, NULL, 10);
		free(data);
	}
	l->last_heard_ms = gp_mono_ms();
	snprintf(l->members_path, sizeof(l->members_path), "%s/members", a->state_dir);
	if (gp_read_file(l->members_path, 16u << 20, &data, &len) == 0) {
		l->members = gpool__pool_members__unpack(NULL, len, data);
		free(data);
		if (!l->members)
			gp_warn("'%s' is damaged: the pool's members wait for the scheduler",
				l->members_path);
	}
	if (l->scheds.n > 1 && !(l->outkeep = outkeep_create())) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	if (!(l->witness = witness_create(a->zctx)))
		gp_warn("cannot ask peers about the scheduler: a lease that runs out stops "
			"requeueable jobs");
	return l;
fail:
	sched_link_destroy(&l);
	return NULL;
}

void sched_link_destroy(struct sched_link **p)
{
	if (!p || !*p)
		return;
	struct sched_link *l = *p;
	if (l->sock)
		zmq_close(l->sock);
	gp_endpoint_destroy(&l->ep);
	gp_auth_destroy(&l->auth);
	gp_batch_release(&l->batch);
	witness_destroy(&l->witness);
	outkeep_destroy(&l->outkeep);
	if (l->members)
		gpool__pool_members__free_unpacked(l->members, NULL);
	free(l);
	*p = NULL;
}

void *sched_link_socket(struct sched_link *l)
{
	return l->sock;
}

bool sched_link_up(const struct sched_link *l)
{
	return l->state == LINK_UP;
}

void sched_link_flush(struct agent *a)
{
	struct sched_link *l = a->link;
	gp_error_t err;
	if (!l->batch.count)
		return;
	if (gp_endpoint_send(l->ep, NULL, 0, &l->batch, &err) < 0)
		gp_warn("cannot send %d messages to the scheduler: %s", l->batch.count, err.text);
	gp_batch_reset(&l->batch);
}

void sched_link_queue(struct agent *a, const Gpool__Msg *m)
{
	struct sched_link *l = a->link;
	if (gp_batch_add(&l->batch, m) < 0) {
		gp_err("out of memory queueing a message for the scheduler");
		return;
	}
	if (l->batch.body.len >= BATCH_FLUSH_BYTES)
		sched_link_flush(a);
}

/* A message already packed as a batch member (outkeep.h) into the batch. */
static void queue_member(struct agent *a, const uint8_t *member, size_t len)
{
	struct sched_link *l = a->link;
	if (gp_batch_add_member(&l->batch, member, len) < 0) {
		gp_err("out of memory queueing a message for the scheduler");
		return;
	}
	if (l->batch.body.len >= BATCH_FLUSH_BYTES)
		sched_link_flush(a);
}

void sched_link_forward_output(struct agent *a, const Gpool__Msg *m)
{
	struct sched_link *l = a->link;
	size_t len = 0;
	const uint8_t *member = l->outkeep ? outkeep_add(l->outkeep, m, &len) : NULL;
	if (member) { /* packed once: the kept copy is what goes */
		queue_member(a, member, len);
		return;
	}
	if (l->outkeep)
		gp_warn("output of job %llu rank %u not kept for a resend: %s",
			(unsigned long long)m->output->job_id, m->output->rank, strerror(errno));
	sched_link_queue(a, m);
}

static void queue_again(void *arg, const uint8_t *member, size_t len)
{
	queue_member(arg, member, len);
}

static void send_register(struct agent *a, int64_t now)
{
	struct sched_link *l = a->link;
	Gpool__NodeRegister r = GPOOL__NODE_REGISTER__INIT;
	r.name = a->node;
	r.version = GPOOL_VERSION;
	r.cpus = a->cpus;
	r.mem_mb = a->mem_mb;
	r.cards = a->cards.v;
	r.n_cards = a->cards.n;
	r.addr = a->addr;
	r.peer_endpoint = (char *)peer_endpoint(a->peer);
	r.psu_watts = (uint32_t)gp_config_int(a->cfg, "psu_watts");
	r.held = steps_held(a, &r.n_held, l->reg_id, l->reg_fresh);
	r.owner = owner_report(a, l->reg_fresh);
	uint32_t ports[4096];
	r.n_free_ports = gp_ports_held(a->ports, ports, 4096);
	r.free_ports = ports;
	/* the accounts jobs may run as here: the scheduler places a job only where its owner's
	 * uid has the owner's name (heap: 4096 names do not fit a stack frame) */
	enum { MAX_ACCOUNTS = 4096 };
	uid_t *uids = malloc(MAX_ACCOUNTS * sizeof(*uids));
	char(*names)[33] = malloc(MAX_ACCOUNTS * sizeof(*names));
	Gpool__Account *acc = malloc(MAX_ACCOUNTS * sizeof(*acc));
	Gpool__Account **accp = malloc(MAX_ACCOUNTS * sizeof(*accp));
	if (uids && names && acc && accp) {
		bool truncated;
		size_t n = gp_account_list(&a->uids, uids, names, MAX_ACCOUNTS, &truncated);
		for (size_t i = 0; i < n; i++) {
			gpool__account__init(&acc[i]);
			acc[i].uid = uids[i];
			acc[i].name = names[i];
			accp[i] = &acc[i];
		}
		r.accounts = accp;
		r.n_accounts = n;
		r.accounts_truncated = truncated;
		r.accounts_listed = true;
	}
	l->reg_fresh = false;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = l->reg_id;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER;
	m.node_register = &r;
	sched_link_queue(a, &m);
	free(accp);
	free(acc);
	free(names);
	free(uids);
	l->next_reg_ms = now + l->reg_retry_ms;
	l->reg_retry_ms = l->reg_retry_ms * 2 < REGISTER_RETRY_MAX_MS ? l->reg_retry_ms * 2
								      : REGISTER_RETRY_MAX_MS;
	gp_debug("register sent (id %llu, %zu held tasks)", (unsigned long long)m.id, r.n_held);
}

/* Connect to another scheduler of the list: the leader a standby named (when given), else the
 * next. What was queued for the last one is dropped with its connection. */
static void switch_scheduler(struct agent *a, const char *leader)
{
	struct sched_link *l = a->link;
	char old[GP_SCHEDLIST_EP_MAX + 1];
	snprintf(old, sizeof(old), "%s", gp_schedlist_current(&l->scheds));
	if (leader)
		gp_schedlist_follow(&l->scheds, leader);
	else
		gp_schedlist_next(&l->scheds);
	const char *ep = gp_schedlist_current(&l->scheds);
	if (!strcmp(old, ep))
		return;
	zmq_disconnect(l->sock, old);
	if (zmq_connect(l->sock, ep) < 0) {
		gp_err("cannot connect to scheduler '%s': %s", ep, zmq_strerror(errno));
		return;
	}
	gp_info("scheduler: %s instead of %s", ep, old);
}

static void start_register(struct agent *a, const char *why)
{
	struct sched_link *l = a->link;
	if (why)
		gp_info("registering again: %s", why);
	l->reg_started_ms = gp_mono_ms();
	l->state = LINK_REGISTERING;
	l->reg_id = l->next_id++;
	l->reg_fresh = true;
	l->reg_retry_ms = REGISTER_RETRY_MS;
	l->missed = 0;
	send_register(a, gp_mono_ms());
}

static void send_heartbeat(struct agent *a, int64_t now)
{
	struct sched_link *l = a->link;
	Gpool__Heartbeat hb = GPOOL__HEARTBEAT__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__CardPower power[64], *pp[64];
	m.id = l->next_id++;
	hb.held = steps_held(a, &hb.n_held, m.id, true);
	if (l->outkeep)
		outkeep_mark(l->outkeep, m.id);
	hb.n_power = power_report(a, power, pp, 64);
	hb.power = hb.n_power ? pp : NULL;
	hb.load1 = gp_sys_load1();
	hb.mem_free_mb = gp_sys_mem_avail_mb();
	uint32_t ports[4096];
	hb.n_free_ports = gp_ports_held(a->ports, ports, 4096);
	hb.free_ports = ports;
	hb.members_version = l->members ? l->members->version : 0;
	hb.owner = owner_report(a, true);
	Gpool__CardMemory mem[128], *pm[128];
	hb.n_card_memory = share_report(a, mem, pm, 128);
	hb.card_memory = hb.n_card_memory ? pm : NULL;
	m.m_case = GPOOL__MSG__M_HEARTBEAT;
	m.heartbeat = &hb;
	sched_link_queue(a, &m);
	l->missed++;
	l->next_hb_ms = now + l->hb_ms;
}

static void fence(struct agent *a, int64_t now, const char *why)
{
	struct sched_link *l = a->link;
	l->fenced = true;
	l->keeping = false;
	gp_warn("lease expired: no message from the scheduler for %lld ms (lease %u ms), %s: "
		"stopping requeueable jobs",
		(long long)(now - l->last_heard_ms), l->lease_ms, why);
	steps_lease_expired(a, now - l->last_heard_ms);
}

/* A peer that heard the scheduler this much later than we did says it is alive. Agents'
 * last word from a scheduler that went away differ by a heartbeat at most; the scheduler counts
 * a node for its majority only when heard within two heartbeats (scheduler/quorum.h). */
static int64_t fresh_margin(const struct sched_link *l)
{
	return 2 * (int64_t)l->hb_ms;
}

/* A peer's gschedd that cannot requeue for longer than this leaves room for the next round
 * (a heartbeat, then the round) to ask again and stop the jobs, with a heartbeat and a round
 * of delays besides (fence.h). */
static int64_t requeue_guard(const struct sched_link *l)
{
	return 2 * (int64_t)l->hb_ms + 2 * WITNESS_ROUND_MS;
}

/* Asking the peers is sound only when a lease leaves room for the scheduler's window of two
 * heartbeats, this margin and a heartbeat of delays: node_timeout of 7 heartbeats or more. */
static bool may_ask_peers(const struct sched_link *l)
{
	return l->witness && l->lease_ms >= 5 * (int64_t)l->hb_ms;
}

/* A round of questions to the peers has ended: fence or run on. */
static void round_done(struct agent *a, int64_t now, const struct fence_view *v, const char *fresh)
{
	struct sched_link *l = a->link;
	enum fence_verdict verdict = fence_decide(v);
	char why[256], wait[64] = "";
	if (verdict == FENCE_WAIT)
		snprintf(wait, sizeof(wait), "; no requeue for %lld ms", (long long)v->wait_ms);
	snprintf(why, sizeof(why), "%s (%d of %d members reached%s%s%s)",
		 fence_verdict_text(verdict), v->reached, v->members, *fresh ? ", " : "",
		 *fresh ? fresh : "", wait);
	if (verdict != FENCE_KEEP && verdict != FENCE_WAIT) {
		fence(a, now, why);
		return;
	}
	bool waiting = verdict == FENCE_WAIT;
	if (!l->keeping || waiting != l->waiting)
		gp_warn("no message from the scheduler for %lld ms: %s: jobs keep running",
			(long long)(now - l->last_heard_ms), why);
	l->keeping = true;
	l->waiting = waiting;
	l->next_round_ms = now + l->hb_ms;
}

/* The lease: silent for lease_ms, the scheduler may soon give our jobs to other nodes, unless
 * the peers show that it is the scheduler that is away (fence.h). */
static int64_t lease_tick(struct agent *a, int64_t now)
{
	struct sched_link *l = a->link;
	if (!l->lease_ms || l->fenced)
		return INT64_MAX;
	if (!l->lease_expired) {
		int64_t end = l->last_heard_ms + l->lease_ms;
		if (now < end)
			return end;
		l->lease_expired = true;
		if (!may_ask_peers(l) || !l->members) {
			const char *why = !l->members  ? "the pool's members are not known"
					  : l->witness ? "too short to ask the peers"
						       : "no peers to ask";
			fence(a, now, why);
			return INT64_MAX;
		}
		gp_info("no message from the scheduler for %lld ms: asking the pool's members "
			"whether they hear it",
			(long long)(now - l->last_heard_ms));
		l->next_round_ms = now;
	}
	struct fence_view v;
	char fresh[64];
	if (l->round_running && witness_take(l->witness, &v, fresh, sizeof(fresh))) {
		l->round_running = false;
		if (l->round_stale) {
			l->round_stale = false;
			l->next_round_ms = now;
			return now;
		}
		round_done(a, now, &v, fresh);
		if (l->fenced)
			return INT64_MAX;
	}
	if (!l->round_running && now >= l->next_round_ms) {
		static const Gpool__PoolMembers none = GPOOL__POOL_MEMBERS__INIT;
		struct witness_ask ask = {.self_ago_ms = now - l->last_heard_ms,
					  .margin_ms = fresh_margin(l),
					  .guard_ms = requeue_guard(l)};
		if (witness_start(l->witness, l->members ? l->members : &none, a->node, &ask) < 0) {
			fence(a, now, "cannot ask the peers");
			return INT64_MAX;
		}
		l->round_running = true;
		l->round_end_ms = now + WITNESS_ROUND_MS + 20;
	}
	return l->round_running ? l->round_end_ms : l->next_round_ms;
}

/* The scheduler's list of the pool's members: kept, and on disk for a restart. */
static void set_members(struct agent *a, const Gpool__PoolMembers *m)
{
	struct sched_link *l = a->link;
	if (!m || (l->members && l->members->version == m->version))
		return;
	size_t len = gpool__pool_members__get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	Gpool__PoolMembers *copy = NULL;
	if (!buf ||
	    !(copy = gpool__pool_members__unpack(NULL, gpool__pool_members__pack(m, buf), buf))) {
		gp_err("out of memory keeping the pool's members");
		free(buf);
		return;
	}
	if (gp_write_file(l->members_path, buf, len, 0600) < 0)
		gp_warn("cannot write '%s': %s", l->members_path, strerror(errno));
	free(buf);
	if (l->members)
		gpool__pool_members__free_unpacked(l->members, NULL);
	l->members = copy;
	gp_debug("the pool has %zu members (version %llx)", copy->n_members,
		 (unsigned long long)copy->version);
}

void sched_link_soon(struct agent *a)
{
	struct sched_link *l = a->link;
	if (l && l->state == LINK_UP)
		l->next_hb_ms = 0;
}

int64_t sched_link_tick(struct agent *a, int64_t now)
{
	struct sched_link *l = a->link;
	int64_t lease = lease_tick(a, now), next;
	if (l->state == LINK_REGISTERING) {
		if (!l->reg_id) {
			start_register(a, NULL);
		} else if (l->scheds.n > 1 && now - l->reg_started_ms >= REGISTER_SWITCH_MS) {
			/* nobody there, or not answering: the next one */
			switch_scheduler(a, NULL);
			start_register(a, NULL);
		} else if (now >= l->next_reg_ms)
			send_register(a, now);
		next = l->next_reg_ms;
	} else if (now >= l->next_hb_ms && l->missed >= HEARTBEAT_MISSES) {
		start_register(a, "3 heartbeats without a reply");
		next = l->next_reg_ms;
	} else {
		if (now >= l->next_hb_ms)
			send_heartbeat(a, now);
		next = l->next_hb_ms;
	}
	return lease < next ? lease : next;
}

/* ---- messages from the scheduler ---- */

static void set_lease(struct agent *a, uint32_t ms)
{
	struct sched_link *l = a->link;
	if (ms == l->lease_ms)
		return;
	l->lease_ms = ms;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%u\n", ms);
	if (gp_write_file(l->lease_path, buf, (size_t)n, 0600) < 0)
		gp_warn("cannot write '%s': %s", l->lease_path, strerror(errno));
	gp_info("lease: %u ms without word from the scheduler stops requeueable jobs", ms);
}

/* When the scheduler may requeue a silent node's jobs, for peers whose lease ran out
 * (peer.c answers it: fence.h). A negative or absurd figure counts as "now". */
static void set_requeue_in(struct agent *a, int64_t ms)
{
	if (ms < 0 || ms > 24 * 3600 * 1000LL)
		ms = 0;
	atomic_store(&a->sched_requeue_at_ms, gp_mono_ms() + ms);
}

/* A message of the leading scheduler's renews the lease; a standby's ERROR_NOT_LEADER does not
 * (on_error). A standby can requeue nothing, and a node that reaches only a standby may be cut
 * off from a leader that hears the pool: counting the standby's answer kept such a node's lease
 * (and, passed on to a peer whose lease had run out, made that peer fence as cut off when the
 * leader could not requeue yet: t0374 once, 2026-12-06). */
static void heard(struct agent *a)
{
	struct sched_link *l = a->link;
	l->last_heard_ms = gp_mono_ms();
	atomic_store(&a->sched_heard_ms, l->last_heard_ms);
	if (l->lease_expired) {
		gp_info("the scheduler is back: lease renewed%s",
			l->keeping ? "; the jobs ran on" : "");
		l->lease_expired = l->fenced = l->keeping = l->waiting = false;
		l->round_stale = l->round_running;
	}
}

static void on_register_reply(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	struct sched_link *l = a->link;
	heard(a);
	if (m->id)
		steps_acked(a, m->id); /* the scheduler has what it carried on disk */
	set_lease(a, m->node_register_reply->lease_ms);
	set_members(a, m->node_register_reply->members);
	set_requeue_in(a, m->node_register_reply->requeue_in_ms);
	if (l->state != LINK_REGISTERING || m->id != l->reg_id) {
		gp_debug("stale register reply (id %llu) ignored", (unsigned long long)m->id);
		return;
	}
	if (m->node_register_reply->heartbeat_ms)
		l->hb_ms = m->node_register_reply->heartbeat_ms;
	if (l->hb_ms < 100)
		l->hb_ms = 100;
	l->state = LINK_UP;
	l->missed = 0;
	l->next_hb_ms = gp_mono_ms() + l->hb_ms;
	gp_info("registered as %s (heartbeat every %u ms)", a->node, l->hb_ms);
	if (l->outkeep) {
		/* what was not answered for went to a scheduler that may have lost it (it died,
		 * stepped down or restarted): it goes again, covered by a later heartbeat's answer
		 */
		if (outkeep_bytes(l->outkeep))
			gp_info("forwarding again %zu bytes of output not answered for",
				outkeep_bytes(l->outkeep));
		outkeep_each(l->outkeep, queue_again, a);
	}
}

static void on_heartbeat_reply(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	heard(a);
	a->link->missed = 0;
	if (m->id)
		steps_acked(a, m->id); /* the scheduler has what it carried on disk */
	if (m->id && a->link->outkeep)
		outkeep_answered(a->link->outkeep, m->id);
	set_members(a, m->heartbeat_reply->members);
	set_requeue_in(a, m->heartbeat_reply->requeue_in_ms);
}

static void on_error(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	const Gpool__Error *e = m->error;
	if (e->code != GPOOL__ERROR_CODE__ERROR_NOT_LEADER)
		heard(a);
	if (e->code == GPOOL__ERROR_CODE__ERROR_NOT_LEADER) {
		/* a standby (or a leader that stepped down): register with the leader; standbys
		 * naming each other are followed at most every NOT_LEADER_PAUSE_MS (else the
		 * unanswered registration moves on) */
		struct sched_link *l = a->link;
		int64_t now = gp_mono_ms();
		if (l->switched_ms && now - l->switched_ms < NOT_LEADER_PAUSE_MS) {
			gp_debug("scheduler %s is not the leader either",
				 gp_schedlist_current(&l->scheds));
			return;
		}
		l->switched_ms = now;
		gp_info("scheduler %s is not the leader%s%s",
			gp_schedlist_current(&a->link->scheds),
			e->leader && *e->leader ? "; the leader is " : "",
			e->leader && *e->leader ? e->leader : "");
		switch_scheduler(a, e->leader);
		start_register(a, NULL);
		return;
	}
	if (e->code == GPOOL__ERROR_CODE__ERROR_UNEXPECTED) {
		struct sched_link *l = a->link;
		/* the answer to a heartbeat queued before this registration (0: unsolicited, news)
		 */
		if (l->state == LINK_REGISTERING || (m->id && m->id < l->reg_id)) {
			gp_debug("scheduler: %s (message %llu, before registration %llu)",
				 e->text ? e->text : "", (unsigned long long)m->id,
				 (unsigned long long)l->reg_id);
			return;
		}
		start_register(a, e->text && *e->text ? e->text : "the scheduler does not know us");
		return;
	}
	gp_warn("scheduler: %s: %s (message %llu)", gp_error_code_name(e->code),
		e->text ? e->text : "", (unsigned long long)m->id);
}

static void on_launch(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	heard(a);
	steps_launch(a, m->launch);
}

static void on_kill(void *arg, void *peer, const Gpool__Msg *m)
{
	struct agent *a = arg;
	heard(a);
	steps_kill(a, m->kill);
}

/* the answer to a screening result relayed (relay.c); a refusal comes as an Error */
static void on_card_report_reply(void *arg, void *peer, const Gpool__Msg *m)
{
	heard(arg);
	gp_debug("the scheduler took a screening result");
}

static const struct gp_ep_handler sched_msgs[] = {
    {GPOOL__MSG__M_NODE_REGISTER_REPLY, GP_EP_PEER, on_register_reply, "node_register_reply"},
    {GPOOL__MSG__M_HEARTBEAT_REPLY, GP_EP_PEER, on_heartbeat_reply, "heartbeat_reply"},
    {GPOOL__MSG__M_ERROR, GP_EP_PEER, on_error, "error"},
    {GPOOL__MSG__M_LAUNCH, GP_EP_PEER, on_launch, "launch"},
    {GPOOL__MSG__M_KILL, GP_EP_PEER, on_kill, "kill"},
    {GPOOL__MSG__M_CARD_REPORT_REPLY, GP_EP_PEER, on_card_report_reply, "card_report_reply"},
};

/* An envelope the scheduler sent that we cannot open: say plainly what an admin must fix
 * (the scheduler refuses us for the same reason, so its refusal is what we cannot open). */
static void on_refused(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len,
		       Gpool__ErrorCode code, const char *why)
{
	if (code == GPOOL__ERROR_CODE__ERROR_AUTH)
		gp_err("the scheduler's messages carry a MUNGE credential this PC cannot decode: "
		       "wrong MUNGE key (this PC's /etc/munge/munge.key differs from the "
		       "scheduler's: copy it here and restart munged) [%s]",
		       why);
	else if (code == GPOOL__ERROR_CODE__ERROR_VERSION)
		gp_err(
		    "incompatible protocol version: %s (install the scheduler's gpool version on "
		    "this PC)",
		    why);
	else
		gp_warn("dropped a message from the scheduler: %s: %s", gp_error_code_name(code),
			why);
}

/* Envelopes are counted by the handlers (heard): a standby's NOT_LEADER is not the leader's
 * word. */
static int on_accept(void *arg, const struct gp_ep_envelope *e, void **peer)
{
	return 0;
}

static gp_endpoint_t *link_endpoint(struct agent *a, struct sched_link *l)
{
	struct gp_ep_config c = {
	    .sock = l->sock,
	    .auth = l->auth,
	    .max_message = (size_t)gp_config_int(a->cfg, "max_message"),
	    .handlers = sched_msgs,
	    .nhandlers = sizeof(sched_msgs) / sizeof(sched_msgs[0]),
	    .peer_only = true,
	    .peer_name = "the scheduler",
	    .hint = a->node,
	    .hooks = {.accept = on_accept, .refused = on_refused},
	    .arg = a,
	};
	gp_endpoint_t *ep = gp_endpoint_create(&c);
	if (ep)
		gp_endpoint_set_peer_uid(ep, l->sched_uid);
	return ep;
}

/* A batch that came another way (the fuzz harness): dispatched as one received. */
void sched_link_handle(struct agent *a, const struct gp_sender *from, const Gpool__Batch *b)
{
	struct gp_ep_envelope e = {.addr = "local", .from = *from, .batch = b};
	gp_endpoint_deliver(a->link->ep, &e);
}

void sched_link_recv(struct agent *a)
{
	gp_endpoint_dispatch(a->link->ep, 256);
}
