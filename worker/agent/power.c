/* power.c: each card's energy, as gworkerd reports it in heartbeats (CardPower).
 *
 * A card with an energy counter of its own (NVML's total energy, ROCm SMI's energy count)
 * reports that counter, read when a heartbeat goes out. A card with only a power reading
 * (NVML power usage, ROCm SMI average or socket power, amdgpu's hwmon power1_average or
 * power1_input) is sampled every power_sample_interval and the samples are integrated
 * (energy.h, trapezoid rule) into a counter of our own, reported like the card's would be,
 * marked ENERGY_SAMPLED. A fake card with a simulated draw (draw=, idle=) is sampled the same
 * way. A card with neither is left out of the report: gschedd then bounds its energy by its
 * power limit over the time held.
 *
 * Which of the two a card is decided by its first reading; a card that gave no reading yet
 * is tried again at every sample.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker/agent/agent.h"
#include "cards/cards_backends.h"
#include "cards/energy.h"
#include "common/log.h"
#include "common/util.h"

/* A gap between samples longer than this many intervals (the agent stopped, the machine
 * slept) counts as that many. */
#define GAP_INTERVALS 5

enum card_kind { CARD_UNREAD, CARD_COUNTER, CARD_SAMPLED, CARD_NONE };

struct card_power {
	enum card_kind kind;
	int meter; /* gp_card_meters id, -1: a fake card */
	bool fake; /* with a simulated draw */
	uint64_t counter_mj;
	gp_energy_integ_t integ;
	uint32_t last_mw;
	bool have_mw;
	uint32_t temperature_c, utilization_pct; /* for the heartbeat, when have_util */
	bool have_util;
};

struct power {
	gp_card_meters_t *meters;
	struct card_power *c; /* one per card of the agent, by index */
	size_t n;
	int64_t interval_ms;
	int64_t next_ms;
	bool any_sampled;
};

static void meter_debug(const char *msg, void *arg)
{
	gp_debug("cards: %s", msg);
}

/* A fake card's draw now: draw= while a task holds it, idle= otherwise. */
static uint32_t fake_mw(const Gpool__Card *card, bool busy)
{
	return (busy ? card->fake_draw_w : card->fake_idle_w) * 1000u;
}

/* Read a real card's meter; the first reading decides its kind. */
static void read_real(struct power *p, struct card_power *c, int64_t now)
{
	gp_card_reading_t r;
	if (gp_card_meters_read(p->meters, c->meter, &r) < 0)
		return; /* no reading this time: the next sample's trapezoid spans the gap */
	if (c->kind == CARD_UNREAD)
		c->kind = r.has_energy ? CARD_COUNTER : CARD_SAMPLED;
	if (c->kind == CARD_COUNTER && r.has_energy)
		c->counter_mj = r.energy_mj;
	if (c->kind == CARD_SAMPLED && r.has_power)
		gp_energy_sample(&c->integ, now, r.power_mw);
	c->have_mw = r.has_power;
	c->last_mw = r.power_mw;
	c->have_util = r.has_util;
	c->temperature_c = r.temperature_c;
	c->utilization_pct = r.utilization_pct;
}

int power_set_interval(struct power *p, int64_t iv)
{
	if (iv < 10 || iv > 3600000)
		return errno = EINVAL, -1;
	p->interval_ms = iv;
	p->next_ms = 0; /* the next sample at the next tick, on the new period from then on */
	for (size_t i = 0; i < p->n; i++)
		p->c[i].integ.max_gap_ms = GAP_INTERVALS * iv;
	return 0;
}

