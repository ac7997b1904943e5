/* submit.c - gsub's command line and a script's #GPOOL lines turned into a JobSpec,
 * checked in full before anything is sent (submit.h) */
#include "cli/lib/submit.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/chunk.h"
#include "common/depend.h"
#include "common/imageref.h"
#include "cli/lib/args.h"
#include "cli/lib/directive.h"
#include "cli/lib/env.h"
#include "cli/lib/routetoken.h"
#include "cli/lib/when.h"
#include "common/names.h"
#include "common/opt.h"
#include "common/parse.h"
#include "common/util.h"

struct gp_submit {
	Gpool__JobSpec *spec;
	unsigned flags;
	struct gp_cli_common common;
	char *export_spec; /* last --export, applied once the environment is known */
	bool ntasks_set;
	bool replicas_set;
	size_t file_bytes; /* script + staged files */
	int64_t retry_ms;  /* --retry-for */
	bool retry_set;
	char **stage; /* --stage paths (uploaded to the chunk store by gsub, not read here) */
	size_t n_stage;
	char **lazy; /* of those, the --stage-lazy ones */
	size_t n_lazy;
	char *collect_dir;  /* --collect-dir */
	char *route_token;  /* --route-token: the file */
	char **local_argv;  /* --alloc: the command run here (into argv; NULL: the user's shell) */
	bool jobid_set;	    /* grun --jobid */
	uint64_t attach_id; /* --attach */
};

/* ---- building the spec: every string and array in it is malloc'd, so that
 * gpool__job_spec__free_unpacked() frees exactly what was built ---- */

/* gp_opt_string for a field of the spec, which may hold protobuf-c's static empty string (never
 * freed); an empty value is refused as WHAT when what is given */
static int spec_str(char **field, const char *v, const char *what, gp_error_t *err)
{
	if (*field != protobuf_c_empty_string)
		return gp_opt_string(field, v, what, err);
	char *s = NULL;
	if (gp_opt_string(&s, v, what, err) < 0)
		return -1;
	*field = s;
	return 0;
}

static int set_str(char **field, const char *v, gp_error_t *err)
{
	return spec_str(field, v, NULL, err);
}

static int bad(gp_error_t *err, const char *what, const char *arg)
{
	errno = EINVAL;
	return gp_errprintf(err, "invalid %s '%s'", what, arg);
}

static int number(const char *arg, long min, long max, const char *what, long *out, gp_error_t *err)
{
	if (gp_parse_long(arg, min, max, out) < 0)
		return bad(err, what, arg);
	return 0;
}

/* ---- option setters (the table below says which option each serves) ---- */

#define SUB(ctx)  ((gp_submit_t *)(ctx))
#define SPEC(ctx) (SUB(ctx)->spec)

/* a flag option that sets a field of the spec to 1: one definition for all of them */
#define SPEC_FLAG(fn, field)                                                                       \
	static int fn(void *c, const char *a, gp_error_t *err)                                     \
	{                                                                                          \
		(void)a;                                                                           \
		(void)err;                                                                         \
		SPEC(c)->field = 1;                                                                \
		return 0;                                                                          \
	}

static int set_ntasks(void *c, const char *a, gp_error_t *err)
{
	if (gp_opt_count(&SPEC(c)->ntasks, a, 1, 1000000, "number of tasks", err) < 0)
		return -1;
	SUB(c)->ntasks_set = true;
	return 0;
}

static int set_nodes(void *c, const char *a, gp_error_t *err)
{
	long lo, hi;
	const char *dash = strchr(a, '-');
	char buf[32];
	if (strlen(a) >= sizeof(buf))
		return bad(err, "node count", a);
	if (dash) {
		memcpy(buf, a, dash - a);
		buf[dash - a] = '\0';
		if (gp_parse_long(buf, 1, 100000, &lo) < 0 ||
		    gp_parse_long(dash + 1, 1, 100000, &hi) < 0 || hi < lo)
			return bad(err, "node count", a);
	} else {
		if (gp_parse_long(a, 1, 100000, &lo) < 0)
			return bad(err, "node count", a);
		hi = lo;
	}
	SPEC(c)->nodes_min = (uint32_t)lo;
	SPEC(c)->nodes_max = (uint32_t)hi;
	return 0;
}

static int set_cpus(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_count(&SPEC(c)->cpus_per_task, a, 1, 100000, "cpus per task", err);
}

static int set_mem(void *c, const char *a, gp_error_t *err)
{
	uint64_t b;
	if (gp_opt_size(&b, a, 1ULL << 20, "memory size", err) < 0)
		return -1;
	SPEC(c)->mem_per_node_mb = (b + (1ULL << 20) - 1) >> 20;
	return 0;
}

static int set_time(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_duration(&SPEC(c)->time_limit_sec, a, 0, UINT32_MAX, "time limit", err);
}

static int set_name(void *c, const char *a, gp_error_t *err)
{
	return spec_str(&SPEC(c)->name, a, "job name", err);
}

static int set_output(void *c, const char *a, gp_error_t *err)
{
	return spec_str(&SPEC(c)->output, a, "output pattern", err);
}

static int set_error(void *c, const char *a, gp_error_t *err)
{
	return spec_str(&SPEC(c)->error, a, "error pattern", err);
}

static int set_priority(void *c, const char *a, gp_error_t *err)
{
	long v;
	if (number(a, INT32_MIN, INT32_MAX, "priority", &v, err) < 0)
		return -1;
	SPEC(c)->priority = (int32_t)v;
	return 0;
}

SPEC_FLAG(set_hold, hold)

static int hostlist(const char *a, char ***v, size_t *n, gp_error_t *err)
{
	char **names;
	int count;
	if (gp_hostlist_expand(a, &names, &count) < 0)
		return bad(err, "host list", a);
	gp_opt_list_clear(v, n);
	*v = names;
	*n = (size_t)count;
	return 0;
}

static int set_nodelist(void *c, const char *a, gp_error_t *err)
{
	return hostlist(a, &SPEC(c)->nodelist, &SPEC(c)->n_nodelist, err);
}

static int set_exclude(void *c, const char *a, gp_error_t *err)
{
	return hostlist(a, &SPEC(c)->exclude, &SPEC(c)->n_exclude, err);
}

