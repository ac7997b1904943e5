/* service.h: service jobs (gsub --service). A service never runs itself: gschedd keeps
 * `replicas` jobs of its own for it (JobSpec.service_of; one task each, or a gang of -n ranks
 * of which rank 0 serves; with -N MIN-MAX and a task a node, as many ranks as nodes can take
 * one, re-planned when nodes go and come back), places each alone
 * (spread over the nodes), requeues a replica whenever it ends (at once after a node failure
 * or drain, after an exponential backoff when it keeps ending soon after starting: a crash
 * loop), moves the replicas off a drained node, and stops them when the service is cancelled
 * or scaled down. The replica set is rebuilt from the store at start-up: each replica is an
 * ordinary job row, the wanted count is the service's stored spec.
 */
#ifndef GPOOL_SERVICE_H
#define GPOOL_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "scheduler/admit.h"
#include "scheduler/gschedd.h"

/* What a replica's next end means. */
enum svc_end {
	SVC_RESTART = 0, /* requeue it (with backoff when it ran only briefly) */
	SVC_STOP = 1,	 /* scaled down or its service cancelled: it ends for good */
	SVC_MOVE = 2,	 /* its node was drained: requeue it at once, elsewhere */
	SVC_EVICT = 3,	 /* (a drain's end only) its node was drained: it drains, then moves */
	SVC_GROW = 4,	 /* (a drain's end only) a gang on fewer ranks than it wants: it drains,
			  * then restarts on the nodes the pool has again */
};

/* A replica that ends within this many seconds of starting counts as a quick failure; this
 * many in a row make a crash loop (shown by gstat); backoff doubles from the first up to the
 * cap. */
#define SVC_QUICK_SEC	     10.0
#define SVC_CRASH_LOOP	     3
#define SVC_BACKOFF_FIRST_MS 500
#define SVC_BACKOFF_MAX_MS   30000
#define SVC_MAX_REPLICAS     1000
#define SVC_ROLL_SETTLE_SEC  2.0 /* rolling update: a replacement runs this long before the next */
#define SVC_REFUSED_WARN_MS  10000 /* reports from one who is not a gateway: logged this often */

/* What services keep of a replica, in service.c's own table by job id (nothing of it is in
 * struct job). */
struct svc_replica {
	uint8_t end;		 /* what its next end means (enum svc_end) */
	bool stale;		 /* still running the command from before an update */
	uint8_t drain_end;	 /* draining: how it ends (enum svc_end) */
	int64_t drain_ms;	 /* draining: when it may stop (gp_mono_ms), 0: not draining */
	int64_t drain_from_ms;	 /* draining: when its drain began (gp_mono_ms) */
	uint32_t quick_fails;	 /* ends in a row soon after starting */
	uint8_t port_state;	 /* who listens on its port (Gpool__PortState), its agent's word */
	int32_t port_holder_pid; /* PORT_FOREIGN: the process listening there, 0: not named */
	uint32_t port_holder_uid;
};

/* Replica j's state (NULL: j is no replica). */
struct svc_replica *service_replica(struct gsched *s, const struct job *j);
/* Whether j is a service (it has a replica set). */
bool service_is(struct gsched *s, const struct job *j);
/* Free services' tables (service_subscribe made them). */
void services_destroy(struct services **v);

/* Whether name could be read as a job id or an array task's ("12", "12_3", "12.1", "12_[1-3]"):
 * such a name would capture /svc/ID/ at a gateway. */
bool service_name_idlike(const char *name);
/* The name a service of spec sp is known by (its -J name, else its command), as new jobs are
 * named. */
const char *service_name_of(const Gpool__JobSpec *sp);
/* A new service of spec sp by uid: its name must not read as a job id (EINVAL) and must not be
 * held by another user (EPERM): a name belongs to the owner of the oldest active service of
 * that name; that owner may reuse it. 0 / -1 with errno set and the reason in why. */
int service_name_check(struct gsched *s, const Gpool__JobSpec *sp, uint32_t uid, char *why,
		       size_t len);
/* service_name_check as a link of the admission chain (admit.h), for a service's spec. */
int service_admit(struct gsched *s, struct admission *a);

/* A new submission with spec->service: j becomes a service (state RUNNING, no tasks of its
 * own, never queued). Call before jobs_add. 0 / -1 (ENOMEM). */
int service_submitted(struct gsched *s, struct job *j, const Gpool__JobSpec *sp);
/* At start-up, for every job loaded from the store in id order: a service gets its replica
 * set back, a replica joins its service's. Returns true when it handled j (a service: not
 * to be restored as a running job). */
bool service_loaded(struct gsched *s, struct job *j, const Gpool__JobSpec *sp);
/* Periodic: start the replicas a service lacks, wake replicas whose backoff has passed. */
/* Make services' tables and watch the core's job and node events (events.h): a replica that
 * ended is restarted, a drained node's replicas move, an agent's word on a replica's port is
 * kept, a forgotten job's state goes. 0 / -1. */
int service_subscribe(struct gsched *s);
void service_tick(struct gsched *s);
/* From job_finish: a replica's attempt has ended. true: it was requeued (not final). */
bool service_replica_ended(struct gsched *s, struct job *j, int32_t exit_code);
/* gcancel of a service: stops every replica, the service ends CANCELLED. */
void service_cancel(struct gsched *s, struct job *svc, const char *why);
/* gpool scale: keep n replicas. 0 / -1 with text set. */
int service_scale(struct gsched *s, struct job *svc, int32_t n, char *text, size_t len);
/* gpool update: the service runs argv (n > 0) and gets the staged files stage (nstage > 0,
 * their chunks in the store) from now on; its replicas are replaced one at a time, each once
 * the others are ready. 0 / -1 with text set. */
int service_update(struct gsched *s, struct job *svc, char **argv, size_t n,
		   Gpool__StageEntry **stage, size_t nstage, char *text, size_t len);
/* Whether replica spec rep still differs from its service's spec svc in what a rolling update
 * changes (command, script, staged files): it is to be replaced. */
bool service_spec_stale(const Gpool__JobSpec *svc, const Gpool__JobSpec *rep);
/* A node was drained: its replicas drain (service_drain: the gateways send them nothing new
 * and let their requests finish), then move to other nodes; one whose node is resumed first
 * stays. */
void service_node_drained(struct gsched *s, int node);
/* Placement: how many of rep's sibling replicas run on node. */
int service_siblings_on(struct gsched *s, const struct job *rep, int node);
/* An agent's word on replica j's port (held task h of its current attempt): who listens
 * there. A change is logged; a squatter (PORT_FOREIGN) is warned of. */
void service_port_seen(struct gsched *s, struct job *j, const Gpool__HeldTask *h);
/* Why running replica j is not ready for its port (NULL: its port is its own) into buf. */
const char *service_port_problem(struct gsched *s, const struct job *j, char *buf, size_t len);
/* gstat: the replicas of a service into ji (freed by service_info_release). */
void service_info_fill(struct gsched *s, const struct job *svc, Gpool__JobInfo *ji);
void service_info_release(Gpool__JobInfo *ji);
/* Whether the sender of r may report on replicas for a gateway (ServiceQuery.reports, n of
 * them): root and gateway_uid alone; anyone else's are counted and logged, at most every
 * SVC_REFUSED_WARN_MS. */
bool service_reporter(struct gsched *s, const struct req *r, size_t n);
/* The ServiceQuery handler (a gateway's poll). */
void client_service_query(struct req *r);

#endif
