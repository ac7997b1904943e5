/* pull.c: registry images pulled with skopeo (pull.h).
 *
 * Why skopeo and not the registry's HTTP API through libcurl: skopeo (Debian's, the containers
 * project's reference client) already speaks the distribution API's whole surface that a LAN
 * registry may present (OCI and Docker schema 2 manifests, manifest lists picked by platform,
 * token authentication, TLS with the system's CAs, redirects to blob stores, retries) and
 * checks every blob against its digest while it streams; writing that again in C would put a
 * second HTTP client, a second JSON reader of untrusted manifests and a second tar writer into
 * gstepd, which runs as root. The price is one process per pull (and one per tag resolution),
 * small against a pull that happens once per node.
 *
 * What gstepd itself checks: the image name (common/imageref.c, so nothing but a name reaches
 * skopeo's command line), the manifest digest (sha256 of the bytes the tag resolved to, and the
 * blobs are pulled by that digest, so the archive is the manifest's), the declared sizes against
 * container_pull_max, and every file skopeo writes (RLIMIT_FSIZE). Plain HTTP only to the hosts
 * in container_insecure_registries; TLS with verification otherwise. skopeo runs as root
 * with an empty HOME of its own (no user's configuration reaches it; the job owner's login for
 * the registry alone, read as the owner, in a file of root's given with --authfile:
 * regauth.h) and writes only under images/pulled (root's, 0700); the archive is unpacked
 * afterwards as the job's account by gpool-image, as a staged archive is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/imageref.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "worker/stepd/pull.h"
#include "worker/stepd/regauth.h"

#define MANIFEST_MAX	(4u << 20) /* the distribution spec's limit on a manifest */
#define ERR_TAIL	400
#define RESOLVE_TIMEOUT "120s"
#define PULL_TIMEOUT	"3600s"

struct run_out {
	char *out; /* stdout, up to outmax bytes (NULL: discarded) */
	size_t outmax, outlen;
	char err[ERR_TAIL + 1]; /* the last line skopeo wrote on stderr */
	int status;
};

/* The last non-empty line of buf, cleaned of skopeo's "time=... level=fatal msg=" prefix. */
static void last_line(char *buf, char *out, size_t outlen)
{
	size_t n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	char *l = strrchr(buf, '\n');
	l = l ? l + 1 : buf;
	char *m = strstr(l, "msg=\"");
	if (m) {
		l = m + 5;
		size_t k = strlen(l);
		if (k && l[k - 1] == '"')
			l[k - 1] = '\0';
	}
	if (!strncmp(l, "Error: ", 7))
		l += 7;
	size_t k = 0;
	for (; *l && k + 1 < outlen; l++) {
		if (l[0] == '\\' && l[1] == '"')
			continue; /* logfmt's escaped quote */
		out[k++] = *l;
	}
	out[k] = '\0';
}

/* Run argv with a clean environment, stdout captured into r->out, stderr's last line into
 * r->err, files it writes bounded by fsize (0: none). 0 when it ran (r->status its wait
 * status), -1 when it could not start. */
