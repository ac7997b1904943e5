/* rdv.c - the rendezvous of a job's ranks (libgcomm's "gpool" rendezvous): put, get and
 * fence of small blobs while a communicator is made (rdv.h) */
#include "scheduler/features/rdv.h"
#include "scheduler/core/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/names.h"
#include "common/u64map.h"
#include "common/util.h"
#include "scheduler/store/store.h"
#include "scheduler/store/store_rdv.h"

#define KEYS_PER_RANK	   4
#define KEYS_EXTRA	   16
#define FENCES_MAX	   256
#define JOB_BYTES_BASE	   (1u << 20)
#define JOB_BYTES_PER_RANK (256u << 10)
#define JOB_BYTES_MAX	   ((size_t)64 << 20)
#define TOTAL_BYTES_MAX	   ((size_t)256 << 20)
#define WAITERS_PER_RANK   2
#define WAITERS_MAX	   65536
#define ENTRY_OVERHEAD	   64 /* what an entry costs beyond its key and value */

struct entry {
	char *key;
	uint8_t *val;
	size_t len;
	uint32_t rank;
};

struct fence {
	char *name;
	uint32_t size, entered;
	uint8_t *seen; /* a bit per rank until done */
	bool done;
};

/* A get or fence held until its key appears, its fence completes, or its time is up. */
struct waiter {
	uint8_t rid[256];
	size_t rid_len;
	uint64_t msg_id;
	int64_t expires_ms;
	bool fence;
	char name[RDV_KEY_MAX + 1];
};

/* The store of one job attempt. Entries and fences are sorted by name (binary search). */
struct store {
	uint64_t job_id;
	uint32_t attempt, size;
	struct entry *e;
	size_t ne, cape;
	struct fence *f;
	size_t nf, capf;
	struct waiter *w;
	size_t nw, capw;
	size_t bytes;
};

struct rdv {
	gp_u64map_t *stores; /* job id -> struct store */
	size_t bytes;
	size_t nwait;
};

struct rdv *rdv_create(void)
{
	struct rdv *r = calloc(1, sizeof(*r));
	if (!r || !(r->stores = gp_u64map_create())) {
		free(r);
		return NULL;
	}
	return r;
}

static void store_free(struct store *st)
{
	for (size_t i = 0; i < st->ne; i++) {
		free(st->e[i].key);
		free(st->e[i].val);
	}
	for (size_t i = 0; i < st->nf; i++) {
		free(st->f[i].name);
		free(st->f[i].seen);
	}
	free(st->e);
	free(st->f);
	free(st->w);
	free(st);
}

void rdv_destroy(struct rdv **p)
{
	if (!p || !*p)
		return;
	size_t pos = 0;
	struct store *st;
	while ((st = gp_u64map_next((*p)->stores, &pos, NULL)))
		store_free(st);
	gp_u64map_destroy(&(*p)->stores);
	free(*p);
	*p = NULL;
}

size_t rdv_nstores(const struct rdv *r)
{
	return r ? gp_u64map_count(r->stores) : 0;
}

size_t rdv_bytes(const struct rdv *r)
{
	return r ? r->bytes : 0;
}

static size_t job_bytes_max(uint32_t size)
{
	size_t b = JOB_BYTES_BASE + (size_t)size * JOB_BYTES_PER_RANK;
	return b < JOB_BYTES_MAX ? b : JOB_BYTES_MAX;
}

/* ---- replies ------------------------------------------------------------------------------ */

/* With the state replicated every put and fence entry is a row of the open transaction
 * (store_rdv.h): what was told from it waits for its commit, so that a new leader holds all that
 * any rank was told. */
static bool replicated(const struct gsched *s)
{
	return s->store && store_replicated(s->store);
}

static bool held_for_commit(const struct gsched *s)
{
	return replicated(s) && s->txn_first_ms;
}

static void in_txn(struct gsched *s)
{
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
}

