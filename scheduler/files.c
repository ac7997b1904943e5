/* files.c: the chunk store and the file sets kept with jobs. */
#include "scheduler/files.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fserr.h"
#include "common/chunk.h"
#include "common/log.h"
#include "common/names.h"
#include "common/util.h"
#include "scheduler/net.h"
#include "scheduler/store.h"
#include "scheduler/store_files.h"

#define HAVE_MAX    4096	/* hashes in one ChunkHave */
#define SET_ENTRIES 1000000	/* entries in one file set or manifest */
#define SET_MAX	    (64u << 20) /* bytes of one stored file set */
#define COLLECT_MAX 64		/* --collect patterns */
/* the bytes of one file set's chunks that go into jobs.db (and so into one Raft entry) when
 * the state is replicated; a larger set stays on the leader's disk only (docs/standby.md) */
#define REPL_SET_MAX (64u << 20)

static uint64_t chunks_in, bytes_in, chunks_out, bytes_out;

static void chunk_dir(struct gsched *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s/chunks", s->state_dir);
}

static bool kind_ok(const char *k)
{
	return k && (!strcmp(k, "collect") || !strcmp(k, "ckpt"));
}

/* A set name: 1..128 of [A-Za-z0-9._-], not starting with a dot. */
static bool set_name_ok(const char *n)
{
	size_t len = n ? strlen(n) : 0;
	if (!len || len > 128 || n[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = n[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool privileged_uid(const struct gsched *s, uid_t uid)
{
	return uid == 0 || uid == s->agent_uid;
}

static bool privileged(const struct req *r)
{
	return privileged_uid(r->s, r->from.uid);
}

/* May uid build files from chunk h? Only when it sent the chunk's bytes or owns a job whose
 * file set holds it: knowing a hash is not having the bytes. Root and the agents' account may
 * use any (they fetch for jobs). */
static bool may_use(struct gsched *s, uid_t uid, const uint8_t *h)
{
	return privileged_uid(s, uid) || store_chunk_may(s->store, h, GP_HASH_LEN, uid) == 1;
}

/* uid may use chunk h from now on, in the open transaction (the reply that depends on it goes
 * durable). 0 / -1 with errno set. */
static int grant_chunk(struct gsched *s, uid_t uid, const uint8_t *h)
{
	if (privileged_uid(s, uid))
		return 0;
	if (store_chunk_grant(s->store, h, GP_HASH_LEN, uid) < 0)
		return -1;
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	return 0;
}

/* grant_chunk for every chunk of e[0..n). 0 / -1 with errno set. */
static int grant_set(struct gsched *s, uid_t uid, Gpool__StageEntry *const *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < e[i]->n_chunks; k++)
			if (grant_chunk(s, uid, e[i]->chunks[k].data) < 0)
				return -1;
	return 0;
}

int files_check_use(struct gsched *s, uid_t uid, Gpool__StageEntry *const *e, size_t n, char *why,
		    size_t len)
{
	if (n > SET_ENTRIES) {
		snprintf(why, len, "too many files (%zu)", n);
		return errno = E2BIG, -1;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < e[i]->n_chunks; k++)
			if (e[i]->chunks[k].len == GP_HASH_LEN &&
			    !may_use(s, uid, e[i]->chunks[k].data)) {
				snprintf(
				    why, len,
				    "file '%.64s': chunk %zu was not uploaded by uid %u nor is "
				    "in a file set of theirs (send its bytes first): "
				    "permission denied",
				    e[i]->path, k, (unsigned)uid);
				return errno = EACCES, -1;
			}
	return 0;
}

int files_admit(struct gsched *s, struct admission *a)
{
	if (files_check_use(s, a->uid, a->sp->stage, a->sp->n_stage, a->why, sizeof(a->why)) == 0)
		return 0;
	a->code = errno == EACCES ? GPOOL__ERROR_CODE__ERROR_PERMISSION
				  : GPOOL__ERROR_CODE__ERROR_INVALID;
	return -1;
}

/* The uid that owns a job's file sets: the job's, or what was recorded with its first set. */
static int owner_of(struct gsched *s, uint64_t job_id, uid_t *uid)
{
	struct job *j = jobs_get(s->jobs, job_id);
	if (j) {
		*uid = j->uid;
		return 0;
	}
	char path[1200];
	uint8_t *d;
	size_t n;
	snprintf(path, sizeof(path), "%s/files/%llu/owner", s->state_dir,
		 (unsigned long long)job_id);
	if (gp_read_file(path, 32, &d, &n) < 0)
		return -1;
	char buf[33];
	memcpy(buf, d, n);
	buf[n] = '\0';
	free(d);
	*uid = (uid_t)strtoul(buf, NULL, 10);
	return 0;
}

static int check_entries(struct gsched *s, Gpool__StageEntry *const *e, size_t n, char *why,
			 size_t len)
{
	char dir[1100];
	chunk_dir(s, dir, sizeof(dir));
	if (n > SET_ENTRIES)
		return snprintf(why, len, "too many files (%zu)", n), -1;
	for (size_t i = 0; i < n; i++) {
		if (!gp_entry_ok(e[i]))
			return snprintf(why, len, "invalid file entry '%.64s'", e[i]->path), -1;
		for (size_t k = 0; k < e[i]->n_chunks; k++)
			if (!gp_chunk_has(dir, e[i]->chunks[k].data))
				return snprintf(
					   why, len,
					   "file '%.64s': chunk %zu is not in the store (upload "
					   "it first)",
					   e[i]->path, k),
				       -1;
	}
	return 0;
}

int files_check_spec(struct gsched *s, const Gpool__JobSpec *sp, char *why, size_t len)
{
	if (sp->n_collect > COLLECT_MAX)
		return snprintf(why, len, "too many collect patterns (%zu)", sp->n_collect), -1;
	for (size_t i = 0; i < sp->n_collect; i++) {
		const char *p = sp->collect[i];
		if (!*p || p[0] == '/' || strstr(p, "..") || strlen(p) > 1024)
			return snprintf(why, len, "invalid collect pattern '%.64s'", p), -1;
	}
	return check_entries(s, sp->stage, sp->n_stage, why, len);
}

void files_chunk_have(struct req *r)
{
	const Gpool__ChunkHave *q = r->msg->chunk_have;
	if (q->n_hashes > HAVE_MAX) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_TOO_LARGE,
				"%zu hashes in one query (at most %d)", q->n_hashes, HAVE_MAX);
		return;
	}
	char dir[1100];
	chunk_dir(r->s, dir, sizeof(dir));
	uint32_t *miss = calloc(q->n_hashes ? q->n_hashes : 1, sizeof(*miss));
	if (!miss) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE, "out of memory");
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < q->n_hashes; i++) {
		if (q->hashes[i].len != GP_HASH_LEN) {
			free(miss);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
					"hash %zu is %zu bytes, not %d", i, q->hashes[i].len,
					GP_HASH_LEN);
			return;
		}
		/* missing to whoever may not use it: they send the bytes, which proves they
		 * have them, rather than learn that someone staged that exact chunk */
		if (!gp_chunk_has(dir, q->hashes[i].data) ||
		    !may_use(r->s, r->from.uid, q->hashes[i].data))
			miss[n++] = (uint32_t)i;
	}
	Gpool__ChunkHaveReply rep = GPOOL__CHUNK_HAVE_REPLY__INIT;
	rep.missing = miss;
	rep.n_missing = n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_CHUNK_HAVE_REPLY;
	m.chunk_have_reply = &rep;
	req_reply(r, &m, false);
	free(miss);
}

