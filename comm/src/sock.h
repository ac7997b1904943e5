/* sock.h - TCP helpers shared by the tcp transport and the tcp rendezvous. */
#ifndef GCOMM_SOCK_H
#define GCOMM_SOCK_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds on the monotonic clock. */
int64_t gc_now_ms(void);

/* Listen on ADDR (IPv4 text or host name; NULL or "" = any) port *PORT (0 = pick one;
 * the port is written back). Returns the fd, -1 with errno. */
int gc_sock_listen(const char *addr, int *port, int backlog);
/* Connect to HOST:PORT, retrying refused connections until DEADLINE (gc_now_ms clock).
 * Returns a blocking fd, -1 with errno (ETIMEDOUT after the deadline). */
int gc_sock_connect(const char *host, int port, int64_t deadline);
/* Accept one connection on the listening LFD before DEADLINE; -1 with ETIMEDOUT. */
int gc_sock_accept(int lfd, int64_t deadline);
/* TCP_NODELAY, and liveness: keepalive probes and TCP_USER_TIMEOUT so that a peer that
 * stops answering is declared dead after about TIMEOUT_MS. */
int gc_sock_tune(int fd, int timeout_ms);
int gc_sock_nonblock(int fd, int on);
/* Write / read exactly LEN bytes before DEADLINE (fd may be blocking or not). */
int gc_sock_send_all(int fd, const void *buf, size_t len, int64_t deadline);
int gc_sock_recv_all(int fd, void *buf, size_t len, int64_t deadline);
/* The local IPv4 address of a connected socket, as text (at least 16 bytes). */
int gc_sock_local_addr(int fd, char *buf, size_t len);

/* 64-bit keyed digest of a token (a guard against stray connections, not a MAC). */
uint64_t gc_digest(const char *token, uint64_t key);

#endif