static void send_to(struct gsched *s, const uint8_t *rid, size_t rid_len, Gpool__Msg *m)
{
	struct req r = {.s = s, .rid = rid, .rid_len = rid_len};
	req_reply(&r, m, m->m_case == GPOOL__MSG__M_RDV_FENCE_REPLY && held_for_commit(s));
}

static void send_get(struct gsched *s, const uint8_t *rid, size_t rid_len, uint64_t id,
		     const struct entry *e)
{
	Gpool__RdvGetReply rep = GPOOL__RDV_GET_REPLY__INIT;
	if (e) {
		rep.found = true;
		rep.value.data = e->val;
		rep.value.len = e->len;
		rep.rank = e->rank;
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = id;
	m.m_case = GPOOL__MSG__M_RDV_GET_REPLY;
	m.rdv_get_reply = &rep;
	send_to(s, rid, rid_len, &m);
}

static void send_fence(struct gsched *s, const uint8_t *rid, size_t rid_len, uint64_t id,
		       const struct fence *f)
{
	Gpool__RdvFenceReply rep = GPOOL__RDV_FENCE_REPLY__INIT;
	if (f) {
		rep.done = f->done;
		rep.entered = f->entered;
	}
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = id;
	m.m_case = GPOOL__MSG__M_RDV_FENCE_REPLY;
	m.rdv_fence_reply = &rep;
	send_to(s, rid, rid_len, &m);
}

/* ---- the store ---------------------------------------------------------------------------- */

/* Index of name in a sorted array of structs whose first member is a char *; *found says
 * whether it is there (else the index is where it goes). */
static size_t find(const void *base, size_t n, size_t stride, const char *name, bool *found)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *k = *(char *const *)((const char *)base + mid * stride);
		int c = strcmp(name, k);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

static struct entry *entry_get(struct store *st, const char *key)
{
	bool found;
	size_t i = find(st->e, st->ne, sizeof(*st->e), key, &found);
	return found ? &st->e[i] : NULL;
}

static struct fence *fence_get(struct store *st, const char *name)
{
	bool found;
	size_t i = find(st->f, st->nf, sizeof(*st->f), name, &found);
	return found ? &st->f[i] : NULL;
}

/* Make room for one more element of a growable array. 0 / -1. */
static int grow(void **arr, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

static void account(struct rdv *rv, struct store *st, size_t add, size_t sub)
{
	st->bytes = st->bytes + add - sub;
	rv->bytes = rv->bytes + add - sub;
}

/* Answer (and remove) the waiters of st on the key or fence `name`. */
static void wake(struct gsched *s, struct store *st, bool fence, const char *name)
{
	for (size_t i = 0; i < st->nw;) {
		struct waiter *w = &st->w[i];
		if (w->fence != fence || strcmp(w->name, name) != 0) {
			i++;
			continue;
		}
		if (fence)
			send_fence(s, w->rid, w->rid_len, w->msg_id, fence_get(st, name));
		else
			send_get(s, w->rid, w->rid_len, w->msg_id, entry_get(st, name));
		st->w[i] = st->w[--st->nw];
		s->rdv->nwait--;
	}
}

static void drop(struct gsched *s, struct store *st, const char *why)
{
	struct rdv *rv = s->rdv;
	gp_u64map_del(rv->stores, st->job_id);
	for (size_t i = 0; i < st->nw; i++) {
		Gpool__Msg m;
		Gpool__Error e;
		gp_msg_error(&m, &e, st->w[i].msg_id, GPOOL__ERROR_CODE__ERROR_STATE, why);
		send_to(s, st->w[i].rid, st->w[i].rid_len, &m);
	}
	rv->nwait -= st->nw;
	rv->bytes -= st->bytes;
	store_free(st);
}

void rdv_job_stopped(struct gsched *s, const struct job *j)
{
	if (!s->rdv)
		return;
	struct store *st = gp_u64map_get(s->rdv->stores, j->id);
	if (!st)
		return;
	char why[128];
	snprintf(why, sizeof(why), "job %llu attempt %u is no longer running",
		 (unsigned long long)st->job_id, st->attempt);
	drop(s, st, why);
	if (replicated(s)) {
		if (store_rdv_forget(s->store, j->id) < 0)
			gp_warn("job %llu: cannot forget its replicated rendezvous: %s",
				(unsigned long long)j->id, strerror(errno));
		in_txn(s);
	}
}

/* The store of j's running attempt, made when missing. NULL: out of memory. */
static struct store *store_of(struct gsched *s, const struct job *j)
{
	struct rdv *rv = s->rdv;
	struct store *st = gp_u64map_get(rv->stores, j->id);
	if (st && st->attempt != j->attempt) /* a store the stop hook missed: never serve it */
		drop(s, st, "an earlier attempt's rendezvous");
	else if (st)
		return st;
	st = calloc(1, sizeof(*st));
	if (!st || gp_u64map_put(rv->stores, j->id, st) < 0) {
		free(st);
		return NULL;
	}
	st->job_id = j->id;
	st->attempt = j->attempt;
	st->size = j->ntasks;
	return st;
}

/* The checks every request passes: the job exists, the sender owns it, it runs this attempt,
 * the rank is one of its ranks. Returns its store (made on demand) or NULL after replying. */
static struct store *admit(struct req *r, uint64_t job_id, uint32_t attempt, const uint32_t *rank)
{
	struct gsched *s = r->s;
	if (!s->rdv) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"this scheduler serves no rendezvous");
		return NULL;
	}
	struct job *j = jobs_get(s->jobs, job_id);
	if (!j) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "job %llu not found",
				(unsigned long long)job_id);
		return NULL;
	}
	if (r->from.uid != 0 && r->from.uid != j->uid) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"job %llu belongs to %s: permission denied",
				(unsigned long long)j->id, j->user ? j->user : "another user");
		return NULL;
	}
	if (j->state != GPOOL__JOB_STATE__RUNNING || attempt != j->attempt) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_STATE,
				"job %llu attempt %u is not running (attempt %u is %s)",
				(unsigned long long)j->id, attempt, j->attempt,
				gp_job_state_name(j->state));
		return NULL;
	}
	if (rank && *rank >= j->ntasks) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"rank %u out of range (job %llu has %u tasks)", *rank,
				(unsigned long long)j->id, j->ntasks);
		return NULL;
	}
	struct store *st = store_of(s, j);
	if (!st)
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
	return st;
}