static int set_chdir(void *c, const char *a, gp_error_t *err)
{
	char cwd[PATH_MAX], path[PATH_MAX * 2];
	if (!*a)
		return bad(err, "directory", a);
	if (a[0] == '/')
		return set_str(&SPEC(c)->chdir, a, err);
	/* relative to where gsub runs, as sbatch -D */
	if (!getcwd(cwd, sizeof(cwd)))
		return gp_errprintf(err, "cannot find the current directory: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", strcmp(cwd, "/") ? cwd : "", a);
	return set_str(&SPEC(c)->chdir, path, err);
}

static int set_export(void *c, const char *a, gp_error_t *err)
{
	if (gp_export_check(a, err) < 0)
		return -1;
	char *s = strdup(a);
	if (!s) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	free(SUB(c)->export_spec);
	SUB(c)->export_spec = s;
	return 0;
}

static int add_file_bytes(gp_submit_t *s, size_t len, const char *path, gp_error_t *err)
{
	if (len > GP_SUBMIT_MAX_FILES - s->file_bytes) {
		errno = EFBIG;
		return gp_errprintf(err, "script and staged files exceed %u MiB in total (at '%s')",
				    GP_SUBMIT_MAX_FILES >> 20, path);
	}
	s->file_bytes += len;
	return 0;
}

/* Read a regular file whole; EFBIG past what is left of the cap. */
static int read_whole(gp_submit_t *s, const char *what, const char *path, uint8_t **data,
		      size_t *len, mode_t *mode, gp_error_t *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return gp_errprintf(err, "cannot read %s '%s': %s", what, path, strerror(errno));
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return gp_errprintf(err, "%s '%s' is not a regular file", what, path);
	}
	if ((uint64_t)st.st_size > GP_SUBMIT_MAX_FILES - s->file_bytes)
		return add_file_bytes(s, (size_t)GP_SUBMIT_MAX_FILES + 1, path, err);
	if (gp_read_file(path, GP_SUBMIT_MAX_FILES - s->file_bytes, data, len) < 0) {
		if (errno == EFBIG)
			return add_file_bytes(s, (size_t)GP_SUBMIT_MAX_FILES + 1, path, err);
		return gp_errprintf(err, "cannot read %s '%s': %s", what, path, strerror(errno));
	}
	if (add_file_bytes(s, *len, path, err) < 0) {
		free(*data);
		return -1;
	}
	*mode = gp_mode_plain(st.st_mode, 0);
	return 0;
}

static const char *base_of(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s", path);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return basename(buf);
}

static int set_stage(void *c, const char *a, gp_error_t *err)
{
	gp_submit_t *s = SUB(c);
	char b1[4096], b2[4096];
	const char *base = base_of(a, b1, sizeof(b1));
	if (!*a || !strcmp(base, "/") || !strcmp(base, ".") || !strcmp(base, ".."))
		return bad(err, "file to stage", a);
	struct stat st;
	if (stat(a, &st) < 0)
		return gp_errprintf(err, "cannot read file to stage '%s': %s", a, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		errno = EINVAL;
		return gp_errprintf(err, "file to stage '%s' is not a regular file or a directory",
				    a);
	}
	for (size_t i = 0; i < s->n_stage; i++) {
		if (!strcmp(base_of(s->stage[i], b2, sizeof(b2)), base)) {
			errno = EINVAL;
			return gp_errprintf(err, "two staged files are named '%s'", base);
		}
	}
	return gp_opt_list(&s->stage, &s->n_stage, a, err);
}

/* --stage-lazy FILE: staged as --stage, but each node makes it sparse and fetches only the
 * ranges its tasks ask for (a model's layers: docs/staging.md "Lazy staging"). */
static int set_stage_lazy(void *c, const char *a, gp_error_t *err)
{
	gp_submit_t *s = SUB(c);
	struct stat st;
	if (stat(a, &st) == 0 && !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return gp_errprintf(err, "file to stage lazily '%s' is not a regular file", a);
	}
	if (set_stage(c, a, err) < 0)
		return -1;
	return gp_opt_list(&s->lazy, &s->n_lazy, a, err);
}

/* --container ARCHIVE: an OCI image archive, staged like --stage (content-addressed, cached and
 * fanned out per node) and named in JobSpec.container; the node unpacks it, never writes it
 * into the working directory. --container HOST:PORT/NAME:TAG: an image in a registry, named
 * as it is in JobSpec.container (a staged archive's base name never has a '/'); each node
 * pulls it once (docs/containers.md). */