void files_chunk_put(struct req *r)
{
	const Gpool__ChunkPut *q = r->msg->chunk_put;
	if (q->hash.len != GP_HASH_LEN || q->data.len > GP_CHUNK_SIZE) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"a chunk needs a %d-byte hash and at most %u bytes", GP_HASH_LEN,
				GP_CHUNK_SIZE);
		return;
	}
	char dir[1100];
	chunk_dir(r->s, dir, sizeof(dir));
	if (gp_mkdir_p(dir, 0700) < 0 ||
	    gp_chunk_put(dir, q->hash.data, q->data.data, q->data.len) < 0) {
		char hex[2 * GP_HASH_LEN + 1];
		gp_chunk_hex(q->hash.data, hex);
		if (errno == EBADMSG) {
			gp_warn("chunk %.16s from %s (uid %u): its bytes do not match its hash: "
				"refused",
				hex, r->addr, (unsigned)r->from.uid);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
					"chunk %.16s: the bytes do not match the hash", hex);
		} else {
			char why[400]; /* a full store names its directory (fserr.h) */
			gp_fs_why(errno, dir, q->data.len, why, sizeof(why));
			gp_err("cannot store chunk %.16s: %s", hex, why);
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
					"cannot store the chunk: %s", why);
		}
		return;
	}
	/* the sender has shown it holds these bytes: it may use the chunk from now on */
	if (grant_chunk(r->s, r->from.uid, q->hash.data) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"cannot record the chunk's sender: %s", strerror(errno));
		return;
	}
	chunks_in++;
	bytes_in += q->data.len;
	gp_debug("chunk store: %llu chunks, %llu bytes received so far",
		 (unsigned long long)chunks_in, (unsigned long long)bytes_in);
	Gpool__ChunkPutReply rep = GPOOL__CHUNK_PUT_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_CHUNK_PUT_REPLY;
	m.chunk_put_reply = &rep;
	req_reply(r, &m, !privileged(r));
}

