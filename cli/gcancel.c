/* gcancel: cancel jobs, or send them a signal (as scancel). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

#include "cli/lib/args.h"
#include "cli/lib/jobctl.h"
#include "cli/lib/jobname.h"
#include "common/opt.h"
#include "cli/lib/session.h"

struct gcancel {
	struct gp_cli_common common;
	int signal; /* 0: cancel */
	bool help;
};

#define G(c) ((struct gcancel *)(c))

static int set_signal(void *c, const char *a, gp_error_t *err)
{
	return gp_args_signal(a, &G(c)->signal, err);
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"signal", 's', required_argument, "SIG",
     "send SIG (TERM, USR1, 9, ...) to the tasks instead of cancelling", set_signal, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

int main(int argc, char **argv)
{
	struct gcancel g = {0};
	uint64_t *ids = NULL;
	size_t nids = 0;
	char **sels = NULL;
	size_t nsels = 0;
	const char **names = NULL; /* jobs given by name: resolved once the session is open */
	size_t nnames = 0;
	gp_error_t err;
	char **ops = NULL;
	int nops = 0, rc = 1;
	gp_session_t *s = NULL;
	int parsed = gp_args_parse(
	    opts, GP_NOPTS(opts), argc, argv, &g, &g.help, "gcancel", "JOB...",
	    "Cancel jobs (or signal them with -s). JOB: 12, an array's tasks: 12 (all), 12_7, "
	    "12_[3-5,9], or the name of one of your jobs (one that does not start with a digit).",
	    &ops, &nops, &err);
	if (parsed < 0)
		goto usage;
	if (parsed > 0) {
		rc = 0;
		goto out;
	}
	for (int i = 0; i < nops; i++) {
		/* an array's tasks: 12_7, 12_[3-5] (a name may hold '_' too) */
		if (!gp_jobname_is_name(ops[i]) && strchr(ops[i], '_')) {
			uint64_t id;
			bool has;
			gp_array_t *a = malloc(sizeof(*a));
			int bad = !a || gp_array_selector(ops[i], &id, &has, a) < 0;
			free(a);
			if (bad) {
				gp_errprintf(&err, "invalid job '%s'", ops[i]);
				goto usage;
			}
			char **ns = realloc(sels, (nsels + 1) * sizeof(*ns));
			if (!ns) {
				gp_errprintf(&err, "out of memory");
				goto usage;
			}
			sels = ns;
			sels[nsels++] = ops[i];
			continue;
		}
		if (gp_args_jobs(ops[i], &ids, &nids, &names, &nnames, &err) < 0)
			goto usage;
	}
	if (!nids && !nsels && !nnames) {
		gp_errprintf(&err, "no job id given");
		goto usage;
	}
	if (!(s = gp_session_create(&g.common, &err)) ||
	    gp_jobname_resolve_all(s, names, nnames, &ids, &nids, &err) < 0) {
		fprintf(stderr, "gcancel: %s\n", err.text);
		goto out;
	}
	int failed;
	if (gp_jobctl_sel(s,
			  g.signal ? GPOOL__JOB_ACTION__JOB_SIGNAL : GPOOL__JOB_ACTION__JOB_CANCEL,
			  ids, nids, sels, nsels, g.signal, "gcancel", stderr, &failed, &err) < 0) {
		fprintf(stderr, "gcancel: %s\n", err.text);
		goto out;
	}
	rc = failed ? 1 : 0;
	goto out;
usage:
	fprintf(stderr, "gcancel: %s\nusage: gcancel [-s SIG] JOB... (gcancel --help)\n", err.text);
	rc = 2;
out:
	gp_session_destroy(&s);
	free(ids);
	free(names);
	free(sels);
	free(ops);
	return rc;
}
