/* gsub: submit a job (as sbatch), and with --wait follow it to its end. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "util.h"
#include "names.h"
#include "session.h"
#include "submit.h"
#include "xfer.h"

extern char **environ;

#define LOG_CHUNK (1u << 20)
/* --wait rides out a scheduler restart: this many silent long polls in a row end it */
#define WAIT_RETRIES 6

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A job's exit code as an exit status: 0..255 as is (128+signal included), else 1. */
static int exit_status(int32_t code)
{
	return code >= 0 && code <= 255 ? code : 1;
}

/* Stream the job's output until it is final; returns gsub's exit status. */
static int wait_job(gp_session_t *s, uint64_t id)
{
	Gpool__LogQuery q = GPOOL__LOG_QUERY__INIT;
	q.job_id = id;
	q.stream = 0;
	q.wait = 1;
	q.max_bytes = LOG_CHUNK;
	int silent = 0;
	while (1) {
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_LOG_QUERY;
		m.log_query = &q;
		gp_error_t err;
		Gpool__Msg *r = gp_session_call(s, &m, GPOOL__MSG__M_LOG_QUERY_REPLY,
						GP_CLI_TIMEOUT_MS, NULL, &err);
		if (!r) {
			if (errno == ETIMEDOUT && ++silent < WAIT_RETRIES)
				continue;
			fprintf(stderr, "gsub: job %" PRIu64 ": %s\n", id, err.text);
			return 1;
		}
		silent = 0;
		Gpool__LogQueryReply *lr = r->log_query_reply;
		if ((lr->out.len && write_all(STDOUT_FILENO, lr->out.data, lr->out.len) < 0) ||
		    (lr->err.len && write_all(STDERR_FILENO, lr->err.data, lr->err.len) < 0))
			return 1;
		q.offset = lr->next_offset;
		q.offset_err = lr->next_offset_err;
		if (!lr->done)
			continue;
		int code = exit_status(lr->exit_code);
		if (lr->state == GPOOL__JOB_STATE__COMPLETED)
			return code;
		if (lr->state == GPOOL__JOB_STATE__FAILED)
			return code ? code : 1;
		fprintf(stderr, "gsub: job %" PRIu64 " ended %s\n", id,
			gp_job_state_name(lr->state));
		return code ? code : 1;
	}
}

/* Upload the --stage paths' chunks the store lacks; the spec gets the manifest (m keeps it). */
static int stage_files(gp_session_t *s, gp_submit_t *sub, struct gp_manifest *m, bool quiet)
{
	size_t n;
	char *const *paths = gp_submit_stage(sub, &n);
	if (!n)
		return 0;
	gp_error_t err;
	double t0 = gp_now();
	for (size_t i = 0; i < n; i++) {
		char b[4096];
		snprintf(b, sizeof(b), "%s", paths[i]);
		size_t l = strlen(b);
		while (l > 1 && b[l - 1] == '/')
			b[--l] = '\0';
		const char *slash = strrchr(b, '/');
		if (gp_manifest_add(m, paths[i], slash ? slash + 1 : b, &err) < 0) {
			fprintf(stderr, "gsub: %s\n", err.text);
			return -1;
		}
	}
	struct gp_xfer_stats st = { 0 };
	gp_client_t *c = gp_session_client(s, &err);
	if (!c || gp_xfer_upload_manifest(c, m, &st, &err) < 0) {
		fprintf(stderr, "gsub: staging: %s\n", err.text);
		return -1;
	}
	char what[128];
	gp_xfer_describe(&st, what, sizeof(what));
	if (!quiet)
		fprintf(stderr, "gsub: staged %s: sent %" PRIu64 " of %" PRIu64 " chunks (%" PRIu64
			" bytes) in %.2f s\n",
		what, st.sent_chunks, st.chunks, st.sent_bytes, gp_now() - t0);
	Gpool__JobSpec *sp = gp_submit_spec(sub);
	sp->stage = m->e;
	sp->n_stage = m->n;
	return 0;
}

