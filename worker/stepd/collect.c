/* collect.c: a task's --collect patterns, uploaded when it ends.
 *
 * Patterns are matched in the working directory by a child running as the task's account
 * (so no path a user controls is followed with root's rights): it opens what matched and hands
 * the open files to gstepd over a socket pair (SCM_RIGHTS), one packed StageEntry per message.
 * gstepd hashes them, sends the chunks the scheduler lacks and stores the file set
 * "collect/rank<R>" with the job. A pattern without %t is rank 0's; with %t each rank collects
 * its own (%t replaced by the rank).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fdpass.h"
#include "common/log.h"
#include "worker/stepd/step.h"
#include "common/util.h"
#include "common/xfer.h"

#define MSG_MAX	    8192
#define COLLECT_MAX 100000 /* entries */

/* ---- the child, as the account ---- */

static int send_entry(int sock, const char *path, uint32_t mode, bool dir, int fd)
{
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT;
	e.path = (char *)path;
	e.mode = gp_mode_plain(mode, 0);
	e.dir = dir;
	uint8_t buf[MSG_MAX];
	size_t len = gpool__stage_entry__get_packed_size(&e);
	if (len > sizeof(buf))
		return 0; /* a path too long to name: skipped */
	gpool__stage_entry__pack(&e, buf);
	return gp_fd_send(sock, buf, len, fd, 0) < 0 ? -1 : 0;
}

static int walk(int sock, const char *path, int depth, size_t *count)
{
	struct stat st;
	if (depth > 64 || ++*count > COLLECT_MAX || lstat(path, &st) < 0)
		return 0;
	if (S_ISREG(st.st_mode)) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return 0;
		int rc = send_entry(sock, path, st.st_mode, false, fd);
		close(fd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (send_entry(sock, path, st.st_mode, true, -1) < 0)
		return -1;
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char sub[4096];
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) < (int)sizeof(sub))
			rc = walk(sock, sub, depth + 1, count);
	}
	closedir(d);
	return rc;
}

/* pattern with %t replaced by rank; NULL when the pattern is not this rank's. */
static char *expand(const char *pat, uint32_t rank)
{
	bool per_rank = strstr(pat, "%t") != NULL;
	if (!per_rank && rank != 0)
		return NULL;
	char out[4096];
	size_t o = 0;
	for (const char *p = pat; *p && o < sizeof(out) - 16; p++) {
		if (p[0] == '%' && p[1] == 't') {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%u", rank);
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return strdup(out);
}

static int child(const struct step *s, uint32_t rank, int sock)
{
	const struct gp_account *a = &s->account;
	if (geteuid() == 0 && a->uid != 0 &&
	    (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0))
		return 1;
	if (chdir(s->workdir) < 0)
		return 1;
	const Gpool__JobSpec *sp = s->launch->spec;
	size_t count = 0;
	for (size_t i = 0; i < sp->n_collect; i++) {
		char *pat = expand(sp->collect[i], rank);
		if (!pat)
			continue;
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++)
				if (gp_path_ok(g.gl_pathv[k]) &&
				    walk(sock, g.gl_pathv[k], 0, &count) < 0)
					break;
			globfree(&g);
		}
		free(pat);
	}
	return 0;
}

/* ---- gstepd ---- */

struct got {
	struct gp_manifest m;
	int *fds; /* per entry, -1 for a directory */
};

static int recv_entry(int sock, struct got *g)
{
	uint8_t buf[MSG_MAX];
	int fd;
	ssize_t n = gp_fd_recv(sock, buf, sizeof(buf), &fd, NULL);
	if (n <= 0)
		return n < 0 ? -1 : 1; /* 1: the child is done */
	Gpool__StageEntry *e = gpool__stage_entry__unpack(NULL, (size_t)n, buf);
	int rc = 0;
	struct stat st;
	/* what the child says is checked here: a sound relative path, once, and a file really
	 * arrives as an open regular file */
	if (!e || !gp_path_ok(e->path) || e->n_chunks ||
	    (!e->dir && (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))))
		goto out;
	for (size_t i = 0; i < g->m.n; i++)
		if (!strcmp(g->m.e[i]->path, e->path))
			goto out;
	int *nf = realloc(g->fds, (g->m.n + 1) * sizeof(*nf));
	if (!nf) {
		rc = -1;
		goto out;
	}
	g->fds = nf;
	gp_error_t err;
	if (e->dir) {
		if (gp_manifest_add_dir(&g->m, e->path, e->mode, &err) == 0)
			g->fds[g->m.n - 1] = -1;
	} else if (gp_manifest_add_fd(&g->m, fd, e->path, e->mode, &err) == 0) {
		g->fds[g->m.n - 1] = fd;
		fd = -1;
	} else {
		gp_warn("collect: %s", err.text);
	}
out:
	if (fd >= 0)
		close(fd);
	if (e)
		gpool__stage_entry__free_unpacked(e, NULL);
	return rc;
}

static int read_fd(void *arg, size_t i, uint64_t off, void *buf, size_t len)
{
	const struct got *g = arg;
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(g->fds[i], (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

void step_collect(struct step *s, const struct task *t)
{
	const Gpool__JobSpec *sp = s->launch->spec;
	if (!sp || !sp->n_collect || !s->workdir || t->failed || !s->xfer_cfg)
		return;
	uint32_t rank = t->tp->rank;
	bool mine = false;
	for (size_t i = 0; i < sp->n_collect; i++)
		mine |= rank == 0 || strstr(sp->collect[i], "%t") != NULL;
	if (!mine)
		return;
	double t0 = gp_now();
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		gp_err("collect: socketpair: %s", strerror(errno));
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		gp_err("collect: fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		close(sv[0]);
		_exit(child(s, rank, sv[1]));
	}
	close(sv[1]);
	struct got g = {.fds = NULL};
	int rc;
	while ((rc = recv_entry(sv[0], &g)) == 0 && g.m.n < COLLECT_MAX)
		;
	close(sv[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	unsigned long long job = (unsigned long long)s->launch->job_id;
	if (!g.m.n) {
		gp_info("job %llu rank %u: nothing matched the collect patterns", job, rank);
	} else {
		gp_error_t err = {{0}};
		struct gp_xfer_stats st = {0};
		gp_client_t *c = gp_client_create(s->xfer_cfg, &err);
		char name[32], what[128];
		snprintf(name, sizeof(name), "rank%u", rank);
		if (!c || gp_xfer_upload(c, g.m.e, g.m.n, read_fd, &g, &st, &err) < 0 ||
		    gp_xfer_set_put(c, s->launch->job_id, "collect", name, g.m.e, g.m.n, &err) <
			0) {
			gp_err("job %llu rank %u: collecting failed: %s", job, rank, err.text);
		} else {
			gp_xfer_describe(&st, what, sizeof(what));
			gp_info("job %llu rank %u: collected %s: sent %llu chunks (%llu bytes) in "
				"%.2f s",
				job, rank, what, (unsigned long long)st.sent_chunks,
				(unsigned long long)st.sent_bytes, gp_now() - t0);
		}
		gp_client_destroy(&c);
	}
	for (size_t i = 0; i < g.m.n; i++)
		if (g.fds[i] >= 0)
			close(g.fds[i]);
	free(g.fds);
	gp_manifest_release(&g.m);
}
