/* wire.c - the envelope around every control-path message: sealing a batch under one
 * MUNGE credential and opening one in order of cost (wire.h) */
#include "common/wire.h"

#include <errno.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/replay.h"
#include "common/sha256.h"

#define REPLAY_SLOTS_MAX (1u << 20)

struct gp_wire {
	gp_auth_t *auth;
	size_t max_message;
	uint64_t epoch;
	uint64_t next_seq;
	gp_replay_t *replay; /* authenticated wires only */
	struct gp_wire_stats st;
	bool keyed; /* gp_wire_set_reply_key */
	uid_t key_uid;
	uint8_t key[GP_WIRE_KEY_LEN];
	char hint[64]; /* Envelope.hint of what this side seals */
};

/* A Batch is its members one after another (a repeated field), so a one-message Batch packed
 * after the others adds a member: protoc-c's code writes its tag, not ours. */
int gp_batch_add(gp_batch_t *b, const Gpool__Msg *m)
{
	Gpool__Batch one = GPOOL__BATCH__INIT;
	Gpool__Msg *msgs[1] = {(Gpool__Msg *)m};
	one.n_msgs = 1;
	one.msgs = msgs;
	size_t n = gpool__batch__get_packed_size(&one);
	if (gp_buf_reserve(&b->body, n) < 0)
		return -1;
	gpool__batch__pack(&one, b->body.data + b->body.len);
	b->body.len += n;
	b->count++;
	return 0;
}

int gp_batch_add_member(gp_batch_t *b, const uint8_t *member, size_t len)
{
	if (gp_buf_append(&b->body, member, len) < 0)
		return -1;
	b->count++;
	return 0;
}

void gp_batch_reset(gp_batch_t *b)
{
	b->body.len = 0;
	b->count = 0;
}

void gp_batch_release(gp_batch_t *b)
{
	gp_buf_release(&b->body);
	b->count = 0;
}

gp_wire_t *gp_wire_create(gp_auth_t *auth, size_t max_message)
{
	gp_wire_t *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->auth = auth;
	w->max_message = max_message;
	if (auth && !(w->replay = gp_replay_create(REPLAY_SLOTS_MAX))) {
		free(w);
		return NULL;
	}
	w->epoch = gp_random64() | 1;
	w->next_seq = 1;
	return w;
}

void gp_wire_destroy(gp_wire_t **p)
{
	if (!p || !*p)
		return;
	gp_replay_destroy(&(*p)->replay);
	sodium_memzero((*p)->key, sizeof((*p)->key));
	free(*p);
	*p = NULL;
}

void gp_wire_digest(uint32_t version, uint64_t epoch, uint64_t seq, const uint8_t *body, size_t len,
		    uint8_t out[32])
{
	uint8_t hdr[6 + 4 + 8 + 8];
	memcpy(hdr, "gpool1", 6);
	for (int i = 0; i < 4; i++)
		hdr[6 + i] = (uint8_t)(version >> (8 * i));
	for (int i = 0; i < 8; i++) {
		hdr[10 + i] = (uint8_t)(epoch >> (8 * i));
		hdr[18 + i] = (uint8_t)(seq >> (8 * i));
	}
	const void *parts[] = {hdr, body};
	const size_t lens[] = {sizeof(hdr), len};
	gp_sha256(parts, lens, 2, out);
}

int gp_wire_set_reply_key(gp_wire_t *w, uid_t peer_uid)
{
	if (!w->auth)
		return errno = EINVAL, -1;
	if (getrandom(w->key, sizeof(w->key), 0) != (ssize_t)sizeof(w->key))
		return errno = EIO, -1;
	w->keyed = true;
	w->key_uid = peer_uid;
	return 0;
}