/* A key or fence name: 1..RDV_KEY_MAX bytes. 0 / -1 after replying. */
static int check_name(struct req *r, const char *what, const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "empty %s", what);
		return -1;
	}
	if (n > RDV_KEY_MAX) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
				"%s of %zu bytes is over the limit of %d", what, n, RDV_KEY_MAX);
		return -1;
	}
	return 0;
}

/* Room for `add` more bytes in st? 0 / -1 after replying. */
static int check_room(struct req *r, struct store *st, size_t add, size_t sub)
{
	struct rdv *rv = r->s->rdv;
	if (st->bytes - sub + add > job_bytes_max(st->size)) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
				"job %llu's rendezvous is full (%zu bytes at most)",
				(unsigned long long)st->job_id, job_bytes_max(st->size));
		return -1;
	}
	if (rv->bytes - sub + add > TOTAL_BYTES_MAX) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"the scheduler's rendezvous space is full: try again later");
		return -1;
	}
	return 0;
}

/* Hold request r on st until wait_ms. false when it cannot be held (answer now instead). */
static bool park(struct req *r, struct store *st, bool fence, const char *name, uint32_t wait_ms)
{
	struct rdv *rv = r->s->rdv;
	if (!wait_ms || rv->nwait >= WAITERS_MAX ||
	    st->nw >= (size_t)st->size * WAITERS_PER_RANK + KEYS_EXTRA ||
	    r->rid_len > sizeof(st->w[0].rid) ||
	    grow((void **)&st->w, st->nw, &st->capw, sizeof(*st->w)) < 0)
		return false;
	struct waiter *w = &st->w[st->nw++];
	memcpy(w->rid, r->rid, r->rid_len);
	w->rid_len = r->rid_len;
	w->msg_id = r->msg->id;
	w->fence = fence;
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->expires_ms = gp_mono_ms() + (wait_ms < RDV_WAIT_MAX_MS ? wait_ms : RDV_WAIT_MAX_MS);
	rv->nwait++;
	return true;
}

