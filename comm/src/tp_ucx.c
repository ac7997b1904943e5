/* tp_ucx.c - the point-to-point layer over UCX's UCP tag API (tp.h).
 *
 * One UCP context and one worker per communicator; an endpoint to every rank, itself
 * included, made in connect() from the worker addresses the rendezvous swapped.
 *
 * Matching. UCX matches receives worker-wide by tag, so the 64-bit UCX tag says who
 * sent a message and where it stands in that pair's stream:
 *
 *	 63 62       48 47          32 31                           0
 *	+--+-----------+--------------+------------------------------+
 *	| 0|  sender   | pair sequence|         caller's tag         |  data
 *	| 1|  sender   |     kind     |              0               |  control
 *	+--+-----------+--------------+------------------------------+
 *
 * A data receive matches the upper 32 bits exactly; the caller's tag is left out of
 * the match and compared on completion, so a mismatch fails the receive with EPROTO
 * instead of waiting forever for a message that will not come. Each side counts
 * messages per peer (sseq, rseq): the n-th receive posted for a peer matches that
 * peer's n-th send. The 16-bit sequence wraps harmlessly: UCX keeps one sender's
 * messages in order and matches posted receives in posting order, so even equal tags
 * pair up in order. Control messages (HELLO and VERDICT in connect, BYE in destroy,
 * ABORT and ABORT_ACK on failure) have bit 63 set, so data never matches them.
 *
 * Blocking. progress() runs ucp_worker_progress until nothing moves, then arms the
 * worker and sleeps in poll() on its event fd; it never spins. A sleep lasts at most
 * the keepalive interval: UCX's keepalive rounds run inside progress.
 *
 * Failure. Endpoints use UCP_ERR_HANDLING_MODE_PEER. A lost peer reaches the error
 * handler through a TCP reset (a killed process: at once) or TCP keepalive (a silent
 * host); create() sets the keepalive from timeout_ms unless UCX_* variables say
 * otherwise. Any peer lost outside destroy() breaks the transport, and so does an
 * ABORT from a peer that broke. Breaking: cancel the pending receives, send ABORT to
 * every live peer and wait (at most QUIET_MS) until each has answered with ABORT_ACK,
 * then close every endpoint by force, which gives back every pending request. The
 * ABORT round is for two reasons: a peer learns at once why (instead of from a reset),
 * and no endpoint is torn down while data still flows through it: UCX 1.13's tcp
 * transport crashes (SIGSEGV in uct_tcp_cm_insert_ep and friends) in a rank that sees
 * several peers close busy connections by force (7 of 14 runs: 5 ranks streaming 64
 * MiB around a ring, one killed, the others closing by force at once; 0 of 28 with
 * the ABORT round first). The price: a rank reports the failure once the data in
 * flight has drained (or QUIET_MS passed): 0.3-0.8 s with 3 ranks, up to 2.6 s with 5
 * ranks on 2 busy cores. destroy() is orderly: every rank sends BYE to every other and
 * waits (up to timeout_ms) for theirs before closing, so a rank that finishes early
 * never breaks ranks still working.
 *
 * UCX 1.13 quirk: in PEER mode UCX uses only transports that report peer failure:
 * tcp (and cma) but not the shared-memory ones (sysv, posix) nor "self", so ranks on
 * one host, and a rank with itself, talk over TCP loopback.
 *
 * Requests are the caller's gc_tpreq_t: r->tp_priv points at the transport (UCX calls
 * back with r as user data) and r->off holds UCX's own request (from UCX's pool) while
 * in flight. No malloc per message. Receives never complete "immediately": UCX 1.13
 * returns NULL for an immediate receive without filling in the sender's tag and
 * length (UCP_OP_ATTR_FIELD_RECV_INFO is ignored), so they ask for the callback always
 * (UCP_OP_ATTR_FLAG_NO_IMM_CMPL), which UCX may then call before returning.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucp/api/ucp.h>

#include "comm/src/tp.h"

#define BLOB_MAGIC    0x58554347u /* "GCUX" */
#define HELLO_MAGIC   0x53484347u /* "GCHS" */
#define WIRE_VERSION  1
#define MAX_RANKS     32768 /* the tag's 15 sender bits */
#define CTRL_BIT      (1ull << 63)
#define DATA_MATCH    0xffffffff00000000ull
#define CTRL_MATCH    0xffffffffffffffffull
#define CLOSE_WAIT_MS 1000 /* longest a close may take to settle */
#define QUIET_MS      2000 /* longest a breaking rank waits for its peers' ABORT_ACK */

enum { CTRL_HELLO = 1, CTRL_VERDICT = 2, CTRL_BYE = 3, CTRL_ABORT = 4, CTRL_ABORT_ACK = 5 };

typedef struct {
	int32_t err;
	char why[224];
} abort_msg_t;

typedef struct {
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint32_t rank;
	uint32_t size;
	uint64_t comm_key;
	uint32_t addr_len;
	uint32_t pad;
} blob_hdr_t;

typedef struct {
	uint32_t magic;
	uint16_t version;
	uint16_t pad;
	uint32_t rank;
	uint32_t size;
	uint64_t comm_key;
	uint64_t mac; /* binds the token to this communicator and pair */
} hello_t;

typedef struct {
	gc_tp_t *t;
	int rank;
	ucp_ep_h ep;
	ucs_status_t lost; /* UCS_OK, or what its error handler said */
	uint32_t sseq, rseq;
	/* the failure protocol's messages (the transport's own, never on t->pend) */
	gc_tpreq_t abort_in, ack_in, abort_out, ack_out;
	abort_msg_t abort_msg;
	int acked; /* ABORT_ACK sent */
} peer_t;

