/* glogs: a job's output, or with -f its output as it comes until the job ends. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/lib/args.h"
#include "cli/lib/jobname.h"
#include "common/opt.h"
#include "cli/lib/session.h"
#include "common/util.h"

#define LOG_CHUNK      (1u << 20)
#define FOLLOW_RETRIES 6 /* silent long polls in a row (a scheduler restart) before giving up */

struct glogs {
	struct gp_cli_common common;
	bool follow, err, help;
	long rank;
};

#define G(c) ((struct glogs *)(c))

static int set_follow(void *c, const char *a, gp_error_t *err)
{
	G(c)->follow = true;
	return 0;
}

static int set_err(void *c, const char *a, gp_error_t *err)
{
	G(c)->err = true;
	return 0;
}

static int set_rank(void *c, const char *a, gp_error_t *err)
{
	char *end;
	errno = 0;
	long v = strtol(a, &end, 10);
	if (errno || *end || !*a || v < 0 || v > 1000000) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid rank '%s'", a);
	}
	G(c)->rank = v;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	G(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"follow", 'f', no_argument, NULL, "keep printing output until the job ends", set_follow, 0},
    {"err", 0, no_argument, NULL, "the job's stderr instead of its stdout", set_err, 0},
    {"rank", 'r', required_argument, "N", "this rank's file (when the output pattern has %t)",
     set_rank, 0},
    GP_CLI_COMMON_OPTS,
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

int main(int argc, char **argv)
{
	struct glogs g = {0};
	uint64_t *ids = NULL;
	size_t nids = 0;
	const char **names = NULL; /* the job given by name: resolved once the session is open */
	size_t nnames = 0;
	gp_error_t err;
	char **ops = NULL;
	int nops = 0, rc = 1;
	gp_session_t *s = NULL;
	int parsed =
	    gp_args_parse(opts, GP_NOPTS(opts), argc, argv, &g, &g.help, "glogs", "JOB",
			  "Print a job's output. JOB: its id, or the name of one of your jobs "
			  "(one that does not start with a digit).",
			  &ops, &nops, &err);
	if (parsed < 0)
		goto usage;
	if (parsed > 0) {
		rc = 0;
		goto out;
	}
	if (nops != 1) {
		gp_errprintf(&err, nops == 0 ? "no job id given" : "one job id only");
		goto usage;
	}
	if (gp_args_jobs(ops[0], &ids, &nids, &names, &nnames, &err) < 0)
		goto usage;
	if (nids + nnames != 1) {
		gp_errprintf(&err, "one job id only");
		goto usage;
	}
	if (!(s = gp_session_create(&g.common, &err)) ||
	    gp_jobname_resolve_all(s, names, nnames, &ids, &nids, &err) < 0) {
		fprintf(stderr, "glogs: %s\n", err.text);
		goto out;
	}
	Gpool__LogQuery q = GPOOL__LOG_QUERY__INIT;
	q.job_id = ids[0];
	q.stream = g.err ? 2 : 1;
	q.rank = (uint32_t)g.rank;
	q.max_bytes = LOG_CHUNK;
	q.wait = g.follow;
	int silent = 0;
	while (1) {
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_LOG_QUERY;
		m.log_query = &q;
		Gpool__Msg *r = gp_session_call(s, &m, GPOOL__MSG__M_LOG_QUERY_REPLY,
						GP_CLI_TIMEOUT_MS, NULL, &err);
		if (!r) {
			if (g.follow && errno == ETIMEDOUT && ++silent < FOLLOW_RETRIES)
				continue;
			fprintf(stderr, "glogs: %s\n", err.text);
			goto out;
		}
		silent = 0;
		Gpool__LogQueryReply *lr = r->log_query_reply;
		const ProtobufCBinaryData *d = g.err ? &lr->err : &lr->out;
		if (d->len && gp_write_all(STDOUT_FILENO, d->data, d->len) < 0)
			goto out;
		uint64_t next = g.err ? lr->next_offset_err : lr->next_offset;
		uint64_t *cur = g.err ? &q.offset_err : &q.offset;
		bool more = next > *cur;
		*cur = next;
		if (lr->done)
			break;
		/* without -f: what is there now, in as many chunks as it takes */
		if (!g.follow && (!more || d->len == 0))
			break;
	}
	rc = 0;
	goto out;
usage:
	fprintf(stderr, "glogs: %s\nusage: glogs [-f] [--err] [--rank N] JOB (glogs --help)\n",
		err.text);
	rc = 2;
out:
	gp_session_destroy(&s);
	free(ids);
	free(names);
	free(ops);
	return rc;
}
