/* output.c - each job's stdout and stderr as the agents stream them, kept in files under
 * the state directory, and the log queries that read them (output.h) */
#include "scheduler/features/output.h"
#include "scheduler/core/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/names.h"
#include "common/u64map.h"
#include "common/util.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_output.h"

#define WAIT_MS		      1000
#define DEFAULT_PATTERN	      "gpool-%j.out"
#define DEFAULT_ARRAY_PATTERN "gpool-%A_%a.out" /* sbatch's slurm-%A_%a.out */

struct waiter {
	uint8_t rid[256];
	size_t rid_len;
	uint64_t msg_id;
	uint64_t job_id;
	Gpool__LogQuery q;
	int64_t expires_ms;
};

struct output {
	char dir[1024];
	uint64_t limit;
	struct waiter *w;
	size_t nw, capw;
};

void output_set_limit(struct output *o, uint64_t limit)
{
	o->limit = limit;
}

struct output *output_create(const char *state_dir, uint64_t limit, gp_error_t *err)
{
	struct output *o = calloc(1, sizeof(*o));
	if (!o) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	snprintf(o->dir, sizeof(o->dir), "%s/output", state_dir);
	o->limit = limit;
	if (gp_mkdir_p(o->dir, 0700) < 0) {
		gp_errprintf(err, "cannot create '%s': %s", o->dir, strerror(errno));
		free(o);
		return NULL;
	}
	return o;
}

void output_destroy(struct output **p)
{
	if (!p || !*p)
		return;
	free((*p)->w);
	free(*p);
	*p = NULL;
}

int output_remove(struct output *o, uint64_t job_id)
{
	char path[1100];
	snprintf(path, sizeof(path), "%s/%llu", o->dir, (unsigned long long)job_id);
	struct stat st;
	if (lstat(path, &st) < 0)
		return -1;
	return gp_rm_rf(path);
}

void output_name(const struct job *j, const char *pattern, uint32_t rank, char *buf, size_t len)
{
	if (!pattern || !*pattern)
		pattern = j->array_job_id ? DEFAULT_ARRAY_PATTERN : DEFAULT_PATTERN;
	size_t n = 0;
	for (const char *p = pattern; *p && n + 1 < len; p++) {
		char tmp[64];
		const char *ins = NULL;
		if (*p == '%' && p[1]) {
			p++;
			switch (*p) {
			case 'j':
				snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)j->id);
				ins = tmp;
				break;
			case 't':
				snprintf(tmp, sizeof(tmp), "%u", rank);
				ins = tmp;
				break;
			case 'A': /* the array's id; a job that is not an array task: its id */
				snprintf(tmp, sizeof(tmp), "%llu",
					 (unsigned long long)(j->array_job_id ? j->array_job_id
									      : j->id));
				ins = tmp;
				break;
			case 'a': /* the task's index in its array; 0 outside arrays */
				snprintf(tmp, sizeof(tmp), "%u", j->array_task_id);
				ins = tmp;
				break;
			case 'u':
				ins = j->user ? j->user : "";
				break;
			case 'x':
				ins = j->name ? j->name : "";
				break;
			case '%':
				ins = "%";
				break;
			default:
				tmp[0] = '%';
				tmp[1] = *p;
				tmp[2] = 0;
				ins = tmp;
			}
			for (; *ins && n + 1 < len; ins++)
				buf[n++] = *ins;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
	/* a file name inside the job's directory: no separators, no leading dot */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '/')
			buf[i] = '_';
	if (buf[0] == '.' || buf[0] == '\0')
		buf[0] = '_';
}

static void job_file(struct gsched *s, const struct job *j, int stream, uint32_t rank, char *path,
		     size_t len)
{
	char name[256];
	const char *pat = j->out_pattern;
	if (stream == 2 && j->err_pattern && *j->err_pattern)
		pat = j->err_pattern;
	output_name(j, pat, rank, name, sizeof(name));
	snprintf(path, len, "%s/%llu/%s", s->output->dir, (unsigned long long)j->id, name);
}

/* stderr shares the stdout file when no -e pattern was given */
static bool err_merged(const struct job *j)
{
	return !j->err_pattern || !*j->err_pattern;
}

