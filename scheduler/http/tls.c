/* tls.c: HTTPS for gschedd's HTTP server (tls.h). */
#include "scheduler/http/tls.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>

static int ssl_err(gp_error_t *err, const char *what, const char *path)
{
	char buf[256] = "";
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	return gp_errprintf(err, "%s '%s': %s", what, path, buf[0] ? buf : "unknown error");
}

http_tls_ctx_t *http_tls_create(const char *cert, const char *key, gp_error_t *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		gp_errprintf(err, "http: cannot make a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
		ssl_err(err, "http: cannot load the certificate", cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		ssl_err(err, "http: cannot load the key", key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ssl_err(err, "http: the key does not match the certificate", cert);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

void http_tls_destroy(http_tls_ctx_t **ctx)
{
	if (!ctx || !*ctx)
		return;
	SSL_CTX_free(*ctx);
	*ctx = NULL;
}

struct bufferevent *http_tls_bev(struct event_base *base, void *arg)
{
	SSL *ssl = SSL_new(arg);
	if (!ssl)
		return NULL;
	struct bufferevent *bev = bufferevent_openssl_socket_new(
	    base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		SSL_free(ssl);
	return bev;
}
