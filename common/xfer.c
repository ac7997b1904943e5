/* xfer.c: manifests, and uploads and downloads through the scheduler's chunk store. */
#include "common/xfer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chunk.h"
#include "common/fserr.h"
#include "common/util.h"

#define WINDOW	     4	   /* requests in flight */
#define HAVE_BATCH   4096  /* hashes per ChunkHave */
#define XFER_TIMEOUT 60000 /* ms without any reply */
#define RETRIES	     3	   /* a chunk that arrives damaged is asked for again this often */

/* ---- manifests ---- */

void gp_manifest_release(struct gp_manifest *m)
{
	for (size_t i = 0; i < m->n; i++) {
		gpool__stage_entry__free_unpacked(m->e[i], NULL);
		free(m->src[i]);
	}
	free(m->e);
	free(m->src);
	memset(m, 0, sizeof(*m));
}

static Gpool__StageEntry *push(struct gp_manifest *m, const char *as, const char *src,
			       gp_error_t *err)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		Gpool__StageEntry **e = realloc(m->e, cap * sizeof(*e));
		if (e)
			m->e = e;
		char **s = realloc(m->src, cap * sizeof(*s));
		if (s)
			m->src = s;
		if (!e || !s) {
			gp_errprintf(err, "out of memory");
			return NULL;
		}
		m->cap = cap;
	}
	Gpool__StageEntry *e = malloc(sizeof(*e));
	char *path = strdup(as), *sp = src ? strdup(src) : NULL;
	if (!e || !path || (src && !sp)) {
		free(e);
		free(path);
		free(sp);
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	gpool__stage_entry__init(e);
	e->path = path;
	m->e[m->n] = e;
	m->src[m->n] = sp;
	m->n++;
	return e;
}

/* Hash fd's chunks into e (size and chunks). */
static int hash_fd(Gpool__StageEntry *e, int fd, const char *what, gp_error_t *err)
{
	uint8_t *buf = malloc(GP_CHUNK_SIZE);
	if (!buf)
		return gp_errprintf(err, "out of memory");
	uint64_t size = 0;
	while (1) {
		size_t got = 0;
		while (got < GP_CHUNK_SIZE) {
			ssize_t k = pread(fd, buf + got, GP_CHUNK_SIZE - got, (off_t)(size + got));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				free(buf);
				return gp_errprintf(err, "cannot read '%s': %s", what,
						    strerror(errno));
			}
			if (k == 0)
				break;
			got += (size_t)k;
		}
		if (!got)
			break;
		ProtobufCBinaryData *c = realloc(e->chunks, (e->n_chunks + 1) * sizeof(*c));
		uint8_t *h = malloc(GP_HASH_LEN);
		if (c)
			e->chunks = c;
		if (!c || !h) {
			free(h);
			free(buf);
			return gp_errprintf(err, "out of memory");
		}
		gp_chunk_hash(buf, got, h);
		e->chunks[e->n_chunks].data = h;
		e->chunks[e->n_chunks].len = GP_HASH_LEN;
		e->n_chunks++;
		size += got;
		if (got < GP_CHUNK_SIZE)
			break;
	}
	free(buf);
	e->size = size;
	return 0;
}

int gp_manifest_add_fd(struct gp_manifest *m, int fd, const char *as, uint32_t mode,
		       gp_error_t *err)
{
	if (!gp_path_ok(as))
		return gp_errprintf(err, "invalid path '%s'", as);
	Gpool__StageEntry *e = push(m, as, NULL, err);
	if (!e)
		return -1;
	e->mode = gp_mode_plain(mode, 0);
	if (hash_fd(e, fd, as, err) < 0) {
		gpool__stage_entry__free_unpacked(e, NULL);
		m->n--;
		return -1;
	}
	return 0;
}

int gp_manifest_add_dir(struct gp_manifest *m, const char *as, uint32_t mode, gp_error_t *err)
{
	if (!gp_path_ok(as))
		return gp_errprintf(err, "invalid path '%s'", as);
	Gpool__StageEntry *e = push(m, as, NULL, err);
	if (!e)
		return -1;
	e->dir = 1;
	e->mode = gp_mode_plain(mode, 0);
	return 0;
}

static int add_file(struct gp_manifest *m, const char *path, const char *as, mode_t mode,
		    gp_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
	Gpool__StageEntry *e = push(m, as, path, err);
	int rc = -1;
	if (e) {
		e->mode = gp_mode_plain(mode, 0);
		rc = hash_fd(e, fd, path, err);
	}
	close(fd);
	return rc;
}

