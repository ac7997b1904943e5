/* proxyauth.c: the exec-proxy's challenge and its MUNGE answer (proxyauth.h). */
#include "launch/proxyauth.h"

#include <errno.h>
#include <stdbool.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG	"gpool-proxy1"
#define TAG_LEN (sizeof(TAG) - 1)
#define PAYLOAD (TAG_LEN + 8 + GP_PROXY_NONCE)

static void payload(uint64_t job, const uint8_t *nonce, uint8_t out[PAYLOAD])
{
	memcpy(out, TAG, TAG_LEN);
	for (int i = 0; i < 8; i++)
		out[TAG_LEN + i] = (uint8_t)(job >> (8 * i));
	memcpy(out + TAG_LEN + 8, nonce, GP_PROXY_NONCE);
}

int gp_proxy_cred(gp_auth_t *a, uint64_t job, const uint8_t nonce[GP_PROXY_NONCE], char **cred,
		  gp_error_t *err)
{
	uint8_t p[PAYLOAD];
	payload(job, nonce, p);
	return gp_auth_encode(a, p, sizeof(p), cred, err);
}

int gp_proxy_cred_check(gp_auth_t *a, uint64_t job, const uint8_t nonce[GP_PROXY_NONCE],
			const void *cred, size_t len, uid_t owner, gp_error_t *err)
{
	if (len == 0 || len > 4096) {
		errno = EACCES;
		return gp_errprintf(err, "no credential");
	}
	char *c = strndup(cred, len);
	if (!c) {
		errno = ENOMEM;
		return gp_errprintf(err, "out of memory");
	}
	void *got = NULL;
	size_t glen = 0;
	uid_t uid;
	gid_t gid;
	enum gp_auth_status st;
	int rc = gp_auth_decode(a, c, &got, &glen, &uid, &gid, &st, err);
	free(c);
	if (rc < 0) {
		errno = EACCES;
		return -1;
	}
	uint8_t want[PAYLOAD];
	payload(job, nonce, want);
	bool match = glen == sizeof(want) && sodium_memcmp(got, want, sizeof(want)) == 0;
	free(got);
	if (uid != owner) {
		errno = EACCES;
		return gp_errprintf(err, "credential of uid %u, not the job's owner (uid %u)",
				    (unsigned)uid, (unsigned)owner);
	}
	if (!match) {
		errno = EACCES;
		return gp_errprintf(err, "credential for another job or connection");
	}
	return 0;
}
