/* lazy.c: the range-to-chunks arithmetic, the request's wire format and the task's side of a
 * lazily staged file (lazy.h). */
#include "common/lazy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fdpass.h"
#include "common/le.h"

#define REQ_MAGIC  0x5a4c5047u /* "GPLZ" */
#define REP_MAGIC  0x725a4c47u /* "GLZr" */
#define STATUS_MAX 4095	       /* errno values are small: anything above is garbage */

int gp_lazy_chunks(uint64_t size, uint64_t off, uint64_t len, uint32_t chunk_size, uint64_t *k0,
		   uint64_t *k1)
{
	if (!chunk_size || off > size || len > size - off)
		return errno = EINVAL, -1;
	*k0 = off / chunk_size;
	*k1 = len ? (off + len - 1) / chunk_size + 1 : *k0;
	return 0;
}

void gp_lazy_req_encode(const struct gp_lazy_req *q, uint8_t out[GP_LAZY_REQ_LEN])
{
	gp_le_put32(out, REQ_MAGIC);
	gp_le_put32(out + 4, 0);
	gp_le_put64(out + 8, q->off);
	gp_le_put64(out + 16, q->len);
}

int gp_lazy_req_decode(const uint8_t *in, size_t n, struct gp_lazy_req *q)
{
	if (n != GP_LAZY_REQ_LEN || gp_le_get32(in) != REQ_MAGIC || gp_le_get32(in + 4) != 0)
		return errno = EBADMSG, -1;
	q->off = gp_le_get64(in + 8);
	q->len = gp_le_get64(in + 16);
	if (q->len > UINT64_MAX - q->off)
		return errno = EBADMSG, -1;
	return 0;
}

void gp_lazy_rep_encode(const struct gp_lazy_rep *r, uint8_t out[GP_LAZY_REP_LEN])
{
	memset(out, 0, GP_LAZY_REP_LEN);
	gp_le_put32(out, REP_MAGIC);
	gp_le_put32(out + 4, (uint32_t)r->status);
	gp_le_put64(out + 8, r->fetched);
	snprintf((char *)out + 16, GP_LAZY_MSG_LEN, "%s", r->msg);
}

int gp_lazy_rep_decode(const uint8_t *in, size_t n, struct gp_lazy_rep *r)
{
	if (n != GP_LAZY_REP_LEN || gp_le_get32(in) != REP_MAGIC)
		return errno = EBADMSG, -1;
	uint32_t st = gp_le_get32(in + 4);
	if (st > STATUS_MAX)
		return errno = EBADMSG, -1;
	r->status = (int32_t)st;
	r->fetched = gp_le_get64(in + 8);
	memcpy(r->msg, in + 16, GP_LAZY_MSG_LEN);
	r->msg[GP_LAZY_MSG_LEN - 1] = '\0';
	return 0;
}

/* Connect to the job's gstepd: a descriptor, -2 when there is none to ask, -1 with err. */
static int lazy_connect(gp_error_t *err)
{
	const char *name = getenv(GP_LAZY_ENV);
	if (!name || !*name)
		return -2;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n >= sizeof(a.sun_path))
		return errno = ENAMETOOLONG, gp_errprintf(err, "%s is too long", GP_LAZY_ENV);
	memcpy(a.sun_path, name, n);
	if (name[0] == '@') /* the abstract namespace, as ss(8) writes it */
		a.sun_path[0] = '\0';
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return gp_errprintf(err, "socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&a,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return gp_errprintf(err, "cannot reach the job's stager '%s': %s", name,
				    strerror(e));
	}
	return s;
}

/* Send the request with fd attached. 0 / -1 with errno. */
static int send_req(int s, int fd, const struct gp_lazy_req *q)
{
	uint8_t buf[GP_LAZY_REQ_LEN];
	gp_lazy_req_encode(q, buf);
	if (fd < 0) /* as sendmsg would say of a descriptor -1 */
		return errno = EBADF, -1;
	return gp_fd_send(s, buf, sizeof(buf), fd, MSG_NOSIGNAL) == (ssize_t)sizeof(buf) ? 0 : -1;
}

int gp_lazy_fetch(int fd, uint64_t off, uint64_t len, uint64_t *fetched, gp_error_t *err)
{
	if (fetched)
		*fetched = 0;
	int s = lazy_connect(err);
	if (s == -2)
		return 0;
	if (s < 0)
		return -1;
	struct gp_lazy_req q = {off, len};
	uint8_t buf[GP_LAZY_REP_LEN + 1];
	struct gp_lazy_rep r;
	ssize_t n = -1;
	if (send_req(s, fd, &q) == 0)
		while ((n = recv(s, buf, sizeof(buf), 0)) < 0 && errno == EINTR)
			;
	int e = errno;
	close(s);
	if (n < 0)
		return errno = e, gp_errprintf(err, "the job's stager: %s", strerror(e));
	if (gp_lazy_rep_decode(buf, (size_t)n, &r) < 0)
		return gp_errprintf(err, "the job's stager sent a malformed reply");
	if (r.status == ENOENT)
		return 0; /* not a lazily staged file: it is whole */
	if (r.status) {
		errno = r.status;
		return gp_errprintf(err, "%s", r.msg[0] ? r.msg : strerror(r.status));
	}
	if (fetched)
		*fetched = r.fetched;
	return 1;
}
