/* auth.c - MUNGE credentials: encoding one over a payload and decoding the sender's uid
 * and gid as munged vouches for them (auth.h) */
#include "common/auth.h"

#include <errno.h>
#include <munge.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gp_auth {
	munge_ctx_t enc;
	munge_ctx_t dec;
	munge_ctx_t enc_for; /* gp_auth_encode_for's: enciphered, restricted to enc_for_uid */
	uid_t enc_for_uid;
	bool restricted;
	double seconds;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

gp_auth_t *gp_auth_create(const char *socket_path, gp_error_t *err)
{
	gp_auth_t *a = calloc(1, sizeof(*a));
	if (!a) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	if (!socket_path)
		socket_path = getenv("GPOOL_MUNGE_SOCKET");
	a->enc = munge_ctx_create();
	a->dec = munge_ctx_create();
	a->enc_for = munge_ctx_create();
	if (!a->enc || !a->dec || !a->enc_for)
		goto fail;
	if (socket_path && *socket_path) {
		if (munge_ctx_set(a->enc, MUNGE_OPT_SOCKET, socket_path) != EMUNGE_SUCCESS ||
		    munge_ctx_set(a->dec, MUNGE_OPT_SOCKET, socket_path) != EMUNGE_SUCCESS ||
		    munge_ctx_set(a->enc_for, MUNGE_OPT_SOCKET, socket_path) != EMUNGE_SUCCESS)
			goto fail;
	}
	if (munge_ctx_set(a->enc_for, MUNGE_OPT_CIPHER_TYPE, MUNGE_CIPHER_AES128) != EMUNGE_SUCCESS)
		goto fail;
	return a;
fail:
	gp_errprintf(err, "cannot create a munge context");
	gp_auth_destroy(&a);
	errno = ENOMEM;
	return NULL;
}

void gp_auth_destroy(gp_auth_t **p)
{
	if (!p || !*p)
		return;
	if ((*p)->enc)
		munge_ctx_destroy((*p)->enc);
	if ((*p)->dec)
		munge_ctx_destroy((*p)->dec);
	if ((*p)->enc_for)
		munge_ctx_destroy((*p)->enc_for);
	free(*p);
	*p = NULL;
}

int gp_auth_set_ttl(gp_auth_t *a, int ttl)
{
	if (munge_ctx_set(a->enc, MUNGE_OPT_TTL, ttl) != EMUNGE_SUCCESS ||
	    munge_ctx_set(a->enc_for, MUNGE_OPT_TTL, ttl) != EMUNGE_SUCCESS)
		return errno = EINVAL, -1;
	return 0;
}

static int encode(gp_auth_t *a, munge_ctx_t ctx, const void *payload, size_t len, char **cred,
		  gp_error_t *err)
{
	double t0 = now_s();
	munge_err_t e = munge_encode(cred, ctx, payload, (int)len);
	a->seconds += now_s() - t0;
	if (e == EMUNGE_SOCKET) { /* the dependency missing, not a credential refused */
		errno = ECONNREFUSED;
		return gp_errprintf(err,
				    "cannot get a MUNGE credential: munged does not answer on this "
				    "machine (is it installed and running? Debian: apt-get install "
				    "munge; systemctl start munge): %s",
				    munge_strerror(e));
	}
	if (e != EMUNGE_SUCCESS) {
		errno = EPERM;
		return gp_errprintf(err, "munge encode: %s", munge_strerror(e));
	}
	return 0;
}

int gp_auth_encode_for(gp_auth_t *a, const void *payload, size_t len, uid_t uid, char **cred,
		       gp_error_t *err)
{
	if (!a->restricted || a->enc_for_uid != uid) {
		if (munge_ctx_set(a->enc_for, MUNGE_OPT_UID_RESTRICTION, uid) != EMUNGE_SUCCESS) {
			errno = EINVAL;
			return gp_errprintf(err, "munge: cannot restrict a credential to uid %u",
					    (unsigned)uid);
		}
		a->enc_for_uid = uid;
		a->restricted = true;
	}
	return encode(a, a->enc_for, payload, len, cred, err);
}

int gp_auth_encode(gp_auth_t *a, const void *payload, size_t len, char **cred, gp_error_t *err)
{
	return encode(a, a->enc, payload, len, cred, err);
}

struct status_map {
	munge_err_t e;
	enum gp_auth_status s;
};

static const struct status_map status_table[] = {
    {EMUNGE_CRED_EXPIRED, GP_AUTH_EXPIRED},   {EMUNGE_CRED_REWOUND, GP_AUTH_EXPIRED},
    {EMUNGE_CRED_REPLAYED, GP_AUTH_REPLAYED}, {EMUNGE_SOCKET, GP_AUTH_UNAVAILABLE},
    {EMUNGE_TIMEOUT, GP_AUTH_UNAVAILABLE},
};

int gp_auth_decode(gp_auth_t *a, const char *cred, void **payload, size_t *len, uid_t *uid,
		   gid_t *gid, enum gp_auth_status *status, gp_error_t *err)
{
	int plen = 0;
	void *p = NULL;
	double t0 = now_s();
	munge_err_t e = munge_decode(cred, a->dec, &p, &plen, uid, gid);
	a->seconds += now_s() - t0;
	if (e != EMUNGE_SUCCESS) {
		*status = GP_AUTH_INVALID;
		for (size_t i = 0; i < sizeof(status_table) / sizeof(status_table[0]); i++)
			if (status_table[i].e == e)
				*status = status_table[i].s;
		free(p);
		errno = EACCES;
		return gp_errprintf(err, "credential refused: %s", munge_strerror(e));
	}
	*status = GP_AUTH_OK;
	*payload = p;
	*len = (size_t)plen;
	return 0;
}

double gp_auth_seconds(const gp_auth_t *a)
{
	return a->seconds;
}
