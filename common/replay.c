/* replay.c: the per-sender sequence window (replay.h), an open-addressing hash table. */
#include "common/replay.h"

#include <errno.h>
#include <stdlib.h>

struct slot {
	uint64_t epoch;
	uint64_t last_seq;
	double seen;
	uint32_t uid;
	uint8_t used;
};

struct gp_replay {
	struct slot *slots;
	uint32_t nslots;
	uint32_t nused;
	uint32_t max_slots;
	double purged; /* when a full table last dropped its expired senders */
};

static uint64_t slot_hash(uint32_t uid, uint64_t epoch)
{
	uint64_t x = epoch ^ ((uint64_t)uid * 0x9e3779b97f4a7c15ULL);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

gp_replay_t *gp_replay_create(uint32_t max_slots)
{
	if (max_slots < 2 || (max_slots & (max_slots - 1))) {
		errno = EINVAL;
		return NULL;
	}
	gp_replay_t *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->max_slots = max_slots;
	return r;
}

void gp_replay_destroy(gp_replay_t **p)
{
	if (!p || !*p)
		return;
	free((*p)->slots);
	free(*p);
	*p = NULL;
}

uint32_t gp_replay_count(const gp_replay_t *r)
{
	return r->nused;
}

/* Rehash into n slots, leaving out the senders silent longer than GP_REPLAY_KEEP_SEC. */
static int rebuild(gp_replay_t *r, uint32_t n, double now)
{
	struct slot *ns = calloc(n, sizeof(*ns));
	if (!ns)
		return -1;
	uint32_t used = 0;
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct slot *s = &r->slots[i];
		if (!s->used || now - s->seen > GP_REPLAY_KEEP_SEC)
			continue;
		uint64_t j = slot_hash(s->uid, s->epoch) & (n - 1);
		while (ns[j].used)
			j = (j + 1) & (n - 1);
		ns[j] = *s;
		used++;
	}
	free(r->slots);
	r->slots = ns;
	r->nslots = n;
	r->nused = used;
	return 0;
}

static struct slot *find(const gp_replay_t *r, uint32_t uid, uint64_t epoch, uint64_t *free_j)
{
	uint32_t mask = r->nslots - 1;
	uint64_t j = slot_hash(uid, epoch) & mask;
	while (r->slots[j].used) {
		if (r->slots[j].uid == uid && r->slots[j].epoch == epoch)
			return &r->slots[j];
		j = (j + 1) & mask;
	}
	*free_j = j;
	return NULL;
}

int gp_replay_check(gp_replay_t *r, uint32_t uid, uint64_t epoch, uint64_t seq, uint64_t count,
		    double now)
{
	uint64_t span = count ? count : 1;
	if (seq > UINT64_MAX - (span - 1)) {
		errno = ERANGE;
		return -1;
	}
	uint64_t last = seq + (span - 1), j = 0;
	struct slot *s = r->nslots ? find(r, uid, epoch, &j) : NULL;
	if (s) {
		if (seq <= s->last_seq) {
			errno = EEXIST;
			return -1;
		}
		s->last_seq = last;
		s->seen = now;
		return 0;
	}
	/* a new sender: keep the table at most half full, growing it, else dropping the
	 * senders that expired; with no room left, refuse rather than probe a full table */
	if ((r->nused + 1) * 2 > r->nslots) {
		uint32_t n =
		    r->nslots ? r->nslots * 2 : (r->max_slots < 1024 ? r->max_slots : 1024);
		if (n > r->max_slots)
			n = r->max_slots;
		/* at the bound, a purge at most once a second: a flood of new senders must not
		 * make every envelope rehash the whole table */
		if (n == r->nslots && r->nslots && now - r->purged < 1 && now >= r->purged) {
			errno = ENOSPC;
			return -1;
		}
		if (n == r->nslots)
			r->purged = now;
		if (rebuild(r, n, now) < 0)
			return -1; /* ENOMEM */
		if ((r->nused + 1) * 2 > r->nslots) {
			errno = ENOSPC;
			return -1;
		}
		(void)find(r, uid, epoch, &j);
	}
	s = &r->slots[j];
	s->used = 1;
	s->uid = uid;
	s->epoch = epoch;
	s->last_seq = last;
	s->seen = now;
	r->nused++;
	return 0;
}
