/* owner.c: the agent's watch over its PC's owner (see agent.h, owner_sources.h and
 * docs/owner.md). Each owner_poll the due sources are read; the owner is active while a
 * source said so less than owner_idle ago, or while an owner_never window is on (an
 * owner_always window makes the owner idle whatever the sources say). On the owner's return
 * (and while the owner stays active, for jobs launched meanwhile) the policy acts on every
 * running job: suspend freezes its cgroup (a job that must not be frozen, or whose group has
 * no freezer, is vacated), vacate sends its checkpoint signal and stops it after its grace,
 * ignore leaves it. When the owner goes quiet, frozen jobs are thawed. The state goes to
 * gschedd with the next heartbeat (sent at once on a change), with the seconds of activity of
 * every hour that ended (gschedd keeps the histogram by hour of the week). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/agent/agent.h"
#include "worker/node/cgroup.h"
#include "worker/node/cgroup_freeze.h"
#include "worker/node/owner_sources.h"

#define SLOW_MS	    1000 /* logind, cards, cpu: read at most this often */
#define MAX_WINDOWS 16
#define MAX_LIVE    256
#define FREEZE_WAIT 900 /* ms a freeze may take before it counts as failed */
#define HOURS	    168

struct frozen {
	uint64_t job;
	uint32_t attempt;
	uint64_t step_of; /* a job step: the job and attempt it runs in */
	uint32_t step_of_attempt;
	int64_t since_ms;  /* monotonic, 0: thawed */
	uint64_t total_ms; /* earlier freezes of this attempt */
	bool seen;	   /* still live at the last tick */
};

struct owner {
	/* settings */
	int policy;
	unsigned sources;
	char file[4200];
	char mps_root[4200]; /* where the agent's MPS daemons for shared cards keep their pipes */
	int64_t idle_ms, poll_ms;
	int cpu_pct;
	struct gp_owner_window never[MAX_WINDOWS], always[MAX_WINDOWS];
	size_t nnever, nalways;
	/* sources */
	struct gp_logind *logind;
	bool logind_tried;
	uint64_t cpu_prev;
	int64_t cpu_prev_ms;
	int64_t next_slow_ms;
	bool slow_active; /* what the slow sources said last */
	const char *slow_src;
	/* state */
	bool active;
	double since;
	const char *source;
	int64_t last_active_ms; /* monotonic, 0: never */
	const char *last_src;
	struct frozen *fz;
	size_t nfz;
	/* the hour being counted: its end (unix s), seconds active so far */
	int64_t hour_end;
	int how;
	double hour_active;
	int64_t acc_ms;
	Gpool__OwnerHour pending[HOURS], sent[HOURS];
	Gpool__OwnerHour *sentp[HOURS];
	size_t npending, nsent;
	Gpool__OwnerState rep;
	bool adopted; /* the jobs held at start were looked at (a freeze left by a restart) */
};

/* Monday 00:00 local time = 0. */
static int hour_of_week(time_t t)
{
	struct tm lt;
	localtime_r(&t, &lt);
	return ((lt.tm_wday + 6) % 7) * 24 + lt.tm_hour;
}

