/* rdv_gpool.c - the "gpool" rendezvous: put/get/fence through gschedd (RdvPut, RdvGet,
 * RdvFence in proto/gpool.proto), over the job's control path, each request carrying a MUNGE
 * credential of the job's owner. Needs only gpool_common (ZeroMQ, protobuf-c, MUNGE).
 *
 * spec: "JOB" or "JOB:ATTEMPT"; NULL or "": $GPOOL_JOB_ID. The attempt, unless given, is
 * $GPOOL_ATTEMPT (gworkerd sets both in every task). The scheduler is found as the commands
 * find it: $GPOOL_SCHEDULER, else the `scheduler` key of $GPOOL_CONF or /etc/gpool/gpool.conf.
 * The token is not used: the credential says who asks, and gschedd serves a job's store to
 * its owner only.
 *
 * Waiting (get of a key not yet put, a fence not yet complete) is a long poll held by gschedd
 * in slices of SLICE_MS, so a scheduler restart costs a slice, not the whole timeout. The
 * store does not survive a restart (docs/reliability.md): after one, a get or fence of what
 * was lost waits until the timeout and fails with ETIMEDOUT; the job is expected to fail and
 * be run again.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm/src/rdv_impl.h"

#include "common/sched_client.h"
#include "common/config.h"
#include "common/rdv_msg.h"
#include "common/schedlist.h"
#include "common/util.h"
#include "common/wire.h"

#define DEFAULT_TIMEOUT_MS 60000
#define SLICE_MS	   10000 /* one long poll */
#define REPLY_SLACK_MS	   5000	 /* beyond a held request's wait before it counts as lost */
#define RETRY_PAUSE_MS	   100	 /* before asking again when gschedd could not hold a request */

struct gc_rdv {
	gp_config_t *cfg;
	gp_client_t *client;
	uint64_t job_id;
	uint32_t attempt;
	int rank, size, timeout_ms;
	unsigned nfence; /* fences made: every rank names its k-th fence alike */
	char addr[64];
	char err[256];
};

/* How gschedd's refusals read as errno values. */
static const struct {
	Gpool__ErrorCode code;
	int err;
} errnos[] = {
    {GPOOL__ERROR_CODE__ERROR_NOT_FOUND, ENOENT},  /* no such job */
    {GPOOL__ERROR_CODE__ERROR_PERMISSION, EACCES}, /* not the owner; a key of another rank */
    {GPOOL__ERROR_CODE__ERROR_AUTH, EACCES},
    {GPOOL__ERROR_CODE__ERROR_TOO_LARGE, EMSGSIZE},
    {GPOOL__ERROR_CODE__ERROR_INVALID, EINVAL},
    {GPOOL__ERROR_CODE__ERROR_STATE, ESTALE}, /* the attempt is no longer running */
    {GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, EAGAIN},
    {GPOOL__ERROR_CODE__ERROR_RATE, EAGAIN},
};

static int errno_of(Gpool__ErrorCode code)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].code == code)
			return errnos[i].err;
	return EPROTO;
}

#define fail(r, e, ...) gc_rdv_errf((r)->err, sizeof((r)->err), (e), __VA_ARGS__)

static void pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The local IPv4 address this host uses towards one tcp:// endpoint (the route a connected
 * UDP socket takes: no packet is sent). "" when unknown. */
static void route_one(const char *endpoint, char *buf, size_t len)
{
	buf[0] = '\0';
	const char *p = strstr(endpoint, "://");
	if (!p || strncmp(endpoint, "tcp", 3) != 0)
		return;
	p += 3;
	const char *colon = strrchr(p, ':');
	char host[256], port[16] = "7820";
	size_t hl = colon ? (size_t)(colon - p) : strlen(p);
	if (hl == 0 || hl >= sizeof(host))
		return;
	memcpy(host, p, hl);
	host[hl] = '\0';
	if (colon)
		snprintf(port, sizeof(port), "%s", colon + 1);
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;
	if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
		return;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == 0 && sin.sin_family == AF_INET)
		inet_ntop(AF_INET, &sin.sin_addr, buf, (socklen_t)len);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
}

/* The same towards the scheduler: the first of its list (`scheduler = tcp://a:7820,
 * tcp://b:7820`, docs/standby.md) that has a route. A list read as one endpoint gave no
 * address, and the ranks then published 0.0.0.0 to each other. */
static void route_addr(const char *schedulers, char *buf, size_t len)
{
	struct gp_schedlist l;
	gp_error_t e;
	buf[0] = '\0';
	if (!schedulers || gp_schedlist_parse(&l, schedulers, &e) < 0)
		return;
	for (size_t i = 0; i < l.n && !buf[0]; i++)
		route_one(l.ep[i], buf, len);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || (*end && *end != ':'))
		return -1;
	*v = x;
	return 0;
}

static void rdv_close(gc_rdv_t *r)
{
	if (!r)
		return;
	gp_client_destroy(&r->client);
	gp_config_destroy(&r->cfg);
	free(r);
}