void rdv_put(struct req *r)
{
	const Gpool__RdvPut *q = r->msg->rdv_put;
	struct store *st = admit(r, q->job_id, q->attempt, &q->rank);
	if (!st || check_name(r, "key", q->key) < 0)
		return;
	if (q->value.len > RDV_VAL_MAX) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
				"value of %zu bytes is over the limit of %d", q->value.len,
				RDV_VAL_MAX);
		return;
	}
	struct rdv *rv = r->s->rdv;
	bool found;
	size_t i = find(st->e, st->ne, sizeof(*st->e), q->key, &found);
	size_t cost = strlen(q->key) + q->value.len + ENTRY_OVERHEAD;
	uint8_t *val = malloc(q->value.len ? q->value.len : 1);
	if (!val) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	if (q->value.len) /* an empty value may come without a buffer */
		memcpy(val, q->value.data, q->value.len);
	if (found) {
		struct entry *e = &st->e[i];
		size_t old = strlen(e->key) + e->len + ENTRY_OVERHEAD;
		if (e->rank != q->rank) {
			free(val);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
					"key '%s' was put by rank %u", q->key, e->rank);
			return;
		}
		if (check_room(r, st, cost, old) < 0) {
			free(val);
			return;
		}
		free(e->val);
		e->val = val;
		e->len = q->value.len;
		account(rv, st, cost, old);
	} else {
		size_t max = (size_t)st->size * KEYS_PER_RANK + KEYS_EXTRA;
		if (st->ne >= max) {
			free(val);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
					"job %llu's rendezvous holds %zu keys, its most",
					(unsigned long long)st->job_id, max);
			return;
		}
		if (check_room(r, st, cost, 0) < 0) {
			free(val);
			return;
		}
		char *key = strdup(q->key);
		if (!key || grow((void **)&st->e, st->ne, &st->cape, sizeof(*st->e)) < 0) {
			free(key);
			free(val);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
			return;
		}
		memmove(&st->e[i + 1], &st->e[i], (st->ne - i) * sizeof(*st->e));
		st->e[i] =
		    (struct entry){.key = key, .val = val, .len = q->value.len, .rank = q->rank};
		st->ne++;
		account(rv, st, cost, 0);
	}
	bool repl = replicated(r->s);
	if (repl && store_rdv_put(r->s->store, st->job_id, st->attempt, q->key, q->rank,
				  q->value.data, q->value.len) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"cannot save the rendezvous: %s", strerror(errno));
		return;
	}
	if (repl)
		in_txn(r->s);
	Gpool__RdvPutReply rep = GPOOL__RDV_PUT_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_RDV_PUT_REPLY;
	m.rdv_put_reply = &rep;
	req_reply(r, &m, repl); /* replicated: once a majority holds it */
	if (st->nw)
		wake(r->s, st, false, q->key);
}

void rdv_get(struct req *r)
{
	const Gpool__RdvGet *q = r->msg->rdv_get;
	struct store *st = admit(r, q->job_id, q->attempt, NULL);
	if (!st || check_name(r, "key", q->key) < 0)
		return;
	const struct entry *e = entry_get(st, q->key);
	if (e || !park(r, st, false, q->key, q->wait_ms))
		send_get(r->s, r->rid, r->rid_len, r->msg->id, e);
}

/* rank (not in yet) enters f; the last one completes it */
static void fence_enter(struct fence *f, uint32_t rank)
{
	f->seen[rank / 8] |= (uint8_t)(1u << (rank % 8));
	if (++f->entered == f->size) {
		f->done = true;
		free(f->seen); /* its bytes stay accounted: the fence stays, done */
		f->seen = NULL;
	}
}

