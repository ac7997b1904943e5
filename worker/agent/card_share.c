/* card_share.c: the agent's side of cards shared by small jobs (docs/gpu-share.md). An NVIDIA card
 * that holds slices of --gpu-share jobs is served by an MPS control daemon of its own
 * (worker/node/mps.h), under SCRATCH_DIR/mps/cardN (where the job's user can reach it), running as
 * the user whose jobs share the card (gschedd puts one user's slices on a card at a time): started
 * when the first sharing job of the card is launched, before its tasks start, and stopped by the
 * tick once no sharing job of the card has a task left. The daemon outlives an agent restart, like
 * the jobs do: a new agent finds it by its pid file and stops it when the card no longer holds a
 * task. Every second the tick samples the card memory each slice's processes hold (the cards
 * library's process list: NVML's on NVIDIA, ROCm SMI's on AMD; a fake card's
 * STATE_DIR/fake-card-N.vram), which the heartbeats report (gstat, /metrics). An AMD card has
 * no MPS server to enforce a budget: there a job over its budget is stopped with the reason,
 * which its exits carry to gschedd. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/agent/agent.h"
#include "common/parse.h"
#include "worker/node/mps.h"
#include "worker/node/vram.h"

#define SHARE_TICK_MS 1000

struct share_user {
	uint64_t job;
	uint32_t attempt;
	uint64_t budget; /* bytes each of its tasks may use on the card */
	bool stopped;	 /* over its budget: stopped (AMD) */
	bool sampled;	 /* used and peak below are known */
	uint64_t used;	 /* card memory its processes held at the last sample */
	uint64_t peak;	 /* the most seen this attempt */
};

struct share_card {
	bool running; /* its daemon runs (started here, or found running) */
	bool adopted; /* found running at start: its jobs are not known */
	uid_t uid;
	struct share_user *users; /* the sharing job attempts launched on it */
	size_t n;
};

struct share {
	char root[4200]; /* SCRATCH_DIR/mps */
	struct share_card cards[64];
	int64_t next_ms;
};

static const char *control(const struct agent *a)
{
	return gp_config_str(a->cfg, "mps_control");
}

static const Gpool__Card *card_of(const struct agent *a, uint32_t index)
{
	for (size_t i = 0; i < a->cards.n; i++)
		if (a->cards.v[i]->index == index)
			return a->cards.v[i];
	return NULL;
}

struct share *share_create(struct agent *a)
{
	struct share *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	snprintf(s->root, sizeof(s->root), "%s/mps", gp_config_str(a->cfg, "scratch_dir"));
	/* daemons a previous agent left for jobs that outlived it */
	for (size_t i = 0; i < a->cards.n; i++) {
		uint32_t k = a->cards.v[i]->index;
		char dir[4300], ctl[4400];
		struct stat st;
		if (k >= 64 || gp_mps_dir(s->root, k, dir, sizeof(dir)) < 0)
			continue;
		snprintf(ctl, sizeof(ctl), "%s/pipe/control", dir);
		if (stat(ctl, &st) == 0 && stat(dir, &st) == 0) {
			s->cards[k].running = true;
			s->cards[k].adopted = true;
			s->cards[k].uid = st.st_uid;
			gp_info("mps: card %u: daemon of uid %u found running", k,
				(unsigned)st.st_uid);
		}
	}
	return s;
}

void share_destroy(struct share **p)
{
	if (!*p)
		return;
	for (size_t k = 0; k < 64; k++)
		free((*p)->cards[k].users);
	free(*p);
	*p = NULL;
}

