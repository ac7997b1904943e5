/* u64map.h: a hash map from 64-bit keys (job ids) to pointers; open addressing with
 * backward-shift deletion, so lookups stay short at any fill. */
#ifndef GPOOL_U64MAP_H
#define GPOOL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp_u64map gp_u64map_t;

gp_u64map_t *gp_u64map_create(void);
void gp_u64map_destroy(gp_u64map_t **m);
/* 0 / -1 (ENOMEM). Replaces an existing value. */
int gp_u64map_put(gp_u64map_t *m, uint64_t key, void *val);
void *gp_u64map_get(const gp_u64map_t *m, uint64_t key);
/* Returns the removed value or NULL. */
void *gp_u64map_del(gp_u64map_t *m, uint64_t key);
size_t gp_u64map_count(const gp_u64map_t *m);
/* Iterate: start with *pos = 0; returns NULL at the end. Do not modify while iterating. */
void *gp_u64map_next(const gp_u64map_t *m, size_t *pos, uint64_t *key);

#endif
