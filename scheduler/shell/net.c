/* net.c - gschedd's ROUTER socket: cheap checks (size, a rate per address) before an
 * envelope is opened, refusals logged and answered, opened messages passed on (net.h) */
#include "scheduler/shell/net.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/log.h"
#include "scheduler/shell/join.h"
#include "common/u64map.h"
#include "common/util.h"

struct bucket {
	char addr[64];
	double tokens;
	double bytes; /* the byte budget left */
	int64_t last_ms;
	uint64_t dropped;
	int64_t last_log_ms;
};

struct outbox {
	uint8_t rid[256];
	size_t rid_len;
	gp_batch_t batch; /* waits for the commit */
	gp_batch_t now;	  /* goes at the next flush */
	int64_t last_used_ms;
};

struct net {
	void *zctx, *sock;
	gp_auth_t *auth;
	gp_endpoint_t *ep; /* receiving (handlers.c sets where messages go) and sealing */
	size_t max_message;
	double rate;
	double byte_rate; /* bytes per second per untrusted address */
	struct bucket *buckets;
	int nbuckets, capbuckets;
	struct outbox *boxes;
	int nboxes, capboxes;
	struct net_stats st;
	struct trusted {
		uint8_t rid[256];
		size_t len;
	} * trusted;
	int ntrusted, captrusted;
	struct net_refused refused[32];
	size_t nrefused;
	void *local;		  /* the HTTP thread's pair socket, NULL: none */
	uint64_t untrusted_bytes; /* received from untrusted senders since the last trim */
	gp_u64map_t *authed;	  /* routing ids (hashed) whose envelope opened: no byte budget */
	gp_u64map_t *trusted_idx; /* rid_key -> index + 1 in trusted */
	gp_u64map_t *bucket_idx;  /* addr_key -> index + 1 in buckets */
	int64_t trimmed_ms;
	struct join *join; /* credential-less join requests (NULL: none taken) */
	int64_t swept_ms;
	uint8_t local_prefix[16];
	size_t local_prefix_len;
};

static int admit(void *arg, const struct gp_ep_envelope *e);
static int unsealed(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len);
static void refused(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len,
		    Gpool__ErrorCode code, const char *why);

/* FNV-1a of a routing id (or of an address): the key of the hashed tables below. libzmq gives a
 * peer that names no routing id one of its own (a zero byte, then a counter), and refuses a peer
 * that names one starting with a zero byte: a connection cannot take over another's. */
static uint64_t rid_key(const uint8_t *rid, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ rid[i]) * 1099511628211ULL;
	return h | 1;
}

static uint64_t addr_key(const char *addr)
{
	return rid_key((const uint8_t *)addr, strlen(addr));
}

/* Both lookups run for every envelope before its credential: hashed, never a walk of the
 * tables (4,096 agents, 4,096 source addresses). */
static bool is_trusted(const struct net *n, const uint8_t *rid, size_t len)
{
	intptr_t i =
	    n->trusted_idx ? (intptr_t)gp_u64map_get(n->trusted_idx, rid_key(rid, len)) : 0;
	return i > 0 && n->trusted[i - 1].len == len &&
	       memcmp(n->trusted[i - 1].rid, rid, len) == 0;
}

void net_trust(struct net *n, const uint8_t *rid, size_t len)
{
	if (len > sizeof(n->trusted[0].rid) || is_trusted(n, rid, len) || n->ntrusted >= 4096)
		return;
	if (n->ntrusted == n->captrusted) {
		int nc = n->captrusted ? n->captrusted * 2 : 16;
		struct trusted *nt = realloc(n->trusted, nc * sizeof(*nt));
		if (!nt)
			return;
		n->trusted = nt;
		n->captrusted = nc;
	}
	if (gp_u64map_put(n->trusted_idx, rid_key(rid, len), (void *)(intptr_t)(n->ntrusted + 1)) <
	    0)
		return;
	memcpy(n->trusted[n->ntrusted].rid, rid, len);
	n->trusted[n->ntrusted++].len = len;
}

