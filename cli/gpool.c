/* gpool: administrative subcommands on jobs (hold, release, priority) and the version.
 * Subcommands are a table: more (power, cost) are rows added here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "jobctl.h"
#include "opt.h"
#include "parse.h"
#include "session.h"

struct gpool {
	struct gp_cli_common common;
	bool help;
};

#define G(c) ((struct gpool *)(c))

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static int set_config(void *c, const char *a, gp_error_t *err)
{
	G(c)->common.config = a;
	return 0;
}

static int set_scheduler(void *c, const char *a, gp_error_t *err)
{
	G(c)->common.scheduler = a;
	return 0;
}

static const struct gp_opt opts[] = {
    {"config", 0, required_argument, "PATH", "read this gpool.conf", set_config, 0},
    {"scheduler", 0, required_argument, "ENDPOINT",
     "talk to this gschedd (default $GPOOL_SCHEDULER)", set_scheduler, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

/* A subcommand gets its operands (after its name) and returns the exit status; a usage
 * error returns 2 with err filled, a failure 1 with err filled (or reported already). */
typedef int (*subcommand_f)(struct gpool *g, char **args, int nargs, gp_error_t *err);

static int job_action(struct gpool *g, Gpool__JobAction action, uint64_t *ids, size_t n,
		      int32_t value, gp_error_t *err)
{
	int failed, rc = 1;
	gp_session_t *s = gp_session_create(&g->common, err);
	if (s && gp_jobctl(s, action, ids, n, value, "gpool", stderr, &failed, err) == 0) {
		rc = failed ? 1 : 0;
		err->text[0] = '\0'; /* failures are reported per job */
	}
	gp_session_destroy(&s);
	return rc;
}

static int jobs_of(char **args, int nargs, uint64_t **ids, size_t *n, gp_error_t *err)
{
	if (!nargs)
		return gp_errprintf(err, "no job id given");
	for (int i = 0; i < nargs; i++)
		if (gp_args_jobids(args[i], ids, n, err) < 0)
			return -1;
	return 0;
}

static int hold_or_release(struct gpool *g, Gpool__JobAction action, char **args, int nargs,
			   gp_error_t *err)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	int rc = 2;
	if (jobs_of(args, nargs, &ids, &n, err) == 0)
		rc = job_action(g, action, ids, n, 0, err);
	free(ids);
	return rc;
}

static int cmd_hold(struct gpool *g, char **args, int nargs, gp_error_t *err)
{
	return hold_or_release(g, GPOOL__JOB_ACTION__JOB_HOLD, args, nargs, err);
}

static int cmd_release(struct gpool *g, char **args, int nargs, gp_error_t *err)
{
	return hold_or_release(g, GPOOL__JOB_ACTION__JOB_RELEASE, args, nargs, err);
}

static int cmd_priority(struct gpool *g, char **args, int nargs, gp_error_t *err)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	long prio;
	int rc = 2;
	if (nargs != 2)
		gp_errprintf(err, "priority needs a job id and a priority");
	else if (gp_parse_long(args[1], INT32_MIN, INT32_MAX, &prio) < 0)
		gp_errprintf(err, "invalid priority '%s'", args[1]);
	else if (jobs_of(args, 1, &ids, &n, err) == 0)
		rc = job_action(g, GPOOL__JOB_ACTION__JOB_SET_PRIORITY, ids, n, (int32_t)prio, err);
	free(ids);
	return rc;
}

static int cmd_version(struct gpool *g, char **args, int nargs, gp_error_t *err)
{
	if (nargs) {
		gp_errprintf(err, "version takes no arguments");
		return 2;
	}
	printf("gpool %s (protocol %d)\n", GPOOL_VERSION,
	       GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION);
	return 0;
}

static const struct {
	const char *name;
	subcommand_f run;
	const char *usage;
} subcommands[] = {
    {"hold", cmd_hold, "hold JOB...            keep pending jobs from starting"},
    {"release", cmd_release, "release JOB...         let held jobs start"},
    {"priority", cmd_priority, "priority JOB N         set a pending job's priority"},
    {"version", cmd_version, "version                this program's version"},
};

#define NSUB (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: gpool [options] SUBCOMMAND [ARGS]\n\nsubcommands:\n");
	for (size_t i = 0; i < NSUB; i++)
		fprintf(f, "  %s\n", subcommands[i].usage);
	fprintf(f, "\noptions:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

int main(int argc, char **argv)
{
	struct gpool g = {0};
	gp_error_t err = {{0}};
	char **ops = NULL;
	int nops = 0, rc = 2;
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &g, &ops, &nops, &err) < 0)
		goto report;
	if (g.help) {
		usage(stdout);
		free(ops);
		return 0;
	}
	if (!nops) {
		gp_errprintf(&err, "no subcommand given");
		goto report;
	}
	size_t i;
	for (i = 0; i < NSUB && strcmp(ops[0], subcommands[i].name); i++)
		;
	if (i == NSUB) {
		gp_errprintf(&err, "unknown subcommand '%s'", ops[0]);
		goto report;
	}
	rc = subcommands[i].run(&g, ops + 1, nops - 1, &err);
report:
	if (rc && err.text[0])
		fprintf(stderr, "gpool: %s\n", err.text);
	if (rc == 2)
		fprintf(stderr, "usage: see gpool --help\n");
	free(ops);
	return rc;
}
