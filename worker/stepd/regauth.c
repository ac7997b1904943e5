/* regauth.c: a job owner's registry login, read as the owner (regauth.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "worker/stepd/regauth.h"

#define READ_MS 5000 /* the account's files, read by its reader */

/* The files looked at, in order, relative to the owner's home. */
static const char *const auth_files[] = {
    ".config/containers/auth.json",
    ".docker/config.json",
};
#define NFILES (sizeof(auth_files) / sizeof(auth_files[0]))

/* What the reading child says before the file's bytes. */
enum { SAID_NONE = 0xff, SAID_ERROR = 0xfe };

/* key as docker and the containers tools write it, without scheme or trailing '/'. */
static size_t bare_key(const char *key, const char **start)
{
	static const char *const schemes[] = {"https://", "http://"};
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i]);
		if (!strncmp(key, schemes[i], n)) {
			key += n;
			break;
		}
	}
	size_t len = strlen(key);
	while (len && key[len - 1] == '/')
		len--;
	*start = key;
	/* docker login's name for Docker Hub */
	static const char *const hub[] = {"index.docker.io/v1", "index.docker.io",
					  "registry-1.docker.io"};
	for (size_t i = 0; i < sizeof(hub) / sizeof(hub[0]); i++)
		if (len == strlen(hub[i]) && !strncmp(key, hub[i], len)) {
			*start = "docker.io";
			return 9;
		}
	return len;
}

/* How well key (bare, klen bytes) names host/path: its length when it is the host or the host
 * and a leading part of the path (whole components), else 0. */
static size_t key_score(const char *key, size_t klen, const char *host, const char *path)
{
	size_t hlen = strlen(host);
	if (klen < hlen || strncmp(key, host, hlen))
		return 0;
	if (klen == hlen)
		return klen;
	if (key[hlen] != '/')
		return 0;
	const char *rest = key + hlen + 1;
	size_t rlen = klen - hlen - 1, plen = strlen(path);
	if (!rlen || rlen > plen || strncmp(rest, path, rlen) || (rlen < plen && path[rlen] != '/'))
		return 0;
	return klen;
}

static bool base64_text(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '+' || *s == '/' || *s == '='))
			return false;
	return true;
}

int gp_regauth_pick(const char *json, size_t len, const char *host, const char *path, char *out,
		    size_t outlen, gp_error_t *err)
{
	json_error_t je;
	json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return gp_errprintf(err, "not a JSON object (%s)", doc ? "another value" : je.text);
	}
	json_t *auths = json_object_get(doc, "auths");
	if (!auths) {
		json_decref(doc);
		return 0;
	}
	if (!json_is_object(auths)) {
		json_decref(doc);
		return gp_errprintf(err, "its \"auths\" is not an object");
	}
	const char *key, *best = NULL;
	size_t best_score = 0;
	json_t *v;
	json_object_foreach(auths, key, v)
	{
		const char *k;
		size_t klen = bare_key(key, &k);
		size_t score = key_score(k, klen, host, path);
		if (score > best_score) {
			best_score = score;
			best = key;
		}
	}
	if (!best) {
		json_decref(doc);
		return 0;
	}
	json_t *entry = json_object_get(auths, best);
	json_t *a = json_is_object(entry) ? json_object_get(entry, "auth") : NULL;
	if (!a) { /* {} beside a credential helper: nothing here to use */
		json_decref(doc);
		return 0;
	}
	const char *s = json_string_value(a);
	if (!s || !base64_text(s) || strlen(s) >= outlen || strlen(s) >= GP_REGAUTH_MAX) {
		gp_errprintf(err, "the \"auth\" of \"%s\" is not a base64 login", best);
		json_decref(doc);
		return -1;
	}
	snprintf(out, outlen, "%s", s);
	json_decref(doc);
	return 1;
}

/* In the child, as the account: the first of the files from index `from` on that exists,
 * prefixed by its index, SAID_NONE, or SAID_ERROR with the errno. */
static void read_as_account(const struct gp_account *a, int wfd, size_t from)
{
	/* nothing of gstepd's but the pipe: no descriptor of root's to reopen through
	 * /proc/self/fd once the account's, and no ptrace by the account */
	if (wfd != 3 && dup2(wfd, 3) < 0)
		_exit(125);
	wfd = 3;
	if (syscall(SYS_close_range, 4, ~0U, 0) < 0)
		for (int fd = 4; fd < 1024; fd++)
			close(fd);
	prctl(PR_SET_DUMPABLE, 0);
	if (geteuid() != a->uid &&
	    (setgroups(0, NULL) < 0 || setgid(a->gid) < 0 || setuid(a->uid) < 0))
		_exit(125);
	for (size_t i = from; i < NFILES; i++) {
		char p[512];
		if (snprintf(p, sizeof(p), "%s/%s", a->home, auth_files[i]) >= (int)sizeof(p))
			continue;
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
			continue;
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
			errno = EINVAL;
		}
		uint8_t head[2] = {(uint8_t)i, 0};
		if (fd < 0) {
			head[0] = SAID_ERROR;
			head[1] = (uint8_t)(errno < 256 ? errno : EIO);
			(void)!write(wfd, head, 2);
			_exit(0);
		}
		(void)!write(wfd, head, 1);
		char buf[16384];
		size_t sent = 0;
		ssize_t n;
		while (sent <= GP_REGAUTH_FILE_MAX && (n = read(fd, buf, sizeof(buf))) > 0) {
			if (gp_write_all(wfd, buf, (size_t)n) < 0)
				_exit(1);
			sent += (size_t)n;
		}
		_exit(0);
	}
	uint8_t none = SAID_NONE;
	(void)!write(wfd, &none, 1);
	_exit(0);
}