static char *set_path(struct gsched *s, uint64_t job, const char *kind, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s/files/%llu/%s/%s", s->state_dir, (unsigned long long)job, kind, name) <
	    0)
		return NULL;
	return p;
}

static Gpool__FileSet *set_load(struct gsched *s, uint64_t job, const char *kind, const char *name)
{
	char *p = set_path(s, job, kind, name);
	uint8_t *d;
	size_t n;
	if (!p || gp_read_file(p, SET_MAX, &d, &n) < 0) {
		free(p);
		return NULL;
	}
	free(p);
	Gpool__FileSet *fs = gpool__file_set__unpack(NULL, n, d);
	free(d);
	return fs;
}

/* May r read the job's file sets? Replies and returns -1 when not. */
static int may_read(struct req *r, uint64_t job_id)
{
	uid_t owner;
	if (owner_of(r->s, job_id, &owner) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
				"job %llu has no files stored", (unsigned long long)job_id);
		return -1;
	}
	if (!privileged(r) && r->from.uid != owner) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"job %llu is not yours: permission denied",
				(unsigned long long)job_id);
		return -1;
	}
	return 0;
}

void files_chunk_get(struct req *r)
{
	const Gpool__ChunkGet *q = r->msg->chunk_get;
	if (q->hash.len != GP_HASH_LEN) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "a hash is %d bytes",
				GP_HASH_LEN);
		return;
	}
	if (!privileged(r)) {
		/* a command reads only chunks of a file set of its own job */
		if (!kind_ok(q->kind) || !set_name_ok(q->name)) {
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
					"name the file set the chunk belongs to");
			return;
		}
		if (may_read(r, q->job_id) < 0)
			return;
		Gpool__FileSet *fs = set_load(r->s, q->job_id, q->kind, q->name);
		bool in = false;
		for (size_t i = 0; fs && !in && i < fs->n_entries; i++)
			for (size_t k = 0; !in && k < fs->entries[i]->n_chunks; k++)
				in = fs->entries[i]->chunks[k].len == GP_HASH_LEN &&
				     !memcmp(fs->entries[i]->chunks[k].data, q->hash.data,
					     GP_HASH_LEN);
		if (fs)
			gpool__file_set__free_unpacked(fs, NULL);
		if (!in) {
			req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
					"that chunk is not in file set %s/%s of job %llu", q->kind,
					q->name, (unsigned long long)q->job_id);
			return;
		}
	}
	char dir[1100];
	chunk_dir(r->s, dir, sizeof(dir));
	uint8_t *d;
	size_t n;
	/* the store hashed every chunk on arrival and every asker hashes what it gets: hashed
	 * here again only when an asker says its last copy arrived damaged */
	bool check = q->recheck || !q->attach;
	if ((check ? gp_chunk_read(dir, q->hash.data, &d, &n)
		   : gp_chunk_read_unchecked(dir, q->hash.data, &d, &n)) < 0) {
		char hex[2 * GP_HASH_LEN + 1];
		gp_chunk_hex(q->hash.data, hex);
		if (errno == EBADMSG)
			gp_err("chunk %.16s in the store is damaged: removed", hex);
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "chunk %.16s: %s", hex,
				errno == EBADMSG ? "damaged in the store" : "not in the store");
		return;
	}
	chunks_out++;
	bytes_out += n;
	Gpool__ChunkGetReply rep = GPOOL__CHUNK_GET_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_CHUNK_GET_REPLY;
	m.chunk_get_reply = &rep;
	if (q->attach) {
		/* the bytes go as they are, after a small sealed reply: no copy into the
		 * envelope, no hash of 4 MiB for the credential on either side */
		rep.attached = true;
		net_send_bulk(r->s->net, r->rid, r->rid_len, &m, d, n);
		return;
	}
	rep.data = (ProtobufCBinaryData){n, d};
	req_reply(r, &m, false);
	free(d);
}

