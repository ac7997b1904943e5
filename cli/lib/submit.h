/* submit.h: gsub's command line (and a script's #GPOOL lines) turned into a JobSpec.
 *
 * Parsing reads the script (staged files are only checked to exist) but talks to nobody: a request
 * is built only when everything given was valid. Errors come back in a gp_error_t without the
 * program name; errno says which exit status they deserve: EINVAL for a usage error (exit 2), any
 * other (ENOENT, EFBIG, ...) for a failure (exit 1).
 */
#ifndef GP_CLI_SUBMIT_H
#define GP_CLI_SUBMIT_H

#include <stdbool.h>
#include <stdio.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "cli/lib/session.h"

/* The most a job may carry in its script and staged files together. */
#define GP_SUBMIT_MAX_FILES (64u << 20)

enum gp_submit_flag {
	GP_SUBMIT_HELP = 1,
	GP_SUBMIT_WAIT = 2,
	GP_SUBMIT_JSON = 4,
	GP_SUBMIT_PARSABLE = 8,
	GP_SUBMIT_PTY = 16,    /* --pty: attach this terminal to the task (cli/lib/ptyattach.h) */
	GP_SUBMIT_ALLOC = 32,  /* --alloc: hold resources, run a shell here (cli/lib/alloc.h) */
	GP_SUBMIT_ATTACH = 64, /* --attach JOB: reattach to a detached --pty job's terminal */
};

typedef struct gp_submit gp_submit_t;

gp_submit_t *gp_submit_create(void);
void gp_submit_destroy(gp_submit_t **s);

/* Parse gsub's arguments (argv[0] is the program name); envp is the environment --export
 * draws from. 0 / -1 with err filled and errno as above. */
int gp_submit_parse(gp_submit_t *s, int argc, char **argv, char *const *envp, gp_error_t *err);

/* grun's arguments: a job step (spec.step_of from --jobid or $GPOOL_JOB_ID in envp), waited
 * for (GP_SUBMIT_WAIT). Its first word is a command when it holds no '/' (`grun hostname`, as
 * srun), a script read here when it does (`grun ./prep.sh`), a command after '--'. 0 / -1 as
 * gp_submit_parse. */
int gp_submit_parse_step(gp_submit_t *s, int argc, char **argv, char *const *envp, gp_error_t *err);
/* --alloc: the command to run here (pointing into parse's argv), NULL: the user's shell. */
/* --attach's job id (GP_SUBMIT_ATTACH). */
uint64_t gp_submit_attach_id(const gp_submit_t *s);

char *const *gp_submit_local_argv(const gp_submit_t *s);
void gp_submit_step_usage(FILE *f);

/* The --stage paths, in order (gsub uploads them and fills spec.stage before submitting). */
char *const *gp_submit_stage(const gp_submit_t *s, size_t *n);
/* Was path (one of gp_submit_stage's) given with --stage-lazy? */
bool gp_submit_stage_lazy(const gp_submit_t *s, const char *path);
/* Where collected files go: --collect-dir, or ".". */
const char *gp_submit_collect_dir(const gp_submit_t *s);

/* The spec built by a successful parse (owned by s). */
Gpool__JobSpec *gp_submit_spec(gp_submit_t *s);
unsigned gp_submit_flags(const gp_submit_t *s);
/* --retry-for in ms, -1 when not given. */
int64_t gp_submit_retry_ms(const gp_submit_t *s);
const struct gp_cli_common *gp_submit_common(const gp_submit_t *s);

void gp_submit_usage(FILE *f);

#endif