static int set_container(void *c, const char *a, gp_error_t *err)
{
	gp_submit_t *s = SUB(c);
	char b1[4096];
	struct stat st;
	if (!*a)
		return bad(err, "container image", a);
	if (stat(a, &st) < 0) {
		if (errno == ENOENT && gp_imageref_like(a)) {
			struct gp_imageref r;
			if (gp_imageref_parse(a, &r, err) < 0)
				return -1;
			return set_str(&SPEC(c)->container, a, err);
		}
		if (errno == ENOENT && strchr(a, ':'))
			return gp_errprintf(err,
					    "container image '%s': no such file, nor an image in a "
					    "registry (HOST:PORT/NAME:TAG)",
					    a);
		return gp_errprintf(err, "cannot read container image '%s': %s", a,
				    strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return gp_errprintf(err, "container image '%s' is not a file (an OCI archive)", a);
	}
	const char *base = base_of(a, b1, sizeof(b1));
	bool staged = false;
	for (size_t i = 0; i < s->n_stage; i++)
		staged |= !strcmp(s->stage[i], a);
	if (!staged && set_stage(c, a, err) < 0)
		return -1;
	return set_str(&SPEC(c)->container, base, err);
}

static int set_collect(void *c, const char *a, gp_error_t *err)
{
	if (!*a || a[0] == '/' || strstr(a, "..") || strlen(a) > 1024)
		return bad(err, "collect pattern (a relative path or glob without '..')", a);
	return gp_opt_list(&SPEC(c)->collect, &SPEC(c)->n_collect, a, err);
}

static int set_collect_dir(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_string(&SUB(c)->collect_dir, a, "collect directory", err);
}

/* --array: checked here (the scheduler checks again) so that a typo fails before anything
 * is sent */
static int set_array(void *c, const char *a, gp_error_t *err)
{
	gp_array_t *arr = malloc(sizeof(*arr));
	if (!arr) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	int rc = gp_array_parse(a, arr), e = errno;
	free(arr);
	if (rc < 0 && e == E2BIG) {
		errno = EINVAL;
		return gp_errprintf(err, "array '%s' too large (at most %u tasks)", a,
				    GP_ARRAY_MAX_TASKS);
	}
	if (rc < 0)
		return bad(err, "array", a);
	return set_str(&SPEC(c)->array, a, err);
}

static int set_dependency(void *c, const char *a, gp_error_t *err)
{
	gp_depend_t *d = malloc(sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	int rc = gp_depend_parse(a, d);
	free(d);
	if (rc < 0)
		return bad(err, "dependency", a);
	return set_str(&SPEC(c)->dependency, a, err);
}

static int set_retry_for(void *c, const char *a, gp_error_t *err)
{
	uint32_t s;
	if (gp_opt_duration(&s, a, 0, 86400, "retry time", err) < 0)
		return -1;
	SUB(c)->retry_ms = (int64_t)s * 1000;
	SUB(c)->retry_set = true;
	return 0;
}

SPEC_FLAG(set_no_requeue, no_requeue)

/* --signal=[B:]SIG[@SECONDS] as Slurm's (B: is taken and ignored: gpool signals every
 * process of the job): SIG SECONDS before the time limit (default 60), and the checkpoint
 * signal of a vacate (docs/owner.md) */
static int set_signal(void *c, const char *a, gp_error_t *err)
{
	char buf[64];
	if (!strncmp(a, "B:", 2))
		a += 2;
	if (snprintf(buf, sizeof(buf), "%s", a) >= (int)sizeof(buf))
		return bad(err, "signal", a);
	char *at = strchr(buf, '@');
	unsigned long sec = 60;
	if (at) {
		char *end;
		*at = '\0';
		sec = strtoul(at + 1, &end, 10);
		if (end == at + 1 || *end || sec > 65535)
			return bad(err, "signal time", at + 1);
	}
	int sig;
	if (gp_args_signal(buf, &sig, err) < 0)
		return -1;
	SPEC(c)->ckpt_signal = sig;
	SPEC(c)->ckpt_signal_sec = (uint32_t)sec;
	return 0;
}

/* --begin=TIME: as sbatch's (when.h); HH:MM[:SS] already past today is tomorrow's */
static int set_begin(void *c, const char *a, gp_error_t *err)
{
	double now = gp_now(), t;
	if (gp_when_parse(a, now, &t, err) < 0)
		return -1;
	if (t < now && strncmp(a, "now", 3) != 0 && !strchr(a, '-'))
		t += 86400;
	SPEC(c)->begin_time = t;
	return 0;
}

SPEC_FLAG(set_exclusive, exclusive)

SPEC_FLAG(set_no_suspend, no_suspend)

SPEC_FLAG(set_no_private_tmp, no_private_tmp)

static int set_flag(void *c, unsigned flag)
{
	SUB(c)->flags |= flag;
	return 0;
}

static int set_wait(void *c, const char *a, gp_error_t *err)
{
	return set_flag(c, GP_SUBMIT_WAIT);
}

static int set_pty(void *c, const char *a, gp_error_t *err)
{
	SPEC(c)->pty = 1;
	return set_flag(c, GP_SUBMIT_PTY);
}

static int set_pty_keep(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_duration(&SPEC(c)->pty_keep_sec, a, 1, 7 * 86400,
			       "time to keep a detached terminal (above 0, at most 7 days)", err);
}

static int set_attach(void *c, const char *a, gp_error_t *err)
{
	long id;
	if (gp_parse_long(a, 1, LONG_MAX, &id) < 0)
		return bad(err, "job id", a);
	SUB(c)->attach_id = (uint64_t)id;
	return set_flag(c, GP_SUBMIT_ATTACH);
}

static int set_alloc(void *c, const char *a, gp_error_t *err)
{
	SPEC(c)->alloc = 1;
	return set_flag(c, GP_SUBMIT_ALLOC);
}

static int set_jobid(void *c, const char *a, gp_error_t *err)
{
	long id;
	if (gp_parse_long(a, 1, LONG_MAX, &id) < 0)
		return bad(err, "job id", a);
	SPEC(c)->step_of = (uint64_t)id;
	SUB(c)->jobid_set = true;
	return 0;
}

static int set_json(void *c, const char *a, gp_error_t *err)
{
	return set_flag(c, GP_SUBMIT_JSON);
}

static int set_parsable(void *c, const char *a, gp_error_t *err)
{
	return set_flag(c, GP_SUBMIT_PARSABLE);
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	return set_flag(c, GP_SUBMIT_HELP);
}

static int set_config(void *c, const char *a, gp_error_t *err)
{
	SUB(c)->common.config = a;
	return 0;
}

static int set_scheduler(void *c, const char *a, gp_error_t *err)
{
	if (!*a)
		return bad(err, "scheduler endpoint", a);
	SUB(c)->common.scheduler = a;
	return 0;
}

static int cards(const char *a, uint32_t *field, gp_error_t *err)
{
	return gp_opt_count(field, a, 0, 4096, "number of cards", err);
}

/* N, or 0-N: N cards where the task's node has them free, else none (a rank on the CPU) */
static int set_gpus_per_task(void *c, const char *a, gp_error_t *err)
{
	if (strncmp(a, "0-", 2) == 0) {
		if (cards(a + 2, &SPEC(c)->gpus_per_task, err) < 0)
			return -1;
		if (!SPEC(c)->gpus_per_task)
			return bad(err, "number of cards", a);
		SPEC(c)->gpus_optional = true;
		return 0;
	}
	if (strchr(a, '-')) {
		errno = EINVAL;
		return gp_errprintf(err,
				    "invalid number of cards '%s' (N, or 0-N: N where free, "
				    "else none)",
				    a);
	}
	SPEC(c)->gpus_optional = false;
	return cards(a, &SPEC(c)->gpus_per_task, err);
}

static int set_gpus(void *c, const char *a, gp_error_t *err)
{
	return cards(a, &SPEC(c)->gpus_total, err);
}

static int set_gpus_per_node(void *c, const char *a, gp_error_t *err)
{
	return cards(a, &SPEC(c)->gpus_per_node, err);
}

static int set_gpu_mem(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_size(&SPEC(c)->gpu_mem_min, a, 1ULL << 20, "card memory size", err);
}

static int set_gpu_vendor(void *c, const char *a, gp_error_t *err)
{
	int v = gp_vendor_parse(a);
	if (v < 0 || v == GPOOL__VENDOR__VENDOR_CPU) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid card vendor '%s' (nvidia, amd or any)", a);
	}
	SPEC(c)->gpu_vendor = (Gpool__Vendor)v;
	return 0;
}

static int set_gpu_model(void *c, const char *a, gp_error_t *err)
{
	return spec_str(&SPEC(c)->gpu_model, a, "card model pattern", err);
}

/* "7.5", "8", "gfx1031" */
static int set_gpu_cc(void *c, const char *a, gp_error_t *err)
{
	const char *p = a;
	if (!strncmp(p, "gfx", 3) && p[3]) {
		for (p += 3; *p; p++)
			if (!isxdigit((unsigned char)*p))
				return bad(err, "compute capability", a);
	} else {
		int dots = 0, digits = 0;
		for (; *p; p++) {
			if (*p == '.') {
				if (!digits || dots++)
					return bad(err, "compute capability", a);
				digits = 0;
			} else if (isdigit((unsigned char)*p)) {
				digits++;
			} else {
				return bad(err, "compute capability", a);
			}
		}
		if (!digits)
			return bad(err, "compute capability", a);
	}
	return set_str(&SPEC(c)->gpu_cc_min, a, err);
}

/* "0", "0,2", "1-3": card indices as gnodes -G numbers them */
static int set_gpu_index(void *c, const char *a, gp_error_t *err)
{
	uint32_t v[64];
	uint64_t seen = 0;
	size_t n = 0;
	const char *p = a;
	while (1) {
		char item[32];
		size_t len = strcspn(p, ",");
		long lo, hi;
		if (len == 0 || len >= sizeof(item))
			return bad(err, "card index list", a);
		memcpy(item, p, len);
		item[len] = '\0';
		char *dash = strchr(item, '-');
		if (dash)
			*dash = '\0';
		if (gp_parse_long(item, 0, 63, &lo) < 0 ||
		    gp_parse_long(dash ? dash + 1 : item, 0, 63, &hi) < 0 || hi < lo)
			return bad(err, "card index list", a);
		for (long i = lo; i <= hi; i++) {
			if (seen >> i & 1)
				return bad(err, "card index list", a);
			seen |= 1ULL << i;
			v[n++] = (uint32_t)i;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	uint32_t *nv = malloc(n * sizeof(*nv));
	if (!nv) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	memcpy(nv, v, n * sizeof(*nv));
	free(SPEC(c)->gpu_index);
	SPEC(c)->gpu_index = nv;
	SPEC(c)->n_gpu_index = n;
	return 0;
}

SPEC_FLAG(set_screen, screen)

SPEC_FLAG(set_gpu_mixed, gpu_mixed)

SPEC_FLAG(set_gpu_share, gpu_share)

SPEC_FLAG(set_service, service)

static int set_replicas(void *c, const char *a, gp_error_t *err)
{
	if (gp_opt_count(&SPEC(c)->replicas, a, 1, 100000, "number of replicas", err) < 0)
		return -1;
	SUB(c)->replicas_set = true;
	return 0;
}

static int set_health_path(void *c, const char *a, gp_error_t *err)
{
	if (a[0] != '/')
		return bad(err, "health check path", a);
	return set_str(&SPEC(c)->health_path, a, err);
}

SPEC_FLAG(set_listen_fd, service_listen_fd)

static int set_route_token(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_string(&SUB(c)->route_token, a, "route token file", err);
}

static int set_route_prefix(void *c, const char *a, gp_error_t *err)
{
	static const struct {
		const char *name;
		protobuf_c_boolean keep;
	} tab[] = {{"strip", 0}, {"keep", 1}};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(a, tab[i].name)) {
			SPEC(c)->route_keep_prefix = tab[i].keep;
			return 0;
		}
	errno = EINVAL;
	return gp_errprintf(err, "invalid route prefix '%s' (strip or keep)", a);
}

static int set_port(void *c, const char *a, gp_error_t *err)
{
	return gp_opt_count(&SPEC(c)->service_port, a, 1, 65535, "service port", err);
}

/* gsub --mpi: how an MPI job starts (docs/mpi.md) */
static const struct {
	const char *name;
	Gpool__MpiLaunch mode;
} mpi_modes[] = {
    {"none", GPOOL__MPI_LAUNCH__MPI_NONE},
    {"mpirun", GPOOL__MPI_LAUNCH__MPI_MPIRUN},
    {"pmix", GPOOL__MPI_LAUNCH__MPI_PMIX},
};

static int set_mpi(void *c, const char *a, gp_error_t *err)
{
	for (size_t i = 0; i < sizeof(mpi_modes) / sizeof(mpi_modes[0]); i++) {
		if (!strcmp(a, mpi_modes[i].name)) {
			SPEC(c)->mpi = mpi_modes[i].mode;
			return 0;
		}
	}
	return bad(err, "MPI launch (none, mpirun or pmix)", a);
}

#define ARG   required_argument
#define NOARG no_argument

static const struct gp_opt submit_opts[] = {
    {"ntasks", 'n', ARG, "N", "number of tasks (ranks) to run (default 1)", set_ntasks, 0},
    {"nodes", 'N', ARG, "N|MIN-MAX", "number of nodes to spread the tasks over", set_nodes, 0},
    {"cpus-per-task", 'c', ARG, "N", "CPUs each task gets (default 1)", set_cpus, 0},
    {"mem", 0, ARG, "SIZE", "memory per node: 512 (MB), 4G, 1.5T", set_mem, 0},
    {"time", 't', ARG, "TIME", "time limit: M, M:S, H:M:S, D-H[:M[:S]], 30s, 2h, 1d", set_time, 0},
    {"job-name", 'J', ARG, "NAME", "the job's name (default: the script or command)", set_name, 0},
    {"output", 'o', ARG, "PATTERN",
     "stdout file; %j job id, %t rank, %u user, %x name, %A array id, %a array index", set_output,
     0},
    {"error", 'e', ARG, "PATTERN", "stderr file, same patterns as --output", set_error, 0},
    {"priority", 0, ARG, "N", "priority relative to your other jobs", set_priority, 0},
    {"hold", 'H', NOARG, NULL, "submit held: it waits for `gpool release`", set_hold, 0},
    {"array", 'a', ARG, "LIST[%N]", "a job array: 0-999, 0-99:5, 1,3,7; %N: N tasks at once",
     set_array, 0},
    {"dependency", 'd', ARG, "TYPE:JOB[:JOB],...",
     "start after other jobs: after, afterok, afternotok, afterany, singleton; ',' all, '?' any",
     set_dependency, 0},
    {"retry-for", 0, ARG, "TIME",
     "keep trying this long while gschedd does not answer (60s; 0: no)", set_retry_for,
     GP_OPT_CMDLINE},
    {"nodelist", 'w', ARG, "LIST", "run only on these hosts, e.g. pc[1-3],lab", set_nodelist, 0},
    {"exclude", 'x', ARG, "LIST", "never run on these hosts", set_exclude, 0},
    {"chdir", 'D', ARG, "DIR", "working directory of the tasks", set_chdir, 0},
    {"export", 0, ARG, "ALL|NONE|VAR[=val],...", "environment of the tasks (default ALL)",
     set_export, 0},
    {"stage", 0, ARG, "FILE|DIR",
     "ship FILE or DIR (recursively) to each node's scratch directory (repeatable)", set_stage, 0},
    {"stage-lazy", 0, ARG, "FILE",
     "ship FILE as a sparse file that each node fills only where its tasks read (repeatable)",
     set_stage_lazy, 0},
    {"collect", 0, ARG, "PATTERN",
     "bring files matching PATTERN back when the job ends (%t: every rank's; repeatable)",
     set_collect, 0},
    {"container", 0, ARG, "IMAGE",
     "run the tasks in a container of this OCI image archive (a file) or registry image "
     "(HOST:PORT/NAME:TAG, pulled once per node), as the job's user, in its cgroup, with its "
     "cards' devices (docs/containers.md)",
     set_container, 0},
    {"collect-dir", 0, ARG, "DIR",
     "where --wait puts collected files (default .; `gpool fetch` takes --dir)", set_collect_dir,
     GP_OPT_CMDLINE},
    {"no-requeue", 0, NOARG, NULL, "never requeue the job after a node failure", set_no_requeue, 0},
    {"signal", 0, ARG, "SIG[@SECONDS]",
     "send SIG SECONDS (60) before the time limit; also the checkpoint signal when the PC's "
     "owner comes back and the job is vacated (stopped SECONDS later)",
     set_signal, 0},
    {"begin", 0, ARG, "TIME",
     "not started before TIME: HH:MM[:SS] (tomorrow's if past), YYYY-MM-DD[THH:MM[:SS]], "
     "now+N[seconds|minutes|hours|days] (pending reason BeginTime meanwhile)",
     set_begin, 0},
    {"exclusive", 0, NOARG, NULL,
     "whole nodes: no other job runs on the job's nodes while it runs (it waits for idle ones)",
     set_exclusive, 0},
    {"no-suspend", 0, NOARG, NULL,
     "never freeze the job when a PC's owner comes back: vacate it (run it again elsewhere)",
     set_no_suspend, 0},
    {"no-private-tmp", 0, NOARG, NULL,
     "the tasks see the node's /tmp, /var/tmp and /dev/shm, not the job's own (shared with "
     "every job there, kept after it)",
     set_no_private_tmp, 0},
    {"gpus-per-task", 0, ARG, "N|0-N", "cards each task gets (0-N: N where free, else none)",
     set_gpus_per_task, 0},
    {"gpus", 'G', ARG, "N", "cards for the whole job", set_gpus, 0},
    {"gpus-per-node", 0, ARG, "N", "cards on each node", set_gpus_per_node, 0},
    {"gpu-mem", 0, ARG, "SIZE", "least memory a card must have: 6G, 8192 (MB)", set_gpu_mem, 0},
    {"gpu-vendor", 0, ARG, "nvidia|amd|any", "cards of this vendor only", set_gpu_vendor, 0},
    {"gpu-model", 0, ARG, "PATTERN", "cards whose name matches, e.g. '*3060*'", set_gpu_model, 0},
    {"gpu-cc", 0, ARG, "MIN", "least compute capability (7.5) or AMD arch (gfx1030)", set_gpu_cc,
     0},
    {"gpu-mixed", 0, NOARG, NULL, "cards of different vendors in one job are fine", set_gpu_mixed,
     0},
    {"gpu-share", 0, NOARG, NULL,
     "share a card with other small jobs: --gpu-mem is the VRAM budget of each task's slice "
     "(docs/gpu-share.md)",
     set_gpu_share, 0},
    {"gpu-index", 0, ARG, "LIST", "only these cards (gnodes -G numbering), e.g. 0,2 or 1-3",
     set_gpu_index, 0},
    {"screen", 0, NOARG, NULL,
     "a screening job (root or the agents' account): its agent reports the gcheck result",
     set_screen, 0},
    {"mpi", 0, ARG, "mpirun|pmix|none",
     "MPI job: mpirun: rank 0 runs the script, whose mpirun starts its daemons on the job's "
     "nodes through gpool; pmix: every task is a rank, wired up by gpool's PMIx server "
     "(docs/mpi.md)",
     set_mpi, 0},
    {"service", 0, NOARG, NULL, "a service: kept running, restarted when it ends", set_service, 0},
    {"replicas", 0, ARG, "N", "copies of the service to keep running", set_replicas, 0},
    {"health-path", 0, ARG, "PATH", "HTTP path the gateway checks, e.g. /health", set_health_path,
     0},
    {"port", 0, ARG, "PORT", "port each service replica listens on", set_port, 0},
    {"route-token", 0, ARG, "FILE",
     "the gateway lets through only requests with the token in FILE (made, mode 0600, when "
     "missing); gpool sees its hash only (docs/interactive.md)",
     set_route_token, 0},
    {"route-prefix", 0, ARG, "strip|keep",
     "through the gateway's /svc/NAME/, the replica sees the rest of the path (strip, the "
     "default) or the whole of it (keep: for a server given its base URL, $GPOOL_ROUTE_PREFIX, "
     "as Jupyter's base_url)",
     set_route_prefix, 0},
    {"listen-fd", 0, NOARG, NULL,
     "hand each replica its port as a listening socket, fd 3 (LISTEN_FDS), for servers that take "
     "one (gserve)",
     set_listen_fd, 0},
    {"wait", 'W', NOARG, NULL, "wait for the job, stream its output, exit with its code", set_wait,
     GP_OPT_CMDLINE},
    {"pty", 0, NOARG, NULL,
     "run one task on a pseudo-terminal connected to this terminal, as srun --pty "
     "(docs/interactive.md)",
     set_pty, GP_OPT_CMDLINE},
    {"pty-keep", 0, ARG, "TIME",
     "with --pty: when this gsub goes away (its terminal closed, ~. typed), the task's terminal "
     "waits TIME (as --time: minutes, or 30s, 10m, 2h) for gsub --attach instead of hanging up "
     "(docs/interactive.md)",
     set_pty_keep, GP_OPT_CMDLINE},
    {"attach", 0, ARG, "JOB",
     "attach this terminal to the detached terminal of --pty job JOB (yours), as sattach; "
     "nothing is submitted",
     set_attach, GP_OPT_CMDLINE},
    {"alloc", 0, NOARG, NULL,
     "hold the resources and run a shell (or COMMAND) here while they are held, as salloc; "
     "grun starts steps in them (docs/interactive.md)",
     set_alloc, GP_OPT_CMDLINE},
    {"parsable", 0, NOARG, NULL, "print only the job id", set_parsable, GP_OPT_CMDLINE},
    {"json", 0, NOARG, NULL, "print {\"job_id\": N}", set_json, GP_OPT_CMDLINE},
    {"config", 0, ARG, "PATH", "read this gpool.conf", set_config, GP_OPT_CMDLINE},
    {"scheduler", 0, ARG, "ENDPOINT", "talk to this gschedd (default $GPOOL_SCHEDULER)",
     set_scheduler, GP_OPT_CMDLINE},
    {"help", 'h', NOARG, NULL, "this text", set_help, GP_OPT_CMDLINE},
};

/* grun: a job step in the allocation or batch job it runs in ($GPOOL_JOB_ID) */
static const struct gp_opt step_opts[] = {
    {"ntasks", 'n', ARG, "N",
     "number of tasks (default 1); rank r runs where the job's task "
     "r % (its task count) runs",
     set_ntasks, 0},
    {"jobid", 0, ARG, "JOB", "the allocation or job to run in (default $GPOOL_JOB_ID)", set_jobid,
     0},
    {"job-name", 'J', ARG, "NAME", "the step's name (default: the command)", set_name, 0},
    {"output", 'o', ARG, "PATTERN", "stdout file; %j step id, %t rank, %u user, %x name",
     set_output, 0},
    {"error", 'e', ARG, "PATTERN", "stderr file, same patterns as --output", set_error, 0},
    {"time", 't', ARG, "TIME", "time limit of the step", set_time, 0},
    {"chdir", 'D', ARG, "DIR", "working directory of the tasks", set_chdir, 0},
    {"export", 0, ARG, "ALL|NONE|VAR[=val],...", "environment of the tasks (default ALL)",
     set_export, 0},
    {"pty", 0, NOARG, NULL, "one task on a pseudo-terminal connected to this terminal", set_pty, 0},
    {"pty-keep", 0, ARG, "TIME",
     "with --pty: a detached terminal waits TIME for gsub --attach instead of hanging up",
     set_pty_keep, 0},
    {"exclusive", 0, NOARG, NULL,
     "run on tasks of the job that no other exclusive step holds; wait while too few are "
     "free (srun --exclusive)",
     set_exclusive, 0},
    {"config", 0, ARG, "PATH", "read this gpool.conf", set_config, 0},
    {"scheduler", 0, ARG, "ENDPOINT", "talk to this gschedd (default $GPOOL_SCHEDULER)",
     set_scheduler, 0},
    {"help", 'h', NOARG, NULL, "this text", set_help, 0},
};

void gp_submit_step_usage(FILE *f)
{
	fprintf(f, "usage: grun [options] [--] command [args...]\n"
		   "A command without a '/' is found in PATH on the node (grun -n 2 hostname); one "
		   "with a '/'\n(./prepare.sh) is a script read here and sent with the step; after "
		   "'--' it is always a command.\n"
		   "Run a job step in the allocation (gsub --alloc) or batch job this runs in: its "
		   "own id,\noutput, exit code and accounting, on the job's resources; wait for it "
		   "and exit with its code.\n\noptions:\n");
	gp_opt_usage(step_opts, GP_NOPTS(step_opts), f);
}

void gp_submit_usage(FILE *f)
{
	fprintf(f, "usage: gsub [options] script [args...]\n"
		   "       gsub [options] -- command [args...]\n"
		   "Submit a job to gpool. A script's '#GPOOL <options>' lines at its top are read "
		   "as options\n(the command line wins).\n\noptions:\n");
	gp_opt_usage(submit_opts, GP_NOPTS(submit_opts), f);
}

gp_submit_t *gp_submit_create(void)
{
	gp_submit_t *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (!(s->spec = malloc(sizeof(*s->spec)))) {
		free(s);
		return NULL;
	}
	gpool__job_spec__init(s->spec);
	return s;
}

void gp_submit_destroy(gp_submit_t **p)
{
	if (!p || !*p)
		return;
	gpool__job_spec__free_unpacked((*p)->spec, NULL);
	free((*p)->export_spec);
	gp_opt_list_clear(&(*p)->stage, &(*p)->n_stage);
	gp_opt_list_clear(&(*p)->lazy, &(*p)->n_lazy);
	free((*p)->collect_dir);
	free((*p)->route_token);
	free(*p);
	*p = NULL;
}

char *const *gp_submit_stage(const gp_submit_t *s, size_t *n)
{
	*n = s->n_stage;
	return s->stage;
}

bool gp_submit_stage_lazy(const gp_submit_t *s, const char *path)
{
	for (size_t i = 0; i < s->n_lazy; i++)
		if (!strcmp(s->lazy[i], path))
			return true;
	return false;
}

const char *gp_submit_collect_dir(const gp_submit_t *s)
{
	return s->collect_dir ? s->collect_dir : ".";
}

Gpool__JobSpec *gp_submit_spec(gp_submit_t *s)
{
	return s->spec;
}

int64_t gp_submit_retry_ms(const gp_submit_t *s)
{
	return s->retry_set ? s->retry_ms : -1;
}

unsigned gp_submit_flags(const gp_submit_t *s)
{
	return s->flags;
}

const struct gp_cli_common *gp_submit_common(const gp_submit_t *s)
{
	return &s->common;
}

/* Apply a script's #GPOOL lines. */
static int apply_directives(gp_submit_t *s, const char *path, const uint8_t *text, size_t len,
			    gp_error_t *err)
{
	struct gp_directive *dirs;
	int n, rc = 0;
	gp_error_t e2;
	if (gp_directives_parse((const char *)text, len, "gsub", &dirs, &n, &e2) < 0)
		return gp_errprintf(err, "%s: %s", path, e2.text);
	for (int i = 0; i < n && rc == 0; i++) {
		struct gp_opt_hit *hits;
		int nhits, first;
		bool dd;
		if (gp_opt_scan(submit_opts, GP_NOPTS(submit_opts), dirs[i].argc, dirs[i].argv,
				&hits, &nhits, &first, &dd, &e2) < 0) {
			rc = gp_errprintf(err, "%s:%d: %s", path, dirs[i].lineno, e2.text);
			break;
		}
		for (int k = 0; k < nhits && rc == 0; k++) {
			if (hits[k].opt->flags & GP_OPT_CMDLINE) {
				errno = EINVAL;
				rc = gp_errprintf(err,
						  "%s:%d: option '--%s' is not allowed in a script",
						  path, dirs[i].lineno, hits[k].opt->name);
			}
		}
		if (rc == 0 && (first < dirs[i].argc || dd)) {
			errno = EINVAL;
			rc = gp_errprintf(err, "%s:%d: unexpected argument '%s'", path,
					  dirs[i].lineno, dd ? "--" : dirs[i].argv[first]);
		}
		if (rc == 0 && gp_opt_apply(hits, nhits, s, &e2) < 0) {
			int saved = errno;
			rc = gp_errprintf(err, "%s:%d: %s", path, dirs[i].lineno, e2.text);
			errno = saved;
		}
		free(hits);
	}
	int saved = errno;
	gp_directives_free(dirs, n);
	errno = saved;
	return rc;
}

static int set_script(gp_submit_t *s, const char *path, char **args, int nargs, gp_error_t *err)
{
	Gpool__JobSpec *sp = s->spec;
	uint8_t *data;
	size_t len;
	mode_t mode;
	if (read_whole(s, "script", path, &data, &len, &mode, err) < 0)
		return -1;
	sp->script.data = data;
	sp->script.len = len;
	char *copy = strdup(path), cmd[PATH_MAX + 3];
	if (!copy) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	snprintf(cmd, sizeof(cmd), "./%s", basename(copy));
	int rc = gp_opt_list(&sp->argv, &sp->n_argv, cmd, err);
	if (rc == 0 && sp->name == protobuf_c_empty_string)
		rc = set_str(&sp->name, basename(copy), err);
	free(copy);
	for (int i = 0; i < nargs && rc == 0; i++)
		rc = gp_opt_list(&sp->argv, &sp->n_argv, args[i], err);
	if (rc == 0)
		rc = apply_directives(s, path, data, len, err);
	return rc;
}

static int set_command(gp_submit_t *s, char **args, int nargs, gp_error_t *err)
{
	Gpool__JobSpec *sp = s->spec;
	for (int i = 0; i < nargs; i++)
		if (gp_opt_list(&sp->argv, &sp->n_argv, args[i], err) < 0)
			return -1;
	char *copy = strdup(args[0]);
	if (!copy) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	int rc = set_str(&sp->name, basename(copy), err);
	free(copy);
	return rc;
}

/* Defaults and checks that need every option seen. */
static int finish(gp_submit_t *s, char *const *envp, gp_error_t *err)
{
	Gpool__JobSpec *sp = s->spec;
	if ((s->flags & GP_SUBMIT_JSON) && (s->flags & GP_SUBMIT_PARSABLE)) {
		errno = EINVAL;
		return gp_errprintf(err, "options '--json' and '--parsable' exclude each other");
	}
	if (s->replicas_set && !sp->service) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--replicas' needs '--service'");
	}
	if ((sp->health_path != protobuf_c_empty_string || sp->service_port ||
	     sp->service_listen_fd) &&
	    !sp->service) {
		errno = EINVAL;
		return gp_errprintf(
		    err, "options '--health-path', '--port' and '--listen-fd' need '--service'");
	}
	if (s->route_token && !sp->service) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--route-token' needs '--service'");
	}
	if (sp->route_keep_prefix && !sp->service) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--route-prefix' needs '--service'");
	}
	if (s->route_token) {
		char hash[65];
		if (gp_route_token(s->route_token, hash, err) < 0 ||
		    set_str(&sp->route_token_sha256, hash, err) < 0)
			return -1;
	}
	if (sp->service && sp->mpi != GPOOL__MPI_LAUNCH__MPI_NONE) {
		errno = EINVAL;
		return gp_errprintf(err, "options '--service' and '--mpi' exclude each other");
	}
	if (sp->pty && (sp->service || sp->array != protobuf_c_empty_string ||
			(s->ntasks_set && sp->ntasks > 1) || sp->nodes_min > 1)) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--pty' runs one task: not with '--service', "
					 "'--array', '-n' or '-N' above 1");
	}
	if (sp->pty_keep_sec && !sp->pty) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--pty-keep' is for '--pty' jobs");
	}
	if (sp->pty && (s->flags & (GP_SUBMIT_WAIT | GP_SUBMIT_JSON | GP_SUBMIT_PARSABLE))) {
		errno = EINVAL;
		return gp_errprintf(err,
				    "option '--pty' waits by itself: not with '--wait', '--json' "
				    "or '--parsable'");
	}
	if (sp->alloc && (sp->service || sp->pty || sp->array != protobuf_c_empty_string ||
			  (s->flags & (GP_SUBMIT_WAIT | GP_SUBMIT_JSON | GP_SUBMIT_PARSABLE)))) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--alloc' is not for '--service', '--pty', "
					 "'--array', '--wait', '--json' or '--parsable'");
	}
	/* --mpi=pmix: each task is a rank gstepd starts, in the container with the PMIx server's
	 * directory bound; --mpi=mpirun's tasks are gpool-launch's, which the image lacks */
	if (sp->container && *sp->container && sp->mpi == GPOOL__MPI_LAUNCH__MPI_MPIRUN) {
		errno = EINVAL;
		return gp_errprintf(err, "option '--container' does not take '--mpi=mpirun': use "
					 "'--mpi=pmix' (docs/containers.md)");
	}
	if (sp->service && !sp->replicas)
		sp->replicas = 1;
	if (!s->ntasks_set)
		sp->ntasks = sp->nodes_min ? sp->nodes_min : 1; /* one task a node, as Slurm */
	/* a service's -N MIN-MAX: a gang replica with a rank on each of MIN to MAX nodes, as
	 * many as the pool has (docs/services.md "Gang replicas") */
	if (!s->ntasks_set && sp->service && sp->nodes_max > sp->nodes_min)
		sp->ntasks = sp->nodes_max;
	if (sp->nodes_min > sp->ntasks) {
		errno = EINVAL;
		return gp_errprintf(err, "%u nodes asked for only %u tasks", sp->nodes_min,
				    sp->ntasks);
	}
	if (!sp->cpus_per_task)
		sp->cpus_per_task = 1;
	for (size_t i = 0; i < s->n_stage; i++) {
		char b[4096];
		const char *base = base_of(s->stage[i], b, sizeof(b));
		if (sp->script.data && !strcmp(sp->argv[0] + 2, base)) {
			errno = EINVAL;
			return gp_errprintf(err, "staged file '%s' has the script's name", base);
		}
	}
	for (size_t i = 0; i < sp->n_nodelist; i++) {
		for (size_t k = 0; k < sp->n_exclude; k++) {
			if (!strcmp(sp->nodelist[i], sp->exclude[k])) {
				errno = EINVAL;
				return gp_errprintf(err, "host '%s' is both wanted and excluded",
						    sp->nodelist[i]);
			}
		}
	}
	if (gp_export_build(s->export_spec, envp, &sp->env, &sp->n_env, err) < 0)
		return -1;
	return 0;
}