static int run(char *const argv[], const char *home, uint64_t fsize, struct run_out *r)
{
	int po[2], pe[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	char henv[PATH_MAX + 16];
	snprintf(henv, sizeof(henv), "HOME=%s", home);
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", henv, "LC_ALL=C", NULL};
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(125);
		if (fsize) {
			struct rlimit rl = {fsize, fsize};
			setrlimit(RLIMIT_FSIZE, &rl);
		}
		signal(SIGXFSZ, SIG_DFL);
		if (chdir(home) < 0)
			_exit(125);
		execvpe(argv[0], argv, envp);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	char ebuf[8192];
	size_t elen = 0;
	r->outlen = 0;
	bool oopen = true, eopen = true, over = false;
	while (oopen || eopen) {
		fd_set fds;
		FD_ZERO(&fds);
		if (oopen)
			FD_SET(po[0], &fds);
		if (eopen)
			FD_SET(pe[0], &fds);
		if (select((po[0] > pe[0] ? po[0] : pe[0]) + 1, &fds, NULL, NULL, NULL) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		char tmp[16384];
		if (oopen && FD_ISSET(po[0], &fds)) {
			ssize_t n = read(po[0], tmp, sizeof(tmp));
			if (n <= 0)
				oopen = false;
			else if (r->out && r->outlen + (size_t)n <= r->outmax) {
				memcpy(r->out + r->outlen, tmp, (size_t)n);
				r->outlen += (size_t)n;
			} else if (r->out)
				over = true;
		}
		if (eopen && FD_ISSET(pe[0], &fds)) {
			ssize_t n = read(pe[0], tmp, sizeof(tmp));
			if (n <= 0)
				eopen = false;
			else {
				/* keep the tail: the reason is the last line */
				if ((size_t)n >= sizeof(ebuf) - 1) {
					memcpy(ebuf, tmp + n - (sizeof(ebuf) - 1),
					       sizeof(ebuf) - 1);
					elen = sizeof(ebuf) - 1;
				} else {
					if (elen + (size_t)n > sizeof(ebuf) - 1) {
						size_t drop = elen + (size_t)n - (sizeof(ebuf) - 1);
						memmove(ebuf, ebuf + drop, elen - drop);
						elen -= drop;
					}
					memcpy(ebuf + elen, tmp, (size_t)n);
					elen += (size_t)n;
				}
			}
		}
	}
	close(po[0]);
	close(pe[0]);
	ebuf[elen] = '\0';
	last_line(ebuf, r->err, sizeof(r->err));
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;
	if (over && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) {
		snprintf(r->err, sizeof(r->err), "its manifest is larger than %u bytes",
			 MANIFEST_MAX);
		r->status = 1 << 8;
	}
	return 0;
}

static bool ran_ok(const struct run_out *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

/* Why skopeo failed, in the words a user reads in gstat; login: the owner's file whose login
 * was used (NULL: none was). */
static int why(const struct run_out *r, const char *ref, const char *what, const char *login,
	       gp_error_t *err)
{
	if (strstr(r->err, "unauthorized") || strstr(r->err, "authentication required") ||
	    strstr(r->err, "denied"))
		return gp_errprintf(err,
				    "container image '%s': the registry refused %s (%s): %s%s%s",
				    ref, login ? "the job owner's login" : "an anonymous pull",
				    r->err, login ? "the login is in ~/" : "",
				    login ? login
					  : "the owner has no login for it on this node "
					    "(docs/containers.md, \"Private registries\")",
				    login ? " on this node" : "");
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 127)
		return gp_errprintf(
		    err, "container image '%s': skopeo is not installed on the node", ref);
	if (strstr(r->err, "manifest unknown") || strstr(r->err, "name unknown") ||
	    strstr(r->err, "NAME_UNKNOWN") || strstr(r->err, "MANIFEST_UNKNOWN"))
		return gp_errprintf(
		    err, "container image '%s': the registry has no such image (%s)", ref, r->err);
	if (strstr(r->err, "Digest did not match") || strstr(r->err, "digest did not match"))
		return gp_errprintf(err,
				    "container image '%s': a blob the registry sent does not match "
				    "its digest, refused (%s)",
				    ref, r->err);
	if ((WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGXFSZ) ||
	    strstr(r->err, "file too large"))
		return gp_errprintf(
		    err, "container image '%s': larger than container_pull_max, refused", ref);
	if (strstr(r->err, "server gave HTTP response to HTTPS client"))
		return gp_errprintf(
		    err,
		    "container image '%s': the registry speaks plain HTTP and is not "
		    "in container_insecure_registries",
		    ref);
	if (WIFSIGNALED(r->status))
		return gp_errprintf(err, "container image '%s': skopeo %s died of signal %d", ref,
				    what, WTERMSIG(r->status));
	return gp_errprintf(err, "container image '%s': cannot %s it: %s", ref, what,
			    r->err[0] ? r->err : "skopeo failed");
}

/* The sizes a manifest declares (config and layers); 0 for a list (its entries are pulled by
 * platform: only the file bound holds then). -1 when the document is not a manifest. */
static int64_t declared_size(const char *json, size_t len)
{
	json_t *m = json_loadb(json, len, 0, NULL);
	if (!json_is_object(m)) {
		json_decref(m);
		return -1;
	}
	int64_t total = 0;
	json_t *layers = json_object_get(m, "layers");
	if (json_is_array(layers)) {
		json_t *cfg = json_object_get(m, "config"), *l;
		size_t i;
		total += json_integer_value(json_object_get(cfg, "size"));
		json_array_foreach(layers, i, l)
		{
			json_int_t sz = json_integer_value(json_object_get(l, "size"));
			if (sz < 0 || total > INT64_MAX / 2 || sz > INT64_MAX / 2) {
				total = INT64_MAX / 2;
				break;
			}
			total += sz;
		}
	} else if (!json_is_array(json_object_get(m, "manifests"))) {
		total = -1;
	}
	json_decref(m);
	return total;
}

static int open_root_dir(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		if (fd >= 0)
			close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* ---- the bound on the archives kept ---- */

struct kept {
	char hex[65];
	uint64_t bytes;
	struct timespec used;
};

static int kept_cmp(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Remove archives (HEX.tar) of the pulled directory pfd, least recently used first, while they
 * hold more than max bytes; never keep_hex (the one just used), nor one whose lock is held (a
 * pull of it under way). */
static void evict_pulled(int pfd, const char *pulled, uint64_t max, const char *keep_hex)
{
	int dfd = dup(pfd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct kept *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct stat st;
		if (len != 68 || strcmp(e->d_name + 64, ".tar") ||
		    fstatat(pfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct kept *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		memcpy(v[n].hex, e->d_name, 64);
		v[n].hex[64] = '\0';
		v[n].bytes = (uint64_t)st.st_size;
		v[n].used = st.st_mtim;
		total += v[n].bytes;
		n++;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), kept_cmp);
	for (size_t i = 0; i < n && total > max; i++) {
		if (!strcmp(v[i].hex, keep_hex))
			continue;
		char lockname[80], name[80];
		snprintf(lockname, sizeof(lockname), "%s.lock", v[i].hex);
		snprintf(name, sizeof(name), "%s.tar", v[i].hex);
		int lfd = openat(pfd, lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (lfd < 0)
			continue;
		if (flock(lfd, LOCK_EX | LOCK_NB) == 0 && unlinkat(pfd, name, 0) == 0) {
			gp_info("pulled images: removed %s/%s (%llu bytes, over %llu)", pulled,
				name, (unsigned long long)v[i].bytes, (unsigned long long)max);
			total -= v[i].bytes; /* its lock file stays: a waiter may hold it open */
		}
		close(lfd);
	}
	free(v);
}

#define SRC_MAX (GP_IMAGEREF_HOST + GP_IMAGEREF_PATH + GP_IMAGEREF_TAG + 96)

/* One pull's names and places. */
struct pull {
	const char *ref, *skopeo;
	const struct gp_pull_opts *o;
	struct gp_imageref r;
	bool tls;
	char *authfile;	   /* the owner's login for the registry ("" when none) */
	const char *login; /* who that login is, for the error messages */
	char pulled[PATH_MAX], home[PATH_MAX + 8], tmpdir[PATH_MAX + 8];
	int pfd; /* the pulled directory */
	char src[SRC_MAX];
	char hexd[65]; /* the manifest's digest */
};

/* images/pulled with its home and tmp, each root's and safe: p->pfd, or -1 with err set. */
static int pull_dirs(struct pull *p, gp_error_t *err)
{
	if (snprintf(p->pulled, sizeof(p->pulled), "%s/pulled", p->o->images_dir) >=
	    (int)sizeof(p->pulled))
		return gp_errprintf(err, "image cache path too long");
	snprintf(p->home, sizeof(p->home), "%s/home", p->pulled);
	snprintf(p->tmpdir, sizeof(p->tmpdir), "%s/tmp", p->pulled);
	int images_fd = open(p->o->images_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int pfd = images_fd < 0 ? -1 : open_root_dir(images_fd, "pulled");
	int hfd = pfd < 0 ? -1 : open_root_dir(pfd, "home");
	int tfd = pfd < 0 ? -1 : open_root_dir(pfd, "tmp");
	if (images_fd >= 0)
		close(images_fd);
	if (hfd >= 0)
		close(hfd);
	if (tfd >= 0)
		close(tfd);
	if (pfd < 0 || hfd < 0 || tfd < 0) {
		int e = errno;
		if (pfd >= 0)
			close(pfd);
		errno = e;
		return gp_errprintf(err, "image cache '%s' is unsafe or unusable: %s", p->pulled,
				    strerror(errno));
	}
	p->pfd = pfd;
	return 0;
}

/* The owner's login for this registry, if any, alone in a file of root's. */
static int pull_login(struct pull *p, gp_error_t *err)
{
	if (!p->o->owner)
		return 0;
	gp_error_t aerr;
	int got = gp_regauth_write(p->o->owner, p->r.host, p->r.path, p->tmpdir, p->authfile,
				   PATH_MAX + 64, &p->login, &aerr);
	if (got < 0)
		return gp_errprintf(err, "container image '%s': %s", p->ref, aerr.text);
	if (got == 0) {
		p->authfile[0] = '\0';
		p->login = NULL;
	}
	return 0;
}

/* The manifest (by the name's digest, or what the tag points to now): its digest checked
 * against the name's, its declared size against container_pull_max; res->digest, res->key. */
static int pull_resolve(struct pull *p, struct gp_pull_result *res, gp_error_t *err)
{
	const char *ref = p->ref;
	char tlsarg[32];
	snprintf(tlsarg, sizeof(tlsarg), "--tls-verify=%s", p->tls ? "true" : "false");
	if (gp_imageref_transport(&p->r, NULL, p->src, sizeof(p->src)) < 0)
		return gp_errprintf(err, "container image '%s': name too long", ref);
	struct run_out ro = {.outmax = MANIFEST_MAX};
	ro.out = malloc(MANIFEST_MAX);
	char *iargv[] = {(char *)p->skopeo,
			 "--command-timeout",
			 RESOLVE_TIMEOUT,
			 "--tmpdir",
			 p->tmpdir,
			 "inspect",
			 "--raw",
			 "--retry-times",
			 "2",
			 tlsarg,
			 p->src,
			 NULL,
			 NULL,
			 NULL};
	/* before the name: the owner's login, or none at all. Without --no-creds skopeo, as
	 * root, would look for root's own login (/run/containers/0/auth.json, credential
	 * helpers), and a private image would open for a job whose owner has none */
	iargv[10] = p->authfile[0] ? "--authfile" : "--no-creds";
	iargv[11] = p->authfile[0] ? p->authfile : p->src;
	iargv[12] = p->authfile[0] ? p->src : NULL;
	if (!ro.out || run(iargv, p->home, 0, &ro) < 0) {
		free(ro.out);
		return gp_errprintf(err, "container image '%s': cannot run skopeo: %s", ref,
				    strerror(errno));
	}
	if (!ran_ok(&ro) || ro.outlen == 0) {
		free(ro.out);
		return why(&ro, ref, "resolve", p->login, err);
	}
	uint8_t h[32];
	const void *parts[1] = {ro.out};
	size_t lens[1] = {ro.outlen};
	gp_sha256(parts, lens, 1, h);
	gp_chunk_hex(h, p->hexd);
	snprintf(res->digest, sizeof(res->digest), "sha256:%s", p->hexd);
	if (p->r.digest[0] && strcmp(p->r.digest, res->digest)) {
		free(ro.out);
		return gp_errprintf(err,
				    "container image '%s': the registry's manifest is %s, not the "
				    "digest asked for, refused",
				    ref, res->digest);
	}
	int64_t declared = declared_size(ro.out, ro.outlen);
	free(ro.out);
	if (declared < 0)
		return gp_errprintf(err,
				    "container image '%s': the registry's answer is not an "
				    "image manifest",
				    ref);
	if (p->o->max_bytes && (uint64_t)declared > p->o->max_bytes)
		return gp_errprintf(err,
				    "container image '%s': %lld bytes, larger than "
				    "container_pull_max (%llu), refused",
				    ref, (long long)declared, (unsigned long long)p->o->max_bytes);
	/* the key of the unpacked tree: the manifest digest, apart from staged archives' keys */
	const void *kp[2] = {"registry\n", res->digest};
	size_t kl[2] = {9, strlen(res->digest)};
	gp_sha256(kp, kl, 2, h);
	gp_chunk_hex(h, res->key);
	return 0;
}

/* The image copied by its digest into the archive tmpname, checked, renamed to name and
 * opened (res->fd); the lock of the digest is held. */
static int pull_copy(struct pull *p, const char *name, const char *tmpname,
		     struct gp_pull_result *res, gp_error_t *err)
{
	const char *ref = p->ref;
	char *authfile = p->authfile;
	const struct gp_pull_opts *o = p->o;
	int rc = 0;
	char dst[PATH_MAX + 128], bysrc[SRC_MAX], tlsarg[32];
	snprintf(dst, sizeof(dst), "oci-archive:%s/%s", p->pulled, tmpname);
	gp_imageref_transport(&p->r, res->digest, bysrc, sizeof(bysrc));
	snprintf(tlsarg, sizeof(tlsarg), "--src-tls-verify=%s", p->tls ? "true" : "false");
	char *cargv[] = {(char *)p->skopeo,
			 "--command-timeout",
			 PULL_TIMEOUT,
			 "--tmpdir",
			 p->tmpdir,
			 "copy",
			 "--insecure-policy",
			 "--quiet",
			 "--retry-times",
			 "2",
			 tlsarg,
			 bysrc,
			 dst,
			 NULL,
			 NULL,
			 NULL};
	/* before the names, as for the resolve */
	cargv[11] = authfile[0] ? "--src-authfile" : "--src-no-creds";
	cargv[12] = authfile[0] ? authfile : bysrc;
	cargv[13] = authfile[0] ? bysrc : dst;
	cargv[14] = authfile[0] ? dst : NULL;
	struct run_out co = {0};
	unlinkat(p->pfd, tmpname, 0);
	if (run(cargv, p->home, o->max_bytes ? o->max_bytes + (1u << 20) : 0, &co) < 0)
		rc = gp_errprintf(err, "container image '%s': cannot run skopeo: %s", ref,
				  strerror(errno));
	else if (!ran_ok(&co))
		rc = why(&co, ref, "pull", p->login, err);
	struct stat st;
	if (rc == 0 &&
	    (fstatat(p->pfd, tmpname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)))
		rc = gp_errprintf(err, "container image '%s': skopeo wrote no archive", ref);
	if (rc == 0 && o->max_bytes && (uint64_t)st.st_size > o->max_bytes)
		rc = gp_errprintf(err,
				  "container image '%s': larger than container_pull_max, "
				  "refused",
				  ref);
	if (rc == 0 && renameat(p->pfd, tmpname, p->pfd, name) < 0)
		rc = gp_errprintf(err, "cannot keep the pulled image: %s", strerror(errno));
	if (rc < 0)
		unlinkat(p->pfd, tmpname, 0);
	else {
		res->fd = openat(p->pfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		res->pulled = true;
		if (res->fd < 0)
			rc = gp_errprintf(err, "cannot open the pulled image: %s", strerror(errno));
	}
	return rc;
}

/* gp_pull_image, the owner's login written to authfile (PATH_MAX + 64 bytes; "" when none) */
static int pull(const char *ref, const struct gp_pull_opts *o, struct gp_pull_result *res,
		char *authfile, gp_error_t *err)
{
	memset(res, 0, sizeof(*res));
	res->fd = -1;
	double t0 = gp_now();
	struct pull pl = {.ref = ref, .o = o, .authfile = authfile, .pfd = -1};
	struct pull *p = &pl;
	gp_error_t perr;
	if (gp_imageref_parse(ref, &p->r, &perr) < 0)
		return gp_errprintf(err, "container image: %s", perr.text);
	p->tls = !gp_imageref_host_listed(p->r.host, o->insecure);
	p->skopeo = o->skopeo ? o->skopeo : "skopeo";
	if (pull_dirs(p, err) < 0)
		return -1;
	if (pull_login(p, err) < 0 || pull_resolve(p, res, err) < 0) {
		close(p->pfd);
		return -1;
	}

	/* one pull per node and digest: the others wait on its lock, then find the archive */
	char lockname[80], name[80], tmpname[96];
	snprintf(lockname, sizeof(lockname), "%s.lock", p->hexd);
	snprintf(name, sizeof(name), "%s.tar", p->hexd);
	snprintf(tmpname, sizeof(tmpname), "%s.tar.%d", p->hexd, (int)getpid());
	int lfd = openat(p->pfd, lockname, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		int e = errno;
		if (lfd >= 0)
			close(lfd);
		close(p->pfd);
		return gp_errprintf(err, "cannot lock '%s/%s': %s", p->pulled, lockname,
				    strerror(e));
	}
	int rc = 0;
	res->fd = openat(p->pfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (res->fd < 0)
		rc = pull_copy(p, name, tmpname, res, err);
	struct stat st;
	if (rc == 0 && fstat(res->fd, &st) == 0)
		res->bytes = (uint64_t)st.st_size;
	if (rc == 0)
		futimens(res->fd, NULL); /* used now */
	close(lfd);
	if (rc == 0 && res->pulled && o->keep_bytes)
		evict_pulled(p->pfd, p->pulled, o->keep_bytes, p->hexd);
	close(p->pfd);
	res->seconds = gp_now() - t0;
	if (rc < 0 && res->fd >= 0) {
		close(res->fd);
		res->fd = -1;
	}
	return rc;
}

int gp_pull_image(const char *ref, const struct gp_pull_opts *o, struct gp_pull_result *res,
		  gp_error_t *err)
{
	char authfile[PATH_MAX + 64] = "";
	int rc = pull(ref, o, res, authfile, err);
	if (authfile[0])
		unlink(authfile);
	return rc;
}
