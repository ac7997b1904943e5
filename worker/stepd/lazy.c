/* lazy.c: gstepd's server of ranged reads for a job's lazily staged files (common/lazy.h,
 * docs/staging.md "Lazy staging").
 *
 * A thread of its own (a fetch takes seconds; the run loop keeps streaming output meanwhile)
 * listens on an abstract unix socket named in the tasks' GPOOL_STAGE_SOCK. A request comes with
 * the task's descriptor of the file: gstepd accepts only the job's account (or root) by
 * SO_PEERCRED, finds the entry by the descriptor's inode (recorded when the sparse file was
 * made), fetches the covering chunks into the node's cache (other nodes first, then the
 * scheduler; each hash checked on arrival), and writes them into that inode, each hashed again
 * as it leaves the cache (gp_stage_lazy_fill). The file is reopened for writing through
 * /proc/self/fd: the inode the task named, never a path it controls.
 */
#include "worker/stepd/lazy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fdpass.h"
#include "common/lazy.h"
#include "common/log.h"
#include "common/util.h"
#include "common/xfer.h"
#include "worker/node/staging.h"

struct lazy_file {
	Gpool__StageEntry *e;
	dev_t dev;
	ino_t ino;
	uint8_t *filled; /* per chunk: written into the file already */
};

struct step_lazy {
	struct step *s;
	struct lazy_file *f;
	size_t nf;
	int lfd;     /* the listening socket */
	int stop[2]; /* a pipe: written to end the thread */
	pthread_t th;
	bool started;
	char name[108];			 /* "@gpool-stage.<job>.<attempt>.<pid>" */
	uint64_t fetched, peer, written; /* bytes fetched, of them from peers; chunks written */
};

static bool has_lazy(const Gpool__JobSpec *spec)
{
	for (size_t i = 0; spec && i < spec->n_stage; i++)
		if (spec->stage[i]->lazy && !spec->stage[i]->dir)
			return true;
	return false;
}