struct gc_tp {
	int rank, size;
	int timeout_ms;
	int tick_ms; /* longest single sleep: the keepalive interval */
	uint64_t comm_key;
	uint64_t mac_key[2];
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_address_t *addr;
	int efd;
	peer_t *peers;
	gc_tpreq_t *pend;	 /* requests UCX still holds (linked by ->next) */
	int ncomp;		 /* completions since progress() last returned */
	int newly_lost;		 /* an error handler ran since the last look */
	int fail_err, fail_peer; /* a request failed on a link: about to break */
	int connected;
	int armed;   /* the ABORT receives are posted */
	int closing; /* in destroy: lost peers are expected */
	abort_msg_t abort_out;
	char none; /* the buffer of empty control messages */
	int broken;
	int err; /* errno of the failure that broke the transport */
	char msg[256];
};

/* ---- small helpers ---- */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int setmsg(gc_tp_t *t, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int setmsg(gc_tp_t *t, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
	errno = e;
	return -1;
}

static void copy_err(gc_error_t *err, const char *msg)
{
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", msg);
}

/* UCX 1.13's tcp transport reports every lost connection, reset or keepalive, as
 * "endpoint timeout": for callers it is a lost connection (ECONNRESET). */
static const struct {
	ucs_status_t st;
	int e;
	const char *what;
} status_errno[] = {
    {UCS_ERR_CONNECTION_RESET, ECONNRESET, "connection reset"},
    {UCS_ERR_ENDPOINT_TIMEOUT, ECONNRESET, "connection lost"},
    {UCS_ERR_TIMED_OUT, ETIMEDOUT, "timed out"},
    {UCS_ERR_MESSAGE_TRUNCATED, EMSGSIZE, "message truncated"},
    {UCS_ERR_CANCELED, ECANCELED, "canceled"},
    {UCS_ERR_NO_MEMORY, ENOMEM, "out of memory"},
    {UCS_ERR_UNREACHABLE, EHOSTUNREACH, "unreachable"},
    {UCS_ERR_REJECTED, ECONNREFUSED, "connection refused"},
    {UCS_ERR_INVALID_PARAM, EINVAL, "invalid parameter"},
    {UCS_ERR_INVALID_ADDR, EINVAL, "invalid address"},
    {UCS_ERR_UNSUPPORTED, ENOTSUP, "unsupported"},
    {UCS_ERR_BUSY, EBUSY, "busy"},
};

static int errno_of(ucs_status_t st)
{
	for (size_t i = 0; i < sizeof(status_errno) / sizeof(status_errno[0]); i++)
		if (status_errno[i].st == st)
			return status_errno[i].e;
	return EPIPE;
}

static const char *what_of(ucs_status_t st)
{
	for (size_t i = 0; i < sizeof(status_errno) / sizeof(status_errno[0]); i++)
		if (status_errno[i].st == st)
			return status_errno[i].what;
	return "failed";
}

/* A request error that says the link failed (rather than "this message was wrong"):
 * such an error breaks the transport. */
static int is_link_error(int e)
{
	return e != 0 && e != EMSGSIZE && e != EPROTO;
}

/* SipHash-2-4: the hello's MAC, so the token itself never crosses the network. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                          \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                             \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                             \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                          \
	} while (0)

static uint64_t siphash24(const uint64_t k[2], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t v0 = 0x736f6d6570736575ull ^ k[0], v1 = 0x646f72616e646f6dull ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ull ^ k[0], v3 = 0x7465646279746573ull ^ k[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, p + i, 8);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)p[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The key is the token's hash, so the MAC proves knowledge of the token; the message
 * binds it to this communicator and this ordered pair (no replay across either). */
static uint64_t hello_mac(const gc_tp_t *t, uint32_t from, uint32_t to)
{
	uint64_t msg[4] = {HELLO_MAGIC, t->comm_key, from, to};

	return siphash24(t->mac_key, msg, sizeof(msg));
}

static uint64_t data_tag(int sender, uint32_t seq, uint32_t tag)
{
	return (uint64_t)sender << 48 | (uint64_t)(seq & 0xffff) << 32 | tag;
}

static uint64_t ctrl_tag(int sender, uint32_t kind)
{
	return CTRL_BIT | (uint64_t)sender << 48 | (uint64_t)kind << 32;
}

/* ---- configuration ---- */

/* Settings; a UCX_* variable in the environment wins. The tcp transport's keys go in
 * without their "TCP_" (with it UCX 1.13 warns "invalid configuration" and ignores
 * them).
 * - Liveness from timeout_ms: TCP keepalive counts whole seconds, a lost host is found
 *   after idle + cnt * 1 s, about 2/3 of the timeout (at least 2 s).
 * - No zero-copy sends: UCX 1.13's tcp transport completes an in-flight zero-copy send
 *   twice when its peer dies ("Assertion `comp->count > 0' failed" in uct_iface.h,
 *   SIGABRT: the survivor dies too). Seen in 5 of 6 runs where two ranks stream 64 MiB
 *   to each other and one is killed; 0 of 6 with ZCOPY_THRESH=inf. */
static int tune_config(gc_tp_t *t, ucp_config_t *cfg)
{
	int target = t->timeout_ms * 2 / 3;
	int idle = target / 2000 > 1 ? target / 2000 : 1;
	int cnt = target / 1000 - idle > 1 ? target / 1000 - idle : 1;
	char ka[32], kidle[32], kcnt[32];
	struct {
		const char *name, *env, *val;
	} set[] = {
	    {"KEEPALIVE_INTERVAL", "UCX_KEEPALIVE_INTERVAL", ka},
	    {"KEEPIDLE", "UCX_TCP_KEEPIDLE", kidle},
	    {"KEEPINTVL", "UCX_TCP_KEEPINTVL", "1s"},
	    {"KEEPCNT", "UCX_TCP_KEEPCNT", kcnt},
	    {"ZCOPY_THRESH", "UCX_ZCOPY_THRESH", "inf"},
	};

	snprintf(ka, sizeof(ka), "%dms", t->tick_ms);
	snprintf(kidle, sizeof(kidle), "%ds", idle);
	snprintf(kcnt, sizeof(kcnt), "%d", cnt);
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
		ucs_status_t st;

		if (getenv(set[i].env))
			continue;
		st = ucp_config_modify(cfg, set[i].name, set[i].val);
		if (st != UCS_OK)
			return setmsg(t, EINVAL, "ucx: cannot set '%s' to '%s': %s", set[i].name,
				      set[i].val, ucs_status_string(st));
	}
	return 0;
}