static int add_tree(struct gp_manifest *m, const char *path, const char *as, int depth,
		    gp_error_t *err)
{
	struct stat st;
	if (depth > 64)
		return gp_errprintf(err, "'%s' is nested too deep", path);
	if ((depth ? lstat(path, &st) : stat(path, &st)) < 0)
		return gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
	if (S_ISREG(st.st_mode))
		return add_file(m, path, as, st.st_mode, err);
	if (!S_ISDIR(st.st_mode)) {
		if (depth)
			return 0; /* links, sockets, devices inside a directory: skipped */
		return gp_errprintf(err, "'%s' is not a regular file or a directory", path);
	}
	Gpool__StageEntry *e = push(m, as, NULL, err);
	if (!e)
		return -1;
	e->dir = 1;
	e->mode = gp_mode_plain(st.st_mode, 0);
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort);
	if (n < 0)
		return gp_errprintf(err, "cannot read directory '%s': %s", path, strerror(errno));
	int rc = 0;
	for (int i = 0; i < n; i++) {
		const char *d = names[i]->d_name;
		if (rc == 0 && strcmp(d, ".") && strcmp(d, "..")) {
			char sub[4096], subas[4096];
			if (snprintf(sub, sizeof(sub), "%s/%s", path, d) >= (int)sizeof(sub) ||
			    snprintf(subas, sizeof(subas), "%s/%s", as, d) >= (int)sizeof(subas))
				rc = gp_errprintf(err, "path '%s/%s' is too long", path, d);
			else
				rc = add_tree(m, sub, subas, depth + 1, err);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int gp_manifest_add(struct gp_manifest *m, const char *path, const char *as, gp_error_t *err)
{
	if (!gp_path_ok(as))
		return gp_errprintf(err, "invalid path '%s'", as);
	return add_tree(m, path, as, 0, err);
}

/* ---- requests ---- */

static Gpool__Msg *reply_of(Gpool__Msg *r, Gpool__Msg__MCase want, const char *what,
			    gp_error_t *err)
{
	if (r->m_case == GPOOL__MSG__M_ERROR) {
		gp_errprintf(err, "%s: %s", what, r->error->text);
		errno = r->error->code == GPOOL__ERROR_CODE__ERROR_NOT_FOUND ? ENOENT : EPROTO;
		return NULL;
	}
	if (r->m_case != want) {
		gp_errprintf(err, "%s: unexpected reply (type %d)", what, (int)r->m_case);
		errno = EPROTO;
		return NULL;
	}
	return r;
}

struct ref {
	size_t i;	  /* entry */
	uint64_t k;	  /* chunk */
	const uint8_t *h; /* its hash */
};

static int ref_cmp(const void *a, const void *b)
{
	return memcmp(((const struct ref *)a)->h, ((const struct ref *)b)->h, GP_HASH_LEN);
}

/* Every chunk of the files in e; with dedupe, one ref per distinct hash. */
static struct ref *refs_of(Gpool__StageEntry *const *e, size_t n, bool dedupe, size_t *nref,
			   struct gp_xfer_stats *st)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += e[i]->dir ? 0 : e[i]->n_chunks;
	struct ref *r = calloc(total ? total : 1, sizeof(*r));
	if (!r)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (e[i]->dir) {
			st->dirs++;
			continue;
		}
		st->files++;
		st->bytes += e[i]->size;
		for (size_t c = 0; c < e[i]->n_chunks; c++)
			r[k++] = (struct ref){i, c, e[i]->chunks[c].data};
	}
	if (dedupe && k) {
		qsort(r, k, sizeof(*r), ref_cmp);
		size_t u = 1;
		for (size_t i = 1; i < k; i++)
			if (memcmp(r[i].h, r[u - 1].h, GP_HASH_LEN))
				r[u++] = r[i];
		k = u;
	}
	st->chunks += k;
	*nref = k;
	return r;
}

static size_t chunk_len(const Gpool__StageEntry *e, uint64_t k)
{
	uint64_t off = k * GP_CHUNK_SIZE;
	uint64_t left = e->size - off;
	return left < GP_CHUNK_SIZE ? (size_t)left : GP_CHUNK_SIZE;
}

static int read_src(void *arg, size_t i, uint64_t off, void *buf, size_t len)
{
	const struct gp_manifest *m = arg;
	int fd = open(m->src[i], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len) {
		ssize_t k = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			close(fd);
			return -1;
		}
		got += (size_t)k;
	}
	close(fd);
	return 0;
}