void gp_wire_set_hint(gp_wire_t *w, const char *hint)
{
	snprintf(w->hint, sizeof(w->hint), "%s", hint ? hint : "");
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

long gp_wire_count_members(const uint8_t *body, size_t len)
{
	if (!len)
		return 0; /* an empty Batch (body may be NULL then) */
	const uint8_t *p = body, *end = body + len;
	long n = 0;
	while (p < end) {
		uint64_t key, l;
		/* Batch.msgs: field 1, length-delimited; nothing else belongs in a Batch */
		if (varint(&p, end, &key) < 0 || key != ((1u << 3) | 2) ||
		    varint(&p, end, &l) < 0 || l > (uint64_t)(end - p))
			return -1;
		p += l;
		if (++n > 0x7fffffffL)
			return -1;
	}
	return n;
}

struct budget {
	size_t left;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;
	if (size > b->left)
		return NULL;
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *ptr)
{
	(void)data;
	free(ptr);
}

Gpool__Batch *gp_wire_unpack_batch(const uint8_t *body, size_t len)
{
	/* malloc and free underneath: what this allocator gives, the default one frees */
	struct budget b = {.left = len <= (GP_WIRE_MAX_DECODED - (1u << 20)) / GP_WIRE_DECODE_FACTOR
				       ? len * GP_WIRE_DECODE_FACTOR + (1u << 20)
				       : GP_WIRE_MAX_DECODED};
	ProtobufCAllocator a = {.alloc = budget_alloc, .free = budget_free, .allocator_data = &b};
	return gpool__batch__unpack(&a, len, body);
}

/* the envelope of b as the next one this wire sends; h: its digest, when asked for */
static void envelope(const gp_wire_t *w, const gp_batch_t *b, Gpool__Envelope *env, uint8_t *h)
{
	gpool__envelope__init(env);
	env->version = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	env->epoch = w->epoch;
	env->seq = w->next_seq;
	env->body.data = b->body.data;
	env->body.len = b->body.len;
	env->hint = (char *)w->hint;
	if (h)
		gp_wire_digest(env->version, env->epoch, env->seq, b->body.data, b->body.len, h);
}

static int pack(gp_wire_t *w, const gp_batch_t *b, const Gpool__Envelope *env, gp_buf_t *out,
		gp_error_t *err)
{
	size_t n = gpool__envelope__get_packed_size(env);
	out->len = 0;
	if (gp_buf_reserve(out, n) < 0)
		return gp_errprintf(err, "out of memory");
	gpool__envelope__pack(env, out->data);
	out->len = n;
	w->next_seq += b->count ? b->count : 1;
	w->st.sealed++;
	return 0;
}

int gp_wire_seal(gp_wire_t *w, const gp_batch_t *b, gp_buf_t *out, gp_error_t *err)
{
	Gpool__Envelope env;
	uint8_t h[32 + GP_WIRE_KEY_LEN]; /* the digest, then the reply key if any */
	char *cred = NULL;
	envelope(w, b, &env, w->auth ? h : NULL);
	if (w->auth) {
		int rc;
		if (w->keyed) {
			memcpy(h + 32, w->key, GP_WIRE_KEY_LEN);
			rc = gp_auth_encode_for(w->auth, h, sizeof(h), w->key_uid, &cred, err);
			sodium_memzero(h + 32, GP_WIRE_KEY_LEN);
		} else {
			rc = gp_auth_encode(w->auth, h, 32, &cred, err);
		}
		if (rc < 0)
			return -1;
		env.cred.data = (uint8_t *)cred;
		env.cred.len = strlen(cred);
	}
	int rc = pack(w, b, &env, out, err);
	free(cred);
	return rc;
}

int gp_wire_seal_mac(gp_wire_t *w, const gp_batch_t *b, const uint8_t key[GP_WIRE_KEY_LEN],
		     gp_buf_t *out, gp_error_t *err)
{
	Gpool__Envelope env;
	uint8_t h[32], mac[crypto_auth_hmacsha256_BYTES];
	envelope(w, b, &env, h);
	crypto_auth_hmacsha256(mac, h, sizeof(h), key);
	env.mac.data = mac;
	env.mac.len = sizeof(mac);
	if (pack(w, b, &env, out, err) < 0)
		return -1;
	w->st.mac_sealed++;
	return 0;
}

static Gpool__Batch *refuse(gp_wire_t *w, Gpool__ErrorCode *code, Gpool__ErrorCode c)
{
	*code = c;
	w->st.refused++;
	return NULL;
}

Gpool__Batch *gp_wire_open(gp_wire_t *w, const void *data, size_t len, struct gp_sender *from,
			   Gpool__ErrorCode *code, gp_error_t *err)
{
	memset(from, 0, sizeof(*from));
	if (len > w->max_message) {
		gp_errprintf(err, "message of %zu bytes is over the limit of %zu", len,
			     w->max_message);
		return refuse(w, code, GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	}
	Gpool__Envelope *env = gpool__envelope__unpack(NULL, len, data);
	if (!env) {
		gp_errprintf(err, "malformed envelope (%zu bytes)", len);
		return refuse(w, code, GPOOL__ERROR_CODE__ERROR_MALFORMED);
	}
	from->version = env->version;
	size_t k = 0;
	for (const char *c = env->hint ? env->hint : ""; *c && k + 1 < sizeof(from->hint); c++)
		from->hint[k++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
	from->hint[k] = '\0';
	if (env->version != GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION) {
		gp_errprintf(err, "peer speaks protocol version %u, this side speaks %d",
			     env->version, GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION);
		gpool__envelope__free_unpacked(env, NULL);
		return refuse(w, code, GPOOL__ERROR_CODE__ERROR_VERSION);
	}
	if (w->auth && env->mac.len) {
		/* a reply under this wire's key: only the one who decoded our credential has it */
		uint8_t h[32];
		gp_wire_digest(env->version, env->epoch, env->seq, env->body.data, env->body.len,
			       h);
		if (!w->keyed || env->cred.len || env->mac.len != crypto_auth_hmacsha256_BYTES ||
		    crypto_auth_hmacsha256_verify(env->mac.data, h, sizeof(h), w->key) != 0) {
			gp_errprintf(err, "%s",
				     w->keyed ? "reply key does not match the message "
						"(altered in transit, or not the peer's)"
					      : "message sealed with a key this side never gave");
			gpool__envelope__free_unpacked(env, NULL);
			return refuse(w, code, GPOOL__ERROR_CODE__ERROR_AUTH);
		}
		from->uid = w->key_uid;
		from->gid = (gid_t)-1;
		w->st.mac_opened++;
	} else if (w->auth) {
		uint8_t h[32];
		void *payload = NULL;
		size_t plen = 0;
		enum gp_auth_status st;
		char *cred = NULL;
		if (env->cred.len == 0 || env->cred.len > 65536 ||
		    !(cred = strndup((const char *)env->cred.data, env->cred.len))) {
			gp_errprintf(err, "message without a credential");
			gpool__envelope__free_unpacked(env, NULL);
			return refuse(w, code, GPOOL__ERROR_CODE__ERROR_AUTH);
		}
		int rc = gp_auth_decode(w->auth, cred, &payload, &plen, &from->uid, &from->gid, &st,
					err);
		free(cred);
		if (rc < 0) {
			gpool__envelope__free_unpacked(env, NULL);
			return refuse(w, code,
				      st == GP_AUTH_EXPIRED    ? GPOOL__ERROR_CODE__ERROR_EXPIRED
				      : st == GP_AUTH_REPLAYED ? GPOOL__ERROR_CODE__ERROR_REPLAY
				      : st == GP_AUTH_UNAVAILABLE
					  ? GPOOL__ERROR_CODE__ERROR_UNAVAILABLE
					  : GPOOL__ERROR_CODE__ERROR_AUTH);
		}
		gp_wire_digest(env->version, env->epoch, env->seq, env->body.data, env->body.len,
			       h);
		/* the hash, or the hash and the sender's reply key */
		int match = (plen == sizeof(h) || plen == sizeof(h) + GP_WIRE_KEY_LEN) &&
			    memcmp(payload, h, sizeof(h)) == 0;
		if (match && plen > sizeof(h)) {
			from->has_key = true;
			memcpy(from->key, (uint8_t *)payload + sizeof(h), GP_WIRE_KEY_LEN);
			sodium_memzero(payload, plen);
		}
		free(payload);
		if (!match) {
			gp_errprintf(err,
				     "credential does not match the message (altered in transit?)");
			gpool__envelope__free_unpacked(env, NULL);
			return refuse(w, code, GPOOL__ERROR_CODE__ERROR_AUTH);
		}
	}
	from->epoch = env->epoch;
	/* the members are counted before any is decoded, and decoding is bounded */
	long members = gp_wire_count_members(env->body.data, env->body.len);
	if (members > GP_WIRE_MAX_MSGS) {
		gp_errprintf(err, "envelope of %ld messages is over the limit of %d", members,
			     GP_WIRE_MAX_MSGS);
		gpool__envelope__free_unpacked(env, NULL);
		return refuse(w, code, GPOOL__ERROR_CODE__ERROR_TOO_LARGE);
	}
	Gpool__Batch *b = members < 0 ? NULL : gp_wire_unpack_batch(env->body.data, env->body.len);
	if (!b) {
		gp_errprintf(err, "malformed message batch");
		gpool__envelope__free_unpacked(env, NULL);
		return refuse(w, code, GPOOL__ERROR_CODE__ERROR_MALFORMED);
	}
	if (w->auth && gp_replay_check(w->replay, from->uid, env->epoch, env->seq, b->n_msgs,
				       gp_mono_ms() / 1e3) < 0) {
		bool full = errno == ENOSPC || errno == ENOMEM;
		if (full)
			gp_errprintf(err, "no room to track a new sender (uid %u): %s",
				     (unsigned)from->uid, strerror(errno));
		else
			gp_errprintf(err, "replayed message (uid %u, sequence %llu)",
				     (unsigned)from->uid, (unsigned long long)env->seq);
		gpool__batch__free_unpacked(b, NULL);
		gpool__envelope__free_unpacked(env, NULL);
		return refuse(w, code,
			      full ? GPOOL__ERROR_CODE__ERROR_UNAVAILABLE
				   : GPOOL__ERROR_CODE__ERROR_REPLAY);
	}
	gpool__envelope__free_unpacked(env, NULL);
	w->st.opened++;
	*code = GPOOL__ERROR_CODE__ERROR_NONE;
	return b;
}

void gp_wire_stats(const gp_wire_t *w, struct gp_wire_stats *st)
{
	*st = w->st;
}

static const char *const code_names[] = {
    [GPOOL__ERROR_CODE__ERROR_NONE] = "none",
    [GPOOL__ERROR_CODE__ERROR_VERSION] = "protocol version mismatch",
    [GPOOL__ERROR_CODE__ERROR_AUTH] = "authentication failed",
    [GPOOL__ERROR_CODE__ERROR_REPLAY] = "replayed credential",
    [GPOOL__ERROR_CODE__ERROR_EXPIRED] = "expired credential",
    [GPOOL__ERROR_CODE__ERROR_MALFORMED] = "malformed message",
    [GPOOL__ERROR_CODE__ERROR_TOO_LARGE] = "message too large",
    [GPOOL__ERROR_CODE__ERROR_RATE] = "rate limited",
    [GPOOL__ERROR_CODE__ERROR_INVALID] = "invalid request",
    [GPOOL__ERROR_CODE__ERROR_NOT_FOUND] = "not found",
    [GPOOL__ERROR_CODE__ERROR_PERMISSION] = "permission denied",
    [GPOOL__ERROR_CODE__ERROR_STATE] = "not possible in this state",
    [GPOOL__ERROR_CODE__ERROR_UNAVAILABLE] = "unavailable",
    [GPOOL__ERROR_CODE__ERROR_UNEXPECTED] = "unexpected message",
};

const char *gp_error_code_name(Gpool__ErrorCode code)
{
	if ((unsigned)code < sizeof(code_names) / sizeof(code_names[0]) && code_names[code])
		return code_names[code];
	return "unknown error";
}