void rdv_fence(struct req *r)
{
	const Gpool__RdvFence *q = r->msg->rdv_fence;
	struct store *st = admit(r, q->job_id, q->attempt, &q->rank);
	if (!st || check_name(r, "fence name", q->name) < 0)
		return;
	if (q->size == 0 || q->size > st->size) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"fence size %u out of range (job %llu has %u tasks)", q->size,
				(unsigned long long)st->job_id, st->size);
		return;
	}
	bool found;
	size_t i = find(st->f, st->nf, sizeof(*st->f), q->name, &found);
	if (!found) {
		size_t bits = ((size_t)st->size + 7) / 8; /* any SIZE of the job's ranks */
		size_t cost = strlen(q->name) + bits + ENTRY_OVERHEAD;
		if (st->nf >= FENCES_MAX) {
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
					"job %llu has %d fences, its most",
					(unsigned long long)st->job_id, FENCES_MAX);
			return;
		}
		if (check_room(r, st, cost, 0) < 0)
			return;
		char *name = strdup(q->name);
		uint8_t *seen = calloc(bits, 1);
		if (!name || !seen ||
		    grow((void **)&st->f, st->nf, &st->capf, sizeof(*st->f)) < 0) {
			free(name);
			free(seen);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
			return;
		}
		memmove(&st->f[i + 1], &st->f[i], (st->nf - i) * sizeof(*st->f));
		st->f[i] = (struct fence){.name = name, .size = q->size, .seen = seen};
		st->nf++;
		account(r->s->rdv, st, cost, 0);
	}
	struct fence *f = &st->f[i];
	if (f->size != q->size) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"fence '%s' has size %u, not %u", f->name, f->size, q->size);
		return;
	}
	if (!f->done && !(f->seen[q->rank / 8] & (1u << (q->rank % 8)))) {
		if (replicated(r->s)) {
			if (store_rdv_fence(r->s->store, st->job_id, st->attempt, f->name, q->rank,
					    f->size) < 0) {
				req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
						"cannot save the rendezvous: %s", strerror(errno));
				return;
			}
			in_txn(r->s);
		}
		fence_enter(f, q->rank);
	}
	if (f->done) {
		send_fence(r->s, r->rid, r->rid_len, r->msg->id, f);
		if (st->nw)
			wake(r->s, st, true, f->name);
	} else if (!park(r, st, true, q->name, q->wait_ms)) {
		send_fence(r->s, r->rid, r->rid_len, r->msg->id, f);
	}
}

/* Answer the waiters of st whose time is up (now): not found, or not done yet. */
static void expire(struct gsched *s, struct store *st, int64_t now)
{
	for (size_t i = 0; i < st->nw;) {
		struct waiter *w = &st->w[i];
		if (w->expires_ms > now) {
			i++;
			continue;
		}
		if (w->fence)
			send_fence(s, w->rid, w->rid_len, w->msg_id, fence_get(st, w->name));
		else
			send_get(s, w->rid, w->rid_len, w->msg_id, NULL);
		st->w[i] = st->w[--st->nw];
		s->rdv->nwait--;
	}
}

void rdv_tick(struct gsched *s)
{
	if (!s->rdv || !s->rdv->nwait)
		return;
	int64_t now = gp_mono_ms();
	size_t pos = 0;
	struct store *st;
	while ((st = gp_u64map_next(s->rdv->stores, &pos, NULL)))
		if (st->nw)
			expire(s, st, now);
}

static int rdv_on_job(struct gsched *s, const struct sched_event *ev, void *arg)
{
	(void)arg;
	rdv_job_stopped(s, ev->job);
	return 0;
}

int rdv_subscribe(struct gsched *s)
{
	return sched_events_subscribe(s->events, 1u << SEV_JOB_STOPPING, rdv_on_job, NULL);
}

/* ---- a new leader's rendezvous, from the replicated rows ----------------------------------- */

struct restore {
	struct gsched *s;
	size_t keys, entries, bad;
	uint64_t *gone; /* jobs whose rows are of no running attempt: forgotten after the walk */
	size_t ngone, capgone;
};

