/* fleet.c - every node's cards copied out of a NodeQueryReply, for the power and cost
 * reports (fleet.h) */
#include "cli/lib/fleet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lib/jobview.h"

void gp_fleet_free(struct fleet *f)
{
	for (size_t i = 0; i < f->n; i++) {
		for (size_t c = 0; c < f->ncards[i]; c++)
			free(f->model[i][c]);
		free(f->model[i]);
		free(f->watts[i]);
		free(f->name[i]);
	}
	free(f->name);
	free(f->ncards);
	free(f->watts);
	free(f->model);
	free(f->psu);
}

int gp_fleet_load(gp_session_t *s, struct fleet *f, gp_error_t *err)
{
	memset(f, 0, sizeof(*f));
	Gpool__NodeQuery q = GPOOL__NODE_QUERY__INIT;
	Gpool__NodeQueryReply *nr = gp_session_node_query(s, &q, err);
	if (!nr)
		return -1;
	f->n = nr->n_nodes;
	f->name = calloc(f->n + 1, sizeof(char *));
	f->ncards = calloc(f->n + 1, sizeof(size_t));
	f->watts = calloc(f->n + 1, sizeof(double *));
	f->model = calloc(f->n + 1, sizeof(char **));
	f->psu = calloc(f->n + 1, sizeof(double));
	if (!f->name || !f->ncards || !f->watts || !f->model || !f->psu)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	for (size_t i = 0; i < f->n; i++) {
		Gpool__NodeInfo *n = nr->nodes[i];
		f->name[i] = strdup(n->name);
		f->psu[i] = n->psu_watts;
		f->ncards[i] = n->n_cards;
		f->watts[i] = calloc(n->n_cards + 1, sizeof(double));
		f->model[i] = calloc(n->n_cards + 1, sizeof(char *));
		if (!f->name[i] || !f->watts[i] || !f->model[i])
			return errno = ENOMEM, gp_errprintf(err, "out of memory");
		for (size_t c = 0; c < n->n_cards; c++) {
			f->watts[i][c] = n->cards[c]->power_limit_w;
			f->model[i][c] = strdup(n->cards[c]->name ? n->cards[c]->name : "");
		}
	}
	return 0;
}

int gp_job_cost(const struct fleet *f, const struct gp_prices *p, const Gpool__JobInfo *j,
		double now, struct gp_cost *c)
{
	memset(c, 0, sizeof(*c));
	if (j->start_time <= 0)
		return 0;
	double hours = ((j->end_time > 0 ? j->end_time : now) - j->start_time) / 3600.0;
	int ncards = 0;
	for (size_t k = 0; k < j->n_tasks; k++) {
		const Gpool__TaskPlacement *tp = j->tasks[k];
		size_t ni;
		for (ni = 0; ni < f->n && strcmp(f->name[ni], tp->node); ni++)
			;
		for (size_t x = 0; ni < f->n && x < tp->n_cards; x++) {
			uint32_t ci = tp->cards[x];
			if (ci >= f->ncards[ni])
				continue;
			gp_cost_add_card(p, c, f->watts[ni][ci], f->model[ni][ci], hours);
			ncards++;
		}
	}
	if (!ncards)
		return 0;
	if (j->energy_j > 0)
		c->kwh = j->energy_j / 3.6e6; /* what gschedd accounted */
	gp_cost_finish(p, c);
	return ncards;
}

void gp_job_energy_from(const Gpool__JobInfo *j, char *buf, size_t len)
{
	gp_jobview_energy_sources(j->energy_sources, buf, len);
	if (!*buf)
		snprintf(buf, len, "%s", j->energy_j > 0 ? "accounted" : "upper bound");
}