/* Record each lazy file's inode, as made in the working directory before any task ran. */
static int record_files(step_lazy_t *z, gp_error_t *err)
{
	const Gpool__JobSpec *spec = z->s->launch->spec;
	if (!(z->f = calloc(spec->n_stage, sizeof(*z->f))))
		return gp_errprintf(err, "out of memory");
	int dfd = open(z->s->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return gp_errprintf(err, "cannot open '%s': %s", z->s->workdir, strerror(errno));
	for (size_t i = 0; i < spec->n_stage; i++) {
		Gpool__StageEntry *e = spec->stage[i];
		struct stat st;
		if (!e->lazy || e->dir)
			continue;
		if (fstatat(dfd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
			close(dfd);
			return gp_errprintf(err, "lazily staged '%s' is not there", e->path);
		}
		struct lazy_file *f = &z->f[z->nf++];
		*f = (struct lazy_file){e, st.st_dev, st.st_ino, calloc(e->n_chunks + 1, 1)};
		if (!f->filled) {
			close(dfd);
			return gp_errprintf(err, "out of memory");
		}
	}
	close(dfd);
	return 0;
}

static struct lazy_file *file_of(step_lazy_t *z, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	for (size_t i = 0; i < z->nf; i++)
		if (z->f[i].dev == st.st_dev && z->f[i].ino == st.st_ino)
			return &z->f[i];
	return NULL;
}

/* Fetch and write chunks [k0, k1) of f through the task's descriptor fd. 0 / -1 with err. */
static int serve_range(step_lazy_t *z, struct lazy_file *f, int fd, uint64_t k0, uint64_t k1,
		       uint64_t *fetched, gp_error_t *err)
{
	struct step *s = z->s;
	const Gpool__Launch *l = s->launch;
	while (k0 < k1 && f->filled[k0])
		k0++;
	while (k1 > k0 && f->filled[k1 - 1])
		k1--;
	if (k0 == k1)
		return 0;
	struct gp_xfer_stats st = {0};
	gp_client_t *c = gp_client_create(s->xfer_cfg, err);
	if (!c)
		return -1;
	struct gp_xfer_peers peers = step_stage_peers(s);
	peers.any = true;
	double t0 = gp_now();
	int rc = gp_xfer_fetch_chunks(c, f->e, k0, k1, s->cache_dir,
				      l->n_stage_peers > 1 ? &peers : NULL, &st, err);
	gp_client_destroy(&c);
	if (rc < 0)
		return -1;
	/* the task's descriptor may be read-only: the same inode, opened again for writing */
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	int wfd = open(proc, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat a, b;
	if (wfd < 0 || fstat(wfd, &a) < 0 || fstat(fd, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		if (wfd >= 0)
			close(wfd);
		return gp_errprintf(err, "cannot open '%s' for writing", f->e->path);
	}
	rc = gp_stage_lazy_fill(wfd, f->e, k0, k1, s->cache_dir, err);
	close(wfd);
	if (rc < 0)
		return -1;
	memset(f->filled + k0, 1, (size_t)(k1 - k0));
	*fetched = st.got_bytes;
	z->fetched += st.got_bytes;
	z->peer += st.peer_bytes;
	z->written += k1 - k0;
	gp_info("job %llu.%u: lazy '%s' chunks %llu..%llu: %llu cached, %llu fetched (%llu bytes, "
		"%llu from peers), %llu refused; %.3f s",
		(unsigned long long)l->job_id, l->attempt, f->e->path, (unsigned long long)k0,
		(unsigned long long)k1 - 1, (unsigned long long)st.cached_chunks,
		(unsigned long long)st.got_chunks, (unsigned long long)st.got_bytes,
		(unsigned long long)st.peer_bytes, (unsigned long long)st.refused_chunks,
		gp_now() - t0);
	return 0;
}

/* Receive a request and the descriptor it carries. The descriptor / -1. */
static int recv_req(int c, struct gp_lazy_req *q)
{
	uint8_t buf[GP_LAZY_REQ_LEN + 1];
	int fd;
	bool trunc;
	ssize_t n = gp_fd_recv(c, buf, sizeof(buf), &fd, &trunc);
	if (n < 0 || trunc || gp_lazy_req_decode(buf, (size_t)n, q) < 0 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void reply(int c, int status, uint64_t fetched, const char *msg)
{
	struct gp_lazy_rep r = {.status = status, .fetched = fetched};
	snprintf(r.msg, sizeof(r.msg), "%s", msg ? msg : "");
	uint8_t buf[GP_LAZY_REP_LEN];
	gp_lazy_rep_encode(&r, buf);
	if (send(c, buf, sizeof(buf), MSG_NOSIGNAL) < 0)
		gp_debug("lazy staging: the task left before its reply");
}

static void serve_one(step_lazy_t *z, int c)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	/* the job's account or root: another user's process learns nothing, not even a refusal's
	 * reason beyond EACCES */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 ||
	    (cr.uid != z->s->account.uid && cr.uid != 0)) {
		gp_warn("job %llu: lazy staging: a request from uid %d refused",
			(unsigned long long)z->s->launch->job_id, (int)cr.uid);
		/* its request is taken in unread (an attached descriptor is dropped by the kernel),
		 * so that the refusal is not lost to a reset of a connection closed with data
		 * queued */
		uint8_t junk[GP_LAZY_REQ_LEN + 1];
		struct pollfd p = {c, POLLIN, 0};
		if (poll(&p, 1, 200) > 0 && recv(c, junk, sizeof(junk), MSG_DONTWAIT) < 0)
			gp_debug("lazy staging: a refused request went unread");
		reply(c, EACCES, 0, "not this job's account");
		return;
	}
	struct gp_lazy_req q;
	int fd = recv_req(c, &q);
	if (fd < 0) {
		reply(c, EBADMSG, 0, "malformed request");
		return;
	}
	struct lazy_file *f = file_of(z, fd);
	gp_error_t err = {{0}};
	uint64_t k0, k1, fetched = 0;
	if (!f)
		reply(c, ENOENT, 0, "not a lazily staged file of this job");
	else if (gp_lazy_chunks(f->e->size, q.off, q.len, GP_CHUNK_SIZE, &k0, &k1) < 0)
		reply(c, EINVAL, 0, "range outside the file");
	else if (serve_range(z, f, fd, k0, k1, &fetched, &err) < 0)
		reply(c, errno == ENOENT || !errno ? EIO : errno, 0, err.text);
	else
		reply(c, 0, fetched, NULL);
	close(fd);
}

static void *lazy_thread(void *arg)
{
	step_lazy_t *z = arg;
	for (;;) {
		struct pollfd p[2] = {{z->lfd, POLLIN, 0}, {z->stop[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		int c = accept4(z->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(z, c);
		close(c);
	}
	return NULL;
}

static int listen_on(step_lazy_t *z, gp_error_t *err)
{
	const Gpool__Launch *l = z->s->launch;
	snprintf(z->name, sizeof(z->name), "@gpool-stage.%llu.%u.%d", (unsigned long long)l->job_id,
		 l->attempt, (int)getpid());
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(z->name);
	memcpy(a.sun_path, z->name, n);
	a.sun_path[0] = '\0';
	z->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (z->lfd < 0 ||
	    bind(z->lfd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0 ||
	    listen(z->lfd, 16) < 0)
		return gp_errprintf(err, "lazy staging: cannot listen: %s", strerror(errno));
	return 0;
}

step_lazy_t *step_lazy_create(struct step *s, gp_error_t *err)
{
	if (!has_lazy(s->launch->spec))
		return NULL;
	step_lazy_t *z = calloc(1, sizeof(*z));
	if (!z) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	z->s = s;
	z->lfd = z->stop[0] = z->stop[1] = -1;
	if (record_files(z, err) < 0 || listen_on(z, err) < 0 || pipe2(z->stop, O_CLOEXEC) < 0 ||
	    pthread_create(&z->th, NULL, lazy_thread, z) != 0) {
		if (!err->text[0])
			gp_errprintf(err, "lazy staging: %s", strerror(errno));
		step_lazy_destroy(&z);
		return NULL;
	}
	z->started = true;
	return z;
}

int step_lazy_env(const step_lazy_t *z, char ***env, gp_error_t *err)
{
	if (!z)
		return 0;
	size_t n = 0, at;
	size_t len = strlen(GP_LAZY_ENV);
	while ((*env)[n])
		n++;
	/* gstepd's name wins over one the submitter's environment carried */
	for (at = 0; at < n; at++)
		if (!strncmp((*env)[at], GP_LAZY_ENV, len) && (*env)[at][len] == '=')
			break;
	char *kv = NULL, **v = realloc(*env, (n + 2) * sizeof(**env));
	if (v)
		*env = v;
	if (!v || asprintf(&kv, "%s=%s", GP_LAZY_ENV, z->name) < 0)
		return gp_errprintf(err, "out of memory");
	if (at < n) {
		free(v[at]);
		v[at] = kv;
		return 0;
	}
	v[n] = kv;
	v[n + 1] = NULL;
	return 0;
}

void step_lazy_destroy(step_lazy_t **p)
{
	step_lazy_t *z = *p;
	if (!z)
		return;
	if (z->started) {
		if (write(z->stop[1], "x", 1) < 0)
			gp_warn("lazy staging: cannot stop its thread: %s", strerror(errno));
		pthread_join(z->th, NULL);
		gp_info("job %llu.%u: lazy staging fetched %llu bytes (%llu from peers), wrote "
			"%llu chunks",
			(unsigned long long)z->s->launch->job_id, z->s->launch->attempt,
			(unsigned long long)z->fetched, (unsigned long long)z->peer,
			(unsigned long long)z->written);
	}
	for (int i = 0; i < 2; i++)
		if (z->stop[i] >= 0)
			close(z->stop[i]);
	if (z->lfd >= 0)
		close(z->lfd);
	for (size_t i = 0; i < z->nf; i++)
		free(z->f[i].filled);
	free(z->f);
	free(z);
	*p = NULL;
}