static int settings(struct agent *a, struct owner *o, gp_error_t *err)
{
	const gp_config_t *c = a->cfg;
	int policy = gp_owner_policy_parse(gp_config_str(c, "owner_policy"));
	if (policy < 0)
		return gp_errprintf(err, "invalid owner_policy '%s' (suspend, vacate, ignore)",
				    gp_config_str(c, "owner_policy"));
	unsigned src;
	if (gp_owner_sources_parse(gp_config_str(c, "owner_sources"), &src, err) < 0)
		return -1;
	int64_t idle = gp_config_int(c, "owner_idle"), poll = gp_config_int(c, "owner_poll");
	int64_t pct = gp_config_int(c, "owner_cpu_percent");
	if (idle < 0 || poll < 10 || poll > 1000)
		return gp_errprintf(err,
				    "invalid owner_idle or owner_poll (owner_poll 10ms to 1s)");
	if (pct < 1 || pct > 100000)
		return gp_errprintf(err, "invalid owner_cpu_percent %lld (1 to 100000)",
				    (long long)pct);
	struct gp_owner_window nv[MAX_WINDOWS], al[MAX_WINDOWS];
	size_t nn, na;
	gp_error_t e2;
	if (gp_owner_windows_parse(gp_config_str(c, "owner_never"), nv, MAX_WINDOWS, &nn, &e2) < 0)
		return gp_errprintf(err, "owner_never: %s", e2.text);
	if (gp_owner_windows_parse(gp_config_str(c, "owner_always"), al, MAX_WINDOWS, &na, &e2) < 0)
		return gp_errprintf(err, "owner_always: %s", e2.text);
	const char *f = gp_config_str(c, "owner_file");
	if (*f == '/' || !*f)
		snprintf(o->file, sizeof(o->file), "%s", f);
	else
		snprintf(o->file, sizeof(o->file), "%s/%s", a->state_dir, f);
	/* card_share.c's: SCRATCH_DIR/mps */
	snprintf(o->mps_root, sizeof(o->mps_root), "%s/mps", gp_config_str(c, "scratch_dir"));
	o->policy = policy;
	if ((src & GP_OWNER_LOGIND) && !(o->sources & GP_OWNER_LOGIND))
		o->logind_tried = false;
	o->sources = src;
	o->idle_ms = idle;
	o->poll_ms = poll;
	o->cpu_pct = (int)pct;
	memcpy(o->never, nv, sizeof(nv));
	memcpy(o->always, al, sizeof(al));
	o->nnever = nn;
	o->nalways = na;
	return 0;
}

struct owner *owner_create(struct agent *a, gp_error_t *err)
{
	struct owner *o = calloc(1, sizeof(*o));
	if (!o) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	if (settings(a, o, err) < 0) {
		free(o);
		return NULL;
	}
	o->since = gp_now();
	o->source = "";
	time_t t = time(NULL);
	o->how = hour_of_week(t);
	o->hour_end = (int64_t)t - (int64_t)t % 3600 + 3600;
	gp_info("owner: policy %s, sources '%s', idle %lld ms%s%s%s%s",
		gp_owner_policy_name(o->policy), gp_config_str(a->cfg, "owner_sources"),
		(long long)o->idle_ms, o->nnever ? ", never offered " : "",
		gp_config_str(a->cfg, "owner_never"), o->nalways ? ", always offered " : "",
		gp_config_str(a->cfg, "owner_always"));
	return o;
}

void owner_destroy(struct owner **po)
{
	if (!po || !*po)
		return;
	gp_logind_close(&(*po)->logind);
	free((*po)->fz);
	free(*po);
	*po = NULL;
}

int owner_reconfigure(struct agent *a, gp_error_t *err)
{
	if (!a->owner)
		return 0;
	if (settings(a, a->owner, err) < 0)
		return -1;
	gp_info("owner: policy %s, sources '%s', idle %lld ms",
		gp_owner_policy_name(a->owner->policy), gp_config_str(a->cfg, "owner_sources"),
		(long long)a->owner->idle_ms);
	return 0;
}

