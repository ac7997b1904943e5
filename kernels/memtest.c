/* memtest.c - memory test patterns as sequences of write / check-and-write steps that
 * every backend runs with its mt_step entry; the test-only fault hook lives here */
#include <errno.h>
#include <string.h>

#include "kernels/gk_loader.h"

#define MAX_STEPS 40

typedef struct {
	int has_check, has_write;
	gk_mt_word_t check, write;
} step_t;

/* Appends "write P; check P, write ~P; check ~P" to STEPS. */
static int inversion(step_t *steps, int n, gk_mt_word_t p)
{
	gk_mt_word_t q = p;
	q.invert = !p.invert;
	steps[n++] = (step_t){0, 1, p, p};
	steps[n++] = (step_t){1, 1, p, q};
	steps[n++] = (step_t){1, 0, q, q};
	return n;
}

static int plan(gk_memtest_t pat, uint64_t seed, step_t *steps)
{
	int n = 0;
	switch (pat) {
	case GK_MT_WALKING_ONES: {
		gk_mt_word_t w = {GK_MTW_WALK, 0, 0, 0};
		steps[n++] = (step_t){0, 1, w, w};
		for (uint32_t pass = 1; pass < 32; pass++) {
			gk_mt_word_t next = {GK_MTW_WALK, pass, 0, 0};
			steps[n++] = (step_t){1, 1, w, next};
			w = next;
		}
		steps[n++] = (step_t){1, 0, w, w};
		return n;
	}
	case GK_MT_MOVING_INV:
		n = inversion(steps, n, (gk_mt_word_t){GK_MTW_CONST, 0x00000000u, 0, 0});
		n = inversion(steps, n, (gk_mt_word_t){GK_MTW_CONST, 0x55555555u, 0, 0});
		return n;
	case GK_MT_ADDRESS:
		return inversion(steps, n, (gk_mt_word_t){GK_MTW_ADDRESS, 0, 0, 0});
	case GK_MT_RANDOM:
		return inversion(steps, n, (gk_mt_word_t){GK_MTW_RANDOM, 0, seed, 0});
	}
	return -1;
}

int gk_memtest_inject_fault(gk_backend_t *b, size_t word, uint32_t bitmask)
{
	if (!b)
		return errno = EINVAL, -1;
	if (!bitmask)
		return gk_fail(b, EINVAL, "memtest: empty fault mask");
	b->fault_pending = 1;
	b->fault_word = word;
	b->fault_mask = bitmask;
	return 0;
}

static int flip(gk_backend_t *b, uint32_t *buf)
{
	uint32_t w;
	b->fault_pending = 0;
	if (b->ops->copy(b->ctx, &w, buf + b->fault_word, 4, GK_D2H) < 0)
		return -1;
	w ^= b->fault_mask;
	return b->ops->copy(b->ctx, buf + b->fault_word, &w, 4, GK_H2D);
}

int gk_memtest(gk_backend_t *b, gk_memtest_t pat, void *buf, size_t bytes, uint64_t seed,
	       uint64_t *errors)
{
	step_t steps[MAX_STEPS];
	size_t nwords = bytes / 4;
	int n;

	if (!b || !errors)
		return errno = EINVAL, -1;
	if ((n = plan(pat, seed, steps)) < 0)
		return gk_fail(b, EINVAL, "memtest: unknown pattern %d", (int)pat);
	if (!nwords)
		return 0;
	if (!buf || (uintptr_t)buf % 4)
		return gk_fail(b, EINVAL, "memtest: needs a 4-byte aligned buffer");
	if (b->fault_pending && b->fault_word >= nwords) {
		b->fault_pending =
		    0; /* a pending fault is for the next call only, whatever it does */
		return gk_fail(b, EINVAL, "memtest: fault word %zu outside %zu words",
			       b->fault_word, nwords);
	}
	for (int i = 0; i < n; i++) {
		if (b->ops->mt_step(b->ctx, buf, nwords,
				    steps[i].has_check ? &steps[i].check : NULL,
				    steps[i].has_write ? &steps[i].write : NULL, errors) < 0)
			return -1;
		if (i == 0 && b->fault_pending && flip(b, buf) < 0)
			return -1;
	}
	return 0;
}
