/* jobfmt.c: see jobfmt.h. */
#include "cli/lib/jobfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/lib/jobview.h"
#include "common/names.h"
#include "common/parse.h"

typedef void (*field_f)(const Gpool__JobInfo *j, double now, char *buf, size_t len);

static const char *nz(const char *s)
{
	return s ? s : "";
}

static void f_id(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	gp_jobview_id(j, b, n);
}
static void f_jobid(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%" PRIu64, j->id);
}
static void f_name(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", j->spec ? nz(j->spec->name) : "");
}
static void f_user(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", nz(j->user));
}
static void f_st(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", gp_job_state_code(j->state));
}
static void f_state(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", gp_job_state_name(j->state));
}
static void f_time(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	gp_jobview_elapsed(j, now, b, n);
}
static void f_nodes(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%u", gp_jobview_nnodes(j));
}
static void f_where(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	if (j->nodelist && *j->nodelist && j->state != GPOOL__JOB_STATE__PENDING)
		snprintf(b, n, "%s", j->nodelist);
	else
		snprintf(b, n, "(%s)", j->reason && *j->reason ? j->reason : "None");
}
static void f_reason(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", j->reason && *j->reason ? j->reason : "None");
}
static void f_nodelist(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%s", nz(j->nodelist));
}
static void f_cpus(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	uint32_t t = j->spec && j->spec->ntasks ? j->spec->ntasks : 1;
	uint32_t c = j->spec && j->spec->cpus_per_task ? j->spec->cpus_per_task : 1;
	snprintf(b, n, "%u", t * c);
}
static void f_prio(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%d", j->spec ? j->spec->priority : 0);
}
static void f_array(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	snprintf(b, n, "%" PRIu64, j->array_job_id ? j->array_job_id : j->id);
}
static void f_task(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	if (j->array_job_id)
		snprintf(b, n, "%u", j->array_task_id);
	else
		snprintf(b, n, "N/A");
}
static void f_limit(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	uint32_t l = j->spec ? j->spec->time_limit_sec : 0;
	if (l)
		gp_format_duration(l, b, (int)n);
	else
		snprintf(b, n, "UNLIMITED");
}
static void f_submit(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	gp_jobview_date(j->submit_time, b, n);
}
static void f_start(const Gpool__JobInfo *j, double now, char *b, size_t n)
{
	(void)now;
	gp_jobview_date(j->start_time, b, n);
}

/* squeue's letters where it has one */
static const struct {
	char letter;
	const char *header;
	field_f fn;
} fields[] = {
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

struct item {
	char *text; /* literal text, or NULL for a field */
	int field;  /* index into fields */
	int width;  /* 0: as long as it is */
	bool trunc; /* ".N": at most N, right aligned */
};

struct gp_jobfmt {
	struct item *v;
	size_t n;
};

static int push(gp_jobfmt_t *f, struct item it)
{
	struct item *nv = realloc(f->v, (f->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	f->v = nv;
	f->v[f->n++] = it;
	return 0;
}

gp_jobfmt_t *gp_jobfmt_create(const char *fmt, gp_error_t *err)
{
	gp_jobfmt_t *f = calloc(1, sizeof(*f));
	if (!f)
		goto oom;
	for (const char *p = fmt; *p;) {
		if (*p != '%' || p[1] == '%') {
			size_t len = *p == '%' ? 1 : strcspn(p, "%");
			struct item it = {.text = strndup(p, len)};
			if (!it.text || push(f, it) < 0) {
				free(it.text);
				goto oom;
			}
			p += *p == '%' ? 2 : len;
			continue;
		}
		p++;
		struct item it = {0};
		if (*p == '.') {
			it.trunc = true;
			p++;
		}
		while (*p >= '0' && *p <= '9' && it.width < 1000)
			it.width = it.width * 10 + (*p++ - '0');
		int k = -1;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]) && *p; i++)
			if (fields[i].letter == *p)
				k = (int)i;
		if (k < 0 || it.width >= 1000 || (it.trunc && !it.width)) {
			errno = EINVAL;
			gp_errprintf(err, "invalid field '%%%.8s' in '%s'", p, fmt);
			gp_jobfmt_destroy(&f);
			return NULL;
		}
		it.field = k;
		if (push(f, it) < 0)
			goto oom;
		p++;
	}
	return f;
oom:
	gp_jobfmt_destroy(&f);
	errno = ENOMEM;
	gp_errprintf(err, "out of memory");
	return NULL;
}

void gp_jobfmt_destroy(gp_jobfmt_t **p)
{
	if (!p || !*p)
		return;
	for (size_t i = 0; i < (*p)->n; i++)
		free((*p)->v[i].text);
	free((*p)->v);
	free(*p);
	*p = NULL;
}

static int put(const struct item *it, const char *s, FILE *out)
{
	if (it->trunc)
		return fprintf(out, "%*.*s", it->width, it->width, s) < 0 ? -1 : 0;
	return fprintf(out, "%-*s", it->width, s) < 0 ? -1 : 0;
}

int gp_jobfmt_header(const gp_jobfmt_t *f, FILE *out)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct item *it = &f->v[i];
		if ((it->text ? fputs(it->text, out) < 0
			      : put(it, fields[it->field].header, out) < 0))
			return -1;
	}
	return fputc('\n', out) == EOF ? -1 : 0;
}

int gp_jobfmt_job(const gp_jobfmt_t *f, const Gpool__JobInfo *job, double now, FILE *out)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct item *it = &f->v[i];
		char buf[512];
		if (it->text) {
			if (fputs(it->text, out) < 0)
				return -1;
			continue;
		}
		fields[it->field].fn(job, now, buf, sizeof(buf));
		if (put(it, buf, out) < 0)
			return -1;
	}
	return fputc('\n', out) == EOF ? -1 : 0;
}