static int add_user(struct share_card *c, uint64_t job, uint32_t attempt, uint64_t budget)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->users[i].job == job && c->users[i].attempt == attempt)
			return 0;
	struct share_user *nv = realloc(c->users, (c->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	c->users = nv;
	c->users[c->n++] = (struct share_user){.job = job, .attempt = attempt, .budget = budget};
	return 0;
}

/* c's job attempts that still hold card k: the others are let go */
static void prune(struct agent *a, struct share_card *c, uint32_t k)
{
	for (size_t i = 0; i < c->n;) {
		if (steps_cards_of(a, c->users[i].job, c->users[i].attempt) >> k & 1)
			i++;
		else
			c->users[i] = c->users[--c->n];
	}
}

int share_launch(struct agent *a, const Gpool__Launch *l, uid_t uid, gid_t gid, char *why,
		 size_t len)
{
	struct share *s = a->share;
	if (!l->spec || !l->spec->gpu_share || !s)
		return 0;
	for (size_t t = 0; t < l->n_tasks; t++) {
		const Gpool__TaskPlacement *tp = l->tasks[t];
		if (tp->n_cards != 1 || tp->cards[0] >= 64)
			continue;
		uint32_t k = tp->cards[0];
		const Gpool__Card *card = card_of(a, k);
		if (!card)
			continue;
		struct share_card *c = &s->cards[k];
		prune(a, c, k);
		if (card->vendor == GPOOL__VENDOR__VENDOR_AMD) { /* watched by the tick */
			if (add_user(c, l->job_id, l->attempt, l->spec->gpu_mem_min) < 0) {
				snprintf(why, len, "node %s: out of memory", a->node);
				return -1;
			}
			continue;
		}
		if (card->vendor != GPOOL__VENDOR__VENDOR_NVIDIA)
			continue;
		if (c->running && c->uid != uid) {
			/* gschedd packs one user's slices on a card: the old user's jobs are gone
			 * but the tick has not stopped their daemon yet */
			char err[512] = "", dir[4300];
			if (c->n || gp_mps_dir(s->root, k, dir, sizeof(dir)) < 0 ||
			    gp_mps_stop(control(a), dir, err, sizeof(err)) < 0) {
				snprintf(why, len,
					 "node %s: card %u is shared by uid %u's jobs (MPS serves "
					 "one user a card%s%s)",
					 a->node, k, (unsigned)c->uid, c->n ? "" : ": ",
					 c->n ? "" : err);
				if (c->n)
					gp_warn("mps: card %u: job %" PRIu64 ".%u of uid %u still "
						"holds it",
						k, c->users[0].job, c->users[0].attempt,
						(unsigned)c->uid);
				return -1;
			}
			c->running = false;
		}
		if (add_user(c, l->job_id, l->attempt, l->spec->gpu_mem_min) < 0) {
			snprintf(why, len, "node %s: out of memory", a->node);
			return -1;
		}
		c->adopted = false;
		if (c->running)
			continue;
		char dir[4300] = "", err[512] = "";
		if (gp_mps_dir(s->root, k, dir, sizeof(dir)) < 0 ||
		    gp_mps_start(control(a), dir, card->uuid && *card->uuid ? card->uuid : "0", uid,
				 gid, err, sizeof(err)) < 0) {
			c->n--;
			snprintf(why, len, "node %s: card %u: %s", a->node, k,
				 dir[0] ? err : "mps directory name too long");
			return -1;
		}
		c->running = true;
		c->uid = uid;
		gp_info("mps: card %u: daemon started for uid %u (job %" PRIu64 ".%u)", k,
			(unsigned)uid, l->job_id, l->attempt);
	}
	return 0;
}

/* Sample the card memory each slice of card k holds; on an AMD card a slice over its budget is
 * stopped, with the reason (MPS enforces it on NVIDIA). */
static void sample(struct agent *a, struct share_card *c, const Gpool__Card *card)
{
	for (size_t i = 0; i < c->n; i++) {
		struct share_user *u = &c->users[i];
		pid_t pids[256];
		size_t n = u->stopped ? 0 : steps_pids_of(a, u->job, u->attempt, pids, 256);
		if (!n)
			continue;
		uint64_t used = 0;
		char path[4300];
		snprintf(path, sizeof(path), "%s/fake-card-%u.vram", a->state_dir, card->index);
		int vendor = card->vendor == GPOOL__VENDOR__VENDOR_NVIDIA ? 1 : 2;
		if (gp_vram_used(vendor, card->pci_bus_id, card->fake ? path : NULL, pids, n,
				 &used) < 0)
			continue;
		u->sampled = true;
		u->used = used;
		if (used > u->peak)
			u->peak = used;
		if (card->vendor != GPOOL__VENDOR__VENDOR_AMD || used <= u->budget)
			continue;
		char b[32], ub[32], why[512];
		gp_format_size(u->budget, b, sizeof(b));
		gp_format_size(used, ub, sizeof(ub));
		snprintf(why, sizeof(why),
			 "OverBudget (its processes used %s of VRAM on card %u of %s, over its "
			 "--gpu-mem budget of %s)",
			 ub, card->index, a->node, b);
		gp_warn("job %" PRIu64 ".%u: %s: stopped", u->job, u->attempt, why);
		if (steps_stop(a, u->job, u->attempt, why) == 0)
			u->stopped = true;
	}
}

size_t share_report(struct agent *a, Gpool__CardMemory *v, Gpool__CardMemory **pv, size_t max)
{
	struct share *s = a->share;
	size_t k = 0;
	for (uint32_t c = 0; s && c < 64; c++)
		for (size_t i = 0; i < s->cards[c].n && k < max; i++) {
			const struct share_user *u = &s->cards[c].users[i];
			if (!u->sampled)
				continue;
			gpool__card_memory__init(&v[k]);
			v[k].job_id = u->job;
			v[k].attempt = u->attempt;
			v[k].card = c;
			v[k].bytes = u->used;
			v[k].peak = u->peak;
			v[k].budget = u->budget;
			pv[k] = &v[k];
			k++;
		}
	return k;
}

int64_t share_tick(struct agent *a, int64_t now)
{
	struct share *s = a->share;
	if (!s)
		return now + 3600 * 1000;
	if (now < s->next_ms)
		return s->next_ms;
	s->next_ms = now + SHARE_TICK_MS;
	uint64_t busy = steps_cards_busy(a);
	for (uint32_t k = 0; k < 64; k++) {
		struct share_card *c = &s->cards[k];
		prune(a, c, k);
		const Gpool__Card *card = card_of(a, k);
		if (card && c->n)
			sample(a, c, card);
		/* a daemon found at start serves whatever still holds the card */
		if (!c->running || c->n || (c->adopted && busy >> k & 1))
			continue;
		char dir[4300], err[512];
		if (gp_mps_dir(s->root, k, dir, sizeof(dir)) < 0)
			continue;
		if (gp_mps_stop(control(a), dir, err, sizeof(err)) < 0) {
			gp_warn("mps: card %u: %s", k, err);
			continue;
		}
		c->running = false;
		free(c->users);
		c->users = NULL;
		gp_info("mps: card %u: daemon stopped (no sharing job left)", k);
	}
	return s->next_ms;
}
