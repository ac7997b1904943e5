/* test_tls: http/'s server speaking TLS (http/tls.c through server.c) to an OpenSSL client at
 * the other end of a socketpair, with a certificate made for the test: a request over TLS is
 * answered and the connection kept alive for a second one; a plain-HTTP client gets no HTTP
 * answer, only a closed connection; a key that is not the certificate's, or a missing file, is
 * refused with the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/server.h"
#include "http/tls.h"

static char dir[] = "/tmp/gpool-test-tls.XXXXXX";
static char crt[64], key[64], other_key[64];

static EVP_PKEY *write_key(const char *path)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	FILE *f = fopen(path, "w");
	assert_true(k && f && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1);
	fclose(f);
	return k;
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(crt, sizeof(crt), "%s/c.crt", dir);
	snprintf(key, sizeof(key), "%s/c.key", dir);
	snprintf(other_key, sizeof(other_key), "%s/o.key", dir);
	EVP_PKEY *k = write_key(key);
	EVP_PKEY_free(write_key(other_key));
	X509 *x = X509_new();
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1,
				   -1, 0);
	X509_set_issuer_name(x, n);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	FILE *f = fopen(crt, "w");
	assert_true(f && PEM_write_X509(f, x) == 1);
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(crt);
	unlink(key);
	unlink(other_key);
	rmdir(dir);
	return 0;
}

static void on_head(gh_conn_t *c, void *arg)
{
	(void)arg;
	struct gh_msg *m = gh_conn_request(c);
	gh_conn_answer(c, 200, "text/plain", gh_buf_data(&m->target), gh_buf_size(&m->target));
}

struct rig {
	struct event_base *base;
	gh_server_t *s;
	gh_tls_t *t;
	int sv[2];
};

static void rig_start(struct rig *r)
{
	static const struct gh_handler h = {.head = on_head};
	struct gh_limits lim = {.max_head = 4096, .client_timeout_ms = 5000};
	gp_error_t err;
	r->base = event_base_new();
	r->s = gh_server_create(r->base, &h, &lim);
	r->t = gh_tls_create(crt, key, &err);
	assert_true(r->base && r->s && r->t);
	gh_server_set_tls(r->s, r->t);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, r->sv), 0);
	assert_int_equal(gh_server_adopt(r->s, r->sv[0], NULL), 0);
}

static void rig_stop(struct rig *r)
{
	gh_server_destroy(&r->s);
	event_base_loop(r->base, EVLOOP_NONBLOCK);
	gh_tls_destroy(&r->t);
	event_base_free(r->base);
	close(r->sv[1]);
}

/* an OpenSSL call on the client's side, the server's loop turned until it is done */
#define CLIENT(r, call)                                                                            \
	({                                                                                         \
		int rc_ = -1;                                                                      \
		for (int i_ = 0; i_ < 2000; i_++) {                                                \
			rc_ = (call);                                                              \
			if (rc_ > 0)                                                               \
				break;                                                             \
			int e_ = SSL_get_error(ssl, rc_);                                          \
			if (e_ != SSL_ERROR_WANT_READ && e_ != SSL_ERROR_WANT_WRITE)               \
				break;                                                             \
			event_base_loop((r)->base, EVLOOP_NONBLOCK);                               \
			usleep(500);                                                               \
		}                                                                                  \
		rc_;                                                                               \
	})

static void request_over_tls(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r);
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	assert_int_equal(SSL_CTX_load_verify_locations(cctx, crt, NULL), 1);
	SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
	SSL *ssl = SSL_new(cctx);
	SSL_set_fd(ssl, r.sv[1]);
	SSL_set1_host(ssl, "localhost");
	assert_int_equal(CLIENT(&r, SSL_connect(ssl)), 1);
	assert_true(SSL_version(ssl) >= TLS1_2_VERSION);
	for (int k = 0; k < 2; k++) { /* kept alive: a second request on the same session */
		static const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
		assert_int_equal(CLIENT(&r, SSL_write(ssl, req, sizeof(req) - 1)), sizeof(req) - 1);
		char buf[512];
		int n = CLIENT(&r, SSL_read(ssl, buf, sizeof(buf) - 1));
		assert_true(n > 0);
		buf[n] = '\0';
		assert_non_null(strstr(buf, "HTTP/1.1 200 OK\r\n"));
		assert_non_null(strstr(buf, "\r\n\r\n/hello"));
	}
	assert_int_equal(gh_server_conns(r.s), 1);
	SSL_free(ssl);
	SSL_CTX_free(cctx);
	rig_stop(&r);
}

static void plain_http_refused(void **state)
{
	(void)state;
	struct rig r;
	rig_start(&r);
	static const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(write(r.sv[1], req, sizeof(req) - 1), sizeof(req) - 1);
	char buf[512];
	ssize_t n = -1, got = 0;
	for (int i = 0; i < 2000; i++) {
		event_base_loop(r.base, EVLOOP_NONBLOCK);
		n = read(r.sv[1], buf + got, sizeof(buf) - 1 - (size_t)got);
		if (n > 0)
			got += n;
		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;
		usleep(500);
	}
	assert_true(n == 0 || (n < 0 && errno != EAGAIN)); /* closed */
	buf[got] = '\0';
	assert_null(strstr(buf, "HTTP/1.1")); /* and no HTTP answer in the clear */
	assert_int_equal(gh_server_conns(r.s), 0);
	rig_stop(&r);
}

static void bad_files_refused(void **state)
{
	(void)state;
	gp_error_t err = {{0}};
	assert_null(gh_tls_create(crt, other_key, &err));
	assert_non_null(strstr(err.text, "cannot load the key"));
	assert_null(gh_tls_create("/nonexistent.crt", key, &err));
	assert_non_null(strstr(err.text, "cannot load the certificate '/nonexistent.crt'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(request_over_tls),
	    cmocka_unit_test(plain_http_refused),
	    cmocka_unit_test(bad_files_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
