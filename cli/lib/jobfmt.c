/* jobfmt.c: see jobfmt.h. */
#include "cli/lib/jobfmt.h"

#include <inttypes.h>

#include "cli/lib/jobview.h"
#include "common/names.h"
#include "common/parse.h"

static const char *nz(const char *s)
{
	return s ? s : "";
}

static void f_id(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	gp_jobview_id(j, b, n);
}
static void f_jobid(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%" PRIu64, j->id);
}
static void f_name(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", j->spec ? nz(j->spec->name) : "");
}
static void f_user(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", nz(j->user));
}
static void f_st(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", gp_job_state_code(j->state));
}
static void f_state(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", gp_job_state_name(j->state));
}
static void f_time(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	gp_jobview_elapsed(j, now, b, n);
}
static void f_nodes(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%u", gp_jobview_nnodes(j));
}
static void f_where(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	if (j->nodelist && *j->nodelist && j->state != GPOOL__JOB_STATE__PENDING)
		snprintf(b, n, "%s", j->nodelist);
	else
		snprintf(b, n, "(%s)", j->reason && *j->reason ? j->reason : "None");
}
static void f_reason(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", j->reason && *j->reason ? j->reason : "None");
}
static void f_nodelist(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%s", nz(j->nodelist));
}
static void f_cpus(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	uint32_t t = j->spec && j->spec->ntasks ? j->spec->ntasks : 1;
	uint32_t c = j->spec && j->spec->cpus_per_task ? j->spec->cpus_per_task : 1;
	snprintf(b, n, "%u", t * c);
}
static void f_prio(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%d", j->spec ? j->spec->priority : 0);
}
static void f_array(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	snprintf(b, n, "%" PRIu64, j->array_job_id ? j->array_job_id : j->id);
}
static void f_task(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	if (j->array_job_id)
		snprintf(b, n, "%u", j->array_task_id);
	else
		snprintf(b, n, "N/A");
}
static void f_limit(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	uint32_t l = j->spec ? j->spec->time_limit_sec : 0;
	if (l)
		gp_format_duration(l, b, (int)n);
	else
		snprintf(b, n, "UNLIMITED");
}
static void f_submit(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	gp_jobview_date(j->submit_time, b, n);
}
static void f_start(const void *row, double now, char *b, size_t n)
{
	const Gpool__JobInfo *j = row;
	(void)now;
	gp_jobview_date(j->start_time, b, n);
}

/* squeue's letters where it has one */
static const struct gp_field fields[] = {
    {'i', "JOBID", f_id},
    {'A', "ARRAY_JOB_ID", f_array},
    {'a', "ARRAY_TASK_ID", f_task},
    {'F', "JOBID", f_jobid},
    {'j', "NAME", f_name},
    {'u', "USER", f_user},
    {'t', "ST", f_st},
    {'T', "STATE", f_state},
    {'M', "TIME", f_time},
    {'D', "NODES", f_nodes},
    {'R', "NODELIST(REASON)", f_where},
    {'r', "REASON", f_reason},
    {'N', "NODELIST", f_nodelist},
    {'C', "CPUS", f_cpus},
    {'p', "PRIORITY", f_prio},
    {'l', "TIME_LIMIT", f_limit},
    {'V', "SUBMIT_TIME", f_submit},
    {'S', "START_TIME", f_start},
};

gp_jobfmt_t *gp_jobfmt_create(const char *fmt, gp_error_t *err)
{
	return gp_fieldfmt_create(fmt, fields, sizeof(fields) / sizeof(fields[0]), err);
}

void gp_jobfmt_destroy(gp_jobfmt_t **f)
{
	gp_fieldfmt_destroy(f);
}

int gp_jobfmt_header(const gp_jobfmt_t *f, FILE *out)
{
	return gp_fieldfmt_header(f, out);
}

int gp_jobfmt_job(const gp_jobfmt_t *f, const Gpool__JobInfo *job, double now, FILE *out)
{
	return gp_fieldfmt_row(f, job, now, out);
}