/* ---- completions ---- */

static void *ucx_req(const gc_tpreq_t *r)
{
	return (void *)(uintptr_t)r->off;
}

static void send_cb(void *request, ucs_status_t st, void *user_data)
{
	gc_tpreq_t *r = user_data;
	gc_tp_t *t = r->tp_priv;

	r->err = st == UCS_OK ? 0 : errno_of(st);
	r->off = 0;
	r->done = 1;
	t->ncomp++;
	ucp_request_free(request);
}

static void recv_cb(void *request, ucs_status_t st, const ucp_tag_recv_info_t *info,
		    void *user_data)
{
	gc_tpreq_t *r = user_data;
	gc_tp_t *t = r->tp_priv;

	r->off = 0;
	if (st == UCS_OK && (uint32_t)info->sender_tag != r->tag) {
		r->err = EPROTO;
		r->off = (uint32_t)info->sender_tag; /* for the message */
	} else {
		r->err = st == UCS_OK ? 0 : errno_of(st);
	}
	r->len = st == UCS_OK ? info->length : 0;
	r->done = 1;
	t->ncomp++;
	ucp_request_free(request);
}

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	peer_t *p = arg;

	if (p->lost == UCS_OK)
		p->lost = st == UCS_OK ? UCS_ERR_CONNECTION_RESET : st;
	p->t->newly_lost = 1;
}

/* Progress until nothing moves, a request completes or a peer is lost. */
static void drain(gc_tp_t *t)
{
	while (ucp_worker_progress(t->worker) && t->ncomp == 0 && !t->newly_lost)
		;
}

/* Sleep until UCX has something for us, at most MS (capped at the keepalive tick);
 * never spins. Call it only after ucp_worker_progress found nothing to do. */
static void nap(gc_tp_t *t, int ms)
{
	struct pollfd pfd = {.fd = t->efd, .events = POLLIN};
	ucs_status_t st = ucp_worker_arm(t->worker);

	if (st == UCS_ERR_BUSY || ms <= 0)
		return; /* events are waiting: the caller progresses again */
	if (ms > t->tick_ms)
		ms = t->tick_ms;
	if (st != UCS_OK) {
		/* cannot sleep on the fd: a short nap, still no spin */
		struct timespec ts = {0, 1000000};

		nanosleep(&ts, NULL);
		return;
	}
	poll(&pfd, 1, ms);
}

static int ms_left(uint64_t deadline)
{
	uint64_t now = now_ms();

	if (now >= deadline)
		return 0;
	return deadline - now > (uint64_t)INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

/* ---- failure ---- */

/* Close every endpoint: by force (nothing more goes out; peers see a reset) or in
 * order (what is queued goes out first; a lost peer is closed by force). Waits up to
 * WAIT_MS for the closes to settle. */
static void close_eps(gc_tp_t *t, int force, int wait_ms)
{
	void **reqs = calloc((size_t)t->size, sizeof(*reqs));
	uint64_t deadline = now_ms() + (uint64_t)wait_ms;
	int left = 0;

	for (int i = 0; i < t->size; i++) {
		peer_t *p = &t->peers[i];
		ucp_request_param_t prm = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS};
		void *q;

		if (!p->ep)
			continue;
		if (force || p->lost != UCS_OK)
			prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
		q = ucp_ep_close_nbx(p->ep, &prm);
		p->ep = NULL;
		if (q && !UCS_PTR_IS_ERR(q)) {
			if (reqs) {
				reqs[i] = q;
				left++;
			} else {
				ucp_request_free(q); /* out of memory: let it finish alone */
			}
		}
	}
	while (left > 0) {
		while (ucp_worker_progress(t->worker))
			;
		left = 0;
		for (int i = 0; i < t->size; i++) {
			if (!reqs[i])
				continue;
			if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
				ucp_request_free(reqs[i]);
				reqs[i] = NULL;
			} else {
				left++;
			}
		}
		if (left == 0 || ms_left(deadline) == 0)
			break;
		nap(t, ms_left(deadline) < 10 ? ms_left(deadline) : 10);
	}
	/* still closing after the wait: UCX finishes (or drops) them in worker destroy */
	for (int i = 0; reqs && i < t->size; i++)
		if (reqs[i])
			ucp_request_free(reqs[i]);
	free(reqs);
}

/* A request came back: say why it failed, or remember a link failure for check(). */
static void note_done(gc_tp_t *t, gc_tpreq_t *r)
{
	if (t->broken) {
		if (r->err == ECANCELED)
			r->err = t->err;
	} else if (r->err == EPROTO) {
		setmsg(t, EPROTO, "ucx: message from rank %d has tag 0x%x, expected 0x%x", r->peer,
		       (unsigned)r->off, (unsigned)r->tag);
	} else if (r->err == EMSGSIZE) {
		setmsg(t, EMSGSIZE, "ucx: message from rank %d is longer than %zu bytes", r->peer,
		       r->size);
	} else if (is_link_error(r->err) && t->fail_err == 0) {
		t->fail_err = r->err;
		t->fail_peer = r->peer;
	}
}