static bool seen_hash(const struct store_chunk *c, size_t n, const uint8_t *h)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(c[i].hash, h, GP_HASH_LEN))
			return true;
	return false;
}

/* With the state replicated: a set (or a submission's staged input) and its chunks' bytes into
 * jobs.db, in the open transaction (store_files.h), so that the put is acknowledged only once
 * a majority holds what a new leader needs to serve it. refs_only: the bytes are held by a row
 * of the same transaction already (an array's later tasks). A set over REPL_SET_MAX is left
 * out (the rows of its name forgotten: a new leader has no older one either): 1. 0 / 1 / -1
 * with errno set. */
static int replicate_entries(struct gsched *s, uint64_t job, uid_t uid, const char *kind,
			     const char *name, const uint8_t *set, size_t len,
			     Gpool__StageEntry *const *e, size_t ne, bool refs_only)
{
	if (!store_replicated(s->store))
		return 0;
	char dir[1100];
	chunk_dir(s, dir, sizeof(dir));
	size_t total = 0, n = 0, cap = 0;
	struct store_chunk *c = NULL;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ne; i++)
		for (size_t k = 0; rc == 0 && k < e[i]->n_chunks; k++) {
			const uint8_t *h = e[i]->chunks[k].data;
			if (e[i]->chunks[k].len != GP_HASH_LEN || seen_hash(c, n, h))
				continue;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 16;
				struct store_chunk *t = realloc(c, nc * sizeof(*c));
				if (!t) {
					rc = -1;
					break;
				}
				c = t;
				cap = nc;
			}
			uint8_t *d = NULL;
			size_t dl = 0;
			if (!refs_only && gp_chunk_read_unchecked(dir, h, &d, &dl) < 0) {
				rc = -1;
				break;
			}
			c[n++] = (struct store_chunk){h, d, dl};
			total += dl;
			if (total > REPL_SET_MAX)
				rc = 1;
		}
	if (rc == 1) {
		gp_warn("job %llu: %s %s holds more than %u MiB: not replicated (a new leader will "
			"not have it)",
			(unsigned long long)job,
			!strcmp(kind, "stage") ? "staged input" : "file set", name,
			REPL_SET_MAX >> 20);
		set = NULL;
	}
	int e_no = 0, put = 0;
	if (rc >= 0 &&
	    (put = store_files_put(s->store, job, kind, name, (uint32_t)uid, set, len, c, n)) < 0)
		e_no = errno;
	else if (rc < 0)
		e_no = errno;
	for (size_t i = 0; i < n; i++)
		free((void *)c[i].data);
	free(c);
	if (rc < 0 || put < 0)
		return errno = e_no ? e_no : EIO, -1;
	if (!s->txn_first_ms)
		s->txn_first_ms = gp_mono_ms();
	return rc;
}

static int replicate_set(struct gsched *s, const struct job *j, const Gpool__FileSetPut *q,
			 const uint8_t *set, size_t len)
{
	return replicate_entries(s, j->id, j->uid, q->kind, q->name, set, len, q->entries,
				 q->n_entries, false) < 0
		   ? -1
		   : 0;
}

int files_replicate_stage(struct gsched *s, const struct job *j, Gpool__StageEntry *const *e,
			  size_t n, bool refs_only)
{
	static const uint8_t none[1];
	if (!n)
		return 0;
	/* the entries travel in the job's spec: only the chunks' bytes are kept here */
	return replicate_entries(s, j->id, j->uid, "stage", "input", none, 0, e, n, refs_only);
}

