/* u64map.c - a hash map from 64-bit keys (job ids) to pointers, open addressing with
 * backward-shift deletion (u64map.h) */
#include "common/u64map.h"

#include <errno.h>
#include <stdlib.h>

struct slot {
	uint64_t key;
	void *val; /* NULL: empty */
};

struct gp_u64map {
	struct slot *s;
	size_t cap; /* power of two */
	size_t n;
};

static size_t hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

gp_u64map_t *gp_u64map_create(void)
{
	gp_u64map_t *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->cap = 64;
	if (!(m->s = calloc(m->cap, sizeof(*m->s)))) {
		free(m);
		return NULL;
	}
	return m;
}

void gp_u64map_destroy(gp_u64map_t **p)
{
	if (!p || !*p)
		return;
	free((*p)->s);
	free(*p);
	*p = NULL;
}

static int grow(gp_u64map_t *m)
{
	size_t nc = m->cap * 2;
	struct slot *ns = calloc(nc, sizeof(*ns));
	if (!ns)
		return -1;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->s[i].val)
			continue;
		size_t j = hash(m->s[i].key) & (nc - 1);
		while (ns[j].val)
			j = (j + 1) & (nc - 1);
		ns[j] = m->s[i];
	}
	free(m->s);
	m->s = ns;
	m->cap = nc;
	return 0;
}

int gp_u64map_put(gp_u64map_t *m, uint64_t key, void *val)
{
	if (!val)
		return errno = EINVAL, -1;
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return -1;
	size_t j = hash(key) & (m->cap - 1);
	while (m->s[j].val) {
		if (m->s[j].key == key) {
			m->s[j].val = val;
			return 0;
		}
		j = (j + 1) & (m->cap - 1);
	}
	m->s[j].key = key;
	m->s[j].val = val;
	m->n++;
	return 0;
}

void *gp_u64map_get(const gp_u64map_t *m, uint64_t key)
{
	size_t j = hash(key) & (m->cap - 1);
	while (m->s[j].val) {
		if (m->s[j].key == key)
			return m->s[j].val;
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void *gp_u64map_del(gp_u64map_t *m, uint64_t key)
{
	size_t mask = m->cap - 1, j = hash(key) & mask;
	while (m->s[j].val && m->s[j].key != key)
		j = (j + 1) & mask;
	if (!m->s[j].val)
		return NULL;
	void *v = m->s[j].val;
	/* backward-shift: move later members of the cluster into the hole */
	size_t hole = j;
	for (size_t k = (j + 1) & mask; m->s[k].val; k = (k + 1) & mask) {
		size_t home = hash(m->s[k].key) & mask;
		if (((k - home) & mask) >= ((k - hole) & mask)) {
			m->s[hole] = m->s[k];
			hole = k;
		}
	}
	m->s[hole].val = NULL;
	m->n--;
	return v;
}

size_t gp_u64map_count(const gp_u64map_t *m)
{
	return m->n;
}

void *gp_u64map_next(const gp_u64map_t *m, size_t *pos, uint64_t *key)
{
	while (*pos < m->cap) {
		struct slot *s = &m->s[(*pos)++];
		if (s->val) {
			if (key)
				*key = s->key;
			return s->val;
		}
	}
	return NULL;
}
