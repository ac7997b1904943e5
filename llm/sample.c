/* sample.c - the next token from a row of logits. The order is fixed and documented
 * (docs/llm.md): repeat penalty, then greedy at temperature 0, else temperature, top-k, top-p,
 * min-p and one draw from a seeded generator (xoshiro256**) walked over the candidates in a
 * fixed order, so that the same seed and logits give the same token on every backend.
 * Everything the sampler needs is allocated once at create: no allocation per token. */
#include "llm/sample.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	float logit;
	int32_t id;
} cand_t;

struct gl_sampler {
	gl_sample_params_t p;
	int n_vocab;
	uint64_t rng[4];
	cand_t *cand;	 /* n_vocab candidates */
	uint32_t *stamp; /* n_vocab: the call that last penalised each token */
	uint32_t ncalls;
};

void gl_sample_defaults(gl_sample_params_t *p)
{
	p->temperature = 1.0f;
	p->top_k = 0;
	p->top_p = 1.0f;
	p->min_p = 0.0f;
	p->repeat_penalty = 1.0f;
	p->repeat_last_n = 64;
	p->seed = 0;
}

int gl_sample_check(const gl_sample_params_t *p, const char **field)
{
	const char *bad = NULL;
	/* written as !(in range) so that NaN is refused too */
	if (!(p->temperature >= 0.0f && p->temperature <= 2.0f))
		bad = "temperature";
	else if (p->top_k < 0)
		bad = "top_k";
	else if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
		bad = "top_p";
	else if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
		bad = "min_p";
	else if (!(p->repeat_penalty > 0.0f && p->repeat_penalty < INFINITY))
		bad = "repeat_penalty";
	else if (p->repeat_last_n < 0)
		bad = "repeat_last_n";
	if (field)
		*field = bad;
	if (bad) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

/* Uniform in [0, 1) with 53 bits. */
static double rng_uniform(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

gl_sampler_t *gl_sampler_create(const gl_sample_params_t *p, int n_vocab)
{
	if (n_vocab <= 0 || gl_sample_check(p, NULL) < 0) {
		errno = EINVAL;
		return NULL;
	}
	gl_sampler_t *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->p = *p;
	s->n_vocab = n_vocab;
	s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
	s->stamp = calloc((size_t)n_vocab, sizeof *s->stamp);
	if (!s->cand || !s->stamp) {
		gl_sampler_destroy(&s);
		errno = ENOMEM;
		return NULL;
	}
	uint64_t x = p->seed;
	for (int i = 0; i < 4; i++)
		s->rng[i] = splitmix64(&x);
	return s;
}

void gl_sampler_destroy(gl_sampler_t **sp)
{
	if (!sp || !*sp)
		return;
	free((*sp)->cand);
	free((*sp)->stamp);
	free(*sp);
	*sp = NULL;
}

/* llama.cpp's penalty: each distinct token of the last repeat_last_n once, a positive logit
 * divided by the penalty and a negative one multiplied (both make it less likely). */
static void penalise(gl_sampler_t *s, float *logits, const int32_t *hist, int nhist)
{
	if (s->p.repeat_penalty == 1.0f || s->p.repeat_last_n == 0 || nhist <= 0)
		return;
	if (++s->ncalls == 0) { /* the stamps wrapped: start them again */
		memset(s->stamp, 0, (size_t)s->n_vocab * sizeof *s->stamp);
		s->ncalls = 1;
	}
	int from = nhist > s->p.repeat_last_n ? nhist - s->p.repeat_last_n : 0;
	for (int i = from; i < nhist; i++) {
		int32_t t = hist[i];
		if (t < 0 || t >= s->n_vocab || s->stamp[t] == s->ncalls)
			continue;
		s->stamp[t] = s->ncalls;
		float *l = &logits[t];
		*l = *l > 0 ? *l / s->p.repeat_penalty : *l * s->p.repeat_penalty;
	}
}

static int32_t argmax(const float *logits, int n)
{
	int32_t best = 0;
	for (int i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

/* Descending logit, the lower id first on a tie: a total order, so sorting is repeatable. */
static int cand_cmp(const void *a, const void *b)
{
	const cand_t *x = a, *y = b;
	if (x->logit != y->logit)
		return x->logit > y->logit ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int cand_before(const cand_t *x, const cand_t *y)
{
	return x->logit > y->logit || (x->logit == y->logit && x->id < y->id);
}

/* Move the K first candidates in cand_cmp's order to the front (quickselect), then sort them. */
static void keep_top_k(cand_t *c, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		cand_t pivot = c[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (cand_before(&c[i], &pivot))
				i++;
			while (cand_before(&pivot, &c[j]))
				j--;
			if (i <= j) {
				cand_t t = c[i];
				c[i++] = c[j];
				c[j--] = t;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			break;
	}
	qsort(c, (size_t)k, sizeof *c, cand_cmp);
}

/* Sort the best candidates, as few as hold MASS between them: the 64 best (quickselect, then a
 * sort of those), 256, ... until they do, else all. The prefix is the same as a full sort's
 * (cand_cmp is a total order), at a cost of about one pass when the distribution is peaked. */
static void sort_until(cand_t *c, int n, double mass)
{
	for (int k = 64; k < n; k *= 4) {
		keep_top_k(c, n, k);
		double acc = 0;
		for (int i = 0; i < k; i++)
			acc += c[i].logit;
		if (acc >= mass)
			return;
	}
	qsort(c, (size_t)n, sizeof *c, cand_cmp);
}

int32_t gl_sampler_next(gl_sampler_t *s, float *logits, const int32_t *hist, int nhist)
{
	int n = s->n_vocab;
	penalise(s, logits, hist, nhist);
	if (s->p.temperature == 0.0f)
		return argmax(logits, n);

	float inv_t = 1.0f / s->p.temperature, maxl = -INFINITY;
	cand_t *c = s->cand;
	for (int i = 0; i < n; i++) {
		c[i].logit = logits[i] * inv_t;
		c[i].id = i;
		if (c[i].logit > maxl)
			maxl = c[i].logit;
	}
	if (!isfinite(maxl)) /* all -inf or a NaN: nothing to draw from */
		return argmax(logits, n);
	int sorted = 0;
	if (s->p.top_k > 0 && s->p.top_k < n) {
		keep_top_k(c, n, s->p.top_k);
		n = s->p.top_k;
		sorted = 1;
	}
	/* from here the logit field holds exp(logit - max): p / p_max */
	for (int i = 0; i < n; i++)
		c[i].logit = expf(c[i].logit - maxl);
	if (s->p.top_p < 1.0f) {
		double total = 0, acc = 0;
		for (int i = 0; i < n; i++)
			total += c[i].logit;
		if (!sorted)
			sort_until(c, n, s->p.top_p * total);
		int keep = 1;
		for (acc = c[0].logit; keep < n && acc < s->p.top_p * total; keep++)
			acc += c[keep].logit;
		n = keep;
	}
	if (s->p.min_p > 0.0f) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (c[i].logit >= s->p.min_p)
				c[m++] = c[i];
		n = m; /* the best one has p / p_max = 1 and always stays */
	}
	double total = 0;
	for (int i = 0; i < n; i++)
		total += c[i].logit;
	double r = rng_uniform(s->rng) * total, acc = 0;
	for (int i = 0; i < n; i++) {
		acc += c[i].logit;
		if (r < acc)
			return c[i].id;
	}
	return c[n - 1].id; /* r fell past the sum by rounding */
}
