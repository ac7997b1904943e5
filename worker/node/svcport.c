/* svcport.c: picking a free port for a service replica (see svcport.h). */
#include "worker/node/svcport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bind port on every IPv4 address (0: the kernel picks); the port bound, 0 if it failed. */
static uint32_t try_bind(uint32_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t len = sizeof(sa);
	uint32_t got = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		got = ntohs(sa.sin_port);
	int e = errno;
	close(fd);
	errno = e;
	return got;
}

static bool is_taken(uint32_t p, const uint32_t *taken, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (taken[i] == p)
			return true;
	return false;
}

uint32_t gp_svcport_pick(uint32_t wish, const uint32_t *taken, size_t ntaken)
{
	for (uint32_t p = wish; wish && p < wish + 100 && p <= 65535; p++)
		if (!is_taken(p, taken, ntaken) && try_bind(p))
			return p;
	for (int i = 0; i < 64; i++) {
		uint32_t p = try_bind(0);
		if (p && !is_taken(p, taken, ntaken))
			return p;
	}
	if (!errno)
		errno = EADDRINUSE;
	return 0;
}

/* ---- who listens on a replica's port ---- */

#define LISTEN_MAX 64 /* sockets listening on one port (SO_REUSEPORT) looked at */

size_t gp_svcport_listeners(const char *text, uint32_t port, uint64_t *ino, uid_t *uid, size_t max)
{
	size_t n = 0;
	const char *l = strchr(text, '\n'); /* the header line */
	while (l && *++l) {
		unsigned lport, st, u;
		unsigned long long inode;
		/* sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(l, " %*s %*[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %u %*d %llu", &lport, &st,
			   &u, &inode) == 4 &&
		    lport == port && st == 0x0A /* TCP_LISTEN */) {
			if (n < max) {
				ino[n] = inode;
				if (uid)
					uid[n] = (uid_t)u;
			}
			n++;
		}
		l = strchr(l, '\n');
	}
	return n;
}

/* All of a small /proc file into a malloc'd, NUL-terminated buffer (NULL on failure). */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 16384, len = 0;
	char *b = malloc(cap);
	while (b) {
		if (len + 1 >= cap) {
			char *nb = cap < (64u << 20) ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, b + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (b)
		b[len] = '\0';
	return b;
}

/* The socket inode of /proc/PID/fd/N's link ("socket:[123]"), 0: not a socket. */
static uint64_t fd_socket(int dirfd, const char *name)
{
	char link[64];
	ssize_t n = readlinkat(dirfd, name, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	unsigned long long ino;
	return sscanf(link, "socket:[%llu]", &ino) == 1 ? ino : 0;
}

/* Mark in mine[] the listeners ino[0..n) that process pid holds; true when it holds one of
 * them. */
static bool holds(pid_t pid, const uint64_t *ino, bool *mine, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	bool any = false;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		uint64_t s = fd_socket(dirfd(d), e->d_name);
		for (size_t i = 0; s && i < n; i++)
			if (ino[i] == s) {
				if (mine)
					mine[i] = true;
				any = true;
			}
	}
	closedir(d);
	return any;
}

/* A process that holds socket inode ino (0: none seen; /proc of other users' processes is
 * readable by root alone). */
static pid_t holder_of(uint64_t ino)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (holds((pid_t)pid, &ino, NULL, 1))
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

void gp_svcport_owner(uint32_t port, const pid_t *pids, size_t npids, struct gp_port_seen *seen)
{
	uint64_t ino[LISTEN_MAX];
	uid_t uid[LISTEN_MAX];
	bool mine[LISTEN_MAX] = {false};
	size_t n = 0;
	static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	for (size_t t = 0; t < 2; t++) {
		char *text = slurp(tables[t]);
		if (text) {
			size_t k =
			    gp_svcport_listeners(text, port, ino + n, uid + n, LISTEN_MAX - n);
			n += k < LISTEN_MAX - n ? k : LISTEN_MAX - n;
		}
		free(text);
	}
	if (!n) {
		*seen = (struct gp_port_seen){.state = GPOOL__PORT_STATE__PORT_CLOSED};
		return;
	}
	for (size_t i = 0; i < npids; i++)
		holds(pids[i], ino, mine, n);
	size_t foreign = n;
	for (size_t i = 0; i < n && foreign == n; i++)
		if (!mine[i])
			foreign = i;
	if (foreign == n) {
		*seen = (struct gp_port_seen){.state = GPOOL__PORT_STATE__PORT_OWN};
		return;
	}
	if (seen->state != GPOOL__PORT_STATE__PORT_FOREIGN || seen->ino != ino[foreign])
		seen->pid = holder_of(ino[foreign]);
	seen->state = GPOOL__PORT_STATE__PORT_FOREIGN;
	seen->uid = uid[foreign];
	seen->ino = ino[foreign];
}

size_t gp_svcport_session(pid_t sid, pid_t *out, size_t max)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while (n < max && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		/* pid (comm) state ppid pgrp session: comm may hold spaces and parentheses */
		const char *p = strrchr(buf, ')');
		int s;
		if (p && sscanf(p + 1, " %*c %*d %*d %d", &s) == 1 && s == sid)
			out[n++] = (pid_t)pid;
	}
	closedir(d);
	return n;
}