/* Drop completed requests from the pending list. When control is back with the
 * caller the list holds no done request: the caller may reuse the storage. */
static void reap(gc_tp_t *t)
{
	gc_tpreq_t **pp = &t->pend;

	while (*pp) {
		gc_tpreq_t *r = *pp;

		if (!r->done) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = NULL;
		note_done(t, r);
	}
}

static int post_recv(gc_tp_t *t, gc_tpreq_t *r, int peer, uint64_t utag, uint64_t mask,
		     uint32_t tag, void *buf, size_t len, int track_it);
static int post_send(gc_tp_t *t, gc_tpreq_t *r, int peer, uint64_t utag, uint32_t tag,
		     const void *buf, size_t len, int track_it);

static int live(const gc_tp_t *t, int i)
{
	return i != t->rank && t->peers[i].lost == UCS_OK && t->peers[i].ep;
}

/* The ABORT round: tell every live peer, answer each ABORT with an ABORT_ACK, and wait
 * until every live peer has acknowledged ours (or QUIET_MS passed): then no data flows
 * any more between us and them, and the endpoints can go by force. */
static void quiesce(gc_tp_t *t)
{
	uint64_t deadline =
	    now_ms() + (uint64_t)(t->timeout_ms < QUIET_MS ? t->timeout_ms : QUIET_MS);

	t->abort_out.err = t->err;
	snprintf(t->abort_out.why, sizeof(t->abort_out.why), "%.223s", t->msg);
	for (int i = 0; i < t->size; i++)
		if (live(t, i) &&
		    post_send(t, &t->peers[i].abort_out, i, ctrl_tag(t->rank, CTRL_ABORT), 0,
			      &t->abort_out, sizeof(t->abort_out), 0) < 0)
			t->peers[i].abort_out.done = 1;
	for (;;) {
		int left = 0;

		while (ucp_worker_progress(t->worker))
			;
		for (int i = 0; i < t->size; i++) {
			peer_t *p = &t->peers[i];

			if (!live(t, i))
				continue;
			if (p->abort_in.done && !p->abort_in.err && !p->acked) {
				p->acked = 1;
				if (post_send(t, &p->ack_out, i, ctrl_tag(t->rank, CTRL_ABORT_ACK),
					      0, &t->none, 0, 0) < 0)
					p->ack_out.done = 1;
			}
			left += !p->ack_in.done;
		}
		if (left == 0 || ms_left(deadline) == 0)
			break;
		nap(t, ms_left(deadline));
	}
}

/* Break the transport: cancel the receives, the ABORT round, close every endpoint by
 * force, and wait until UCX has given back every pending request. */
static void fail_all(gc_tp_t *t, int e)
{
	uint64_t deadline;

	if (t->broken && !t->pend && !t->armed)
		return;
	if (!t->broken) {
		t->broken = 1;
		t->err = e;
	}
	for (gc_tpreq_t *r = t->pend; r; r = r->next)
		if (!r->done && ucx_req(r))
			ucp_request_cancel(t->worker, ucx_req(r));
	if (t->armed)
		quiesce(t);
	close_eps(t, 1, CLOSE_WAIT_MS);
	/* our own control receives: cancelled; our own sends: given back by the close */
	for (int i = 0; t->armed && i < t->size; i++) {
		peer_t *p = &t->peers[i];

		if (!p->abort_in.done && ucx_req(&p->abort_in))
			ucp_request_cancel(t->worker, ucx_req(&p->abort_in));
		if (!p->ack_in.done && ucx_req(&p->ack_in))
			ucp_request_cancel(t->worker, ucx_req(&p->ack_in));
	}
	deadline = now_ms() + CLOSE_WAIT_MS;
	for (;;) {
		int left = 0;

		while (ucp_worker_progress(t->worker))
			;
		for (gc_tpreq_t *r = t->pend; r; r = r->next)
			left += !r->done;
		for (int i = 0; t->armed && i < t->size; i++) {
			peer_t *p = &t->peers[i];

			left += !p->abort_in.done + !p->ack_in.done + !p->abort_out.done +
				!p->ack_out.done;
		}
		if (left == 0 || ms_left(deadline) == 0)
			break;
		nap(t, 10);
	}
	t->armed = 0;
	/* whatever UCX still holds now is failed here so that no caller hangs (never seen:
	 * cancelled receives and force-closed endpoints give every request back at once) */
	for (gc_tpreq_t *r = t->pend; r; r = r->next)
		if (!r->done) {
			r->err = t->err;
			r->done = 1;
			t->ncomp++;
		}
	reap(t);
}

/* Look at what the error handlers and the completions said: a lost peer (outside
 * destroy), a peer's ABORT or a request failed on its link breaks the transport.
 * Returns -1 when it is broken. */
static int check(gc_tp_t *t)
{
	if (t->broken)
		return -1;
	if (t->newly_lost && !t->closing) {
		t->newly_lost = 0;
		for (int i = 0; i < t->size; i++) {
			peer_t *p = &t->peers[i];

			if (p->lost == UCS_OK)
				continue;
			setmsg(t, errno_of(p->lost), "ucx: lost rank %d: %s (ucx: %s)", i,
			       what_of(p->lost), ucs_status_string(p->lost));
			fail_all(t, errno_of(p->lost));
			return -1;
		}
	}
	for (int i = 0; t->armed && !t->closing && i < t->size; i++) {
		peer_t *p = &t->peers[i];

		if (i == t->rank || !p->abort_in.done || p->abort_in.err)
			continue;
		p->abort_msg.why[sizeof(p->abort_msg.why) - 1] = 0;
		setmsg(t, EPIPE, "ucx: rank %d gave up: %.200s", i, p->abort_msg.why);
		fail_all(t, EPIPE);
		return -1;
	}
	reap(t);
	if (t->fail_err == 0 || t->closing)
		return 0;
	setmsg(t, t->fail_err, "ucx: rank %d: %s", t->fail_peer, strerror(t->fail_err));
	fail_all(t, t->fail_err);
	return -1;
}

