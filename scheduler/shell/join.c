/* join.c - gschedd's side of `gpool join`: handing a sealed bundle to a joining PC once,
 * rate-limited, and sweeping expired ones (join.h) */
#include "scheduler/shell/join.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/joinseal.h"
#include "common/jointoken.h"
#include "common/log.h"
#include "proto/gpool.pb-c.h"

#define NBUCKETS 256 /* source addresses remembered; the least recently seen goes */
#define NUSED	 64  /* ids served lately, to say "already used" rather than "unknown" */

struct jbucket {
	char addr[64];
	double tokens;
	int64_t last_ms;
};

struct join {
	char dir[4096];
	struct jbucket b[NBUCKETS];
	int nb;
	double all_tokens;
	int64_t all_last_ms;
	int64_t logged_ms;
	uint64_t dropped;
	uint8_t used[NUSED][GP_JOIN_ID_LEN];
	int nused, used_next;
};

struct join *join_create(const char *state_dir)
{
	struct join *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	snprintf(j->dir, sizeof(j->dir), "%s/join", state_dir);
	j->all_tokens = JOIN_RATE_ALL;
	j->all_last_ms = -1;
	return j;
}

void join_destroy(struct join **j)
{
	if (!j || !*j)
		return;
	free(*j);
	*j = NULL;
}

static bool refill(double *tokens, int64_t *last, int64_t now, double per_minute)
{
	if (*last >= 0) {
		*tokens += (double)(now - *last) * per_minute / 60000.0;
		if (*tokens > per_minute)
			*tokens = per_minute;
	}
	*last = now;
	if (*tokens < 1)
		return false;
	*tokens -= 1;
	return true;
}

/* The address's budget, then everyone's: a flooder from one address spends only its own. */
static bool admit(struct join *j, const char *addr, int64_t now)
{
	struct jbucket *b = NULL;
	for (int i = 0; i < j->nb && !b; i++)	 /* 256 entries at most, behind the ROUTER's own */
		if (!strcmp(j->b[i].addr, addr)) /* per-address budget */
			b = &j->b[i];
	if (!b) {
		int k = j->nb;
		if (k == NBUCKETS) {
			k = 0;
			for (int i = 1; i < NBUCKETS; i++)
				if (j->b[i].last_ms < j->b[k].last_ms)
					k = i;
		} else {
			j->nb++;
		}
		b = &j->b[k];
		snprintf(b->addr, sizeof(b->addr), "%s", addr);
		b->tokens = JOIN_RATE_ADDR;
		b->last_ms = -1;
	}
	if (!refill(&b->tokens, &b->last_ms, now, JOIN_RATE_ADDR))
		return false;
	return refill(&j->all_tokens, &j->all_last_ms, now, JOIN_RATE_ALL);
}

static bool was_used(const struct join *j, const uint8_t *id)
{
	for (int i = 0; i < j->nused; i++)
		if (!memcmp(j->used[i], id, GP_JOIN_ID_LEN))
			return true;
	return false;
}

static void note_used(struct join *j, const uint8_t *id)
{
	memcpy(j->used[j->used_next], id, GP_JOIN_ID_LEN);
	j->used_next = (j->used_next + 1) % NUSED;
	if (j->nused < NUSED)
		j->nused++;
}

/* Read and remove one bundle file: single use starts here, whatever follows. 0 / -1 (errno
 * ENOENT: none). */
