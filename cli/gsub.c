/* gsub: submit a job (as sbatch), and with --wait follow it to its end; with --pty attach this
 * terminal to its task (srun --pty), with --alloc hold resources and run a shell here (salloc).
 * Built a second time as grun (GP_AS_GRUN): a job step in the allocation or batch job it runs
 * in, followed to its end (srun inside salloc). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/lib/jobctl.h"
#include "cli/lib/json.h"
#include "cli/lib/ptyattach.h"
#include "common/names.h"
#include "common/parse.h"
#include "common/util.h"
#include "cli/lib/session.h"
#include "cli/lib/submit.h"
#include "common/xfer.h"

extern char **environ;

/* what its messages start with */
#ifdef GP_AS_GRUN
static const char prog[] = "grun";
#else
static const char prog[] = "gsub";
#endif

#define LOG_CHUNK (1u << 20)
/* --wait rides out a scheduler restart: this many silent long polls in a row end it */
#define WAIT_RETRIES 6

/* A job's exit code as an exit status: 0..255 as is (128+signal included), else 1. */
static int exit_status(int32_t code)
{
	return code >= 0 && code <= 255 ? code : 1;
}

/* A pending job's reason, when it changed since *last (a buffer of 128): said on stderr. */
static void say_reason(gp_session_t *s, uint64_t id, char *last)
{
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	q.ids = &id;
	q.n_ids = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = &q;
	gp_error_t err;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, &err);
	if (!r || r->job_query_reply->n_jobs != 1)
		return;
	Gpool__JobInfo *ji = r->job_query_reply->jobs[0];
	if (ji->state != GPOOL__JOB_STATE__PENDING || !ji->reason || !strcmp(ji->reason, last) ||
	    !strcmp(ji->reason, "None")) /* not yet looked at */
		return;
	fprintf(stderr, "%s: job %" PRIu64 " pending: %s\n", prog, id, ji->reason);
	snprintf(last, 128, "%s", ji->reason);
}

/* Follow an array's tasks (ids first .. first + n - 1) until every one is final: done, running
 * and pending counts with the elapsed time, on one updating line on a terminal, else a line
 * each time they change. Returns the highest exit code of the tasks (1 for one that ended
 * other than COMPLETED or FAILED without a code). */
static int wait_array(gp_session_t *s, uint64_t first, uint32_t n)
{
	uint64_t *ids = malloc(n * sizeof(*ids));
	if (!ids) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	for (uint32_t i = 0; i < n; i++)
		ids[i] = first + i;
	bool tty = isatty(STDERR_FILENO);
	int64_t t0 = gp_mono_ms();
	uint32_t last[3] = {UINT32_MAX, 0, 0};
	int rc = 1;
	while (1) {
		Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
		q.ids = ids;
		q.n_ids = n;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_JOB_QUERY;
		m.job_query = &q;
		gp_error_t err;
		Gpool__Msg *r = gp_session_call(s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY,
						GP_CLI_TIMEOUT_MS, NULL, &err);
		if (!r) {
			fprintf(stderr, "%sgsub: array %" PRIu64 ": %s\n", tty ? "\n" : "", first,
				err.text);
			break;
		}
		uint32_t done = 0, running = 0, pending = 0, bad = 0;
		int code = 0;
		for (size_t i = 0; i < r->job_query_reply->n_jobs; i++) {
			Gpool__JobInfo *ji = r->job_query_reply->jobs[i];
			if (gp_job_state_final(ji->state)) {
				done++;
				int c = exit_status(ji->exit_code);
				if (ji->state != GPOOL__JOB_STATE__COMPLETED) {
					bad++;
					if (!c)
						c = 1;
				}
				if (c > code)
					code = c;
			} else if (ji->state == GPOOL__JOB_STATE__PENDING) {
				pending++;
			} else {
				running++;
			}
		}
		uint32_t el = (uint32_t)((gp_mono_ms() - t0) / 1000);
		char when[32];
		gp_format_duration(el, when, sizeof(when));
		if (tty || done != last[0] || running != last[1] || pending != last[2])
			fprintf(stderr,
				"%sgsub: array %" PRIu64 ": %u done (%u not ok), %u running, "
				"%u pending, %s%s",
				tty ? "\r" : "", first, done, bad, running, pending, when,
				tty ? "\033[K" : "\n");
		last[0] = done;
		last[1] = running;
		last[2] = pending;
		if (done == n) {
			if (tty)
				fputc('\n', stderr);
			rc = code;
			break;
		}
		usleep(tty ? 500000 : 1000000);
	}
	free(ids);
	return rc;
}