/* After connect: a receive for each peer's ABORT and ABORT_ACK. */
static int arm(gc_tp_t *t)
{
	for (int i = 0; i < t->size; i++) {
		peer_t *p = &t->peers[i];

		p->abort_in.done = p->ack_in.done = p->abort_out.done = p->ack_out.done = 1;
		if (i == t->rank)
			continue;
		if (post_recv(t, &p->abort_in, i, ctrl_tag(i, CTRL_ABORT), CTRL_MATCH, 0,
			      &p->abort_msg, sizeof(p->abort_msg), 0) < 0 ||
		    post_recv(t, &p->ack_in, i, ctrl_tag(i, CTRL_ABORT_ACK), CTRL_MATCH, 0,
			      &t->none, 0, 0) < 0)
			return -1;
		t->armed = 1;
	}
	return 0;
}

/* ---- posting ---- */

static void req_init(gc_tp_t *t, gc_tpreq_t *r, int peer, uint32_t tag, void *buf, size_t len)
{
	r->done = 0;
	r->err = 0;
	r->len = 0;
	r->peer = peer;
	r->tag = tag;
	r->buf = buf;
	r->size = len;
	r->off = 0;
	r->tp_priv = t;
	r->next = NULL;
}

/* Keep R on the pending list (when TRACK_IT) while UCX holds it (Q, not yet called
 * back). The transport's own requests stay off the list. */
static void track(gc_tp_t *t, gc_tpreq_t *r, void *q, int track_it)
{
	if (r->done) {
		if (track_it)
			note_done(t, r); /* called back already, inside the post */
		return;
	}
	r->off = (size_t)(uintptr_t)q;
	if (track_it) {
		r->next = t->pend;
		t->pend = r;
	}
}

/* Post a receive of UTAG (matched with MASK), checking TAG on completion. */
static int post_recv(gc_tp_t *t, gc_tpreq_t *r, int peer, uint64_t utag, uint64_t mask,
		     uint32_t tag, void *buf, size_t len, int track_it)
{
	ucp_request_param_t prm = {
	    .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
			    UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
	    .cb.recv = recv_cb,
	    .user_data = r,
	};
	void *q;

	req_init(t, r, peer, tag, buf, len);
	q = ucp_tag_recv_nbx(t->worker, buf, len, utag, mask, &prm);
	if (UCS_PTR_IS_ERR(q))
		return setmsg(t, errno_of(UCS_PTR_STATUS(q)), "ucx: receive from rank %d: %s", peer,
			      ucs_status_string(UCS_PTR_STATUS(q)));
	track(t, r, q, track_it);
	return 0;
}

static int post_send(gc_tp_t *t, gc_tpreq_t *r, int peer, uint64_t utag, uint32_t tag,
		     const void *buf, size_t len, int track_it)
{
	ucp_request_param_t prm = {
	    .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
	    .cb.send = send_cb,
	    .user_data = r,
	};
	void *q;

	req_init(t, r, peer, tag, (void *)buf, len);
	q = ucp_tag_send_nbx(t->peers[peer].ep, buf, len, utag, &prm);
	if (UCS_PTR_IS_ERR(q))
		return setmsg(t, errno_of(UCS_PTR_STATUS(q)), "ucx: send to rank %d: %s", peer,
			      ucs_status_string(UCS_PTR_STATUS(q)));
	if (q == NULL) {
		r->done = 1;
		t->ncomp++;
		return 0;
	}
	track(t, r, q, track_it);
	return 0;
}

/* The worker's address (as wa's field_mask and flags ask) into wa and t->addr. 0 / -1. */
static int worker_address(gc_tp_t *t, ucp_worker_attr_t *wa)
{
	ucs_status_t st = ucp_worker_query(t->worker, wa);
	if (st != UCS_OK)
		return setmsg(t, ENODEV, "ucx: no worker address: %s", ucs_status_string(st));
	t->addr = wa->address;
	return 0;
}

/* ---- the operations ---- */

static void tp_destroy(gc_tp_t *t);

