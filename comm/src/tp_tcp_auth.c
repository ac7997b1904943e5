/* tp_tcp_auth.c - peers that prove who they are (GCOMM_AUTH=munge): at connect time each side
 * of a connection sends a MUNGE credential binding the communicator's key, its own rank and
 * the rank it talks to, and reads the other's before anything else of the connection is read.
 * A connection whose credential is missing, forged, replayed, made by another uid, or bound to
 * another communicator or rank is closed unanswered. GCOMM_TOKEN and the communicator's key
 * keep stray connections out; this keeps other users out: munged vouches for the uid, and the
 * ranks of one job all run as its user.
 *
 * MUNGE comes with the rest of gpool (gpool_common): libgcomm built alone has the stub. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/src/sock.h"
#include "comm/src/tp_tcp_int.h"

#define AUTH_MAGIC 0x3148545541434721ull /* "!GCAUTH1" */
#define CRED_MAX   2048			 /* a credential's text, bounded before it is read */

#ifdef GCOMM_HAVE_GPOOL_RDV
#include "common/auth.h"

typedef struct {
	uint64_t magic, comm_key;
	uint32_t from, to;
} bind_t;

int gc_tcp_auth_open(gc_tp_t *t)
{
	gp_error_t e;
	if (!(t->auth = gp_auth_create(NULL, &e)))
		return gc_tcp_fail(t, errno ? errno : ENOMEM, "tcp: munge: %s", e.text);
	return 0;
}

void gc_tcp_auth_close(gc_tp_t *t)
{
	gp_auth_destroy((gp_auth_t **)&t->auth);
}

int gc_tcp_auth_send(gc_tp_t *t, int fd, int to, int64_t deadline)
{
	bind_t b = {AUTH_MAGIC, t->p.comm_key, (uint32_t)t->p.rank, (uint32_t)to};
	char *cred = NULL;
	gp_error_t e;
	if (gp_auth_encode(t->auth, &b, sizeof(b), &cred, &e) < 0)
		return gc_tcp_fail(t, EACCES, "tcp: munge: %s", e.text);
	uint32_t len = (uint32_t)strlen(cred);
	int rc = gc_sock_send_all(fd, &len, sizeof(len), deadline) < 0 ||
			 gc_sock_send_all(fd, cred, len, deadline) < 0
		     ? -1
		     : 0;
	free(cred);
	return rc;
}

int gc_tcp_auth_recv(gc_tp_t *t, int fd, int *from, int64_t deadline)
{
	uint32_t len = 0;
	char cred[CRED_MAX + 1];
	if (gc_sock_recv_all(fd, &len, sizeof(len), deadline) < 0)
		return -1;
	if (len == 0 || len > CRED_MAX)
		return errno = EACCES, -1;
	if (gc_sock_recv_all(fd, cred, len, deadline) < 0)
		return -1;
	cred[len] = 0;
	void *pl = NULL;
	size_t pn = 0;
	uid_t uid;
	gid_t gid;
	enum gp_auth_status st;
	gp_error_t e;
	if (gp_auth_decode(t->auth, cred, &pl, &pn, &uid, &gid, &st, &e) < 0)
		return errno = EACCES, -1;
	bind_t b;
	int ok = pn == sizeof(b) && uid == geteuid();
	if (ok) {
		memcpy(&b, pl, sizeof(b));
		ok = b.magic == AUTH_MAGIC && b.comm_key == t->p.comm_key &&
		     b.to == (uint32_t)t->p.rank && b.from < (uint32_t)t->p.size &&
		     b.from != (uint32_t)t->p.rank;
	}
	free(pl);
	if (!ok)
		return errno = EACCES, -1;
	*from = (int)b.from;
	return 0;
}

#else

int gc_tcp_auth_open(gc_tp_t *t)
{
	return gc_tcp_fail(t, ENOTSUP,
			   "tcp: GCOMM_AUTH=munge: this libgcomm is built without "
			   "MUNGE (build it with gpool)");
}

void gc_tcp_auth_close(gc_tp_t *t)
{
	(void)t;
}

int gc_tcp_auth_send(gc_tp_t *t, int fd, int to, int64_t deadline)
{
	(void)t, (void)fd, (void)to, (void)deadline;
	return errno = ENOTSUP, -1;
}

int gc_tcp_auth_recv(gc_tp_t *t, int fd, int *from, int64_t deadline)
{
	(void)t, (void)fd, (void)from, (void)deadline;
	return errno = ENOTSUP, -1;
}

#endif
