/* tls.h: TLS (1.2 or later, OpenSSL) for http/'s server connections: gschedd's REST API
 * (http_tls_cert, http_tls_key) and ggated (--tls-cert, --tls-key). A context holds the
 * certificate chain and its key; each accepted connection gets a session of it, read and
 * written through gh_tls_read/gh_tls_write instead of read(2)/write(2) on the socket, so that
 * server.c keeps its one-read-per-request shape. deploy/gpool-ca makes a pool's CA and
 * certificates. */
#ifndef GPOOL_HTTP_TLS_H
#define GPOOL_HTTP_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"
#include "http/buf.h"

typedef struct gh_tls gh_tls_t;
typedef struct gh_tls_conn gh_tls_conn_t;

/* A server context from a PEM certificate chain and its key: NULL with err filled (a file
 * that cannot be read, a key that does not match the certificate). */
gh_tls_t *gh_tls_create(const char *cert, const char *key, gp_error_t *err);
void gh_tls_destroy(gh_tls_t **t);

/* A server session on the connected socket fd (which the caller keeps owning): the
 * handshake happens in the first reads and writes. NULL with errno (ENOMEM). */
gh_tls_conn_t *gh_tls_accept(gh_tls_t *t, int fd);
void gh_tls_conn_destroy(gh_tls_conn_t **tc);
/* As gh_buf_read and gh_buf_write: the bytes moved, 0 at the end of the stream (a peer that
 * closed, or a broken handshake: the connection is done), -1 with errno EAGAIN when the
 * socket must become readable or writable first (gh_tls_wants_write says which), else -1
 * with errno EPROTO. */
ssize_t gh_tls_read(gh_tls_conn_t *tc, struct gh_buf *b, size_t max);
ssize_t gh_tls_write(gh_tls_conn_t *tc, struct gh_buf *b);
/* the last call stopped until the socket is writable (a handshake's flight, a read that must
 * answer the peer) */
bool gh_tls_wants_write(const gh_tls_conn_t *tc);
/* decrypted bytes already held (a read of them touches no socket) */
bool gh_tls_pending(const gh_tls_conn_t *tc);
/* Send close_notify, without waiting for the peer's. */
void gh_tls_close(gh_tls_conn_t *tc);

#endif