void output_write(struct gsched *s, struct job *j, const Gpool__Output *c)
{
	if (c->rank >= j->ntasks || !j->tasks || (c->stream != 1 && c->stream != 2))
		return;
	struct task *t = &j->tasks[c->rank];
	uint64_t *expect = c->stream == 1 ? &t->out_off : &t->err_off;
	const uint8_t *data = c->data.data;
	size_t len = c->data.len;
	if (c->offset + len <= *expect)
		return; /* already have it */
	if (c->offset < *expect) {
		size_t skip = *expect - c->offset;
		data += skip;
		len -= skip;
	} else if (c->offset > *expect) {
		gp_warn("job %llu rank %u: %llu bytes of output lost", (unsigned long long)j->id,
			c->rank, (unsigned long long)(c->offset - *expect));
	}
	*expect = c->offset + c->data.len;
	if (!len)
		return;
	char path[2048];
	snprintf(path, sizeof(path), "%s/%llu", s->output->dir, (unsigned long long)j->id);
	mkdir(path, 0700);
	job_file(s, j, c->stream, c->rank, path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		gp_err("job %llu: cannot write '%s': %s", (unsigned long long)j->id, path,
		       strerror(errno));
		return;
	}
	struct stat st;
	if (j->svc_of && fstat(fd, &st) == 0 && (uint64_t)st.st_size + len > s->output->limit / 2) {
		/* a service replica runs for weeks: its output rotates (FILE.1 holds the half
		 * before), so the newest output is kept, up to the limit in both */
		char rotated[2100];
		snprintf(rotated, sizeof(rotated), "%s.1", path);
		close(fd);
		if (rename(path, rotated) < 0)
			gp_warn("job %llu: cannot rotate '%s': %s", (unsigned long long)j->id, path,
				strerror(errno));
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd < 0) {
			gp_err("job %llu: cannot write '%s': %s", (unsigned long long)j->id, path,
			       strerror(errno));
			return;
		}
		if (len > s->output->limit / 2) { /* one chunk larger than half: its newest part */
			data += len - s->output->limit / 2;
			len = s->output->limit / 2;
		}
	}
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size + len > s->output->limit) {
		len = (uint64_t)st.st_size < s->output->limit ? s->output->limit - st.st_size : 0;
		if (!len)
			gp_debug("job %llu: output over the limit, dropped",
				 (unsigned long long)j->id);
	}
	/* with standby schedulers the bytes appended are a row of the commit too (store_output.h);
	 * a replica's rotating output is not */
	if (len && !j->svc_of && s->store && store_replicated(s->store)) {
		uint64_t at = c->offset + (uint64_t)(data - (const uint8_t *)c->data.data);
		if (store_output_put(s->store, j->id, c->rank, c->stream, at, data, len) < 0)
			gp_warn("job %llu: its output is not replicated: %s",
				(unsigned long long)j->id, strerror(errno));
		else if (!s->txn_first_ms)
			s->txn_first_ms = gp_mono_ms();
	}
	while (len) {
		ssize_t n = write(fd, data, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			gp_err("job %llu: write '%s': %s", (unsigned long long)j->id, path,
			       strerror(errno));
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	close(fd);
	output_job_changed(s, j);
}

/* Read up to max bytes of a file from off. */
static int read_at(const char *path, uint64_t off, uint32_t max, gp_buf_t *b, uint64_t *size)
{
	b->len = 0;
	*size = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	if (fstat(fd, &st) == 0)
		*size = (uint64_t)st.st_size;
	if (off < *size) {
		uint64_t want = *size - off < max ? *size - off : max;
		if (gp_buf_reserve(b, want) == 0) {
			ssize_t n = pread(fd, b->data, want, (off_t)off);
			b->len = n > 0 ? (size_t)n : 0;
		}
	}
	close(fd);
	return 0;
}

/* Build the answer; returns true when it carries news (data or the end). */
static bool answer(struct gsched *s, const struct job *j, const Gpool__LogQuery *q,
		   Gpool__LogQueryReply *rep, gp_buf_t *out, gp_buf_t *err)
{
	char path[2048];
	uint32_t max = q->max_bytes ? q->max_bytes : (1u << 20);
	if (max > (8u << 20))
		max = 8u << 20;
	uint32_t rank = q->rank < j->ntasks ? q->rank : 0;
	uint64_t osize = 0, esize = 0;
	gpool__log_query_reply__init(rep);
	if (q->stream != 2) {
		job_file(s, j, 1, rank, path, sizeof(path));
		read_at(path, q->offset, max, out, &osize);
	}
	if (q->stream != 1 && !err_merged(j)) {
		job_file(s, j, 2, rank, path, sizeof(path));
		read_at(path, q->offset_err, max, err, &esize);
	}
	rep->out.data = out->data;
	rep->out.len = out->len;
	rep->err.data = err->data;
	rep->err.len = err->len;
	rep->next_offset = q->offset + out->len;
	rep->next_offset_err = q->offset_err + err->len;
	rep->state = j->state;
	rep->exit_code = j->exit_code;
	bool final = gp_job_state_final(j->state);
	rep->done = final && rep->next_offset >= osize && rep->next_offset_err >= esize;
	return out->len || err->len || rep->done;
}

static void send_answer(struct gsched *s, const uint8_t *rid, size_t rid_len, uint64_t msg_id,
			const struct job *j, const Gpool__LogQuery *q)
{
	Gpool__LogQueryReply rep;
	gp_buf_t out = {0}, err = {0};
	answer(s, j, q, &rep, &out, &err);
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = msg_id;
	m.m_case = GPOOL__MSG__M_LOG_QUERY_REPLY;
	m.log_query_reply = &rep;
	struct req r = {.s = s, .rid = rid, .rid_len = rid_len};
	req_reply(&r, &m, false);
	gp_buf_release(&out);
	gp_buf_release(&err);
}

void output_query(struct gsched *s, struct req *r, struct job *j, const Gpool__LogQuery *q)
{
	Gpool__LogQueryReply rep;
	gp_buf_t out = {0}, err = {0};
	bool news = answer(s, j, q, &rep, &out, &err);
	struct output *o = s->output;
	if (news || !q->wait || o->nw >= 10000) {
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.id = r->msg->id;
		m.m_case = GPOOL__MSG__M_LOG_QUERY_REPLY;
		m.log_query_reply = &rep;
		req_reply(r, &m, false);
	} else {
		if (o->nw == o->capw) {
			size_t nc = o->capw ? o->capw * 2 : 64;
			struct waiter *nw = realloc(o->w, nc * sizeof(*nw));
			if (!nw)
				goto out;
			o->w = nw;
			o->capw = nc;
		}
		struct waiter *w = &o->w[o->nw++];
		memcpy(w->rid, r->rid, r->rid_len);
		w->rid_len = r->rid_len;
		w->msg_id = r->msg->id;
		w->job_id = j->id;
		w->q = *q;
		w->expires_ms = gp_mono_ms() + WAIT_MS;
	}
out:
	gp_buf_release(&out);
	gp_buf_release(&err);
}

static void wake(struct gsched *s, bool (*pick)(const struct waiter *, const void *),
		 const void *arg)
{
	struct output *o = s->output;
	for (size_t i = 0; i < o->nw;) {
		struct waiter *w = &o->w[i];
		if (!pick(w, arg)) {
			i++;
			continue;
		}
		struct waiter copy = *w;
		o->w[i] = o->w[--o->nw];
		struct job *j = jobs_get(s->jobs, copy.job_id);
		if (j)
			send_answer(s, copy.rid, copy.rid_len, copy.msg_id, j, &copy.q);
	}
}

static bool pick_job(const struct waiter *w, const void *arg)
{
	return w->job_id == ((const struct job *)arg)->id;
}

static bool pick_expired(const struct waiter *w, const void *arg)
{
	return w->expires_ms <= *(const int64_t *)arg;
}

void output_job_changed(struct gsched *s, struct job *j)
{
	if (s->output->nw)
		wake(s, pick_job, j);
}

void output_tick(struct gsched *s)
{
	int64_t now = gp_mono_ms();
	if (s->output->nw)
		wake(s, pick_expired, &now);
}

static int output_on_job(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	if (ev->kind == SEV_JOB_OUTPUT)
		output_write(s, ev->job, ev->output);
	else
		output_job_changed(s, ev->job);
	return 0;
}

int output_subscribe(struct gsched *s)
{
	return sched_events_subscribe(s->events, 1u << SEV_JOB_CHANGED | 1u << SEV_JOB_OUTPUT,
				      output_on_job, NULL);
}

/* ---- a new leader's output files, from the replicated rows ---------------------------------- */

struct restore {
	struct gsched *s;
	gp_u64map_t *seen; /* jobs whose files were emptied for the rows */
	struct job *ended; /* the last job read from the store (rows of one job come together) */
	size_t rows, jobs;
	uint64_t bytes;
};

static int restore_row(void *arg, const struct store_output_row *row)
{
	struct restore *rs = arg;
	struct gsched *s = rs->s;
	struct job *j = jobs_get(s->jobs, row->job);
	if (!j) {
		/* a job that ended: only the unfinished ones are in memory, and glogs reads an
		 * ended job's output from its files as any other's (found lost by the soak,
		 * docs/reliability.md) */
		if (!rs->ended || rs->ended->id != row->job) {
			job_free(rs->ended);
			rs->ended = store_job_load(s->store, row->job);
		}
		j = rs->ended;
	}
	if (!j || (row->stream != 1 && row->stream != 2) || row->rank >= j->ntasks)
		return 0;
	char path[2048];
	snprintf(path, sizeof(path), "%s/%llu", s->output->dir, (unsigned long long)j->id);
	if (!gp_u64map_get(rs->seen, j->id)) {
		/* what this scheduler kept of the job when it led before is older than the rows */
		gp_rm_rf(path);
		if (gp_u64map_put(rs->seen, j->id, (void *)1) < 0)
			return -1;
		rs->jobs++;
	}
	mkdir(path, 0700);
	job_file(s, j, row->stream, row->rank, path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || gp_write_all(fd, row->data, row->len) < 0) {
		gp_err("job %llu: cannot write '%s': %s", (unsigned long long)j->id, path,
		       strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (j->tasks) {
		uint64_t *off =
		    row->stream == 1 ? &j->tasks[row->rank].out_off : &j->tasks[row->rank].err_off;
		if (row->offset + row->len > *off)
			*off = row->offset + row->len;
	}
	rs->rows++;
	rs->bytes += row->len;
	return 0;
}

int output_restore(struct gsched *s)
{
	struct restore rs = {.s = s, .seen = gp_u64map_create()};
	if (!rs.seen)
		return errno = ENOMEM, -1;
	int rc = store_output_each(s->store, restore_row, &rs);
	gp_u64map_destroy(&rs.seen);
	job_free(rs.ended);
	if (rc == 0 && rs.rows)
		gp_info("replicated output restored: %zu chunks (%llu bytes) of %zu jobs", rs.rows,
			(unsigned long long)rs.bytes, rs.jobs);
	return rc ? -1 : 0;
}
