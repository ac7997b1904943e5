/* array.h: job arrays' index sets, as sbatch --array writes them: "0-999", "0-99:5", "1,3,8-10",
 * each optionally ending in "%N" (at most N tasks running at once). The set is kept as its
 * ranges, never expanded: a million-index array costs a few bytes. Also formats a set of task
 * indices back into the compact form gstat shows ("[40-999]") and parses the job selectors
 * gcancel takes ("12", "12_7", "12_[3-5]").
 */
#ifndef GPOOL_ARRAY_H
#define GPOOL_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The highest task index accepted, and the most tasks one array may have. */
#define GP_ARRAY_MAX_INDEX  9999999u
#define GP_ARRAY_MAX_TASKS  100000u
#define GP_ARRAY_MAX_RANGES 1024u

struct gp_array_range {
	uint32_t first, last, step; /* first, first + step, ... <= last */
};

typedef struct gp_array {
	struct gp_array_range r[GP_ARRAY_MAX_RANGES];
	size_t n;	/* ranges */
	uint32_t count; /* indices in all ranges (duplicates counted once each time listed) */
	uint32_t min, max;
	uint32_t limit; /* %N, 0: none */
} gp_array_t;

/* Parse an --array value into a. 0 / -1 with errno = EINVAL (bad syntax, empty, a range
 * backwards, a step of 0, an index over GP_ARRAY_MAX_INDEX, a duplicate index) or E2BIG (more
 * than GP_ARRAY_MAX_TASKS indices or GP_ARRAY_MAX_RANGES ranges). */
int gp_array_parse(const char *s, gp_array_t *a);
/* The i-th index of the set in the order given (i < a->count). */
uint32_t gp_array_index(const gp_array_t *a, uint32_t i);

/* Append the sorted indices v[0..n) as "[1,3-5,7]" (or "7" for one index) to buf; a list that
 * does not fit ends in "...]". */
void gp_array_format(const uint32_t *v, size_t n, char *buf, size_t len);

/* A job selector: "12" (job or whole array 12), "12_7" (task 7 of array 12), "12_[3-5,9]".
 * For the first form *set is left with n = 0 and has_tasks false. 0 / -1 with errno = EINVAL. */
int gp_array_selector(const char *s, uint64_t *job, bool *has_tasks, gp_array_t *set);
/* Whether index x is in the set. */
bool gp_array_has(const gp_array_t *a, uint32_t x);

#endif