/* Stream the job's output until it is final; returns gsub's exit status. */
static int wait_job(gp_session_t *s, uint64_t id)
{
	char reason[128] = "";
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
			fprintf(stderr, "%s: job %" PRIu64 ": %s\n", prog, id, err.text);
			return 1;
		}
		silent = 0;
		Gpool__LogQueryReply *lr = r->log_query_reply;
		if (lr->state == GPOOL__JOB_STATE__PENDING) {
			Gpool__LogQueryReply keep = *lr; /* the reply lives until the next call */
			uint64_t off = keep.next_offset, off_err = keep.next_offset_err;
			say_reason(s, id, reason);
			q.offset = off;
			q.offset_err = off_err;
			continue;
		}
		if ((lr->out.len && gp_write_all(STDOUT_FILENO, lr->out.data, lr->out.len) < 0) ||
		    (lr->err.len && gp_write_all(STDERR_FILENO, lr->err.data, lr->err.len) < 0))
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
		fprintf(stderr, "%s: job %" PRIu64 " ended %s\n", prog, id,
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
			fprintf(stderr, "%s: %s\n", prog, err.text);
			return -1;
		}
		if (gp_submit_stage_lazy(sub, paths[i]))
			m->e[m->n - 1]->lazy = true;
	}
	struct gp_xfer_stats st = {0};
	gp_client_t *c = gp_session_client(s, &err);
	if (!c || gp_xfer_upload_manifest(c, m, &st, &err) < 0) {
		fprintf(stderr, "%s: staging: %s\n", prog, err.text);
		return -1;
	}
	char what[128];
	gp_xfer_describe(&st, what, sizeof(what));
	if (!quiet)
		fprintf(stderr,
			"gsub: staged %s: sent %" PRIu64 " of %" PRIu64 " chunks (%" PRIu64
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
		fprintf(stderr, "%s: job %" PRIu64 ": collecting: %s\n", prog, id, err.text);
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
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	int rc = 0;
	struct gp_xfer_stats st = {0};
	for (size_t i = 0; i < sets->n_sets && rc == 0; i++) {
		const Gpool__FileSet *fs = sets->sets[i];
		if (gp_xfer_download(c, id, "collect", fs->name, fs->entries, fs->n_entries, dir,
				     &st, &err) < 0) {
			fprintf(stderr, "%s: job %" PRIu64 ": collecting: %s\n", prog, id,
				err.text);
			rc = -1;
		}
	}
	gpool__file_set_get_reply__free_unpacked(sets, NULL);
	if (rc == 0) {
		char what[128];
		gp_xfer_describe(&st, what, sizeof(what));
		fprintf(stderr, "%s: collected %s into '%s'\n", prog, what, dir);
	}
	return rc;
}

/* How often --alloc asks whether its allocation still runs, and how long a revoked command
 * has between SIGHUP and SIGKILL. */
#define ALLOC_CHECK_MS	   1000
#define ALLOC_HUP_GRACE_MS 5000

/* The allocation ended under the command (its time limit, gcancel, a node failure): say so,
 * hang up the command's process group (an interactive shell passes SIGHUP on to its jobs) and
 * SIGKILL it after ALLOC_HUP_GRACE_MS, as salloc revokes its command. */
static void alloc_revoke(pid_t pid, const Gpool__JobInfo *ji, int *st)
{
	fprintf(stderr, "%s: allocation %" PRIu64 " revoked: %s%s%s\n", prog, ji->id,
		gp_job_state_name(ji->state), ji->reason && *ji->reason ? ": " : "",
		ji->reason ? ji->reason : "");
	killpg(pid, SIGHUP);
	killpg(pid, SIGCONT);
	int64_t end = gp_mono_ms() + ALLOC_HUP_GRACE_MS;
	while (gp_mono_ms() < end) {
		if (waitpid(pid, st, WNOHANG) != 0)
			return;
		usleep(50 * 1000);
	}
	killpg(pid, SIGKILL);
	while (waitpid(pid, st, 0) < 0 && errno == EINTR)
		;
}

/* The command runs in a process group of its own, the terminal's foreground one when gsub
 * has a terminal (as a shell starts a job), so that a revoke reaches everything it started. */
static void alloc_child_group(void)
{
	setpgid(0, 0);
	if (isatty(STDIN_FILENO)) {
		signal(SIGTTOU, SIG_IGN);
		(void)tcsetpgrp(STDIN_FILENO, getpgrp());
		signal(SIGTTOU, SIG_DFL);
	}
}