/* An allocation's tasks hold its resources; its command runs here (gsub.c) */
static char *alloc_holder[] = {"sleep", "infinity"};

/* After the script or command (rc: how that went): the command line's options over it, so that
 * they win, then the spec finished. hits are freed. */
static int apply_and_finish(gp_submit_t *s, int rc, struct gp_opt_hit *hits, int nhits,
			    char *const *envp, gp_error_t *err)
{
	if (rc == 0)
		rc = gp_opt_apply(hits, nhits, s, err);
	free(hits);
	if (rc == 0)
		rc = finish(s, envp, err);
	return rc;
}

/* word_is_command (grun): a first word without a '/' is a command found in the node's PATH,
 * as a shell and srun take it, and one with a '/' a script read here; for gsub (sbatch) every
 * first word is a script. '--' makes it a command for both. */
static int parse_with(gp_submit_t *s, const struct gp_opt *opts, size_t nopts, int argc,
		      char **argv, char *const *envp, bool word_is_command, gp_error_t *err)
{
	struct gp_opt_hit *hits;
	int nhits, first, rc;
	bool dashdash;
	if (gp_opt_scan(opts, nopts, argc, argv, &hits, &nhits, &first, &dashdash, err) < 0)
		return -1;
	bool alloc = false, attach = false;
	for (int i = 0; i < nhits; i++) {
		if (hits[i].opt->set == set_help) {
			s->flags |= GP_SUBMIT_HELP;
			free(hits);
			return 0;
		}
		alloc |= hits[i].opt->set == set_alloc;
		attach |= hits[i].opt->set == set_attach;
	}
	if (attach) { /* nothing is submitted: only where to ask */
		for (int i = 0; i < nhits; i++)
			if (hits[i].opt->set != set_attach && hits[i].opt->set != set_config &&
			    hits[i].opt->set != set_scheduler) {
				free(hits);
				errno = EINVAL;
				return gp_errprintf(err,
						    "option '--attach' takes no other options than "
						    "'--config' and '--scheduler'");
			}
		if (first < argc) {
			free(hits);
			errno = EINVAL;
			return gp_errprintf(err, "option '--attach' takes no command");
		}
		rc = gp_opt_apply(hits, nhits, s, err);
		free(hits);
		return rc;
	}
	if (alloc) {
		if (first < argc)
			s->local_argv = argv + first;
		rc = set_command(s, alloc_holder, 2, err);
		return apply_and_finish(s, rc, hits, nhits, envp, err);
	}
	if (first >= argc) {
		free(hits);
		errno = EINVAL;
		return gp_errprintf(err, dashdash ? "no command after '--'"
						  : "no script or command given (see gsub --help)");
	}
	/* a script's directives first, so that the command line wins */
	if (dashdash || (word_is_command && !strchr(argv[first], '/')))
		rc = set_command(s, argv + first, argc - first, err);
	else
		rc = set_script(s, argv[first], argv + first + 1, argc - first - 1, err);
	return apply_and_finish(s, rc, hits, nhits, envp, err);
}