struct power *power_create(struct agent *a, gp_error_t *err)
{
	int64_t iv = gp_config_int(a->cfg, "power_sample_interval");
	if (iv < 10 || iv > 3600000) {
		gp_errprintf(err, "invalid power_sample_interval %lld ms (10 ms to 1 h)",
			     (long long)iv);
		return NULL;
	}
	struct power *p = calloc(1, sizeof(*p));
	if (!p || (a->cards.n && !(p->c = calloc(a->cards.n, sizeof(*p->c))))) {
		free(p);
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	p->n = a->cards.n;
	p->interval_ms = iv;
	for (size_t i = 0; i < p->n; i++) {
		const Gpool__Card *card = a->cards.v[i];
		struct card_power *c = &p->c[i];
		gp_energy_init(&c->integ, GAP_INTERVALS * iv);
		c->meter = -1;
		if (card->fake) {
			c->fake = card->fake_draw_w || card->fake_idle_w;
			c->kind = c->fake ? CARD_SAMPLED : CARD_NONE;
			continue;
		}
		if (!p->meters) {
			struct gp_card_meter_opts o = {.debug = meter_debug};
			if (!(p->meters = gp_card_meters_create(&o))) {
				power_destroy(&p);
				gp_errprintf(err, "out of memory");
				return NULL;
			}
		}
		int vendor =
		    card->vendor == GPOOL__VENDOR__VENDOR_NVIDIA ? GP_CARD_NVIDIA : GP_CARD_AMD;
		c->meter = gp_card_meters_find(p->meters, vendor, card->uuid, card->pci_bus_id);
		if (c->meter < 0 && errno == ENOMEM) {
			power_destroy(&p);
			gp_errprintf(err, "out of memory");
			return NULL;
		}
		c->kind = c->meter < 0 ? CARD_NONE : CARD_UNREAD;
		/* the first reading: its kind, and where a sampled integral starts */
		if (c->meter >= 0)
			read_real(p, c, gp_mono_ms());
	}
	for (size_t i = 0; i < p->n; i++) {
		static const char *const how[] = {
		    [CARD_UNREAD] = "no reading yet (tried again at every sample)",
		    [CARD_COUNTER] = "its energy counter",
		    [CARD_SAMPLED] = "power samples, integrated",
		    [CARD_NONE] = "nothing (its power limit bounds it)",
		};
		gp_info("card %zu energy: %s%s%s", i, how[p->c[i].kind],
			p->c[i].meter >= 0 ? " via " : "",
			p->c[i].meter >= 0 ? gp_card_meters_source(p->meters, p->c[i].meter) : "");
	}
	return p;
}

void power_destroy(struct power **pp)
{
	if (!pp || !*pp)
		return;
	struct power *p = *pp;
	gp_card_meters_destroy(&p->meters);
	free(p->c);
	free(p);
	*pp = NULL;
}

int64_t power_tick(struct agent *a, int64_t now)
{
	struct power *p = a->power;
	if (!p || (p->next_ms && !p->any_sampled))
		return INT64_MAX; /* counters need no sampling: read when a heartbeat goes out */
	if (now < p->next_ms)
		return p->next_ms;
	uint64_t busy = 0;
	bool busy_read = false;
	p->any_sampled = false;
	for (size_t i = 0; i < p->n; i++) {
		struct card_power *c = &p->c[i];
		if (c->fake) {
			if (!busy_read) {
				busy = steps_cards_busy(a);
				busy_read = true;
			}
			uint32_t idx = a->cards.v[i]->index;
			bool held = idx < 64 && (busy >> idx & 1);
			c->last_mw = fake_mw(a->cards.v[i], held);
			c->have_mw = true;
			/* a simulated card is fully used and warm while held */
			c->have_util = true;
			c->utilization_pct = held ? 100 : 0;
			c->temperature_c = held ? 70 : 35;
			gp_energy_sample(&c->integ, now, c->last_mw);
		} else if (c->kind == CARD_SAMPLED || c->kind == CARD_UNREAD) {
			read_real(p, c, now);
		}
		p->any_sampled |= c->kind == CARD_SAMPLED || c->kind == CARD_UNREAD;
	}
	/* on time from the previous deadline, unless the loop fell behind by a whole interval */
	p->next_ms = p->next_ms && now - p->next_ms < p->interval_ms ? p->next_ms + p->interval_ms
								     : now + p->interval_ms;
	return p->any_sampled ? p->next_ms : INT64_MAX;
}

size_t power_report(struct agent *a, Gpool__CardPower *out, Gpool__CardPower **pp, size_t max)
{
	struct power *p = a->power;
	size_t n = 0;
	for (size_t i = 0; p && i < p->n && n < max; i++) {
		struct card_power *c = &p->c[i];
		if (c->kind == CARD_COUNTER)
			read_real(p, c, gp_mono_ms());
		if (c->kind != CARD_COUNTER && c->kind != CARD_SAMPLED)
			continue;
		if (c->kind == CARD_SAMPLED && !c->integ.started)
			continue; /* not one reading yet */
		gpool__card_power__init(&out[n]);
		out[n].card = a->cards.v[i]->index;
		out[n].source = c->kind == CARD_COUNTER ? GPOOL__ENERGY_SOURCE__ENERGY_COUNTER
							: GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED;
		out[n].energy_mj =
		    c->kind == CARD_COUNTER ? c->counter_mj : gp_energy_mj(&c->integ);
		out[n].watts = c->have_mw ? c->last_mw / 1000.0 : 0;
		out[n].has_util = c->have_util;
		out[n].temperature_c = c->temperature_c;
		out[n].utilization_pct = c->utilization_pct;
		pp[n] = &out[n];
		n++;
	}
	return n;
}