void files_set_put(struct req *r)
{
	struct gsched *s = r->s;
	const Gpool__FileSetPut *q = r->msg->file_set_put;
	if (!kind_ok(q->kind) || !set_name_ok(q->name)) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"invalid file set '%.16s/%.128s'", q->kind, q->name);
		return;
	}
	struct job *j = jobs_get(s->jobs, q->job_id);
	if (!j) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND, "job %llu not found",
				(unsigned long long)q->job_id);
		return;
	}
	/* collected files come from the node's supervisor; a checkpoint from the job itself */
	if (!strcmp(q->kind, "collect") ? !privileged(r)
					: !privileged(r) && r->from.uid != j->uid) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_PERMISSION,
				"job %llu: may not store a %s file set", (unsigned long long)j->id,
				q->kind);
		return;
	}
	if (j->state != GPOOL__JOB_STATE__RUNNING && j->state != GPOOL__JOB_STATE__COMPLETING) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_STATE, "job %llu is %s",
				(unsigned long long)j->id, gp_job_state_name(j->state));
		return;
	}
	char why[256];
	/* may-use first: a chunk the sender may not use is refused the same whether the store
	 * holds it or not, so the answer tells nothing about other users' chunks */
	if (files_check_use(s, r->from.uid, q->entries, q->n_entries, why, sizeof(why)) < 0) {
		gp_warn("job %llu: file set %s/%s from uid %u refused: %s",
			(unsigned long long)j->id, q->kind, q->name, (unsigned)r->from.uid, why);
		req_reply_error(r,
				errno == EACCES ? GPOOL__ERROR_CODE__ERROR_PERMISSION
						: GPOOL__ERROR_CODE__ERROR_INVALID,
				"%s", why);
		return;
	}
	if (check_entries(s, q->entries, q->n_entries, why, sizeof(why)) < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID, "%s", why);
		return;
	}
	/* setuid, setgid and sticky bits are not kept, whoever sent them */
	for (size_t i = 0; i < q->n_entries; i++)
		q->entries[i]->mode = gp_mode_plain(q->entries[i]->mode, 0);
	Gpool__FileSet fs = GPOOL__FILE_SET__INIT;
	fs.name = q->name;
	fs.entries = q->entries;
	fs.n_entries = q->n_entries;
	size_t len = gpool__file_set__get_packed_size(&fs);
	uint8_t *buf = len <= SET_MAX ? malloc(len ? len : 1) : NULL;
	char *path = set_path(s, j->id, q->kind, q->name);
	char dir[1200], owner[1200], uid[32];
	snprintf(dir, sizeof(dir), "%s/files/%llu/%s", s->state_dir, (unsigned long long)j->id,
		 q->kind);
	snprintf(owner, sizeof(owner), "%s/files/%llu/owner", s->state_dir,
		 (unsigned long long)j->id);
	int n = snprintf(uid, sizeof(uid), "%u", (unsigned)j->uid);
	int rc = -1;
	/* the job's owner may use what its set holds (collected by the agent, say) */
	if (buf && path && grant_set(s, j->uid, q->entries, q->n_entries) == 0) {
		gpool__file_set__pack(&fs, buf);
		rc = gp_mkdir_p(dir, 0700) < 0 || gp_write_file(owner, uid, (size_t)n, 0600) < 0 ||
			     gp_write_file(path, buf, len, 0600) < 0 ||
			     replicate_set(s, j, q, buf, len) < 0
			 ? -1
			 : 0;
	}
	free(buf);
	free(path);
	if (rc < 0) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_UNAVAILABLE,
				"cannot store the file set: %s", strerror(errno));
		return;
	}
	gp_info("job %llu: file set %s/%s stored (%zu entries)", (unsigned long long)j->id, q->kind,
		q->name, q->n_entries);
	Gpool__FileSetPutReply rep = GPOOL__FILE_SET_PUT_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = r->msg->id;
	m.m_case = GPOOL__MSG__M_FILE_SET_PUT_REPLY;
	m.file_set_put_reply = &rep;
	req_reply(r, &m, !privileged_uid(s, j->uid));
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void files_set_get(struct req *r)
{
	struct gsched *s = r->s;
	const Gpool__FileSetGet *q = r->msg->file_set_get;
	if (!kind_ok(q->kind) || (*q->name && !set_name_ok(q->name))) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_INVALID,
				"invalid file set '%.16s/%.128s'", q->kind, q->name);
		return;
	}
	if (may_read(r, q->job_id) < 0)
		return;
	char **names = NULL;
	size_t nn = 0;
	if (*q->name) {
		names = malloc(sizeof(*names));
		if (names && (names[0] = strdup(q->name)))
			nn = 1;
	} else {
		char dir[1200];
		snprintf(dir, sizeof(dir), "%s/files/%llu/%s", s->state_dir,
			 (unsigned long long)q->job_id, q->kind);
		struct dirent **ds;
		int k = scandir(dir, &ds, NULL, alphasort);
		for (int i = 0; i < k; i++) {
			if (set_name_ok(ds[i]->d_name)) {
				char **nv = realloc(names, (nn + 1) * sizeof(*nv));
				if (nv && (nv[nn] = strdup(ds[i]->d_name)))
					names = nv, nn++;
				else if (nv)
					names = nv;
			}
			free(ds[i]);
		}
		if (k >= 0)
			free(ds);
		if (nn > 1) /* names is NULL when the folder is missing or empty */
			qsort(names, nn, sizeof(*names), name_cmp);
	}
	Gpool__FileSet **sets = calloc(nn ? nn : 1, sizeof(*sets));
	size_t ns = 0;
	for (size_t i = 0; sets && i < nn; i++)
		if ((sets[ns] = set_load(s, q->job_id, q->kind, names[i])))
			ns++;
	if (*q->name && !ns) {
		req_reply_error(r, GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
				"job %llu has no %s named '%s'", (unsigned long long)q->job_id,
				q->kind, q->name);
	} else {
		Gpool__FileSetGetReply rep = GPOOL__FILE_SET_GET_REPLY__INIT;
		rep.sets = sets;
		rep.n_sets = ns;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.id = r->msg->id;
		m.m_case = GPOOL__MSG__M_FILE_SET_GET_REPLY;
		m.file_set_get_reply = &rep;
		req_reply(r, &m, false);
	}
	for (size_t i = 0; i < ns; i++)
		gpool__file_set__free_unpacked(sets[i], NULL);
	free(sets);
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
}