static gc_tp_t *tp_create(const gc_tp_params_t *p, void *blob, size_t *blob_len, gc_error_t *err)
{
	static const uint64_t zero[2];
	const char *token = p->token ? p->token : "";
	ucp_worker_attr_t wa = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
	ucp_config_t *cfg = NULL;
	ucp_params_t up = {0};
	ucp_worker_params_t wp = {0};
	ucs_status_t st;
	blob_hdr_t h;
	gc_tp_t *t;

	if (p->size < 1 || p->size > MAX_RANKS || p->rank < 0 || p->rank >= p->size) {
		copy_err(err, "ucx: rank or size out of range (at most 32768 ranks)");
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->peers = calloc((size_t)p->size, sizeof(*t->peers)))) {
		free(t);
		copy_err(err, "ucx: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	t->rank = p->rank;
	t->size = p->size;
	t->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 10000;
	t->tick_ms = t->timeout_ms / 4 < 100 ? 100 : t->timeout_ms / 4;
	t->comm_key = p->comm_key;
	t->efd = -1;
	t->mac_key[0] = siphash24(zero, token, strlen(token));
	t->mac_key[1] = siphash24(t->mac_key, token, strlen(token));
	for (int i = 0; i < p->size; i++) {
		t->peers[i].t = t;
		t->peers[i].rank = i;
	}

	st = ucp_config_read(NULL, NULL, &cfg);
	if (st != UCS_OK) {
		setmsg(t, EINVAL, "ucx: cannot read the configuration: %s", ucs_status_string(st));
		goto fail;
	}
	if (tune_config(t, cfg) < 0) {
		ucp_config_release(cfg);
		goto fail;
	}
	up.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
			UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
	up.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
	up.mt_workers_shared = 0;
	up.estimated_num_eps = (size_t)p->size;
	st = ucp_init(&up, cfg, &t->ctx);
	ucp_config_release(cfg);
	if (st != UCS_OK) {
		setmsg(t, ENODEV, "ucx: init failed: %s", ucs_status_string(st));
		goto fail;
	}
	/* one thread at a time, not always the same one (the communicator's thread) */
	wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
	wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
	st = ucp_worker_create(t->ctx, &wp, &t->worker);
	if (st != UCS_OK) {
		t->worker = NULL;
		setmsg(t, ENODEV, "ucx: cannot create a worker: %s", ucs_status_string(st));
		goto fail;
	}
	st = ucp_worker_get_efd(t->worker, &t->efd);
	if (st != UCS_OK) {
		setmsg(t, ENODEV, "ucx: no event fd: %s", ucs_status_string(st));
		goto fail;
	}
	if (worker_address(t, &wa) < 0)
		goto fail;
	if (sizeof(h) + wa.address_length > GC_TP_BLOB_MAX) {
		/* too many devices to list: drop the shared-memory ones (unused in PEER mode) */
		size_t full = wa.address_length;

		ucp_worker_release_address(t->worker, t->addr);
		t->addr = NULL;
		wa.field_mask |= UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
		wa.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
		if (worker_address(t, &wa) < 0)
			goto fail;
		if (sizeof(h) + wa.address_length > GC_TP_BLOB_MAX) {
			setmsg(t, E2BIG,
			       "ucx: worker address of %zu bytes (%zu network only) exceeds %zu: "
			       "name fewer devices (UCX_NET_DEVICES, UCX_TLS)",
			       full, wa.address_length, GC_TP_BLOB_MAX - sizeof(h));
			goto fail;
		}
	}
	memset(&h, 0, sizeof(h));
	h.magic = BLOB_MAGIC;
	h.version = WIRE_VERSION;
	h.rank = (uint32_t)t->rank;
	h.size = (uint32_t)t->size;
	h.comm_key = t->comm_key;
	h.addr_len = (uint32_t)wa.address_length;
	memcpy(blob, &h, sizeof(h));
	memcpy((char *)blob + sizeof(h), t->addr, wa.address_length);
	*blob_len = sizeof(h) + wa.address_length;
	return t;
fail:
	copy_err(err, t->msg);
	{
		int e = errno;

		tp_destroy(t);
		errno = e;
	}
	return NULL;
}

static int check_blob(gc_tp_t *t, int i, const void *blob, size_t len)
{
	blob_hdr_t h;

	if (len < sizeof(h))
		return setmsg(t, EPROTO, "ucx: rank %d's address is %zu bytes, too short", i, len);
	memcpy(&h, blob, sizeof(h));
	if (h.magic != BLOB_MAGIC || h.version != WIRE_VERSION)
		return setmsg(t, EPROTO, "ucx: rank %d's address is not a gcomm ucx address", i);
	if (h.comm_key != t->comm_key)
		return setmsg(t, EPROTO, "ucx: rank %d's address belongs to another communicator",
			      i);
	if (h.rank != (uint32_t)i || h.size != (uint32_t)t->size || h.addr_len != len - sizeof(h))
		return setmsg(t, EPROTO,
			      "ucx: rank %d's address says rank %u of %u (%u address bytes in %zu)",
			      i, h.rank, h.size, h.addr_len, len);
	return 0;
}

static int check_hello(gc_tp_t *t, int i, const hello_t *m, size_t len)
{
	if (len != sizeof(*m) || m->magic != HELLO_MAGIC || m->version != WIRE_VERSION ||
	    m->rank != (uint32_t)i || m->size != (uint32_t)t->size)
		return setmsg(t, EPROTO, "ucx: bad hello from rank %d", i);
	if (m->comm_key != t->comm_key)
		return setmsg(t, EPROTO, "ucx: rank %d belongs to another communicator", i);
	if (m->mac != hello_mac(t, (uint32_t)i, (uint32_t)t->rank))
		return setmsg(t, EACCES, "ucx: rank %d holds another token", i);
	return 0;
}

/* Send OUT[i] to every rank i and receive IN[i] from each (control message KIND, SIZE
 * bytes each); wait for all of it until DEADLINE. LENS[i] gets the received length. */
static int exchange(gc_tp_t *t, uint32_t kind, const void *out, void *in, size_t size, size_t *lens,
		    uint64_t deadline)
{
	int n = t->size, rc = -1;
	gc_tpreq_t *rq = calloc(2 * (size_t)n, sizeof(*rq));

	if (!rq)
		return setmsg(t, ENOMEM, "ucx: out of memory");
	for (int i = 0; i < n; i++)
		if (post_recv(t, &rq[2 * i], i, ctrl_tag(i, kind), CTRL_MATCH, 0,
			      (char *)in + (size_t)i * size, size, 1) < 0)
			goto out;
	for (int i = 0; i < n; i++)
		if (post_send(t, &rq[2 * i + 1], i, ctrl_tag(t->rank, kind), 0,
			      (const char *)out + (size_t)i * size, size, 1) < 0)
			goto out;
	for (;;) {
		int left = 0, i;

		drain(t);
		if (check(t) < 0)
			goto out;
		t->ncomp = 0;
		for (i = 0; i < 2 * n; i++)
			left += !rq[i].done;
		if (left == 0)
			break;
		if (ms_left(deadline) == 0) {
			for (i = 0; i < 2 * n && rq[i].done; i++)
				;
			setmsg(t, ETIMEDOUT, "ucx: rank %d did not answer within %d ms", i / 2,
			       t->timeout_ms);
			goto out;
		}
		nap(t, ms_left(deadline));
	}
	for (int i = 0; i < 2 * n; i++)
		if (rq[i].err) {
			setmsg(t, rq[i].err, "ucx: connecting %s rank %d failed: %s",
			       i % 2 ? "to" : "from", i / 2, strerror(rq[i].err));
			goto out;
		}
	for (int i = 0; i < n; i++)
		lens[i] = rq[2 * i].len;
	rc = 0;
out:
	if (rc < 0) {
		int e = t->broken ? t->err : errno;

		/* requests still in UCX's hands would point at freed memory */
		fail_all(t, e);
		errno = e;
	}
	free(rq);
	return rc;
}

/* What a rank thinks of the hellos it got: sent to every rank in the second round, so
 * that a rank refused by another learns why, and so no rank closes an endpoint before
 * both sides have had a message through it (UCX 1.13's tcp transport can abort the
 * process, "Assertion `ep->conn_state != UCT_TCP_EP_CONN_STATE_CLOSED'", when a peer
 * closes an endpoint it is still connecting). */
typedef struct {
	int32_t err; /* 0 or the errno of the first bad hello */
	int32_t rank;
} verdict_t;

static int tp_connect(gc_tp_t *t, const void *const *blobs, const size_t *lens, const int *host_of,
		      gc_error_t *err)
{
	(void)host_of; /* UCX finds its own way between ranks on one host */
	uint64_t deadline = now_ms() + (uint64_t)t->timeout_ms;
	int n = t->size, rc = -1;
	hello_t *out = calloc((size_t)n, sizeof(*out)), *in = calloc((size_t)n, sizeof(*in));
	verdict_t *vout = calloc((size_t)n, sizeof(*vout)), *vin = calloc((size_t)n, sizeof(*vin));
	size_t *got = calloc((size_t)n, sizeof(*got));
	verdict_t mine = {0, -1};
	char why[sizeof(t->msg)] = "";

	if (!out || !in || !vout || !vin || !got) {
		setmsg(t, ENOMEM, "ucx: out of memory");
		goto out;
	}
	if (t->broken || t->connected) {
		setmsg(t, EINVAL, "ucx: connect called twice");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		ucp_ep_params_t ep = {0};
		ucs_status_t st;

		if (check_blob(t, i, blobs[i], lens[i]) < 0)
			goto out;
		ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
				UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
				UCP_EP_PARAM_FIELD_ERR_HANDLER;
		ep.address = (const ucp_address_t *)((const char *)blobs[i] + sizeof(blob_hdr_t));
		ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
		ep.err_handler.cb = ep_err_cb;
		ep.err_handler.arg = &t->peers[i];
		st = ucp_ep_create(t->worker, &ep, &t->peers[i].ep);
		if (st != UCS_OK) {
			t->peers[i].ep = NULL;
			setmsg(t, errno_of(st), "ucx: cannot reach rank %d: %s", i,
			       ucs_status_string(st));
			goto out;
		}
	}
	/* round one: a hello both ways with every rank (the endpoints work; the peer holds
	 * the same token and communicator key) */
	for (int i = 0; i < n; i++) {
		out[i].magic = HELLO_MAGIC;
		out[i].version = WIRE_VERSION;
		out[i].rank = (uint32_t)t->rank;
		out[i].size = (uint32_t)n;
		out[i].comm_key = t->comm_key;
		out[i].mac = hello_mac(t, (uint32_t)t->rank, (uint32_t)i);
	}
	if (exchange(t, CTRL_HELLO, out, in, sizeof(*out), got, deadline) < 0)
		goto out;
	for (int i = 0; i < n && mine.err == 0; i++)
		if (check_hello(t, i, &in[i], got[i]) < 0) {
			mine.err = errno;
			mine.rank = i;
			snprintf(why, sizeof(why), "%s", t->msg);
		}
	/* round two: the verdicts */
	for (int i = 0; i < n; i++)
		vout[i] = mine;
	if (exchange(t, CTRL_VERDICT, vout, vin, sizeof(*vout), got, deadline) < 0)
		goto out;
	if (mine.err) {
		setmsg(t, mine.err, "%s", why);
		goto out_close;
	}
	for (int i = 0; i < n; i++)
		if (got[i] != sizeof(*vin) || vin[i].err) {
			int e = got[i] != sizeof(*vin) ? EPROTO : vin[i].err;

			setmsg(t, e, "ucx: rank %d refused the connection (%s)", i, strerror(e));
			goto out_close;
		}
	if (arm(t) < 0)
		goto out_close;
	t->connected = 1;
	rc = 0;
	goto out;
out_close : {
	int e = errno;

	fail_all(t, e);
	errno = e;
}
out:
	if (rc < 0) {
		int e = t->broken ? t->err : errno;

		copy_err(err, t->msg);
		errno = e;
	}
	free(out);
	free(in);
	free(vout);
	free(vin);
	free(got);
	return rc;
}

/* Common checks of isend/irecv; returns the peer or NULL (errno set). */
static peer_t *usable(gc_tp_t *t, int peer)
{
	if (peer < 0 || peer >= t->size) {
		setmsg(t, EINVAL, "ucx: no rank %d", peer);
		return NULL;
	}
	if (!t->connected && !t->broken) {
		setmsg(t, ENOTCONN, "ucx: not connected");
		return NULL;
	}
	if (t->newly_lost)
		check(t);
	if (t->broken) {
		errno = t->err;
		return NULL;
	}
	return &t->peers[peer];
}

static int tp_isend(gc_tp_t *t, int peer, uint32_t tag, const void *buf, size_t len, gc_tpreq_t *r)
{
	peer_t *p = usable(t, peer);

	if (!p)
		return -1;
	if (post_send(t, r, peer, data_tag(t->rank, p->sseq, tag), tag, buf, len, 1) < 0)
		return -1;
	p->sseq++;
	return 0;
}

static int tp_irecv(gc_tp_t *t, int peer, uint32_t tag, void *buf, size_t len, gc_tpreq_t *r)
{
	peer_t *p = usable(t, peer);

	if (!p)
		return -1;
	if (post_recv(t, r, peer, data_tag(peer, p->rseq, tag), DATA_MATCH, tag, buf, len, 1) < 0)
		return -1;
	p->rseq++;
	return 0;
}

static int tp_progress(gc_tp_t *t, int timeout_ms)
{
	uint64_t deadline;
	int n;

	if (t->broken) {
		errno = t->err;
		return -1;
	}
	deadline = timeout_ms < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		drain(t);
		if (check(t) < 0) {
			t->ncomp = 0;
			errno = t->err;
			return -1;
		}
		if (t->ncomp > 0 || ms_left(deadline) == 0)
			break;
		nap(t, ms_left(deadline));
	}
	n = t->ncomp;
	t->ncomp = 0;
	return n;
}

