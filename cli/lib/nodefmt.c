/* nodefmt.c: see nodefmt.h. */
#include "cli/lib/nodefmt.h"

#include "common/names.h"
#include "cli/lib/nodeview.h"
#include "common/util.h"

static const char *nz(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

static void f_name(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%s", nz(nd->name, ""));
}
static void f_addr(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%s", nz(nd->addr, "-"));
}
static void f_state(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%s", gp_node_state_name(nd->state));
}
/* sinfo's compact state: idle, mix, alloc for a node that is up; else its state */
static void f_st(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	const char *s = gp_node_state_name(nd->state);
	if (nd->state == GPOOL__NODE_STATE__NODE_UP)
		s = !nd->cpus_used ? "idle" : nd->cpus_used < nd->cpus ? "mix" : "alloc";
	snprintf(b, n, "%s", s);
}
static void f_cpus(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%u", nd->cpus);
}
/* sinfo's %C: allocated/idle/other/total; other: the CPUs of a node that takes no work */
static void f_cpu_use(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	uint32_t used = nd->cpus_used < nd->cpus ? nd->cpus_used : nd->cpus;
	uint32_t rest = nd->cpus - used;
	bool up = nd->state == GPOOL__NODE_STATE__NODE_UP;
	snprintf(b, n, "%u/%u/%u/%u", used, up ? rest : 0, up ? 0 : rest, nd->cpus);
}
static void f_mem(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%llu", (unsigned long long)nd->mem_mb);
}
static void f_free_mem(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	uint64_t used = nd->mem_used_mb < nd->mem_mb ? nd->mem_used_mb : nd->mem_mb;
	snprintf(b, n, "%llu", (unsigned long long)(nd->mem_mb - used));
}
static void f_reason(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%s", nz(nd->reason, "none"));
}
static void f_cards(const void *row, double now, char *b, size_t n)
{
	(void)now;
	gp_nodeview_cards_summary(row, b, n);
}
static void f_njobs(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%zu", nd->n_jobs);
}
static void f_version(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	(void)now;
	snprintf(b, n, "%s", nz(nd->version, "-"));
}
static void f_heard(const void *row, double now, char *b, size_t n)
{
	const Gpool__NodeInfo *nd = row;
	if (nd->last_heard > 0)
		snprintf(b, n, "%.0f", now > nd->last_heard ? now - nd->last_heard : 0.0);
	else
		snprintf(b, n, "-");
}

/* sinfo's letters where it has one */
static const struct gp_field fields[] = {
    {'N', "NODELIST", f_name},
    {'n', "HOSTNAMES", f_name},
    {'o', "NODE_ADDR", f_addr},
    {'t', "STATE", f_st},
    {'T', "STATE", f_state},
    {'c', "CPUS", f_cpus},
    {'C', "CPUS(A/I/O/T)", f_cpu_use},
    {'m', "MEMORY", f_mem},
    {'e', "FREE_MEM", f_free_mem},
    {'E', "REASON", f_reason},
    {'G', "GRES", f_cards},
    {'J', "JOBS", f_njobs},
    {'v', "VERSION", f_version},
    {'L', "LAST_HEARD", f_heard},
};

gp_fieldfmt_t *gp_nodefmt_create(const char *fmt, gp_error_t *err)
{
	return gp_fieldfmt_create(fmt, fields, sizeof(fields) / sizeof(fields[0]), err);
}

int gp_nodefmt_node(const gp_fieldfmt_t *f, const Gpool__NodeInfo *node, FILE *out)
{
	return gp_fieldfmt_row(f, node, gp_now(), out);
}
