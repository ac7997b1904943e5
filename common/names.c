/* names.c - the one table each of job, node and card state names and vendor names, as
 * users read and type them (names.h) */
#include "common/names.h"

#include <strings.h>

struct state_name {
	Gpool__JobState state;
	const char *name;
	const char *code;
	bool final;
};

static const struct state_name job_states[] = {
    {GPOOL__JOB_STATE__PENDING, "PENDING", "PD", false},
    {GPOOL__JOB_STATE__RUNNING, "RUNNING", "R", false},
    {GPOOL__JOB_STATE__COMPLETING, "COMPLETING", "CG", false},
    {GPOOL__JOB_STATE__REQUEUED, "REQUEUED", "RQ", false},
    {GPOOL__JOB_STATE__COMPLETED, "COMPLETED", "CD", true},
    {GPOOL__JOB_STATE__FAILED, "FAILED", "F", true},
    {GPOOL__JOB_STATE__CANCELLED, "CANCELLED", "CA", true},
    {GPOOL__JOB_STATE__TIMEOUT, "TIMEOUT", "TO", true},
    {GPOOL__JOB_STATE__OUT_OF_MEMORY, "OUT_OF_MEMORY", "OOM", true},
    {GPOOL__JOB_STATE__NODE_FAIL, "NODE_FAIL", "NF", true},
};
#define NJOBSTATES (int)(sizeof(job_states) / sizeof(job_states[0]))

static const struct state_name *find(Gpool__JobState s)
{
	for (int i = 0; i < NJOBSTATES; i++)
		if (job_states[i].state == s)
			return &job_states[i];
	return NULL;
}

const char *gp_job_state_name(Gpool__JobState s)
{
	const struct state_name *n = find(s);
	return n ? n->name : "UNKNOWN";
}

const char *gp_job_state_code(Gpool__JobState s)
{
	const struct state_name *n = find(s);
	return n ? n->code : "?";
}

int gp_job_state_parse(const char *s)
{
	for (int i = 0; i < NJOBSTATES; i++)
		if (!strcasecmp(s, job_states[i].name) || !strcasecmp(s, job_states[i].code))
			return job_states[i].state;
	return -1;
}

bool gp_job_state_final(Gpool__JobState s)
{
	const struct state_name *n = find(s);
	return n && n->final;
}

static const char *const node_states[] = {
    [GPOOL__NODE_STATE__NODE_STATE_UNKNOWN] = "unknown",
    [GPOOL__NODE_STATE__NODE_UP] = "up",
    [GPOOL__NODE_STATE__NODE_DOWN] = "down",
    [GPOOL__NODE_STATE__NODE_DRAINED] = "drained",
    [GPOOL__NODE_STATE__NODE_UNREACHABLE] = "unreachable",
};

const char *gp_node_state_name(Gpool__NodeState s)
{
	return (unsigned)s < sizeof(node_states) / sizeof(node_states[0]) ? node_states[s]
									  : "unknown";
}

static const char *const card_states[] = {
    [GPOOL__CARD_STATE__CARD_STATE_UNKNOWN] = "unknown",
    [GPOOL__CARD_STATE__CARD_UP] = "up",
    [GPOOL__CARD_STATE__CARD_DRAINED] = "drained",
    [GPOOL__CARD_STATE__CARD_FAILED] = "failed",
};

const char *gp_card_state_name(Gpool__CardState s)
{
	return (unsigned)s < sizeof(card_states) / sizeof(card_states[0]) ? card_states[s]
									  : "unknown";
}

static const char *const vendors[] = {
    [GPOOL__VENDOR__VENDOR_NONE] = "any",
    [GPOOL__VENDOR__VENDOR_NVIDIA] = "nvidia",
    [GPOOL__VENDOR__VENDOR_AMD] = "amd",
    [GPOOL__VENDOR__VENDOR_CPU] = "cpu",
};

const char *gp_vendor_name(Gpool__Vendor v)
{
	return (unsigned)v < sizeof(vendors) / sizeof(vendors[0]) ? vendors[v] : "unknown";
}

int gp_vendor_parse(const char *s)
{
	for (unsigned i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
		if (!strcasecmp(s, vendors[i]))
			return (int)i;
	return -1;
}