/* Download what the job's --collect patterns matched (every rank's set) into dir. */
static int collect_files(gp_session_t *s, uint64_t id, const char *dir)
{
	gp_error_t err;
	gp_client_t *c = gp_session_client(s, &err);
	Gpool__FileSetGetReply *r = c ? gp_xfer_set_get(c, id, "collect", "", &err) : NULL;
	if (!r) {
		fprintf(stderr, "gsub: job %" PRIu64 ": collecting: %s\n", id, err.text);
		return -1;
	}
	/* keep the sets: the reply goes with the next call */
	size_t len = gpool__file_set_get_reply__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);
	Gpool__FileSetGetReply *sets = NULL;
	if (buf) {
		gpool__file_set_get_reply__pack(r, buf);
		sets = gpool__file_set_get_reply__unpack(NULL, len, buf);
		free(buf);
	}
	if (!sets) {
		fprintf(stderr, "gsub: out of memory\n");
		return -1;
	}
	int rc = 0;
	struct gp_xfer_stats st = { 0 };
	for (size_t i = 0; i < sets->n_sets && rc == 0; i++) {
		const Gpool__FileSet *fs = sets->sets[i];
		if (gp_xfer_download(c, id, "collect", fs->name, fs->entries, fs->n_entries, dir, &st,
				     &err) < 0) {
			fprintf(stderr, "gsub: job %" PRIu64 ": collecting: %s\n", id, err.text);
			rc = -1;
		}
	}
	gpool__file_set_get_reply__free_unpacked(sets, NULL);
	if (rc == 0) {
		char what[128];
		gp_xfer_describe(&st, what, sizeof(what));
		fprintf(stderr, "gsub: collected %s into '%s'\n", what, dir);
	}
	return rc;
}

int main(int argc, char **argv)
{
	gp_error_t err;
	gp_submit_t *sub = gp_submit_create();
	if (!sub) {
		fprintf(stderr, "gsub: out of memory\n");
		return 1;
	}
	if (gp_submit_parse(sub, argc, argv, environ, &err) < 0) {
		int usage = errno == EINVAL;
		fprintf(stderr, "gsub: %s\n", err.text);
		if (usage)
			fprintf(stderr,
				"usage: gsub [options] script [args...] | gsub [options] -- "
				"command [args...] (gsub --help)\n");
		gp_submit_destroy(&sub);
		return usage ? 2 : 1;
	}
	unsigned flags = gp_submit_flags(sub);
	if (flags & GP_SUBMIT_HELP) {
		gp_submit_usage(stdout);
		gp_submit_destroy(&sub);
		return 0;
	}
	int rc = 1;
	struct gp_manifest staged = { 0 };
	gp_session_t *s = gp_session_create(gp_submit_common(sub), &err);
	if (!s) {
		fprintf(stderr, "gsub: %s\n", err.text);
		goto out;
	}
	if (stage_files(s, sub, &staged, flags & (GP_SUBMIT_PARSABLE | GP_SUBMIT_JSON)) < 0)
		goto out;
	Gpool__SubmitRequest req = GPOOL__SUBMIT_REQUEST__INIT;
	req.spec = gp_submit_spec(sub);
	req.user = (char *)gp_session_user(s);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = &req;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_SUBMIT_REPLY, GP_CLI_TIMEOUT_MS, NULL, &err);
	if (!r) {
		fprintf(stderr, "gsub: %s\n", err.text);
		goto out;
	}
	uint64_t id = r->submit_reply->job_id;
	if (flags & GP_SUBMIT_JSON) {
		json_t *o = json_pack("{s:I}", "job_id", (json_int_t)id);
		if (gp_json_print(o, stdout) < 0)
			goto out;
	} else if (flags & GP_SUBMIT_PARSABLE) {
		printf("%" PRIu64 "\n", id);
	} else {
		printf("Submitted job %" PRIu64 "\n", id);
	}
	if (fflush(stdout) == EOF)
		goto out;
	rc = flags & GP_SUBMIT_WAIT ? wait_job(s, id) : 0;
	if ((flags & GP_SUBMIT_WAIT) && gp_submit_spec(sub)->n_collect &&
	    collect_files(s, id, gp_submit_collect_dir(sub)) < 0 && rc == 0)
		rc = 1;
out:
	/* the manifest is the spec's only on loan */
	gp_submit_spec(sub)->stage = NULL;
	gp_submit_spec(sub)->n_stage = 0;
	gp_manifest_release(&staged);
	gp_session_destroy(&s);
	gp_submit_destroy(&sub);
	return rc;
}