/* The first of the account's files from index `from` on, read as the account within
 * READ_MS (the account can stop its reader, or name a file on a mount that never answers:
 * the reader is then killed): its index (file and len set), -1 none, -2 with err. */
static int fetch(const struct gp_account *a, size_t from, char **file, size_t *len, gp_error_t *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		gp_errprintf(err, "pipe: %s", strerror(errno));
		return -2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		gp_errprintf(err, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -2;
	}
	if (pid == 0) {
		close(p[0]);
		signal(SIGPIPE, SIG_DFL);
		read_as_account(a, p[1], from);
	}
	close(p[1]);
	size_t cap = GP_REGAUTH_FILE_MAX + 3, got = 0;
	char *buf = malloc(cap);
	ssize_t n = 0;
	bool late = false;
	int64_t deadline = gp_mono_ms() + READ_MS;
	while (buf && got < cap) {
		int left = (int)(deadline - gp_mono_ms());
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		int r = left > 0 ? poll(&pf, 1, left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			late = r == 0;
			n = -1;
			break;
		}
		n = read(p[0], buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]); /* a larger file: the child's next write fails (SIGPIPE), it ends */
	if (late)
		kill(pid, SIGKILL);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = -2;
	uint8_t said = buf && got ? (uint8_t)buf[0] : SAID_ERROR;
	if (late) {
		gp_errprintf(err,
			     "%s's registry logins: not read within %d s (the reader was killed)",
			     a->name, READ_MS / 1000);
	} else if (said < NFILES &&
		   got - 1 > GP_REGAUTH_FILE_MAX) { /* the reader died of SIGPIPE */
		gp_errprintf(err, "%s's ~/%s is larger than %u bytes", a->name, auth_files[said],
			     GP_REGAUTH_FILE_MAX);
	} else if (!buf || n < 0 || got == 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		gp_errprintf(err, "cannot read %s's registry logins (the reader %s)", a->name,
			     !buf ? "ran out of memory" : "failed");
	} else if (said == SAID_NONE) {
		rc = -1;
	} else if (said == SAID_ERROR) {
		gp_errprintf(err, "cannot read %s's registry logins: %s", a->name,
			     strerror(got > 1 ? (uint8_t)buf[1] : EIO));
	} else if (said < from || said >= NFILES) {
		gp_errprintf(err, "cannot read %s's registry logins (the reader failed)", a->name);
	} else {
		memmove(buf, buf + 1, got - 1);
		*len = got - 1;
		*file = buf;
		return said;
	}
	free(buf);
	return rc;
}

int gp_regauth_write(const struct gp_account *a, const char *host, const char *path,
		     const char *dir, char *out, size_t outlen, const char **from, gp_error_t *err)
{
	/* the first file that has a login for it: the containers tools' file, then docker's */
	char login[GP_REGAUTH_MAX];
	int got = 0;
	for (size_t next = 0; next < NFILES && got == 0;) {
		char *file = NULL;
		size_t len = 0;
		int which = fetch(a, next, &file, &len, err);
		if (which == -1)
			break;
		if (which < 0)
			return -1;
		gp_error_t perr;
		got = gp_regauth_pick(file, len, host, path, login, sizeof(login), &perr);
		free(file);
		if (got < 0)
			return gp_errprintf(err, "%s's ~/%s: %s", a->name, auth_files[which],
					    perr.text);
		if (from)
			*from = auth_files[which];
		next = (size_t)which + 1;
	}
	if (got == 0)
		return 0;
	json_t *doc = json_pack("{s:{s:{s:s}}}", "auths", host, "auth", login);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	explicit_bzero(login, sizeof(login));
	static unsigned seq;
	size_t tlen = text ? strlen(text) : 0;
	int rc = 1;
	if (!text)
		rc = gp_errprintf(err, "cannot write the registry login for skopeo: out of memory");
	else if (snprintf(out, outlen, "%s/auth.%d.%u.json", dir, (int)getpid(), seq++) >=
		 (int)outlen)
		rc = gp_errprintf(err, "cannot write the registry login for skopeo: path too long");
	else if (gp_write_file(out, text, tlen, 0600) < 0) /* dir is root's, 0700 */
		rc = gp_errprintf(err, "cannot write the registry login for skopeo: %s",
				  strerror(errno));
	if (text) {
		explicit_bzero(text, tlen);
		free(text);
	}
	return rc;
}
