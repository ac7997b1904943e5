/* jobview.c - how a job reads on a terminal: gstat's table (as squeue) and the detailed
 * key=value view (as `scontrol show job`) (jobview.h) */
#include "cli/lib/jobview.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/array.h"
#include "common/names.h"
#include "common/parse.h"

static const char *nz(const char *s, const char *dflt)
{
	return s && *s ? s : dflt;
}

/* a replica's health as the gateways reported it (ReplicaInfo.health) */
static const char *health_name(Gpool__ReplicaHealth h)
{
	static const char *const names[] = {
	    [GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_UNKNOWN] = "unknown",
	    [GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_OK] = "ok",
	    [GPOOL__REPLICA_HEALTH__REPLICA_HEALTH_FAILING] = "failing",
	};
	return (unsigned)h < sizeof(names) / sizeof(names[0]) && names[h] ? names[h] : "unknown";
}

void gp_jobview_elapsed(const Gpool__JobInfo *job, double now, char *buf, size_t len)
{
	double end = job->end_time > 0 ? job->end_time : now;
	long s = job->start_time > 0 && end > job->start_time ? (long)(end - job->start_time) : 0;
	if (s >= 86400)
		snprintf(buf, len, "%ld-%02ld:%02ld:%02ld", s / 86400, s % 86400 / 3600,
			 s % 3600 / 60, s % 60);
	else if (s >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s % 3600 / 60, s % 60);
	else
		snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

unsigned gp_jobview_nnodes(const Gpool__JobInfo *job)
{
	unsigned n = 0;
	for (size_t i = 0; i < job->n_tasks; i++) {
		size_t k;
		for (k = 0; k < i; k++)
			if (!strcmp(job->tasks[k]->node, job->tasks[i]->node))
				break;
		if (k == i)
			n++;
	}
	if (n == 0 && job->spec)
		n = job->spec->nodes_min;
	return n ? n : 1;
}

void gp_jobview_date(double t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(buf, len, "Unknown");
}

static bool waiting(Gpool__JobState s)
{
	return s == GPOOL__JOB_STATE__PENDING || s == GPOOL__JOB_STATE__REQUEUED;
}

void gp_jobview_id(const Gpool__JobInfo *job, char *buf, size_t len)
{
	if (job->array_job_id)
		snprintf(buf, len, "%" PRIu64 "_%u", job->array_job_id, job->array_task_id);
	else
		snprintf(buf, len, "%" PRIu64, job->id);
}

/* How many jobs from jobs[i] on are pending tasks of jobs[i]'s array with its reason. */
static size_t pending_run(Gpool__JobInfo *const *jobs, size_t n, size_t i)
{
	const Gpool__JobInfo *a = jobs[i];
	if (!a->array_job_id || a->state != GPOOL__JOB_STATE__PENDING)
		return 1;
	size_t k = i + 1;
	while (k < n && jobs[k]->array_job_id == a->array_job_id &&
	       jobs[k]->state == GPOOL__JOB_STATE__PENDING &&
	       !strcmp(nz(jobs[k]->reason, ""), nz(a->reason, "")))
		k++;
	return k - i;
}

/* "12_[3-5,9]" for the tasks jobs[i .. i + run) of one array. */
static void run_id(Gpool__JobInfo *const *jobs, size_t i, size_t run, char *buf, size_t len)
{
	if (run == 1) {
		gp_jobview_id(jobs[i], buf, len);
		return;
	}
	uint32_t *v = malloc(run * sizeof(*v));
	if (!v) {
		gp_jobview_id(jobs[i], buf, len);
		return;
	}
	for (size_t k = 0; k < run; k++)
		v[k] = jobs[i + k]->array_task_id;
	int w = snprintf(buf, len, "%" PRIu64 "_", jobs[i]->array_job_id);
	if (w > 0 && (size_t)w < len)
		gp_array_format(v, run, buf + w, len - (size_t)w);
	free(v);
}

gp_table_t *gp_jobview_table(Gpool__JobInfo *const *jobs, size_t n, double now)
{
	static const char *const hdr[] = {
	    "JOBID", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)", NULL};
	gp_table_t *t = gp_table_create(hdr);
	if (!t)
		return NULL;
	gp_table_align_right(t, 0);
	gp_table_align_right(t, 4);
	gp_table_align_right(t, 5);
	for (size_t i = 0, run; i < n; i += run) {
		const Gpool__JobInfo *j = jobs[i];
		char id[96], tm[32], nodes[16], where[512];
		run = pending_run(jobs, n, i);
		run_id(jobs, i, run, id, sizeof(id));
		gp_jobview_elapsed(j, now, tm, sizeof(tm));
		snprintf(nodes, sizeof(nodes), "%u", gp_jobview_nnodes(j));
		/* where it runs, else why it does not (pending, or ended without running) */
		if (waiting(j->state) || !j->nodelist || !*j->nodelist)
			snprintf(where, sizeof(where), "(%s)", nz(j->reason, "None"));
		else
			snprintf(where, sizeof(where), "%s", j->nodelist);
		const char *row[] = {id,
				     j->spec ? nz(j->spec->name, "") : "",
				     nz(j->user, ""),
				     gp_job_state_code(j->state),
				     tm,
				     nodes,
				     where};
		if (gp_table_add(t, row) < 0) {
			gp_table_destroy(&t);
			return NULL;
		}
	}
	return t;
}

void gp_jobview_energy_sources(uint32_t sources, char *buf, size_t len)
{
	static const struct {
		Gpool__EnergySource src;
		const char *word;
	} words[] = {
	    {GPOOL__ENERGY_SOURCE__ENERGY_COUNTER, "counter"},
	    {GPOOL__ENERGY_SOURCE__ENERGY_SAMPLED, "sampled"},
	    {GPOOL__ENERGY_SOURCE__ENERGY_LIMIT, "upper bound"},
	};
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!(sources >> words[i].src & 1))
			continue;
		int n = snprintf(buf + o, len - o, "%s%s", o ? "+" : "", words[i].word);
		if (n < 0 || (size_t)n >= len - o) {
			buf[o] = '\0'; /* whole words only */
			break;
		}
		o += (size_t)n;
	}
}

