/* cost.h: power and cost arithmetic for `gpool power` and `gpool cost` (the seed guide's
 * formulas), kept apart from printing so it is tested against hand-computed values.
 *   PC power   P = (sum of card power limits + slot_w * cards) * (1 + margin)
 *   job cost   electricity = kWh * price_kwh;  cooling = electricity * cooling_share;
 *              depreciation = sum over cards of price * rate * hours / 8766;
 *              cloud = GPU-hours * cloud_gpu_hour
 * Energy is what gschedd accounted for the job (the deltas of the cards' energy counters, or
 * of the agents' integrals of their sampled power draw; the power limit over the time held for
 * a card with neither: an upper bound); for a job without that record, the power limits over
 * its run time (an upper bound too). */
#ifndef GP_CLI_COST_H
#define GP_CLI_COST_H

#include <stddef.h>

#include "common/config.h"
#include "common/error.h"

struct gp_prices {
	double price_kwh, cooling_share, depreciation_rate, default_card_price, cloud_gpu_hour;
	double slot_w, margin;
	char *card_prices; /* "model=price;model=price" */
};

int gp_prices_load(const gp_config_t *cfg, struct gp_prices *p, gp_error_t *err);
void gp_prices_release(struct gp_prices *p);
double gp_card_price(const struct gp_prices *p, const char *model);

/* Required power of a PC with these card power limits. */
double gp_pc_power(const struct gp_prices *p, const double *card_w, size_t ncards);

struct gp_cost {
	double gpu_hours, kwh, electricity, cooling, depreciation, total, cloud;
};

/* Add one card's use: its power limit, model and hours of use. */
void gp_cost_add_card(const struct gp_prices *p, struct gp_cost *c, double watts, const char *model,
		      double hours);
void gp_cost_finish(const struct gp_prices *p, struct gp_cost *c);

#endif