/* Join as rdv_open does; cfg, when given, is the configuration to reach gschedd with
 * (borrowed), else the commands' one is loaded. */
static gc_rdv_t *open_with(const gp_config_t *cfg, const char *spec, int rank, int size,
			   int timeout_ms, gc_error_t *err)
{
	gc_rdv_t *r = calloc(1, sizeof(*r));
	gp_error_t e = {{0}};
	const char *attempt = getenv("GPOOL_ATTEMPT");
	uint64_t a = 0;
	if (!r) {
		if (err)
			snprintf(err->text, sizeof(err->text), "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (!spec || !*spec) {
		spec = getenv("GPOOL_JOB_ID");
		if (!spec || !*spec) {
			fail(r, EINVAL,
			     "gpool rendezvous: no job id given and GPOOL_JOB_ID is not set");
			goto out;
		}
	}
	if (parse_u64(spec, &r->job_id) < 0 || r->job_id == 0) {
		fail(r, EINVAL, "gpool rendezvous: invalid job id '%s'", spec);
		goto out;
	}
	if (strchr(spec, ':'))
		attempt = strchr(spec, ':') + 1;
	if (!attempt || parse_u64(attempt, &a) < 0 || strchr(attempt, ':') || a == 0 ||
	    a > UINT32_MAX) {
		fail(r, EINVAL, "gpool rendezvous: invalid or missing attempt '%s' (GPOOL_ATTEMPT)",
		     attempt ? attempt : "");
		goto out;
	}
	r->attempt = (uint32_t)a;
	if (size < 1 || rank < 0 || rank >= size) {
		fail(r, EINVAL, "gpool rendezvous: invalid rank %d of size %d", rank, size);
		goto out;
	}
	r->rank = rank;
	r->size = size;
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	if (cfg) {
		if (!(r->client = gp_client_create(cfg, &e))) {
			fail(r, errno ? errno : EINVAL, "gpool rendezvous: %s", e.text);
			goto out;
		}
		route_addr(gp_config_str(cfg, "scheduler"), r->addr, sizeof(r->addr));
		return r;
	}
	if (!(r->cfg = gp_config_create(GP_CLI))) {
		fail(r, ENOMEM, "out of memory");
		goto out;
	}
	if (gp_config_load_file(r->cfg, NULL, &e) < 0 ||
	    !(r->client = gp_client_create(r->cfg, &e))) {
		fail(r, errno ? errno : EINVAL, "gpool rendezvous: %s", e.text);
		goto out;
	}
	const char *ep = getenv("GPOOL_SCHEDULER");
	route_addr(ep && *ep ? ep : gp_config_str(r->cfg, "scheduler"), r->addr, sizeof(r->addr));
	return r;
out:;
	int saved = errno;
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", r->err);
	rdv_close(r);
	errno = saved;
	return NULL;
}

static gc_rdv_t *rdv_open(const char *spec, int rank, int size, const char *token, int timeout_ms,
			  gc_error_t *err)
{
	(void)token;
	return open_with(NULL, spec, rank, size, timeout_ms, err);
}

gc_rdv_t *gc_rdv_gpool_open_cfg(const gp_config_t *cfg, const char *spec, int rank, int size,
				int timeout_ms, gc_error_t *err)
{
	return open_with(cfg, spec, rank, size, timeout_ms, err);
}

/* Send req and wait for its reply of kind `expect`. A request gschedd holds for wait_ms may
 * take that long. No answer (a scheduler restart, a lost message) or "come back later": asked
 * again until the deadline (every request is idempotent). NULL with r->err and errno set. */
static Gpool__Msg *call(gc_rdv_t *r, Gpool__Msg *req, Gpool__Msg__MCase expect, uint32_t wait_ms,
			int64_t deadline)
{
	while (1) {
		int64_t left = deadline - gp_mono_ms();
		if (left <= 0) {
			fail(r, ETIMEDOUT, "gpool rendezvous: no answer from the scheduler");
			return NULL;
		}
		gp_error_t e = {{0}};
		/* a held request is answered when its wait ends, at the deadline at the latest:
		 * give that answer a moment to arrive before calling it lost */
		int64_t limit = (int64_t)wait_ms + REPLY_SLACK_MS;
		int64_t cap = left > (int64_t)wait_ms + 1000 ? left : (int64_t)wait_ms + 1000;
		Gpool__Msg *rep =
		    gp_client_call(r->client, req, (int)(limit < cap ? limit : cap), &e);
		if (!rep) {
			if (errno == ETIMEDOUT)
				continue;
			fail(r, errno ? errno : EPROTO, "gpool rendezvous: %s", e.text);
			return NULL;
		}
		if (rep->m_case == GPOOL__MSG__M_ERROR) {
			Gpool__ErrorCode code = rep->error ? rep->error->code : 0;
			int en = errno_of(code);
			if (en == EAGAIN && gp_mono_ms() + RETRY_PAUSE_MS < deadline) {
				pause_ms(RETRY_PAUSE_MS);
				continue;
			}
			fail(r, en, "gpool rendezvous: %s",
			     rep->error && rep->error->text && *rep->error->text
				 ? rep->error->text
				 : gp_error_code_name(code));
			return NULL;
		}
		if (rep->m_case != expect) {
			fail(r, EPROTO, "gpool rendezvous: unexpected reply %d from the scheduler",
			     (int)rep->m_case);
			return NULL;
		}
		return rep;
	}
}

/* The wait of the next long poll: a slice, at most what is left. */
static uint32_t slice(int64_t deadline)
{
	int64_t left = deadline - gp_mono_ms();
	if (left <= 0)
		return 0;
	return (uint32_t)(left < SLICE_MS ? left : SLICE_MS);
}

static int check_key(gc_rdv_t *r, const char *key)
{
	size_t n = key ? strlen(key) : 0;
	if (n == 0 || n > GC_RDV_KEY_MAX)
		return fail(r, n ? EMSGSIZE : EINVAL, "gpool rendezvous: invalid key '%.40s'",
			    key ? key : "");
	return 0;
}

static int rdv_put(gc_rdv_t *r, const char *key, const void *val, size_t len)
{
	if (check_key(r, key) < 0)
		return -1;
	if (len > GC_RDV_VAL_MAX)
		return fail(r, EMSGSIZE, "gpool rendezvous: value of %zu bytes for '%s' is over %d",
			    len, key, GC_RDV_VAL_MAX);
	Gpool__RdvPut p;
	Gpool__Msg m;
	gp_rdv_put_msg(&m, &p, r->job_id, r->attempt, (uint32_t)r->rank, key, val, len);
	return call(r, &m, GPOOL__MSG__M_RDV_PUT_REPLY, 0, gp_mono_ms() + r->timeout_ms) ? 0 : -1;
}

static int rdv_get(gc_rdv_t *r, const char *key, void **val, size_t *len)
{
	if (check_key(r, key) < 0)
		return -1;
	int64_t deadline = gp_mono_ms() + r->timeout_ms;
	Gpool__RdvGet g = GPOOL__RDV_GET__INIT;
	g.job_id = r->job_id;
	g.attempt = r->attempt;
	g.key = (char *)key;
	while (1) {
		int64_t asked = gp_mono_ms();
		g.wait_ms = slice(deadline);
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_RDV_GET;
		m.rdv_get = &g;
		Gpool__Msg *rep = call(r, &m, GPOOL__MSG__M_RDV_GET_REPLY, g.wait_ms, deadline);
		if (!rep)
			return -1;
		const Gpool__RdvGetReply *gr = rep->rdv_get_reply;
		if (gr->found) {
			void *v = malloc(gr->value.len ? gr->value.len : 1);
			if (!v)
				return fail(r, ENOMEM, "out of memory");
			if (gr->value.len) /* an empty value comes without a buffer */
				memcpy(v, gr->value.data, gr->value.len);
			*val = v;
			*len = gr->value.len;
			return 0;
		}
		if (gp_mono_ms() >= deadline)
			return fail(r, ETIMEDOUT, "gpool rendezvous: key '%s' not put within %d ms",
				    key, r->timeout_ms);
		if (gp_mono_ms() - asked < (int64_t)g.wait_ms / 2)
			pause_ms(
			    RETRY_PAUSE_MS); /* not held (the scheduler is busy): do not spin */
	}
}

static int rdv_fence(gc_rdv_t *r)
{
	int64_t deadline = gp_mono_ms() + r->timeout_ms;
	char name[32];
	snprintf(name, sizeof(name), "fence.%u", ++r->nfence);
	Gpool__RdvFence f = GPOOL__RDV_FENCE__INIT;
	f.job_id = r->job_id;
	f.attempt = r->attempt;
	f.rank = (uint32_t)r->rank;
	f.name = name;
	f.size = (uint32_t)r->size;
	uint32_t entered = 0;
	while (1) {
		int64_t asked = gp_mono_ms();
		f.wait_ms = slice(deadline);
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_RDV_FENCE;
		m.rdv_fence = &f;
		Gpool__Msg *rep = call(r, &m, GPOOL__MSG__M_RDV_FENCE_REPLY, f.wait_ms, deadline);
		if (!rep)
			return -1;
		if (rep->rdv_fence_reply->done)
			return 0;
		entered = rep->rdv_fence_reply->entered;
		if (gp_mono_ms() >= deadline)
			return fail(r, ETIMEDOUT,
				    "gpool rendezvous: %u of %d ranks reached %s within %d ms",
				    entered, r->size, name, r->timeout_ms);
		if (gp_mono_ms() - asked < (int64_t)f.wait_ms / 2)
			pause_ms(RETRY_PAUSE_MS);
	}
}

static const char *rdv_local_addr(const gc_rdv_t *r)
{
	return r->addr;
}

static const char *rdv_error(const gc_rdv_t *r)
{
	return r->err;
}

const gc_rdv_ops_t gc_rdv_gpool = GC_RDV_OPS("gpool");