static int take_file(const char *path, uint8_t *buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	unlink(path);
	struct stat st;
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= GP_JOIN_MAX_BUNDLE)
		n = read(fd, buf, GP_JOIN_MAX_BUNDLE);
	close(fd);
	if (n < 0 || n != st.st_size) {
		errno = EINVAL;
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

static int answer(Gpool__ErrorCode code, const char *text, const uint8_t *bundle, size_t blen,
		  uint8_t **reply, size_t *replylen)
{
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	Gpool__JoinBundle jb = GPOOL__JOIN_BUNDLE__INIT;
	env.version = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	env.join_bundle = &jb;
	jb.code = code;
	jb.text = (char *)text;
	jb.bundle.data = (uint8_t *)bundle;
	jb.bundle.len = blen;
	size_t n = gpool__envelope__get_packed_size(&env);
	if (!(*reply = malloc(n)))
		return 1;
	*replylen = gpool__envelope__pack(&env, *reply);
	return 1;
}

int join_take(struct join *j, const char *addr, const void *data, size_t len, int64_t now_ms,
	      time_t now, uint8_t **reply, size_t *replylen)
{
	*reply = NULL;
	*replylen = 0;
	Gpool__Envelope *env = gpool__envelope__unpack(NULL, len, data);
	if (!env)
		return 0;
	if (!env->join_fetch) {
		gpool__envelope__free_unpacked(env, NULL);
		return 0;
	}
	bool clean = !env->cred.len && !env->mac.len && !env->body.len && !env->join_bundle &&
		     env->join_fetch->token_id.len == GP_JOIN_ID_LEN;
	uint8_t id[GP_JOIN_ID_LEN];
	if (clean)
		memcpy(id, env->join_fetch->token_id.data, GP_JOIN_ID_LEN);
	uint32_t version = env->version;
	gpool__envelope__free_unpacked(env, NULL);
	if (!admit(j, addr, now_ms)) {
		j->dropped++;
		if (now_ms - j->logged_ms > 10000) {
			gp_warn(
			    "join: requests from %s over %d a minute (or %d in all): %llu dropped",
			    addr, JOIN_RATE_ADDR, JOIN_RATE_ALL, (unsigned long long)j->dropped);
			j->logged_ms = now_ms;
		}
		return 1;
	}
	if (version != GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION)
		return answer(GPOOL__ERROR_CODE__ERROR_VERSION,
			      "the joining side speaks another protocol version (install the same "
			      "gpool version)",
			      NULL, 0, reply, replylen);
	if (!clean)
		return answer(GPOOL__ERROR_CODE__ERROR_MALFORMED,
			      "a join request carries a 16-byte token id and nothing else", NULL, 0,
			      reply, replylen);
	char hex[2 * GP_JOIN_ID_LEN + 1], path[4200];
	gp_join_id_hex(id, hex);
	snprintf(path, sizeof(path), "%s/%s.bundle", j->dir, hex);
	static uint8_t buf[GP_JOIN_MAX_BUNDLE];
	size_t blen = 0;
	struct gp_join_header h;
	if (take_file(path, buf, &blen) < 0) {
		bool used = errno == ENOENT && was_used(j, id);
		gp_warn("join: %s asked for %s token %.8s...", addr,
			used ? "the used" : "an unknown", hex);
		return answer(
		    GPOOL__ERROR_CODE__ERROR_NOT_FOUND,
		    used ? "this join token was already used (if not by you, someone else "
			   "had it: make a new one, and check which PCs joined)"
			 : "unknown join token (mistyped, already used, or made for another "
			   "scheduler)",
		    NULL, 0, reply, replylen);
	}
	note_used(j, id);
	if (gp_join_header_parse(buf, blen, &h, NULL) < 0 || memcmp(h.id, id, sizeof(id)) != 0) {
		gp_warn("join: the bundle of token %.8s... is damaged: removed", hex);
		return answer(GPOOL__ERROR_CODE__ERROR_INVALID,
			      "the scheduler's copy of this token is damaged: make a new one", NULL,
			      0, reply, replylen);
	}
	if ((uint64_t)now > h.expiry) {
		gp_warn("join: %s asked for token %.8s..., expired: removed", addr, hex);
		return answer(GPOOL__ERROR_CODE__ERROR_EXPIRED,
			      "this join token has expired: make a new one (gpool join-token)",
			      NULL, 0, reply, replylen);
	}
	gp_info("join: handed the bundle of token %.8s... to %s (now removed)", hex, addr);
	return answer(GPOOL__ERROR_CODE__ERROR_NONE, "", buf, blen, reply, replylen);
}

int join_sweep(struct join *j, time_t now)
{
	DIR *d = opendir(j->dir);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n != 2 * GP_JOIN_ID_LEN + 7 || strcmp(de->d_name + n - 7, ".bundle") != 0)
			continue;
		char path[4400];
		snprintf(path, sizeof(path), "%s/%s", j->dir, de->d_name);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		uint8_t head[GP_JOIN_HEADER_LEN + GP_JOIN_TAG_LEN];
		struct gp_join_header h;
		bool gone = fd < 0;
		if (fd >= 0) {
			ssize_t r = read(fd, head, sizeof(head));
			gone = r != (ssize_t)sizeof(head) ||
			       gp_join_header_parse(head, sizeof(head), &h, NULL) < 0 ||
			       (uint64_t)now > h.expiry;
			close(fd);
		}
		if (gone && unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