/* Which refs does the store lack? need[i] set for those. */
static int ask_have(gp_client_t *c, struct ref *r, size_t n, bool *need, gp_error_t *err)
{
	ProtobufCBinaryData *hs = calloc(HAVE_BATCH, sizeof(*hs));
	if (!hs)
		return gp_errprintf(err, "out of memory");
	int rc = 0;
	for (size_t at = 0; at < n && rc == 0; at += HAVE_BATCH) {
		size_t k = n - at < HAVE_BATCH ? n - at : HAVE_BATCH;
		for (size_t i = 0; i < k; i++)
			hs[i] = (ProtobufCBinaryData){GP_HASH_LEN, (uint8_t *)r[at + i].h};
		Gpool__ChunkHave q = GPOOL__CHUNK_HAVE__INIT;
		q.hashes = hs;
		q.n_hashes = k;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.m_case = GPOOL__MSG__M_CHUNK_HAVE;
		m.chunk_have = &q;
		Gpool__Msg *rep = gp_client_call(c, &m, XFER_TIMEOUT, err);
		if (!rep || !reply_of(rep, GPOOL__MSG__M_CHUNK_HAVE_REPLY, "chunk query", err)) {
			rc = -1;
			break;
		}
		const Gpool__ChunkHaveReply *hr = rep->chunk_have_reply;
		for (size_t i = 0; i < hr->n_missing; i++)
			if (hr->missing[i] < k)
				need[at + hr->missing[i]] = true;
	}
	free(hs);
	return rc;
}

struct slot {
	uint64_t id;
	size_t ref;
	int tries;
	bool busy;
};

static struct slot *slot_of(struct slot *s, uint64_t id)
{
	for (int i = 0; i < WINDOW; i++)
		if (s[i].busy && s[i].id == id)
			return &s[i];
	return NULL;
}

static struct slot *slot_free(struct slot *s)
{
	for (int i = 0; i < WINDOW; i++)
		if (!s[i].busy)
			return &s[i];
	return NULL;
}

int gp_xfer_upload(gp_client_t *c, Gpool__StageEntry *const *e, size_t n, gp_xfer_read_f read,
		   void *arg, struct gp_xfer_stats *st, gp_error_t *err)
{
	size_t nref;
	struct ref *r = refs_of(e, n, true, &nref, st);
	bool *need = calloc(nref ? nref : 1, sizeof(*need));
	uint8_t *buf = malloc(GP_CHUNK_SIZE);
	int rc = -1;
	if (!r || !need || !buf) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	if (ask_have(c, r, nref, need, err) < 0)
		goto out;
	struct slot slots[WINDOW] = {{0}};
	size_t next = 0, busy = 0;
	while (1) {
		struct slot *sl;
		while (next < nref && (sl = slot_free(slots))) {
			if (!need[next]) {
				next++;
				continue;
			}
			const Gpool__StageEntry *fe = e[r[next].i];
			size_t len = chunk_len(fe, r[next].k);
			uint8_t h[GP_HASH_LEN];
			if (read(arg, r[next].i, r[next].k * GP_CHUNK_SIZE, buf, len) < 0) {
				gp_errprintf(err, "cannot read '%s': %s", fe->path,
					     strerror(errno));
				goto out;
			}
			gp_chunk_hash(buf, len, h);
			if (memcmp(h, r[next].h, GP_HASH_LEN)) {
				errno = EAGAIN;
				gp_errprintf(err, "'%s' changed while it was sent", fe->path);
				goto out;
			}
			Gpool__ChunkPut q = GPOOL__CHUNK_PUT__INIT;
			q.hash = (ProtobufCBinaryData){GP_HASH_LEN, h};
			q.data = (ProtobufCBinaryData){len, buf};
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_CHUNK_PUT;
			m.chunk_put = &q;
			if (gp_client_send(c, &m, &sl->id, err) < 0)
				goto out;
			sl->busy = true;
			sl->ref = next++;
			busy++;
			st->sent_chunks++;
			st->sent_bytes += len;
		}
		if (!busy)
			break;
		Gpool__Msg *rep = gp_client_recv(c, 0, XFER_TIMEOUT, err);
		if (!rep)
			goto out;
		if (!(sl = slot_of(slots, rep->id)))
			continue;
		if (!reply_of(rep, GPOOL__MSG__M_CHUNK_PUT_REPLY, "chunk upload", err))
			goto out;
		sl->busy = false;
		busy--;
	}
	rc = 0;
out:
	free(r);
	free(need);
	free(buf);
	return rc;
}

int gp_xfer_upload_manifest(gp_client_t *c, const struct gp_manifest *m, struct gp_xfer_stats *st,
			    gp_error_t *err)
{
	return gp_xfer_upload(c, m->e, m->n, read_src, (void *)m, st, err);
}

