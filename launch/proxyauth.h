/* proxyauth.h: how a client proves to a node's exec-proxy that it is the job's owner.
 *
 * No secret crosses the LAN. On every connection the proxy first sends a CHALLENGE of
 * GP_PROXY_NONCE random bytes; the client answers AUTH with a MUNGE credential of its own uid
 * (restricted to that uid, its payload enciphered by munged) binding "gpool-proxy1", the job
 * id and the challenge. The proxy decodes it with its own munged and takes it only when the
 * credential's uid is the proxy's own (the job's account: the proxy runs as the job's user) and
 * the payload names this job and this connection's challenge: a credential seen on the wire is
 * good for nothing else, and munged refuses a replayed one anyway.
 */
#ifndef GPOOL_LAUNCH_PROXYAUTH_H
#define GPOOL_LAUNCH_PROXYAUTH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/auth.h"
#include "common/error.h"

#define GP_PROXY_NONCE 32

/* The AUTH payload for (job, nonce): *cred malloc'd. 0 / -1 with err. */
int gp_proxy_cred(gp_auth_t *a, uint64_t job, const uint8_t nonce[GP_PROXY_NONCE], char **cred,
		  gp_error_t *err);

/* Check an AUTH payload: 0 when it is a credential of uid owner for (job, nonce); -1 with err
 * saying why (and errno EACCES) otherwise. */
int gp_proxy_cred_check(gp_auth_t *a, uint64_t job, const uint8_t nonce[GP_PROXY_NONCE],
			const void *cred, size_t len, uid_t owner, gp_error_t *err);

#endif