struct restore {
	struct gsched *s;
	size_t sets, chunks;
};

/* files_restore's walk: a set's file and its owner, or a chunk into the store. */
static int restore_one(void *arg, uint64_t job, const char *kind, const char *name, uint32_t uid,
		       const void *set, size_t len, const struct store_chunk *c)
{
	struct restore *rs = arg;
	struct gsched *s = rs->s;
	char dir[1200];
	if (c) {
		chunk_dir(s, dir, sizeof(dir));
		if (gp_chunk_has(dir, c->hash))
			return 0;
		if (gp_mkdir_p(dir, 0700) < 0 || gp_chunk_put(dir, c->hash, c->data, c->len) < 0) {
			gp_err("cannot restore a replicated chunk: %s", strerror(errno));
			return -1;
		}
		rs->chunks++;
		return 0;
	}
	if (!kind_ok(kind) || !set_name_ok(name))
		return 0;
	char owner[1200], u[32];
	snprintf(dir, sizeof(dir), "%s/files/%llu/%s", s->state_dir, (unsigned long long)job, kind);
	snprintf(owner, sizeof(owner), "%s/files/%llu/owner", s->state_dir,
		 (unsigned long long)job);
	int n = snprintf(u, sizeof(u), "%u", (unsigned)uid);
	char *path = set_path(s, job, kind, name);
	int rc = !path || gp_mkdir_p(dir, 0700) < 0 ||
			 gp_write_file(owner, u, (size_t)n, 0600) < 0 ||
			 gp_write_file(path, set, len, 0600) < 0
		     ? -1
		     : 0;
	free(path);
	if (rc < 0) {
		gp_err("cannot restore file set %s/%s of job %llu: %s", kind, name,
		       (unsigned long long)job, strerror(errno));
		return -1;
	}
	rs->sets++;
	return 0;
}

int files_restore(struct gsched *s)
{
	struct restore rs = {s, 0, 0};
	if (store_files_each(s->store, restore_one, &rs) != 0)
		return -1;
	if (rs.sets || rs.chunks)
		gp_info("replicated files restored: %zu file sets, %zu chunks written to the "
			"store",
			rs.sets, rs.chunks);
	return 0;
}