static struct frozen *fz_find(struct owner *o, uint64_t job, uint32_t attempt, bool add)
{
	for (size_t i = 0; i < o->nfz; i++)
		if (o->fz[i].job == job && o->fz[i].attempt == attempt)
			return &o->fz[i];
	if (!add)
		return NULL;
	struct frozen *nv = realloc(o->fz, (o->nfz + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	o->fz = nv;
	nv[o->nfz] = (struct frozen){.job = job, .attempt = attempt};
	return &nv[o->nfz++];
}

bool owner_step_frozen(struct agent *a, uint64_t job, uint32_t attempt, uint64_t *frozen_ms)
{
	struct frozen *f = a->owner ? fz_find(a->owner, job, attempt, false) : NULL;
	*frozen_ms = 0;
	if (!f)
		return false;
	*frozen_ms = f->total_ms;
	if (f->since_ms)
		*frozen_ms += (uint64_t)(gp_mono_ms() - f->since_ms);
	return f->since_ms != 0;
}

/* The cgroup of an attempt on this node: a job step's may be inside its job's (cgroup.h). */
static void group_name(const struct agent *a, uint64_t job, uint32_t attempt, uint64_t step_of,
		       uint32_t step_of_attempt, char *buf, size_t len)
{
	char name[320], parent[320] = "";
	snprintf(name, sizeof(name), "job%" PRIu64 ".%u.%s", job, attempt, a->node);
	if (step_of && step_of_attempt)
		snprintf(parent, sizeof(parent), "job%" PRIu64 ".%u.%s", step_of, step_of_attempt,
			 a->node);
	gp_cgroup_name_in(parent, name, buf, len);
}

static int thaw(struct agent *a, struct frozen *f, int64_t now)
{
	if (!f->since_ms)
		return 0;
	char name[512];
	group_name(a, f->job, f->attempt, f->step_of, f->step_of_attempt, name, sizeof(name));
	if (gp_cgroup_freeze_name(name, false, FREEZE_WAIT) < 0 && errno != ENOENT) {
		gp_err("owner: cannot thaw job %" PRIu64 ".%u: %s", f->job, f->attempt,
		       strerror(errno));
		return -1;
	}
	f->total_ms += (uint64_t)(now - f->since_ms);
	f->since_ms = 0;
	gp_info("owner: job %" PRIu64 ".%u thawed (frozen %.1f s in all)", f->job, f->attempt,
		(double)f->total_ms / 1000.0);
	sched_link_soon(a);
	return 0;
}

static void vacate(struct agent *a, const struct steps_live *s, int64_t now)
{
	struct frozen *f = fz_find(a->owner, s->job, s->attempt, false);
	if (f)
		thaw(a, f, now); /* a frozen job cannot take its signal */
	int sig = s->ckpt_signal ? s->ckpt_signal : SIGTERM;
	uint32_t grace =
	    s->ckpt_sec ? s->ckpt_sec * 1000u : (uint32_t)gp_config_int(a->cfg, "kill_grace");
	gp_info("owner: vacating job %" PRIu64 ".%u: signal %d, stopped after %u ms", s->job,
		s->attempt, sig, grace);
	steps_vacate(a, s->job, s->attempt, sig, grace);
	sched_link_soon(a);
}

static void freeze(struct agent *a, const struct steps_live *s, int64_t now)
{
	struct frozen *f = fz_find(a->owner, s->job, s->attempt, true);
	if (!f || f->since_ms)
		return;
	char name[512];
	f->step_of = s->step_of;
	f->step_of_attempt = s->step_of_attempt;
	group_name(a, s->job, s->attempt, s->step_of, s->step_of_attempt, name, sizeof(name));
	int64_t t0 = gp_mono_ms();
	if (gp_cgroup_freeze_name(name, true, FREEZE_WAIT) < 0) {
		int e = errno;
		gp_cgroup_freeze_name(name, false, FREEZE_WAIT);
		gp_warn("owner: cannot freeze job %" PRIu64 ".%u (%s): vacating it instead", s->job,
			s->attempt, e == ENOENT ? "no freezer for its cgroup" : strerror(e));
		vacate(a, s, now);
		return;
	}
	f->since_ms = now;
	gp_info("owner: job %" PRIu64 ".%u frozen (%lld ms)", s->job, s->attempt,
		(long long)(gp_mono_ms() - t0));
	sched_link_soon(a);
}

/* Apply the policy to every live job; forget the freezes of attempts that are gone. */
static void enforce(struct agent *a, int64_t now)
{
	struct owner *o = a->owner;
	static struct steps_live live[MAX_LIVE];
	size_t n = steps_live(a, live, MAX_LIVE);
	for (size_t i = 0; i < o->nfz; i++)
		o->fz[i].seen = false;
	if (!o->adopted && !(o->active && o->policy == GPOOL__OWNER_POLICY__OWNER_SUSPEND)) {
		/* an agent that restarted knows no freeze it made before: the groups of the jobs
		 * it re-adopted are thawed (a no-op where none was frozen) */
		for (size_t i = 0; i < n; i++) {
			char name[512];
			group_name(a, live[i].job, live[i].attempt, live[i].step_of,
				   live[i].step_of_attempt, name, sizeof(name));
			if (gp_cgroup_freeze_name(name, false, FREEZE_WAIT) == 0)
				gp_debug("owner: job %" PRIu64 ".%u: not frozen (at start)",
					 live[i].job, live[i].attempt);
		}
	}
	o->adopted = true;
	for (size_t i = 0; i < n; i++) {
		struct frozen *f = fz_find(o, live[i].job, live[i].attempt, false);
		if (f)
			f->seen = true;
		if (o->active && o->policy == GPOOL__OWNER_POLICY__OWNER_VACATE)
			vacate(a, &live[i], now);
		else if (o->active && o->policy == GPOOL__OWNER_POLICY__OWNER_SUSPEND)
			live[i].no_suspend ? vacate(a, &live[i], now) : freeze(a, &live[i], now);
		else if (f)
			thaw(a, f, now);
		if ((f = fz_find(o, live[i].job, live[i].attempt, false)))
			f->seen = true;
	}
	for (size_t i = 0; i < o->nfz;) {
		if (o->fz[i].seen) {
			i++;
			continue;
		}
		/* gone (killed, vacated): a freeze of a group that still exists is undone */
		thaw(a, &o->fz[i], now);
		o->fz[i] = o->fz[--o->nfz];
	}
}

/* Is a process on one of the cards not gpool's? (The MPS server the agent started for a
 * shared card is on it whenever a slice runs: gpool's, not the owner's.) */
static bool cards_busy(struct agent *a, const struct owner *o)
{
	pid_t pids[128];
	for (size_t i = 0; i < a->cards.n; i++) {
		const Gpool__Card *c = a->cards.v[i];
		int n;
		if (c->fake) {
			char path[4300];
			snprintf(path, sizeof(path), "%s/fake-card-%u.pids", a->state_dir,
				 c->index);
			n = gp_owner_fake_card_pids(path, pids, 128);
		} else {
			n = gp_owner_card_pids(c->vendor, c->pci_bus_id ? c->pci_bus_id : "", pids,
					       128);
		}
		for (int k = 0; k < n; k++)
			if (kill(pids[k], 0) == 0 || errno == EPERM)
				if (!gp_owner_pid_is_gpool("/proc", o->mps_root, pids[k]))
					return true;
	}
	return false;
}

/* The sources read at most once a second. */
static void read_slow(struct agent *a, struct owner *o, int64_t now)
{
	o->slow_active = false;
	o->slow_src = NULL;
	if (o->sources & GP_OWNER_LOGIND) {
		gp_error_t err = {{0}};
		if (!o->logind && !o->logind_tried) {
			o->logind_tried = true;
			if (!(o->logind = gp_logind_open(&err)))
				gp_warn("owner: the logind source is off: %s", err.text);
			else
				gp_info("owner: reading systemd-logind's idle hint");
		}
		bool idle;
		uint64_t since_us;
		if (o->logind && gp_logind_idle(o->logind, &idle, &since_us, &err) == 0) {
			if (!idle) {
				o->slow_active = true;
				o->slow_src = "logind";
			} else if (since_us) {
				/* idle since then: activity until that moment */
				int64_t ago =
				    (int64_t)(gp_now() * 1000.0) - (int64_t)(since_us / 1000);
				int64_t at = now - (ago > 0 ? ago : 0);
				if (at > o->last_active_ms) {
					o->last_active_ms = at;
					o->last_src = "logind";
				}
			}
		}
	}
	if ((o->sources & GP_OWNER_CARDS) && cards_busy(a, o)) {
		o->slow_active = true;
		o->slow_src = "card";
	}
	if (o->sources & GP_OWNER_CPU) {
		uint64_t ticks;
		if (gp_owner_cpu_ticks("/proc", o->mps_root, &ticks) == 0) {
			if (o->cpu_prev_ms && ticks >= o->cpu_prev && now > o->cpu_prev_ms) {
				double pct = (double)(ticks - o->cpu_prev) * 100.0 /
					     (double)sysconf(_SC_CLK_TCK) /
					     ((double)(now - o->cpu_prev_ms) / 1000.0);
				if (pct > o->cpu_pct) {
					o->slow_active = true;
					o->slow_src = "cpu";
				}
			}
			o->cpu_prev = ticks;
			o->cpu_prev_ms = now;
		}
	}
}

/* Seconds of activity of the hour being counted; an hour that ended goes to the report. */
static void count_hours(struct owner *o, int64_t now)
{
	time_t t = time(NULL);
	if (o->acc_ms && o->active)
		o->hour_active += (double)(now - o->acc_ms) / 1000.0;
	o->acc_ms = now;
	if ((int64_t)t < o->hour_end)
		return;
	if (o->npending == HOURS)
		memmove(o->pending, o->pending + 1, (HOURS - 1) * sizeof(o->pending[0])),
		    o->npending--;
	Gpool__OwnerHour *h = &o->pending[o->npending++];
	gpool__owner_hour__init(h);
	h->hour_of_week = (uint32_t)o->how;
	h->active_sec = o->hour_active > 3600 ? 3600 : (uint32_t)o->hour_active;
	h->end = (double)o->hour_end;
	o->how = hour_of_week(t);
	o->hour_end = (int64_t)t - (int64_t)t % 3600 + 3600;
	o->hour_active = 0;
}

int64_t owner_tick(struct agent *a, int64_t now)
{
	struct owner *o = a->owner;
	if (!o)
		return now + 1000;
	if (now >= o->next_slow_ms) {
		read_slow(a, o, now);
		o->next_slow_ms = now + SLOW_MS;
	}
	const char *src = NULL;
	if ((o->sources & GP_OWNER_FILE) && gp_owner_file_active(o->file))
		src = "file";
	else if (o->slow_active)
		src = o->slow_src;
	if (src) {
		o->last_active_ms = now;
		o->last_src = src;
	}
	time_t t = time(NULL);
	struct tm lt;
	localtime_r(&t, &lt);
	bool active;
	const char *why;
	if (gp_owner_windows_on(o->never, o->nnever, &lt)) {
		active = true;
		why = "window";
	} else if (gp_owner_windows_on(o->always, o->nalways, &lt)) {
		active = false;
		why = "";
	} else {
		active = o->last_active_ms && now - o->last_active_ms < o->idle_ms;
		if (src)
			active = true;
		why = active ? o->last_src : "";
	}
	if (active != o->active) {
		o->active = active;
		o->since = gp_now();
		if (active)
			gp_info("owner: active (%s): policy %s", why,
				gp_owner_policy_name(o->policy));
		else
			gp_info("owner: idle (%s): the PC is offered again",
				o->nalways && gp_owner_windows_on(o->always, o->nalways, &lt)
				    ? "an owner_always window"
				    : "quiet for owner_idle");
		sched_link_soon(a);
	}
	o->source = why;
	count_hours(o, now);
	enforce(a, now);
	return now + o->poll_ms;
}

Gpool__OwnerState *owner_report(struct agent *a, bool fresh)
{
	struct owner *o = a->owner;
	if (!o)
		return NULL;
	gpool__owner_state__init(&o->rep);
	o->rep.active = o->active;
	o->rep.since = o->since;
	o->rep.source = (char *)o->source;
	o->rep.policy = o->policy;
	if (fresh) {
		memcpy(o->sent, o->pending, o->npending * sizeof(o->sent[0]));
		o->nsent = o->npending;
		o->npending = 0;
	}
	for (size_t i = 0; i < o->nsent; i++)
		o->sentp[i] = &o->sent[i];
	o->rep.hours = o->sentp;
	o->rep.n_hours = o->nsent;
	return &o->rep;
}
