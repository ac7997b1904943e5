/* budget.c: per-user token buckets for expensive requests (budget.h). */
#include "scheduler/shell/budget.h"

#include <stdlib.h>

#include "common/u64map.h"

#define MAX_USERS 65536

struct bucket {
	double tokens;
	int64_t last_ms;
};

struct budget {
	double rate;
	gp_u64map_t *users; /* uid + 1 -> struct bucket */
};

struct budget *budget_create(double rate)
{
	struct budget *b = calloc(1, sizeof(*b));
	if (!b || !(b->users = gp_u64map_create())) {
		free(b);
		return NULL;
	}
	b->rate = rate;
	return b;
}

void budget_destroy(struct budget **p)
{
	if (!p || !*p)
		return;
	size_t pos = 0;
	uint64_t k;
	void *v;
	while ((v = gp_u64map_next((*p)->users, &pos, &k)))
		free(v);
	gp_u64map_destroy(&(*p)->users);
	free(*p);
	*p = NULL;
}

void budget_set_rate(struct budget *b, double rate)
{
	b->rate = rate;
}

int budget_take(struct budget *b, uid_t uid, double cost, int64_t now_ms, int64_t *retry_ms)
{
	*retry_ms = 0;
	if (b->rate <= 0)
		return 0;
	struct bucket *k = gp_u64map_get(b->users, (uint64_t)uid + 1);
	if (!k) {
		/* a table full of other users: this one goes unbudgeted rather than unserved */
		if (gp_u64map_count(b->users) >= MAX_USERS || !(k = calloc(1, sizeof(*k))))
			return 0;
		if (gp_u64map_put(b->users, (uint64_t)uid + 1, k) < 0) {
			free(k);
			return 0;
		}
		k->tokens = b->rate;
		k->last_ms = now_ms;
	}
	k->tokens += (double)(now_ms - k->last_ms) * b->rate / 1000.0;
	if (k->tokens > b->rate)
		k->tokens = b->rate;
	k->last_ms = now_ms;
	/* one request larger than a second's worth needs a full bucket, and empties it */
	double need = cost < b->rate ? cost : b->rate;
	if (k->tokens < need) {
		*retry_ms = (int64_t)((need - k->tokens) * 1000.0 / b->rate) + 1;
		return -1;
	}
	k->tokens -= cost;
	if (k->tokens < -b->rate)
		k->tokens = -b->rate;
	return 0;
}