/* The terminal back to gsub's group once the command is gone. */
static void alloc_terminal_back(void)
{
	if (!isatty(STDIN_FILENO))
		return;
	void (*old)(int) = signal(SIGTTOU, SIG_IGN);
	(void)tcsetpgrp(STDIN_FILENO, getpgrp());
	signal(SIGTTOU, old);
}

/* Wait for the local command, checking every ALLOC_CHECK_MS that the allocation still runs.
 * Its wait status; *revoked when the allocation ended first. */
static int wait_local(gp_session_t *s, uint64_t id, pid_t pid, bool *revoked)
{
	int st = 0;
	int64_t next = gp_mono_ms() + ALLOC_CHECK_MS;
	*revoked = false;
	while (1) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return st;
		if (gp_mono_ms() < next) {
			usleep(50 * 1000);
			continue;
		}
		next = gp_mono_ms() + ALLOC_CHECK_MS;
		Gpool__JobInfo *ji = gp_job_info(s, id);
		if (ji && gp_job_state_final(ji->state)) {
			*revoked = true;
			alloc_revoke(pid, ji, &st);
			return st;
		}
	}
}

/* --alloc: wait for the allocation, run the local command (or the user's shell) with the
 * allocation's variables, then give the allocation back. The command's exit status. */
static int run_alloc(gp_session_t *s, uint64_t id, char *const *local)
{
	if (gp_job_wait_signals() < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
		return 1;
	}
	uint32_t attempt = 0;
	char nodes[4096];
	int rc = gp_job_wait_running(s, id, &attempt, nodes, sizeof(nodes));
	if (rc)
		return rc;
	fprintf(stderr, "%s: allocation %" PRIu64 " granted on %s\n", prog, id, nodes);
	char idtext[32];
	snprintf(idtext, sizeof(idtext), "%" PRIu64, id);
	setenv("GPOOL_JOB_ID", idtext, 1);
	setenv("GPOOL_ALLOC_ID", idtext, 1);
	setenv("GPOOL_NODELIST", nodes, 1);
	setenv("SLURM_JOB_ID", idtext, 1);
	/* the command handles the terminal's signals; gsub waits it out */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	pid_t pid = fork();
	if (pid == 0) {
		alloc_child_group();
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		const char *sh = getenv("SHELL");
		if (!sh || !*sh)
			sh = "/bin/sh";
		if (local)
			execvp(local[0], local);
		else
			execl(sh, sh, (char *)NULL);
		fprintf(stderr, "%s: cannot run '%s': %s\n", prog, local ? local[0] : sh,
			strerror(errno));
		_exit(127);
	}
	int st = 0;
	bool revoked = false;
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
	} else {
		setpgid(pid, pid); /* also here: no race with the child's own call */
		st = wait_local(s, id, pid, &revoked);
		alloc_terminal_back();
	}
	int failed = 0;
	gp_error_t err;
	if (revoked)
		; /* already ended: nothing to give back */
	else if (gp_jobctl(s, GPOOL__JOB_ACTION__JOB_CANCEL, &id, 1, 0, "gsub", stderr, &failed,
			   &err) < 0)
		fprintf(stderr, "%s: allocation %" PRIu64 ": %s\n", prog, id, err.text);
	else
		fprintf(stderr, "%s: allocation %" PRIu64 " released\n", prog, id);
	if (pid < 0)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#ifdef GP_AS_GRUN
#define PARSE	    gp_submit_parse_step
#define USAGE	    gp_submit_step_usage
#define USAGE_SHORT "usage: grun [options] [--] command [args...] (grun --help)\n"
#else
#define PARSE gp_submit_parse
#define USAGE gp_submit_usage
#define USAGE_SHORT                                                                                \
	"usage: gsub [options] script [args...] | gsub [options] -- command [args...] (gsub "      \
	"--help)\n"
#endif