static void tp_abort(gc_tp_t *t)
{
	if (!t->worker)
		return;
	if (!t->broken)
		setmsg(t, EPIPE, "ucx: aborted");
	fail_all(t, EPIPE);
}

/* The orderly goodbye: BYE to every other rank, and wait (up to the timeout) for
 * theirs, so no endpoint closes while a peer may still need it. Returns 0 when every
 * rank said goodbye or was already gone. */
static int say_bye(gc_tp_t *t)
{
	int n = t->size, ok = 0;
	gc_tpreq_t *rq = calloc(2 * (size_t)n, sizeof(*rq));
	uint64_t deadline = now_ms() + (uint64_t)t->timeout_ms;

	if (!rq)
		return -1;
	t->closing = 1;
	for (int i = 0; i < n; i++) {
		rq[2 * i].done = rq[2 * i + 1].done = 1;
		if (i == t->rank)
			continue;
		if (post_recv(t, &rq[2 * i], i, ctrl_tag(i, CTRL_BYE), CTRL_MATCH, 0, &t->none, 0,
			      1) < 0 ||
		    post_send(t, &rq[2 * i + 1], i, ctrl_tag(t->rank, CTRL_BYE), 0, &t->none, 0,
			      1) < 0)
			goto out;
	}
	for (;;) {
		int left = 0;

		drain(t);
		reap(t);
		t->ncomp = 0;
		for (int i = 0; i < n; i++)
			if (t->peers[i].lost == UCS_OK)
				left += !rq[2 * i].done + !rq[2 * i + 1].done;
		if (left == 0) {
			ok = 1;
			break;
		}
		if (ms_left(deadline) == 0)
			break;
		nap(t, ms_left(deadline));
	}
out:
	/* the ABORT receives, and BYEs from ranks that left without a word (lost, or too
	 * late), are dropped; a send still queued after that means a peer that does not
	 * take it: then by force */
	for (int i = 0; i < n; i++) {
		peer_t *p = &t->peers[i];

		if (!rq[2 * i].done && ucx_req(&rq[2 * i]))
			ucp_request_cancel(t->worker, ucx_req(&rq[2 * i]));
		if (t->armed && !p->abort_in.done && ucx_req(&p->abort_in))
			ucp_request_cancel(t->worker, ucx_req(&p->abort_in));
		if (t->armed && !p->ack_in.done && ucx_req(&p->ack_in))
			ucp_request_cancel(t->worker, ucx_req(&p->ack_in));
	}
	deadline = now_ms() + CLOSE_WAIT_MS;
	for (;;) {
		int left = 0;

		drain(t);
		reap(t);
		left = t->pend != NULL;
		for (int i = 0; t->armed && i < n; i++)
			left += !t->peers[i].abort_in.done + !t->peers[i].ack_in.done;
		if (!left || ms_left(deadline) == 0)
			break;
		nap(t, 10);
	}
	if (t->pend)
		fail_all(t, EPIPE);
	t->armed = 0;
	free(rq);
	return ok ? 0 : -1;
}

static void tp_destroy(gc_tp_t *t)
{
	if (!t)
		return;
	if (t->worker) {
		/* a caller's request still pending (it should not be) cannot outlive us */
		if (t->pend)
			fail_all(t, t->broken ? t->err : EPIPE);
		if (t->connected && !t->broken)
			say_bye(t);
		close_eps(t, t->broken, CLOSE_WAIT_MS);
		if (t->addr)
			ucp_worker_release_address(t->worker, t->addr);
		ucp_worker_destroy(t->worker);
	}
	if (t->ctx)
		ucp_cleanup(t->ctx);
	free(t->peers);
	free(t);
}

static const char *tp_error(const gc_tp_t *t)
{
	return t->msg;
}

const gc_tp_ops_t gc_tp_ucx = {
    .name = "ucx",
    .create = tp_create,
    .connect = tp_connect,
    .isend = tp_isend,
    .irecv = tp_irecv,
    .progress = tp_progress,
    .abort = tp_abort,
    .destroy = tp_destroy,
    .error = tp_error,
};