struct net *net_create(const char *endpoint, gp_auth_t *auth, size_t max_message, int rate_per_addr,
		       gp_error_t *err)
{
	struct net *n = calloc(1, sizeof(*n));
	if (!n) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	n->auth = auth;
	n->max_message = max_message;
	n->rate = rate_per_addr > 0 ? rate_per_addr : 1e9;
	n->byte_rate = 1e18;
	n->zctx = zmq_ctx_new();
	if (!n->zctx || !(n->sock = zmq_socket(n->zctx, ZMQ_ROUTER))) {
		gp_errprintf(err, "cannot create the socket: %s", zmq_strerror(errno));
		goto fail;
	}
	int64_t maxmsg = (int64_t)max_message + 4096;
	int one = 1, hwm = 100000, linger = 0;
	zmq_setsockopt(n->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(n->sock, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
	zmq_setsockopt(n->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(n->sock, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(n->sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_bind(n->sock, endpoint) < 0) {
		gp_errprintf(err, "cannot listen on '%s': %s", endpoint, zmq_strerror(errno));
		goto fail;
	}
	struct gp_ep_config ec = {
	    .sock = n->sock,
	    .routed = true,
	    .auth = auth,
	    .max_message = max_message,
	    .peer_name = "a peer",
	    .hooks = {.admit = admit, .refused = refused, .unsealed = unsealed},
	    .arg = n,
	};
	if (!(n->ep = gp_endpoint_create(&ec)) || !(n->authed = gp_u64map_create()) ||
	    !(n->trusted_idx = gp_u64map_create()) || !(n->bucket_idx = gp_u64map_create())) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	return n;
fail:
	net_destroy(&n);
	return NULL;
}

void net_destroy(struct net **p)
{
	if (!p || !*p)
		return;
	struct net *n = *p;
	if (n->sock)
		zmq_close(n->sock);
	if (n->zctx)
		zmq_ctx_term(n->zctx);
	gp_endpoint_destroy(&n->ep);
	for (int i = 0; i < n->nboxes; i++) {
		gp_batch_release(&n->boxes[i].batch);
		gp_batch_release(&n->boxes[i].now);
	}
	free(n->boxes);
	free(n->buckets);
	gp_u64map_destroy(&n->authed);
	gp_u64map_destroy(&n->trusted_idx);
	gp_u64map_destroy(&n->bucket_idx);
	free(n->trusted);
	free(n);
	*p = NULL;
}

void net_set_rate(struct net *n, int rate_per_addr, double bytes_per_addr)
{
	n->rate = rate_per_addr > 0 ? rate_per_addr : 1e9;
	n->byte_rate = bytes_per_addr > 0 ? bytes_per_addr : 1e18;
}

void net_set_local(struct net *n, void *sock, const void *prefix, size_t prefix_len)
{
	n->local = sock;
	n->local_prefix_len = prefix_len < sizeof(n->local_prefix) ? prefix_len : 0;
	memcpy(n->local_prefix, prefix, n->local_prefix_len);
}

void net_set_join(struct net *n, struct join *j)
{
	n->join = j;
}

/* A small envelope, past the address's budget, before its credential: a join request is
 * answered here (scheduler/join.c), unsealed, to its routing id; anything else is opened. */
static int unsealed(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len)
{
	struct net *n = arg;
	uint8_t *reply = NULL;
	size_t rlen = 0;
	if (!n->join ||
	    join_take(n->join, e->addr, data, len, gp_mono_ms(), time(NULL), &reply, &rlen) == 0)
		return 0;
	if (reply && e->rid &&
	    (zmq_send(n->sock, e->rid, e->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
	     zmq_send(n->sock, reply, rlen, ZMQ_DONTWAIT) < 0))
		gp_debug("join: cannot answer %s: %s", e->addr, zmq_strerror(errno));
	else if (reply)
		n->st.sent++;
	free(reply);
	return 1;
}

void *net_context(struct net *n)
{
	return n->zctx;
}

void *net_socket(struct net *n)
{
	return n->sock;
}

gp_endpoint_t *net_endpoint(struct net *n)
{
	return n->ep;
}

static struct bucket *bucket_get(struct net *n, const char *addr)
{
	uint64_t key = addr_key(addr);
	intptr_t at = (intptr_t)gp_u64map_get(n->bucket_idx, key);
	if (at > 0 && strcmp(n->buckets[at - 1].addr, addr) == 0)
		return &n->buckets[at - 1];
	if (at > 0) /* two addresses of one hash: the newer shares the older's budget */
		return &n->buckets[at - 1];
	if (n->nbuckets == n->capbuckets) {
		/* bounded: reuse the least recently used bucket beyond 4096 addresses (a walk, but
		 * only for a new address when 4,096 others are known) */
		if (n->capbuckets >= 4096) {
			int lru = 0;
			for (int i = 1; i < n->nbuckets; i++)
				if (n->buckets[i].last_ms < n->buckets[lru].last_ms)
					lru = i;
			gp_u64map_del(n->bucket_idx, addr_key(n->buckets[lru].addr));
			memset(&n->buckets[lru], 0, sizeof(n->buckets[lru]));
			snprintf(n->buckets[lru].addr, sizeof(n->buckets[lru].addr), "%s", addr);
			n->buckets[lru].tokens = n->rate;
			n->buckets[lru].bytes = n->byte_rate;
			n->buckets[lru].last_ms = gp_mono_ms();
			(void)gp_u64map_put(n->bucket_idx, key, (void *)(intptr_t)(lru + 1));
			return &n->buckets[lru];
		}
		int nc = n->capbuckets ? n->capbuckets * 2 : 64;
		struct bucket *nb = realloc(n->buckets, nc * sizeof(*nb));
		if (!nb)
			return NULL;
		n->buckets = nb;
		n->capbuckets = nc;
	}
	if (gp_u64map_put(n->bucket_idx, key, (void *)(intptr_t)(n->nbuckets + 1)) < 0)
		return NULL;
	struct bucket *b = &n->buckets[n->nbuckets++];
	memset(b, 0, sizeof(*b));
	snprintf(b->addr, sizeof(b->addr), "%s", addr);
	b->tokens = n->rate;
	b->bytes = n->byte_rate;
	b->last_ms = gp_mono_ms();
	return b;
}

/* Token buckets of messages and bytes: rate per second, burst of one second's worth. */
static int bucket_take(struct net *n, struct bucket *b, size_t len)
{
	int64_t now = gp_mono_ms();
	double dt = (double)(now - b->last_ms) / 1000.0;
	b->tokens += dt * n->rate;
	if (b->tokens > n->rate)
		b->tokens = n->rate;
	b->bytes += dt * n->byte_rate;
	if (b->bytes > n->byte_rate)
		b->bytes = n->byte_rate;
	b->last_ms = now;
	if (b->tokens < 1 || b->bytes < (double)len) {
		b->dropped++;
		if (now - b->last_log_ms > 5000) {
			gp_warn("source %s is over its rate of %.0f messages/s or %.0f MiB/s: %llu "
				"dropped so far",
				b->addr, n->rate, n->byte_rate / (1 << 20),
				(unsigned long long)b->dropped);
			b->last_log_ms = now;
		}
		return -1;
	}
	b->tokens -= 1;
	b->bytes -= (double)len;
	return 0;
}

/* Why, in the words an admin acts on. */
static void refusal_reason(Gpool__ErrorCode code, uint32_t version, const char *detail, char *out,
			   size_t len)
{
	switch (code) {
	case GPOOL__ERROR_CODE__ERROR_AUTH:
		snprintf(out, len,
			 "wrong MUNGE key: its credential does not decode here (copy the "
			 "scheduler's /etc/munge/munge.key to that PC) [%.80s]",
			 detail);
		break;
	case GPOOL__ERROR_CODE__ERROR_VERSION:
		snprintf(out, len,
			 "incompatible protocol version: the agent speaks %u, the scheduler %d "
			 "(install the same gpool version)",
			 version, GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION);
		break;
	case GPOOL__ERROR_CODE__ERROR_EXPIRED:
		snprintf(out, len, "expired credential: is that PC's clock right? [%.80s]", detail);
		break;
	default:
		snprintf(out, len, "%.200s", detail);
	}
}

/* A refused envelope that names its sender (Envelope.hint, never believed: an agent's node
 * name, for the admin) is noted for gnodes --refused; nothing in its body is read. */
static void note_refused(struct net *n, const char *addr, const struct gp_sender *from,
			 Gpool__ErrorCode code, const char *detail)
{
	const char *name = from->hint;
	uint32_t version = from->version;
	if (!*name)
		return;
	struct net_refused *r = NULL;
	for (size_t i = 0; i < n->nrefused; i++)
		if (!strcmp(n->refused[i].name, name) && !strcmp(n->refused[i].addr, addr))
			r = &n->refused[i];
	if (!r) {
		size_t k = n->nrefused;
		if (k == sizeof(n->refused) / sizeof(n->refused[0])) { /* the oldest goes */
			k = 0;
			for (size_t i = 1; i < n->nrefused; i++)
				if (n->refused[i].last < n->refused[k].last)
					k = i;
		} else {
			n->nrefused++;
		}
		r = &n->refused[k];
		memset(r, 0, sizeof(*r));
		snprintf(r->name, sizeof(r->name), "%s", name);
		snprintf(r->addr, sizeof(r->addr), "%s", addr);
	}
	refusal_reason(code, version, detail, r->reason, sizeof(r->reason));
	r->count++;
	r->last = gp_now();
	if (r->count == 1 || r->count % 100 == 0)
		gp_warn("refused node '%s' at %s: %s", r->name, r->addr, r->reason);
}

const struct net_refused *net_refused_list(const struct net *n, size_t *count)
{
	*count = n->nrefused;
	return n->refused;
}

static void reply_refusal(struct net *n, const uint8_t *rid, size_t rid_len, Gpool__ErrorCode code,
			  const char *text)
{
	Gpool__Msg m;
	Gpool__Error e;
	gp_msg_error(&m, &e, 0, code, text);
	net_queue(n, rid, rid_len, &m, false);
}

void net_authed(struct net *n, const uint8_t *rid, size_t len)
{
	uint64_t k = rid_key(rid, len);
	if (gp_u64map_get(n->authed, k))
		return;
	if (gp_u64map_count(n->authed) >= 65536) { /* forget them all: each earns it again */
		gp_u64map_destroy(&n->authed);
		gp_u64map_destroy(&n->trusted_idx);
		gp_u64map_destroy(&n->bucket_idx);
		if (!(n->authed = gp_u64map_create()))
			return;
	}
	(void)gp_u64map_put(n->authed, k, (void *)1);
}

/* The endpoint's cheap check, before the credential: a sender outside the trusted (registered
 * agents) spends its address's budget of envelopes, and one that has not yet shown a
 * credential that decodes (a connection whose envelope opened) its budget of bytes too: the
 * bound is for hosts with no credential; a user's uploads are theirs to make. */
static int admit(void *arg, const struct gp_ep_envelope *e)
{
	struct net *n = arg;
	n->st.received++;
	struct bucket *b = is_trusted(n, e->rid, e->rid_len) ? NULL : bucket_get(n, e->addr);
	size_t len =
	    b && n->authed && gp_u64map_get(n->authed, rid_key(e->rid, e->rid_len)) ? 0 : e->len;
	if (b)
		n->untrusted_bytes += e->len;
	if (b && bucket_take(n, b, len) < 0) {
		n->st.rate_dropped++;
		return -1;
	}
	return 0;
}

/* An envelope the endpoint refused: logged, noted when it is an agent's registration, and
 * answered with the reason (a multi-frame message is not). */
static void refused(void *arg, const struct gp_ep_envelope *e, const void *data, size_t len,
		    Gpool__ErrorCode code, const char *why)
{
	struct net *n = arg;
	(void)len;
	n->st.refused++;
	if (!data) {
		n->st.received++;
		gp_warn("refused a multi-frame message from %s", e->addr);
		return;
	}
	note_refused(n, e->addr, &e->from, code, why);
	gp_warn("refused a message from %s: %s", e->addr, why);
	reply_refusal(n, e->rid, e->rid_len, code, why);
}

int net_recv(struct net *n, struct net_msg *m)
{
	struct gp_ep_envelope e;
	gp_error_t err = {{0}};
	m->batch = gp_endpoint_recv(n->ep, false, &e, &err);
	if (!m->batch)
		return errno == EAGAIN ? 0 : -1;
	m->rid_len = e.rid_len <= sizeof(m->rid) ? e.rid_len : sizeof(m->rid);
	memcpy(m->rid, e.rid, m->rid_len);
	snprintf(m->addr, sizeof(m->addr), "%s", e.addr);
	m->from = e.from;
	return 1;
}

static struct outbox *outbox_get(struct net *n, const uint8_t *rid, size_t rid_len)
{
	for (int i = 0; i < n->nboxes; i++)
		if (n->boxes[i].rid_len == rid_len && memcmp(n->boxes[i].rid, rid, rid_len) == 0)
			return &n->boxes[i];
	if (n->nboxes == n->capboxes) {
		int nc = n->capboxes ? n->capboxes * 2 : 32;
		struct outbox *nb = realloc(n->boxes, nc * sizeof(*nb));
		if (!nb)
			return NULL;
		n->boxes = nb;
		n->capboxes = nc;
	}
	struct outbox *o = &n->boxes[n->nboxes++];
	memset(o, 0, sizeof(*o));
	memcpy(o->rid, rid, rid_len);
	o->rid_len = rid_len;
	return o;
}

int net_queue(struct net *n, const uint8_t *rid, size_t rid_len, const Gpool__Msg *msg,
	      bool durable)
{
	struct outbox *o = outbox_get(n, rid, rid_len);
	if (!o)
		return -1;
	o->last_used_ms = gp_mono_ms();
	return gp_batch_add(durable ? &o->batch : &o->now, msg);
}

int net_queue_member(struct net *n, const uint8_t *rid, size_t rid_len, const uint8_t *member,
		     size_t len, bool durable)
{
	struct outbox *o = outbox_get(n, rid, rid_len);
	if (!o)
		return -1;
	o->last_used_ms = gp_mono_ms();
	return gp_batch_add_member(durable ? &o->batch : &o->now, member, len);
}

static void bulk_free(void *data, void *hint)
{
	(void)hint;
	free(data);
}

int net_send_bulk(struct net *n, const uint8_t *rid, size_t rid_len, const Gpool__Msg *msg,
		  void *data, size_t len)
{
	gp_batch_t b = {0};
	gp_error_t err;
	if (gp_batch_add(&b, msg) < 0) {
		free(data);
		return -1;
	}
	int rc = gp_endpoint_send_bulk(n->ep, rid, rid_len, &b, data, len, bulk_free, &err);
	if (rc < 0 && errno != EHOSTUNREACH)
		gp_debug("send: %s", err.text);
	else if (rc == 0)
		n->st.sent++;
	gp_batch_release(&b);
	return rc;
}

static void send_batch(struct net *n, struct outbox *o, gp_batch_t *b)
{
	gp_error_t err;
	if (n->local && o->rid_len >= n->local_prefix_len &&
	    memcmp(o->rid, n->local_prefix, n->local_prefix_len) == 0) {
		/* the HTTP thread: same process, nothing to seal */
		if (zmq_send(n->local, o->rid, o->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
		    zmq_send(n->local, b->body.data, b->body.len, ZMQ_DONTWAIT) < 0)
			gp_warn("http: cannot hand a reply to the HTTP thread: %s",
				zmq_strerror(errno));
		gp_batch_reset(b);
		return;
	}
	if (gp_endpoint_send(n->ep, o->rid, o->rid_len, b, &err) < 0) {
		/* EHOSTUNREACH: the peer is gone (a gsub that exited); nothing to do */
		if (errno != EHOSTUNREACH)
			gp_debug("send: %s", err.text);
	} else {
		n->st.sent++;
	}
	gp_batch_reset(b);
}

int net_flush(struct net *n, bool with_durable)
{
	int64_t now = gp_mono_ms();
	for (int i = 0; i < n->nboxes; i++) {
		struct outbox *o = &n->boxes[i];
		if (with_durable && o->batch.count) {
			/* one envelope: the durable messages, then the immediate ones */
			if (o->now.count) {
				gp_buf_append(&o->batch.body, o->now.body.data, o->now.body.len);
				o->batch.count += o->now.count;
				gp_batch_reset(&o->now);
			}
			send_batch(n, o, &o->batch);
		} else if (o->now.count) {
			send_batch(n, o, &o->now);
		}
	}
	/* drop outboxes of peers idle for a while (gsub processes come and go) */
	for (int i = 0; i < n->nboxes;) {
		if (now - n->boxes[i].last_used_ms > 10000 && !n->boxes[i].batch.count &&
		    !n->boxes[i].now.count) {
			gp_batch_release(&n->boxes[i].batch);
			gp_batch_release(&n->boxes[i].now);
			n->boxes[i] = n->boxes[--n->nboxes];
		} else {
			i++;
		}
	}
	return 0;
}

/* Large envelopes from untrusted senders (a flood) are freed as soon as they are dropped or
 * refused, but glibc keeps what they leave in its arenas (the I/O thread's among them): while
 * such bytes keep coming and the RSS is over 128 MiB, give that back to the system, at most
 * once a second. Trimming always, or fresh mappings for each envelope (a fixed mmap threshold),
 * cost a page fault per page on every envelope and made gschedd fall behind a flood (t1101:
 * 6.5 GB of envelopes queued with the fixed threshold). */
void net_tick(struct net *n, int64_t now)
{
	if (n->join && now - n->swept_ms >= 60000) {
		n->swept_ms = now;
		int k = join_sweep(n->join, time(NULL));
		if (k)
			gp_info("join: removed %d expired join token%s", k, k == 1 ? "" : "s");
	}
	if (n->untrusted_bytes < (64u << 20) || now - n->trimmed_ms < 1000)
		return;
	n->untrusted_bytes = 0;
	n->trimmed_ms = now;
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	if ((uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) > (128u << 20))
		malloc_trim(0);
}

void net_stats(const struct net *n, struct net_stats *st)
{
	*st = n->st;
	st->munge_sec = n->auth ? gp_auth_seconds(n->auth) : 0; /* none: a test's socket */
}
