/* sock.c - TCP helpers shared by the tcp transport and the tcp rendezvous. */
#include "comm/src/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t gc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int resolve(const char *host, int port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!host || !*host) {
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	if (inet_pton(AF_INET, host, &sa->sin_addr) == 1)
		return 0;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res) {
		errno = EHOSTUNREACH;
		return -1;
	}
	sa->sin_addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
	freeaddrinfo(res);
	return 0;
}

int gc_sock_listen(const char *addr, int *port, int backlog)
{
	struct sockaddr_in sa;
	if (resolve(addr, *port, &sa) < 0)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	socklen_t sl = sizeof(sa);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - gc_now_ms();
		if (left <= 0)
			return errno = ETIMEDOUT, -1;
		struct pollfd p = {.fd = fd, .events = ev};
		int rc = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -1;
	}
}

int gc_sock_connect(const char *host, int port, int64_t deadline)
{
	struct sockaddr_in sa;
	if (resolve(host, port, &sa) < 0)
		return -1;
	int delay = 10;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -1;
		int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		if (rc < 0 && errno == EINPROGRESS) {
			if (wait_fd(fd, POLLOUT, deadline) < 0) {
				close(fd);
				return -1;
			}
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			rc = err ? -1 : 0;
			errno = err;
		}
		if (rc == 0) {
			gc_sock_nonblock(fd, 0);
			return fd;
		}
		int e = errno;
		close(fd);
		if (e != ECONNREFUSED && e != ENETUNREACH && e != EHOSTUNREACH && e != ETIMEDOUT)
			return errno = e, -1;
		if (gc_now_ms() + delay >= deadline)
			return errno = ETIMEDOUT, -1;
		usleep((useconds_t)delay * 1000);
		if (delay < 200)
			delay *= 2;
	}
}

int gc_sock_accept(int lfd, int64_t deadline)
{
	for (;;) {
		if (wait_fd(lfd, POLLIN, deadline) < 0)
			return -1;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			return -1;
	}
}

int gc_sock_tune(int fd, int timeout_ms)
{
	int one = 1;
	int idle = 1; /* seconds idle before the first probe */
	int intvl = 1;
	int cnt = timeout_ms / 1000 - idle;
	if (cnt < 1)
		cnt = 1;
	unsigned int uto = (unsigned int)timeout_ms;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto)) < 0)
		return -1;
	/* GCOMM_SOCKBUF: fixed socket buffers (bytes) instead of the kernel's autotuning */
	const char *sb = getenv("GCOMM_SOCKBUF");
	int bytes = sb ? atoi(sb) : 0;
	if (bytes > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) < 0 ||
			  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)) < 0))
		return -1;
	return 0;
}

int gc_sock_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int gc_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (wait_fd(fd, POLLOUT, deadline) < 0)
			return -1;
	}
	return 0;
}

int gc_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return errno = ECONNRESET, -1;
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		if (wait_fd(fd, POLLIN, deadline) < 0)
			return -1;
	}
	return 0;
}

int gc_sock_local_addr(int fd, char *buf, size_t len)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 || sa.sin_family != AF_INET)
		return -1;
	return inet_ntop(AF_INET, &sa.sin_addr, buf, (socklen_t)len) ? 0 : -1;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t gc_digest(const char *token, uint64_t key)
{
	uint64_t h = mix(key ^ 0x6763636f6d6d3031ULL);
	for (const char *p = token ? token : ""; *p; p++)
		h = mix(h ^ (uint8_t)*p);
	return h;
}
