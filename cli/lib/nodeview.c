/* nodeview.c - how nodes and cards read on a terminal: gnodes' node table and its card
 * table (nodeview.h) */
#include "cli/lib/nodeview.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/names.h"
#include "common/parse.h"
#include "common/uidpolicy.h"

static const char *nz(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

void gp_nodeview_cards_summary(const Gpool__NodeInfo *node, char *buf, size_t len)
{
	static const Gpool__Vendor order[] = {GPOOL__VENDOR__VENDOR_NVIDIA,
					      GPOOL__VENDOR__VENDOR_AMD, GPOOL__VENDOR__VENDOR_CPU,
					      GPOOL__VENDOR__VENDOR_NONE};
	size_t k = 0;
	buf[0] = '\0';
	for (size_t v = 0; v < sizeof(order) / sizeof(order[0]); v++) {
		unsigned n = 0;
		for (size_t i = 0; i < node->n_cards; i++)
			if (node->cards[i]->vendor == order[v])
				n++;
		if (n && k < len)
			k += snprintf(buf + k, len - k, "%s%s:%u", k ? "," : "",
				      gp_vendor_name(order[v]), n);
	}
	if (!k)
		snprintf(buf, len, "-");
}

static void mb(uint64_t v, char *buf, size_t len)
{
	gp_format_size(v << 20, buf, (int)len);
}

void gp_nodeview_owner(const Gpool__NodeInfo *node, char *buf, size_t len)
{
	const Gpool__OwnerState *o = node->owner;
	if (!o) {
		snprintf(buf, len, "-"); /* an agent that does not watch its owner */
		return;
	}
	char when[32] = "?";
	time_t t = (time_t)o->since;
	struct tm lt;
	if (t > 0 && localtime_r(&t, &lt))
		strftime(when, sizeof(when), time(NULL) - t < 86400 ? "%H:%M:%S" : "%Y-%m-%dT%H:%M",
			 &lt);
	if (o->active)
		snprintf(buf, len, "active:%s since %s", nz(o->source, "?"), when);
	else
		snprintf(buf, len, "idle since %s", when);
}

gp_table_t *gp_nodeview_table(Gpool__NodeInfo *const *nodes, size_t n)
{
	static const char *const hdr[] = {"NODE",  "STATE", "CPUS(used/total)", "MEM(used/total)",
					  "CARDS", "OWNER", "REASON",		NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const Gpool__NodeInfo *nd = nodes[i];
		char cpus[32], mem[48], used[16], total[16], cards[128];
		snprintf(cpus, sizeof(cpus), "%u/%u", nd->cpus_used, nd->cpus);
		mb(nd->mem_used_mb, used, sizeof(used));
		mb(nd->mem_mb, total, sizeof(total));
		snprintf(mem, sizeof(mem), "%s/%s", used, total);
		gp_nodeview_cards_summary(nd, cards, sizeof(cards));
		char owner[64];
		gp_nodeview_owner(nd, owner, sizeof(owner));
		const char *row[] = {
		    nd->name,		gp_node_state_name(nd->state), cpus, mem, cards, owner,
		    nz(nd->reason, "-")};
		if (gp_table_add(t, row) < 0) {
			gp_table_destroy(&t);
			return NULL;
		}
	}
	return t;
}

void gp_nodeview_card_shared(const Gpool__Card *c, char *buf, size_t len)
{
	if (!c->shared_slices) {
		snprintf(buf, len, "-");
		return;
	}
	char used[16], total[16], user[64];
	gp_format_size(c->shared_budget, used, sizeof(used));
	gp_format_size(c->vram_total, total, sizeof(total));
	if (gp_uid_name((uid_t)c->shared_uid, user, sizeof(user)) < 0)
		snprintf(user, sizeof(user), "%u", c->shared_uid);
	snprintf(buf, len, "%u:%s/%s:%s", c->shared_slices, used, total, user);
}

gp_table_t *gp_nodeview_card_table(Gpool__NodeInfo *const *nodes, size_t n)
{
	static const char *const hdr[] = {"NODE",   "CARD",  "VENDOR", "NAME",	"CORES",
					  "VRAM",   "API",   "ARCH",   "GRADE", "POWER",
					  "SHARED", "STATE", "REASON", NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return NULL;
	gp_table_align_right(t, 1);
	gp_table_align_right(t, 4);
	gp_table_align_right(t, 5);
	gp_table_align_right(t, 9);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nodes[i]->n_cards; k++) {
			const Gpool__Card *c = nodes[i]->cards[k];
			char idx[16], cores[16], vram[16], power[16], name[160], shared[96];
			gp_nodeview_card_shared(c, shared, sizeof(shared));
			snprintf(idx, sizeof(idx), "%u", c->index);
			snprintf(cores, sizeof(cores), "%u", c->cores);
			gp_format_size(c->vram_total, vram, sizeof(vram));
			if (c->power_limit_w)
				snprintf(power, sizeof(power), "%uW", c->power_limit_w);
			else
				snprintf(power, sizeof(power), "-");
			snprintf(name, sizeof(name), "%s%s", nz(c->name, "?"),
				 c->fake ? " (fake)" : "");
			const char *row[] = {nodes[i]->name,
					     idx,
					     gp_vendor_name(c->vendor),
					     name,
					     cores,
					     vram,
					     nz(c->api_version, "-"),
					     nz(c->arch, "-"),
					     nz(c->grade, "-"),
					     power,
					     shared,
					     gp_card_state_name(c->state),
					     nz(c->state_reason, "-")};
			if (gp_table_add(t, row) < 0) {
				gp_table_destroy(&t);
				return NULL;
			}
		}
	}
	return t;
}