int main(int argc, char **argv)
{
	gp_error_t err;
	gp_submit_t *sub = gp_submit_create();
	if (!sub) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	if (PARSE(sub, argc, argv, environ, &err) < 0) {
		int usage = errno == EINVAL;
		fprintf(stderr, "%s: %s\n", prog, err.text);
		if (usage)
			fputs(USAGE_SHORT, stderr);
		gp_submit_destroy(&sub);
		return usage ? 2 : 1;
	}
	unsigned flags = gp_submit_flags(sub);
	if (flags & GP_SUBMIT_HELP) {
		USAGE(stdout);
		gp_submit_destroy(&sub);
		return 0;
	}
	int rc = 1;
	struct gp_manifest staged = {0};
	gp_session_t *s = gp_session_create(gp_submit_common(sub), &err);
	if (!s) {
		fprintf(stderr, "%s: %s\n", prog, err.text);
		goto out;
	}
	if (gp_submit_retry_ms(sub) >= 0)
		gp_session_set_retry(s, gp_submit_retry_ms(sub));
	if (flags & GP_SUBMIT_ATTACH) { /* sattach: nothing submitted */
		rc = gp_pty_attach(s, gp_submit_attach_id(sub), NULL);
		goto out;
	}
	if (stage_files(s, sub, &staged, flags & (GP_SUBMIT_PARSABLE | GP_SUBMIT_JSON)) < 0)
		goto out;
	/* --pty: the key that will let this gsub, and nobody else, onto the task's terminal; the
	 * job carries only its hash */
	uint8_t pty_key[GP_PTY_KEY_LEN], pty_sha[32];
	if (flags & GP_SUBMIT_PTY) {
		if (gp_pty_key_make(pty_key, pty_sha) < 0) {
			fprintf(stderr, "%s: cannot make a terminal key: %s\n", prog,
				strerror(errno));
			goto out;
		}
		gp_submit_spec(sub)->pty_key_sha256.data = pty_sha;
		gp_submit_spec(sub)->pty_key_sha256.len = sizeof(pty_sha);
	}
	Gpool__SubmitRequest req = GPOOL__SUBMIT_REQUEST__INIT;
	req.spec = gp_submit_spec(sub);
	/* a request sent again after no answer must not make a second job */
	char token[40];
	uint8_t rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		fprintf(stderr, "%s: cannot make a submission token: %s\n", prog, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	req.token = token;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_SUBMIT;
	m.submit = &req;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_SUBMIT_REPLY, GP_CLI_TIMEOUT_MS, NULL, &err);
	if (!r) {
		fprintf(stderr, "%s: %s\n", prog, err.text);
		goto out;
	}
	uint64_t id = r->submit_reply->job_id;
	uint32_t ntasks = r->submit_reply->array_task_count;
	if (flags & GP_SUBMIT_JSON) {
		json_t *o = ntasks ? json_pack("{s:I,s:I}", "job_id", (json_int_t)id,
					       "array_task_count", (json_int_t)ntasks)
				   : json_pack("{s:I}", "job_id", (json_int_t)id);
		if (gp_json_print(o, stdout) < 0)
			goto out;
	} else if (flags & GP_SUBMIT_PARSABLE) {
		printf("%" PRIu64 "\n", id);
	} else if (gp_submit_spec(sub)->step_of) {
		fprintf(stderr, "grun: step %" PRIu64 " of job %" PRIu64 "\n", id,
			gp_submit_spec(sub)->step_of);
	} else if (flags & (GP_SUBMIT_PTY | GP_SUBMIT_ALLOC)) {
		fprintf(stderr, "%s: job %" PRIu64 " submitted\n", prog, id);
	} else if (ntasks) {
		printf("Submitted array job %" PRIu64 " (%u tasks, job ids %" PRIu64 "-%" PRIu64
		       ")\n",
		       id, ntasks, id, id + ntasks - 1);
	} else {
		printf("Submitted job %" PRIu64 "\n", id);
	}
	if (fflush(stdout) == EOF)
		goto out;
	if (flags & GP_SUBMIT_PTY)
		rc = gp_pty_attach(s, id, pty_key);
	else if (flags & GP_SUBMIT_ALLOC)
		rc = run_alloc(s, id, gp_submit_local_argv(sub));
	else if (!(flags & GP_SUBMIT_WAIT))
		rc = 0;
	else
		rc = ntasks ? wait_array(s, id, ntasks) : wait_job(s, id);
	if ((flags & GP_SUBMIT_WAIT) && gp_submit_spec(sub)->n_collect &&
	    collect_files(s, id, gp_submit_collect_dir(sub)) < 0 && rc == 0)
		rc = 1;
out:
	/* the manifest is the spec's only on loan */
	gp_submit_spec(sub)->stage = NULL;
	gp_submit_spec(sub)->n_stage = 0;
	gp_submit_spec(sub)->pty_key_sha256.data = NULL;
	gp_submit_spec(sub)->pty_key_sha256.len = 0;
	gp_manifest_release(&staged);
	gp_session_destroy(&s);
	gp_submit_destroy(&sub);
	return rc;
}