/* The chunk bytes of a ChunkGetReply: inline, or the envelope's attachment. */
static ProtobufCBinaryData reply_bytes(gp_client_t *c, const Gpool__ChunkGetReply *r)
{
	ProtobufCBinaryData d = r->data;
	if (r->attached) {
		d.data = (uint8_t *)gp_client_bulk(c, &d.len);
		if (!d.data)
			d.len = 0;
	}
	return d;
}

/* Called with each chunk that arrived with the right hash. 0 / -1 (errno). */
typedef int (*got_f)(void *arg, const struct ref *r, const uint8_t *data, size_t len);

/* With several schedulers, a pipelined download must start at the leader: a standby answers
 * every ChunkGet with NOT_LEADER, which the window does not follow. One empty ChunkHave through
 * gp_client_call (which does follow it, to the leader a standby names or the next of the list)
 * moves c there first. 0 / -1 with err filled. */
static int to_leader(gp_client_t *c, gp_error_t *err)
{
	if (gp_client_schedulers(c) < 2)
		return 0;
	Gpool__ChunkHave q = GPOOL__CHUNK_HAVE__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_CHUNK_HAVE;
	m.chunk_have = &q;
	Gpool__Msg *rep = gp_client_call(c, &m, XFER_TIMEOUT, err);
	return rep && reply_of(rep, GPOOL__MSG__M_CHUNK_HAVE_REPLY, "finding the leader", err) ? 0
											       : -1;
}

/* Ask c for r[0..n), a few requests in flight; timeout_ms bounds the wait for any reply. */
static int got_cache(void *arg, const struct ref *r, const uint8_t *data, size_t len);