int gp_submit_parse(gp_submit_t *s, int argc, char **argv, char *const *envp, gp_error_t *err)
{
	return parse_with(s, submit_opts, GP_NOPTS(submit_opts), argc, argv, envp, false, err);
}

int gp_submit_parse_step(gp_submit_t *s, int argc, char **argv, char *const *envp, gp_error_t *err)
{
	if (parse_with(s, step_opts, GP_NOPTS(step_opts), argc, argv, envp, true, err) < 0)
		return -1;
	if (s->flags & GP_SUBMIT_HELP)
		return 0;
	if (!s->jobid_set) {
		const char *v = NULL;
		for (char *const *e = envp; e && *e && !v; e++)
			if (!strncmp(*e, "GPOOL_JOB_ID=", 13))
				v = *e + 13;
		if (!v || set_jobid(s, v, err) < 0) {
			errno = EINVAL;
			return gp_errprintf(err, "not inside an allocation or job ($GPOOL_JOB_ID "
						 "unset): give --jobid");
		}
	}
	s->flags |= GP_SUBMIT_WAIT;
	return 0;
}

uint64_t gp_submit_attach_id(const gp_submit_t *s)
{
	return s->attach_id;
}

char *const *gp_submit_local_argv(const gp_submit_t *s)
{
	return s->local_argv;
}
