/* cost.c - the power and cost arithmetic of `gpool power` and `gpool cost`, apart from
 * printing so it is tested against values computed by hand (cost.h) */
#include "cli/lib/cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HOURS_PER_YEAR 8766.0

static int num(const gp_config_t *cfg, const char *key, double *out, gp_error_t *err)
{
	const char *v = gp_config_str(cfg, key);
	char *end;
	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end || *out < 0)
		return errno = EINVAL, gp_errprintf(err, "invalid number '%s' for %s", v, key);
	return 0;
}

int gp_prices_load(const gp_config_t *cfg, struct gp_prices *p, gp_error_t *err)
{
	memset(p, 0, sizeof(*p));
	if (num(cfg, "price_kwh", &p->price_kwh, err) < 0 ||
	    num(cfg, "cooling_share", &p->cooling_share, err) < 0 ||
	    num(cfg, "depreciation_rate", &p->depreciation_rate, err) < 0 ||
	    num(cfg, "default_card_price", &p->default_card_price, err) < 0 ||
	    num(cfg, "cloud_gpu_hour", &p->cloud_gpu_hour, err) < 0 ||
	    num(cfg, "pcie_slot_watts", &p->slot_w, err) < 0 ||
	    num(cfg, "power_margin", &p->margin, err) < 0)
		return -1;
	p->card_prices = strdup(gp_config_str(cfg, "card_prices"));
	if (!p->card_prices)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	/* check the price list once, so a typo is an error, not a silent default */
	char *copy = strdup(p->card_prices), *save = NULL;
	for (char *e = strtok_r(copy, ";", &save); e; e = strtok_r(NULL, ";", &save)) {
		char *eq = strrchr(e, '='), *end;
		if (!eq || eq == e || strtod(eq + 1, &end) < 0 || end == eq + 1 || *end) {
			gp_errprintf(err, "invalid card_prices entry '%s' (want MODEL=PRICE)", e);
			free(copy);
			gp_prices_release(p);
			return errno = EINVAL, -1;
		}
	}
	free(copy);
	return 0;
}

void gp_prices_release(struct gp_prices *p)
{
	free(p->card_prices);
	p->card_prices = NULL;
}

double gp_card_price(const struct gp_prices *p, const char *model)
{
	size_t ml = strlen(model);
	for (const char *e = p->card_prices; e && *e;) {
		const char *next = strchr(e, ';');
		size_t len = next ? (size_t)(next - e) : strlen(e);
		const char *eq = memchr(e, '=', len);
		while (eq && memchr(eq + 1, '=', len - (eq + 1 - e)))
			eq = memchr(eq + 1, '=', len - (eq + 1 - e));
		if (eq && (size_t)(eq - e) == ml && strncmp(e, model, ml) == 0)
			return strtod(eq + 1, NULL);
		e = next ? next + 1 : NULL;
	}
	return p->default_card_price;
}

double gp_pc_power(const struct gp_prices *p, const double *card_w, size_t ncards)
{
	double sum = 0;
	for (size_t i = 0; i < ncards; i++)
		sum += card_w[i];
	return (sum + p->slot_w * (double)ncards) * (1 + p->margin);
}

void gp_cost_add_card(const struct gp_prices *p, struct gp_cost *c, double watts, const char *model,
		      double hours)
{
	c->gpu_hours += hours;
	c->kwh += watts * hours / 1000.0;
	c->depreciation += gp_card_price(p, model) * p->depreciation_rate * hours / HOURS_PER_YEAR;
}

void gp_cost_finish(const struct gp_prices *p, struct gp_cost *c)
{
	c->electricity = c->kwh * p->price_kwh;
	c->cooling = c->electricity * p->cooling_share;
	c->total = c->electricity + c->cooling + c->depreciation;
	c->cloud = c->gpu_hours * p->cloud_gpu_hour;
}