static int get_many_from(gp_client_t *c, const Gpool__ChunkGet *tmpl, Gpool__StageEntry *const *e,
			 struct ref *r, size_t n, got_f got, void *arg, struct gp_xfer_stats *st,
			 int timeout_ms, gp_error_t *err)
{
	struct slot slots[WINDOW] = {{0}};
	size_t next = 0, busy = 0;
	size_t *retry = calloc(n ? n : 1, sizeof(*retry));
	size_t nretry = 0;
	int *tries = calloc(n ? n : 1, sizeof(*tries));
	int rc = -1;
	if (!retry || !tries) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	if (n && to_leader(c, err) < 0)
		goto out;
	while (1) {
		struct slot *sl;
		while ((next < n || nretry) && (sl = slot_free(slots))) {
			size_t i = nretry ? retry[--nretry] : next++;
			Gpool__ChunkGet q = *tmpl;
			q.hash = (ProtobufCBinaryData){GP_HASH_LEN, (uint8_t *)r[i].h};
			q.attach = true;
			q.recheck = tries[i] > 0;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_CHUNK_GET;
			m.chunk_get = &q;
			if (gp_client_send(c, &m, &sl->id, err) < 0)
				goto out;
			sl->busy = true;
			sl->ref = i;
			busy++;
		}
		if (!busy)
			break;
		Gpool__Msg *rep = gp_client_recv(c, 0, timeout_ms, err);
		if (!rep)
			goto out;
		if (!(sl = slot_of(slots, rep->id)))
			continue;
		if (!reply_of(rep, GPOOL__MSG__M_CHUNK_GET_REPLY, "chunk download", err))
			goto out;
		sl->busy = false;
		busy--;
		const struct ref *rf = &r[sl->ref];
		/* an attachment is outside the credential: its hash makes it the chunk asked for */
		ProtobufCBinaryData att = reply_bytes(c, rep->chunk_get_reply), *d = &att;
		uint8_t h[GP_HASH_LEN];
		if (d->data)
			gp_chunk_hash(d->data, d->len, h);
		if (!d->data || memcmp(h, rf->h, GP_HASH_LEN) ||
		    d->len != chunk_len(e[rf->i], rf->k)) {
			st->refused_chunks++;
			if (++tries[sl->ref] > RETRIES) {
				errno = EBADMSG;
				gp_errprintf(err, "a chunk of '%s' arrived damaged %d times",
					     e[rf->i]->path, RETRIES + 1);
				goto out;
			}
			retry[nretry++] = sl->ref;
			continue;
		}
		st->got_chunks++;
		st->got_bytes += d->len;
		if (got(arg, rf, d->data, d->len) < 0) {
			/* the node's cache: a full one names its directory (fserr.h) */
			if (got == got_cache)
				gp_fs_errprintf(err, errno, arg, d->len,
						"cannot store a chunk of '%s' in the node's cache",
						e[rf->i]->path);
			else
				gp_errprintf(err, "cannot store a chunk of '%s': %s",
					     e[rf->i]->path, strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	free(retry);
	free(tries);
	return rc;
}

static int get_many(gp_client_t *c, const Gpool__ChunkGet *tmpl, Gpool__StageEntry *const *e,
		    struct ref *r, size_t n, got_f got, void *arg, struct gp_xfer_stats *st,
		    gp_error_t *err)
{
	return get_many_from(c, tmpl, e, r, n, got, arg, st, XFER_TIMEOUT, err);
}

static int got_cache(void *arg, const struct ref *r, const uint8_t *data, size_t len)
{
	return gp_chunk_write(arg, r->h, data, len);
}

#define PEER_WINDOW   6	   /* requests in flight to the upstream peer */
#define PEER_HOLD_MS  2000 /* how long the upstream may hold a request for a chunk it lacks */
#define PEER_STALL_MS 4000 /* no chunk from the upstream this long: it is given up ... */
#define PEER_STALL_HOP                                                                             \
	1000 /* ... plus this per place in the chain, so that a node whose own                     \
	      * upstream failed can fall back before the next one gives up on it */

/* Fetch r[0..n) from the peer `up` (the node before this one in the chain), in order, while
 * it is still fetching them itself: it holds a request for a chunk it has not got yet and
 * answers as soon as it has. Whatever does not come (the peer is dead, stalls, or sends a
 * chunk whose hash does not match) is listed in left, for the scheduler. */
static void from_peer(const struct gp_xfer_peers *pe, size_t up, uint32_t hold_ms,
		      Gpool__StageEntry *const *e, struct ref *r, size_t n, const char *cache_dir,
		      struct gp_xfer_stats *st, struct ref *left, size_t *nleft)
{
	gp_error_t err = {{0}};
	gp_client_t *pc = gp_client_create_ep(pe->cfg, pe->eps[up], pe->uid, &err);
	struct {
		uint64_t id;
		size_t ref;
		bool busy;
	} sl[PEER_WINDOW] = {{0}};
	size_t *again = malloc((n ? n : 1) * sizeof(*again));
	bool *bad = calloc(n ? n : 1, sizeof(*bad));
	size_t nagain = 0, next = 0, busy = 0;
	int64_t stall = PEER_STALL_MS + (int64_t)PEER_STALL_HOP * (int64_t)pe->self;
	int64_t last = gp_mono_ms();
	if (!pc || !again || !bad)
		goto done;
	while (1) {
		for (int k = 0; k < PEER_WINDOW && (next < n || nagain); k++) {
			if (sl[k].busy)
				continue;
			size_t i = nagain ? again[--nagain] : next++;
			Gpool__ChunkGet q = GPOOL__CHUNK_GET__INIT;
			q.hash = (ProtobufCBinaryData){GP_HASH_LEN, (uint8_t *)r[i].h};
			q.attach = true;
			q.wait_ms = hold_ms;
			Gpool__Msg m = GPOOL__MSG__INIT;
			m.m_case = GPOOL__MSG__M_CHUNK_GET;
			m.chunk_get = &q;
			if (gp_client_send(pc, &m, &sl[k].id, &err) < 0)
				goto done;
			sl[k].busy = true;
			sl[k].ref = i;
			busy++;
		}
		if (!busy)
			break;
		int64_t wait = last + stall - gp_mono_ms();
		Gpool__Msg *rep = wait > 0 ? gp_client_recv(pc, 0, (int)wait, &err) : NULL;
		if (!rep)
			goto done; /* dead or stalled: the rest comes from the scheduler */
		int k = 0;
		while (k < PEER_WINDOW && !(sl[k].busy && sl[k].id == rep->id))
			k++;
		if (k == PEER_WINDOW)
			continue;
		sl[k].busy = false;
		busy--;
		size_t i = sl[k].ref;
		if (rep->m_case == GPOOL__MSG__M_ERROR &&
		    rep->error->code == GPOOL__ERROR_CODE__ERROR_NOT_FOUND) {
			if (!hold_ms)
				continue; /* it has not got it: the next source is asked */
			if (gp_mono_ms() - last >= stall)
				goto done;
			again[nagain++] = i; /* not there in time: ask again */
			continue;
		}
		if (rep->m_case != GPOOL__MSG__M_CHUNK_GET_REPLY)
			goto done;
		ProtobufCBinaryData d = reply_bytes(pc, rep->chunk_get_reply);
		uint8_t h[GP_HASH_LEN];
		if (d.data)
			gp_chunk_hash(d.data, d.len, h);
		if (!d.data || memcmp(h, r[i].h, GP_HASH_LEN) ||
		    d.len != chunk_len(e[r[i].i], r[i].k)) {
			/* refused: the scheduler's copy is asked for instead */
			st->refused_chunks++;
			bad[i] = true;
			continue;
		}
		if (gp_chunk_write(cache_dir, r[i].h, d.data, d.len) < 0)
			goto done;
		st->got_chunks++;
		st->got_bytes += d.len;
		st->peer_chunks++;
		st->peer_bytes += d.len;
		last = gp_mono_ms();
	}
done:
	*nleft = 0;
	for (size_t i = 0; i < n; i++)
		if ((bad && bad[i]) || !gp_chunk_has(cache_dir, r[i].h))
			left[(*nleft)++] = r[i];
	free(again);
	free(bad);
	gp_client_destroy(&pc);
}

/* Lazy staging's order of sources: every other node of the job, the nearest first, each asked
 * without holding (it has the chunk or it has not); what none has is left for the scheduler. */
static void from_any_peer(const struct gp_xfer_peers *pe, Gpool__StageEntry *const *e,
			  struct ref *r, size_t n, const char *cache_dir, struct gp_xfer_stats *st,
			  struct ref *left, size_t *nleft)
{
	memcpy(left, r, n * sizeof(*left));
	*nleft = n;
	for (size_t d = 1; d < pe->n && *nleft; d++) {
		size_t near[2] = {pe->self >= d ? pe->self - d : SIZE_MAX, pe->self + d};
		for (int j = 0; j < 2 && *nleft; j++) {
			if (near[j] >= pe->n)
				continue;
			memcpy(r, left, *nleft * sizeof(*r));
			from_peer(pe, near[j], 0, e, r, *nleft, cache_dir, st, left, nleft);
		}
	}
}

/* Fetch r[0..nref) into cache_dir (what is there and sound is counted, not fetched). */
static int fetch_refs(gp_client_t *c, Gpool__StageEntry *const *e, struct ref *r, size_t nref,
		      const char *cache_dir, const struct gp_xfer_peers *peers,
		      struct gp_xfer_stats *st, gp_error_t *err)
{
	struct ref *left = calloc(nref ? nref : 1, sizeof(*left));
	int rc = -1;
	if (!r || !left) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	if (gp_mkdir_p(cache_dir, 0700) < 0) {
		gp_fs_errprintf(err, errno, cache_dir, 0, "cannot make '%s'", cache_dir);
		goto out;
	}
	size_t k = 0;
	for (size_t i = 0; i < nref; i++) {
		if (gp_chunk_verify(cache_dir, r[i].h) == 0) {
			st->cached_chunks++;
			continue;
		}
		if (errno == EBADMSG)
			st->refused_chunks++;
		r[k++] = r[i];
	}
	/* a chain: the first node fetches from the scheduler, every other one from the node
	 * before it, in the same (hash) order, while that one is still receiving */
	bool chain = peers && peers->n > 1 && peers->self > 0 && peers->self < peers->n;
	size_t nleft = k;
	if (peers && peers->any && peers->n > 1 && peers->self < peers->n)
		from_any_peer(peers, e, r, k, cache_dir, st, left, &nleft);
	else if (chain)
		from_peer(peers, peers->self - 1, PEER_HOLD_MS, e, r, k, cache_dir, st, left,
			  &nleft);
	else
		memcpy(left, r, k * sizeof(*left));
	Gpool__ChunkGet tmpl = GPOOL__CHUNK_GET__INIT;
	if (nleft && get_many(c, &tmpl, e, left, nleft, got_cache, (void *)cache_dir, st, err) < 0)
		goto out;
	rc = 0;
out:
	free(left);
	return rc;
}

int gp_xfer_fetch_cache(gp_client_t *c, Gpool__StageEntry *const *e, size_t n,
			const char *cache_dir, const struct gp_xfer_peers *peers,
			struct gp_xfer_stats *st, gp_error_t *err)
{
	size_t nref;
	struct ref *r = refs_of(e, n, true, &nref, st);
	if (!r)
		return gp_errprintf(err, "out of memory");
	int rc = fetch_refs(c, e, r, nref, cache_dir, peers, st, err);
	free(r);
	return rc;
}

int gp_xfer_fetch_chunks(gp_client_t *c, Gpool__StageEntry *e, uint64_t k0, uint64_t k1,
			 const char *cache_dir, const struct gp_xfer_peers *peers,
			 struct gp_xfer_stats *st, gp_error_t *err)
{
	if (e->dir || k0 > k1 || k1 > e->n_chunks)
		return errno = EINVAL,
		       gp_errprintf(err, "chunks %llu..%llu of '%s': out of range",
				    (unsigned long long)k0, (unsigned long long)k1, e->path);
	size_t n = (size_t)(k1 - k0);
	struct ref *r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return gp_errprintf(err, "out of memory");
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ref){0, k0 + i, e->chunks[k0 + i].data};
	if (n) {
		qsort(r, n, sizeof(*r), ref_cmp);
		size_t u = 1;
		for (size_t i = 1; i < n; i++)
			if (memcmp(r[i].h, r[u - 1].h, GP_HASH_LEN))
				r[u++] = r[i];
		n = u;
	}
	st->chunks += n;
	int rc = fetch_refs(c, &e, r, n, cache_dir, peers, st, err);
	free(r);
	return rc;
}

/* ---- downloads into a directory ---- */

/* Everything under the destination is reached one component at a time with O_NOFOLLOW from
 * the destination's descriptor: a link planted there (by the job's owner, when root fetches
 * into a directory they can write) is refused, never followed with the fetcher's rights. */

/* Open directory name under dfd without following a link: -1 with ELOOP when name is a
 * link (O_DIRECTORY says ENOTDIR for one), else openat's errno. */
static int open_dir_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 && errno == ENOTDIR && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		errno = ELOOP;
	return fd;
}

/* The directory holding `path` under dfd, each component opened without following a link
 * (made, mode 0755 before the umask, when create and absent); *leaf points at the last
 * component of path. A descriptor / -1 with errno (ELOOP on a link). */
static int open_parent(int dfd, const char *path, bool create, const char **leaf)
{
	char buf[4096];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errno = ENAMETOOLONG, -1;
	int cur = dup(dfd);
	if (cur < 0)
		return -1;
	char *comp = buf;
	for (char *p = strchr(comp, '/'); p; comp = p + 1, p = strchr(comp, '/')) {
		*p = '\0';
		if (create && mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			close(cur);
			return errno = e, -1;
		}
		int next = open_dir_at(cur, comp);
		int e = errno;
		close(cur);
		if (next < 0)
			return errno = e, -1;
		cur = next;
	}
	*leaf = path + (comp - buf);
	return cur;
}

/* Open entry e's file (made empty when create, the name replaced) or directory under dfd,
 * never following a link. A descriptor / -1 with errno. */
static int open_entry(int dfd, const Gpool__StageEntry *e, bool create)
{
	const char *leaf;
	int pfd = open_parent(dfd, e->path, create, &leaf);
	if (pfd < 0)
		return -1;
	int fd;
	if (e->dir) {
		if (create && mkdirat(pfd, leaf, 0700) < 0 && errno != EEXIST) {
			int er = errno;
			close(pfd);
			return errno = er, -1;
		}
		fd = open_dir_at(pfd, leaf);
	} else if (create) {
		unlinkat(pfd, leaf, 0);
		fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} else {
		fd = openat(pfd, leaf, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	}
	int er = errno;
	close(pfd);
	errno = er;
	return fd;
}

struct dl {
	int dfd;
	Gpool__StageEntry *const *e;
	struct stat *made; /* per entry: the file as made here (dev, ino) */
};

/* Reopen entry i's file and check it is still the one made here: ESTALE when it was
 * replaced on the way. */
static int reopen_made(const struct dl *d, size_t i)
{
	int fd = open_entry(d->dfd, d->e[i], false);
	struct stat st;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != d->made[i].st_dev ||
	    st.st_ino != d->made[i].st_ino) {
		close(fd);
		return errno = ESTALE, -1;
	}
	return fd;
}

static int got_file(void *arg, const struct ref *r, const uint8_t *data, size_t len)
{
	struct dl *d = arg;
	int fd = reopen_made(d, r->i);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t k = pwrite(fd, data + off, len - off, (off_t)(r->k * GP_CHUNK_SIZE + off));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)k;
	}
	return close(fd);
}