static void line_strv(FILE *f, const char *key, char **v, size_t n, const char *sep)
{
	fprintf(f, "%s=", key);
	if (!n)
		fputs("(null)", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? sep : "", v[i]);
}

/* The long view's service lines: a service's replicas, or the service a replica is of. */
static void long_service(const Gpool__JobInfo *j, const Gpool__JobSpec *s, FILE *f)
{
	if (s->service && !j->service_of) {
		fprintf(f, "   Service=yes Replicas=%u HealthPath=%s Port=%u\n", j->replicas_wanted,
			nz(s->health_path, "(null)"), s->service_port);
		for (size_t i = 0; i < j->n_replicas; i++) {
			const Gpool__ReplicaInfo *r = j->replicas[i];
			fprintf(f,
				"   Replica=%u JobId=%" PRIu64
				" State=%s Node=%s Addr=%s:%u Ready=%s "
				"Restarts=%u CrashLoop=%s Draining=%s Health=%s Requests=%" PRIu64
				" Gateways=%u Reason=%s\n",
				r->index, r->job_id,
				r->crash_loop ? "CRASH_LOOP" : gp_job_state_name(r->state),
				nz(r->node, "(none)"), nz(r->addr, "-"), r->port,
				r->ready ? "yes" : "no", r->restarts, r->crash_loop ? "yes" : "no",
				r->draining ? "yes" : "no", health_name(r->health), r->requests,
				r->gateways, nz(r->reason, "None"));
			if (r->ranks_wanted > 1) /* a gang: rank 0 is the node above */
				fprintf(f, "     Ranks=%u/%u\n", r->ranks, r->ranks_wanted);
		}
	} else if (s->service) {
		fprintf(f, "   ServiceOf=%" PRIu64 " ReplicaIndex=%u Port=%u\n", j->service_of,
			j->replica_index, s->service_port);
	}
}