static int restore_key(struct restore *rs, struct store *st, const struct store_rdv_row *row)
{
	bool found;
	size_t i = find(st->e, st->ne, sizeof(*st->e), row->name, &found);
	if (found || row->len > RDV_VAL_MAX)
		return 0; /* one row per key (its primary key); never more than a put takes */
	char *key = strdup(row->name);
	uint8_t *val = malloc(row->len ? row->len : 1);
	if (!key || !val || grow((void **)&st->e, st->ne, &st->cape, sizeof(*st->e)) < 0) {
		free(key);
		free(val);
		return -1;
	}
	if (row->len)
		memcpy(val, row->value, row->len);
	memmove(&st->e[i + 1], &st->e[i], (st->ne - i) * sizeof(*st->e));
	st->e[i] = (struct entry){.key = key, .val = val, .len = row->len, .rank = row->rank};
	st->ne++;
	account(rs->s->rdv, st, strlen(key) + row->len + ENTRY_OVERHEAD, 0);
	rs->keys++;
	return 0;
}

static int restore_entry(struct restore *rs, struct store *st, const struct store_rdv_row *row)
{
	bool found;
	size_t i = find(st->f, st->nf, sizeof(*st->f), row->name, &found);
	if (!found) {
		size_t bits = ((size_t)st->size + 7) / 8;
		char *name = strdup(row->name);
		uint8_t *seen = calloc(bits, 1);
		if (!name || !seen ||
		    grow((void **)&st->f, st->nf, &st->capf, sizeof(*st->f)) < 0) {
			free(name);
			free(seen);
			return -1;
		}
		memmove(&st->f[i + 1], &st->f[i], (st->nf - i) * sizeof(*st->f));
		st->f[i] = (struct fence){.name = name, .size = row->size, .seen = seen};
		st->nf++;
		account(rs->s->rdv, st, strlen(name) + bits + ENTRY_OVERHEAD, 0);
	}
	struct fence *f = &st->f[i];
	if (f->done || f->size != row->size || (f->seen[row->rank / 8] & (1u << (row->rank % 8))))
		return 0;
	fence_enter(f, row->rank);
	rs->entries++;
	return 0;
}

static int restore_row(void *arg, const struct store_rdv_row *row)
{
	struct restore *rs = arg;
	struct job *j = jobs_get(rs->s->jobs, row->job);
	if (!j || j->state != GPOOL__JOB_STATE__RUNNING || j->attempt != row->attempt) {
		if (!rs->ngone || rs->gone[rs->ngone - 1] != row->job) { /* rows come by job */
			if (grow((void **)&rs->gone, rs->ngone, &rs->capgone, sizeof(*rs->gone)) <
			    0)
				return -1;
			rs->gone[rs->ngone++] = row->job;
		}
		return 0;
	}
	size_t nlen = strlen(row->name);
	if (!nlen || nlen > RDV_KEY_MAX || row->rank >= j->ntasks ||
	    (row->fence && (!row->size || row->size > j->ntasks))) {
		rs->bad++;
		return 0;
	}
	struct store *st = store_of(rs->s, j);
	if (!st)
		return -1;
	return row->fence ? restore_entry(rs, st, row) : restore_key(rs, st, row);
}

int rdv_restore(struct gsched *s)
{
	struct restore rs = {.s = s};
	if (!s->rdv || !s->store)
		return 0;
	int rc = store_rdv_each(s->store, restore_row, &rs);
	for (size_t i = 0; rc == 0 && i < rs.ngone; i++) {
		if (store_rdv_forget(s->store, rs.gone[i]) < 0)
			rc = -1;
		else
			in_txn(s);
	}
	if (rc == 0 && (rs.keys || rs.entries || rs.ngone || rs.bad))
		gp_info("replicated rendezvous restored: %zu keys and %zu fence entries of %zu "
			"jobs; %zu jobs' rows of an ended attempt forgotten%s",
			rs.keys, rs.entries, rdv_nstores(s->rdv), rs.ngone,
			rs.bad ? " (rows out of range skipped)" : "");
	free(rs.gone);
	return rc ? -1 : 0;
}
