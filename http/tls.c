/* tls.c: TLS for http/'s server connections (see tls.h). */
#include "http/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>

struct gh_tls {
	SSL_CTX *ctx;
};

struct gh_tls_conn {
	SSL *ssl;
	bool wants_write;
};

static int ssl_err(gp_error_t *err, const char *what, const char *path)
{
	char buf[256] = "";
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return gp_errprintf(err, "tls: %s '%s': %s", what, path, buf[0] ? buf : "unknown error");
}

gh_tls_t *gh_tls_create(const char *cert, const char *key, gp_error_t *err)
{
	gh_tls_t *t = calloc(1, sizeof(*t));
	if (!t || !(t->ctx = SSL_CTX_new(TLS_server_method()))) {
		free(t);
		gp_errprintf(err, "tls: cannot make a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* a write that moved part of a buffer goes on from the buffer's new start */
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				     SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				     SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1) {
		ssl_err(err, "cannot load the certificate", cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1) {
		ssl_err(err, "cannot load the key", key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(t->ctx) != 1) {
		ssl_err(err, "the key does not match the certificate", cert);
		goto fail;
	}
	return t;
fail:
	SSL_CTX_free(t->ctx);
	free(t);
	return NULL;
}

void gh_tls_destroy(gh_tls_t **tp)
{
	if (!tp || !*tp)
		return;
	SSL_CTX_free((*tp)->ctx);
	free(*tp);
	*tp = NULL;
}

gh_tls_conn_t *gh_tls_accept(gh_tls_t *t, int fd)
{
	gh_tls_conn_t *tc = calloc(1, sizeof(*tc));
	if (!tc || !(tc->ssl = SSL_new(t->ctx)) || SSL_set_fd(tc->ssl, fd) != 1) {
		if (tc)
			SSL_free(tc->ssl);
		free(tc);
		ERR_clear_error();
		errno = ENOMEM;
		return NULL;
	}
	SSL_set_accept_state(tc->ssl);
	return tc;
}

void gh_tls_conn_destroy(gh_tls_conn_t **tcp)
{
	if (!tcp || !*tcp)
		return;
	SSL_free((*tcp)->ssl);
	free(*tcp);
	*tcp = NULL;
}

/* what an SSL_read or SSL_write that returned r <= 0 means, as read(2) would say it */
static ssize_t io_result(gh_tls_conn_t *tc, int r)
{
	int e = SSL_get_error(tc->ssl, r);
	ERR_clear_error();
	switch (e) {
	case SSL_ERROR_WANT_READ:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		tc->wants_write = true;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		if (errno == EAGAIN || errno == EINTR)
			return -1;
		return 0; /* the peer went away */
	default:
		errno = EPROTO; /* a bad handshake or record: the connection is done */
		return -1;
	}
}

ssize_t gh_tls_read(gh_tls_conn_t *tc, struct gh_buf *b, size_t max)
{
	tc->wants_write = false;
	if (gh_buf_reserve(b, max) < 0)
		return -1;
	size_t got = 0;
	int r = SSL_read_ex(tc->ssl, b->p + b->len, max, &got);
	if (r == 1) {
		b->len += got;
		return (ssize_t)got;
	}
	return io_result(tc, r);
}

ssize_t gh_tls_write(gh_tls_conn_t *tc, struct gh_buf *b)
{
	tc->wants_write = false;
	size_t put = 0;
	int r = SSL_write_ex(tc->ssl, gh_buf_data(b), gh_buf_size(b), &put);
	if (r == 1) {
		gh_buf_consume(b, put);
		return (ssize_t)put;
	}
	return io_result(tc, r);
}

bool gh_tls_wants_write(const gh_tls_conn_t *tc)
{
	return tc->wants_write;
}

bool gh_tls_pending(const gh_tls_conn_t *tc)
{
	return SSL_pending(tc->ssl) > 0;
}

void gh_tls_close(gh_tls_conn_t *tc)
{
	if (SSL_is_init_finished(tc->ssl))
		SSL_shutdown(tc->ssl);
	ERR_clear_error();
}