/* The process's umask, read without changing it (a library call may share the process with
 * threads that create files): /proc/self/status, else a brief umask() round trip. */
static mode_t current_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned v;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &v) == 1) {
			fclose(f);
			return (mode_t)v;
		}
	if (f)
		fclose(f);
	mode_t m = umask(022);
	umask(m);
	return m;
}

/* The modes last (a read-only directory still gets its files), rwx bits only, less the
 * umask: setuid, setgid and sticky never come out of a fetch, whoever runs it. */
static int set_modes(struct dl *d, size_t n, mode_t mask, const char *dest, gp_error_t *err)
{
	for (size_t i = n; i-- > 0;) {
		const Gpool__StageEntry *x = d->e[i];
		int fd = x->dir ? open_entry(d->dfd, x, false) : reopen_made(d, i);
		mode_t mode = gp_mode_plain(x->mode, x->dir ? 0755 : 0644) & ~mask;
		if (fd < 0 || fchmod(fd, mode) < 0) {
			gp_errprintf(err, "cannot set the mode of '%s/%s': %s", dest, x->path,
				     errno == ELOOP ? "a symbolic link is in the way"
						    : strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

int gp_xfer_download(gp_client_t *c, uint64_t job_id, const char *kind, const char *name,
		     Gpool__StageEntry *const *e, size_t n, const char *dest,
		     struct gp_xfer_stats *st, gp_error_t *err)
{
	for (size_t i = 0; i < n; i++)
		if (!gp_entry_ok(e[i]))
			return gp_errprintf(err, "invalid entry '%s' in the file set", e[i]->path);
	if (gp_mkdir_p(dest, 0755) < 0)
		return gp_errprintf(err, "cannot make '%s': %s", dest, strerror(errno));
	struct dl d = {.e = e};
	d.dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d.dfd < 0)
		return gp_errprintf(err, "cannot open '%s': %s", dest, strerror(errno));
	mode_t mask = current_umask();
	struct ref *r = NULL;
	int rc = -1;
	if (!(d.made = calloc(n ? n : 1, sizeof(*d.made)))) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const Gpool__StageEntry *x = e[i];
		int fd = open_entry(d.dfd, x, true);
		if (fd < 0 || fstat(fd, &d.made[i]) < 0 ||
		    (!x->dir && ftruncate(fd, (off_t)x->size) < 0)) {
			gp_errprintf(err, "cannot write '%s/%s': %s", dest, x->path,
				     errno == ELOOP ? "a symbolic link is in the way"
						    : strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
	}
	size_t nref;
	if (!(r = refs_of(e, n, false, &nref, st))) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	Gpool__ChunkGet tmpl = GPOOL__CHUNK_GET__INIT;
	tmpl.job_id = job_id;
	tmpl.kind = (char *)kind;
	tmpl.name = (char *)name;
	if (get_many(c, &tmpl, e, r, nref, got_file, &d, st, err) < 0 ||
	    set_modes(&d, n, mask, dest, err) < 0)
		goto out;
	rc = 0;
out:
	free(r);
	free(d.made);
	close(d.dfd);
	return rc;
}

/* ---- file sets ---- */

int gp_xfer_set_put(gp_client_t *c, uint64_t job_id, const char *kind, const char *name,
		    Gpool__StageEntry *const *e, size_t n, gp_error_t *err)
{
	Gpool__FileSetPut q = GPOOL__FILE_SET_PUT__INIT;
	q.job_id = job_id;
	q.kind = (char *)kind;
	q.name = (char *)name;
	q.entries = (Gpool__StageEntry **)e;
	q.n_entries = n;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_FILE_SET_PUT;
	m.file_set_put = &q;
	Gpool__Msg *rep = gp_client_call(c, &m, XFER_TIMEOUT, err);
	if (!rep || !reply_of(rep, GPOOL__MSG__M_FILE_SET_PUT_REPLY, "storing the file set", err))
		return -1;
	return 0;
}

Gpool__FileSetGetReply *gp_xfer_set_get(gp_client_t *c, uint64_t job_id, const char *kind,
					const char *name, gp_error_t *err)
{
	Gpool__FileSetGet q = GPOOL__FILE_SET_GET__INIT;
	q.job_id = job_id;
	q.kind = (char *)kind;
	q.name = (char *)name;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_FILE_SET_GET;
	m.file_set_get = &q;
	Gpool__Msg *rep = gp_client_call(c, &m, XFER_TIMEOUT, err);
	if (!rep || !reply_of(rep, GPOOL__MSG__M_FILE_SET_GET_REPLY, "reading the file set", err))
		return NULL;
	return rep->file_set_get_reply;
}

static void human(uint64_t b, char *buf, size_t len)
{
	if (b >= (1u << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (1u << 20));
	else if (b >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)b);
}

void gp_xfer_describe(const struct gp_xfer_stats *st, char *buf, size_t len)
{
	char b[32];
	human(st->bytes, b, sizeof(b));
	snprintf(buf, len, "%llu file%s, %llu director%s, %s", (unsigned long long)st->files,
		 st->files == 1 ? "" : "s", (unsigned long long)st->dirs,
		 st->dirs == 1 ? "y" : "ies", b);
}