int gp_jobview_long(const Gpool__JobInfo *j, double now, FILE *f)
{
	static const Gpool__JobSpec empty = GPOOL__JOB_SPEC__INIT;
	const Gpool__JobSpec *s = j->spec ? j->spec : &empty;
	char a[64], b[64], c[64];

	fprintf(f, "JobId=%" PRIu64 " JobName=%s\n", j->id, nz(s->name, "(null)"));
	if (j->array_job_id)
		fprintf(f, "   ArrayJobId=%" PRIu64 " ArrayTaskId=%u\n", j->array_job_id,
			j->array_task_id);
	fprintf(f, "   UserId=%s(%u) GroupId=%u\n", nz(j->user, "?"), j->uid, j->gid);
	fprintf(f, "   JobState=%s Reason=%s Attempt=%u Priority=%d Hold=%s Requeue=%s\n",
		gp_job_state_name(j->state), nz(j->reason, "None"), j->attempt, s->priority,
		s->hold ? "yes" : "no", s->no_requeue ? "no" : "yes");
	gp_jobview_date(j->submit_time, a, sizeof(a));
	gp_jobview_date(j->start_time, b, sizeof(b));
	gp_jobview_date(j->end_time, c, sizeof(c));
	fprintf(f, "   SubmitTime=%s StartTime=%s EndTime=%s\n", a, b, c);
	if (j->reserved_start > 0) {
		gp_jobview_date(j->reserved_start, a, sizeof(a));
		fprintf(f, "   ReservedStart=%s\n", a);
	}
	if (s->time_limit_sec)
		gp_format_duration(s->time_limit_sec, a, sizeof(a));
	else
		snprintf(a, sizeof(a), "UNLIMITED");
	gp_jobview_elapsed(j, now, b, sizeof(b));
	fprintf(f, "   TimeLimit=%s RunTime=%s\n", a, b);
	if (s->mem_per_node_mb)
		snprintf(a, sizeof(a), "%" PRIu64 "M", s->mem_per_node_mb);
	else
		snprintf(a, sizeof(a), "0");
	fprintf(f, "   NumTasks=%u NumNodes=%u CPUs/Task=%u Mem=%s\n", s->ntasks,
		gp_jobview_nnodes(j), s->cpus_per_task, a);
	if (s->gpus_per_task || s->gpus_total || s->gpus_per_node || s->gpu_mem_min ||
	    s->gpu_vendor || *nz(s->gpu_model, "") || *nz(s->gpu_cc_min, "") || s->gpu_mixed ||
	    s->gpu_share) {
		gp_format_size(s->gpu_mem_min, a, sizeof(a));
		fprintf(f,
			"   GPUs/Task=%u GPUs=%u GPUs/Node=%u GpuMem=%s GpuVendor=%s GpuModel=%s "
			"GpuCC=%s GpuMixed=%s\n",
			s->gpus_per_task, s->gpus_total, s->gpus_per_node, s->gpu_mem_min ? a : "0",
			gp_vendor_name(s->gpu_vendor), nz(s->gpu_model, "*"),
			nz(s->gpu_cc_min, "any"), s->gpu_mixed ? "yes" : "no");
		/* a slice of a shared card (docs/gpu-share.md): its budget, and the card of each
		 * task */
		if (s->gpu_share) {
			fprintf(f, "   GpuShare=yes GpuBudget=%s/Task Slices=", a);
			for (size_t i = 0; i < j->n_tasks; i++)
				fprintf(f, "%s%s:%u", i ? "," : "", nz(j->tasks[i]->node, "?"),
					j->tasks[i]->n_cards ? j->tasks[i]->cards[0] : 0);
			fprintf(f, "%s\n", j->n_tasks ? "" : "(none yet)");
			/* what each slice's processes hold on its card, as the agents sampled */
			if (j->n_card_memory)
				fputs("   CardMemory=", f);
			for (size_t i = 0; i < j->n_card_memory; i++) {
				const Gpool__CardMemory *m = j->card_memory[i];
				gp_format_size(m->bytes, b, sizeof(b));
				gp_format_size(m->peak, c, sizeof(c));
				fprintf(f, "%s%s:%u=%s(peak %s)", i ? "," : "", nz(m->node, "?"),
					m->card, b, c);
			}
			if (j->n_card_memory)
				fputs("\n", f);
		}
	}
	long_service(j, s, f);
	fprintf(f, "   NodeList=%s", nz(j->nodelist, "(null)"));
	fputs(" ", f);
	line_strv(f, "ReqNodeList", s->nodelist, s->n_nodelist, ",");
	fputs(" ", f);
	line_strv(f, "ExcNodeList", s->exclude, s->n_exclude, ",");
	fputs("\n", f);
	if (j->exit_code > 128)
		fprintf(f, "   ExitCode=%d (signal %d)", j->exit_code, j->exit_code - 128);
	else
		fprintf(f, "   ExitCode=%d", j->exit_code);
	fprintf(f, " CPUTime=%.1fs MaxRSS=%" PRIu64 "K", j->cpu_sec, j->max_rss_kb);
	if (j->energy_j > 0) {
		char how[96];
		gp_jobview_energy_sources(j->energy_sources, how, sizeof(how));
		fprintf(f, " Energy=%.4fkWh%s%s%s", j->energy_j / 3.6e6, *how ? " (" : "", how,
			*how ? ")" : "");
	}
	fputs("\n", f);
	fputs("   ", f);
	line_strv(f, "Command", s->argv, s->n_argv, " ");
	fputs("\n", f);
	fprintf(f, "   WorkDir=%s StdOut=%s StdErr=%s\n", nz(s->chdir, "(scratch)"),
		nz(s->output, "(default)"), nz(s->error, "(default)"));
	if (s->n_files) {
		fputs("   StagedFiles=", f);
		for (size_t i = 0; i < s->n_files; i++)
			fprintf(f, "%s%s", i ? "," : "", s->files[i]->name);
		fputs("\n", f);
	}
	fputs("   Tasks=", f);
	if (!j->n_tasks)
		fputs("(none)", f);
	for (size_t i = 0; i < j->n_tasks; i++) {
		const Gpool__TaskPlacement *t = j->tasks[i];
		fprintf(f, "%s%u->%s", i ? " " : "", t->rank, t->node);
		for (size_t k = 0; k < t->n_cards; k++)
			fprintf(f, "%s%u", k ? "," : ":card", t->cards[k]);
	}
	fputs("\n", f);
	return ferror(f) ? -1 : 0;
}
