/* test_sample.c - the sampler on hand-made logits: greedy and its tie rule, each filter keeping
 * exactly the tokens it should, a seed repeating its sequence and another seed not, temperature
 * sharpening and flattening the draw, the repeat penalty, the parameter checks. */
#include <math.h>
#include <string.h>

#include "llm/sample.h"
#include "llm/test/eng_check.h"

#define NV 8

static gl_sampler_t *make(float temp, int top_k, float top_p, float min_p, uint64_t seed)
{
	gl_sample_params_t p;
	gl_sample_defaults(&p);
	p.temperature = temp;
	p.top_k = top_k;
	p.top_p = top_p;
	p.min_p = min_p;
	p.seed = seed;
	gl_sampler_t *s = gl_sampler_create(&p, NV);
	CHECK(s);
	return s;
}

/* Counts of each token over N draws from LOGITS. */
static void draw(gl_sampler_t *s, const float *logits, int n, int *count)
{
	memset(count, 0, NV * sizeof *count);
	for (int i = 0; i < n; i++) {
		float l[NV];
		memcpy(l, logits, sizeof l);
		int32_t t = gl_sampler_next(s, l, NULL, 0);
		CHECK(t >= 0 && t < NV);
		count[t]++;
	}
}

static const float base[NV] = {1.0f, 3.0f, 0.5f, 3.0f, 2.0f, -1.0f, 2.5f, 0.0f};

static void test_greedy(void)
{
	gl_sampler_t *s = make(0, 0, 1, 0, 1);
	float l[NV];
	memcpy(l, base, sizeof l);
	/* 1 and 3 tie at 3.0: the lower id */
	CHECK(gl_sampler_next(s, l, NULL, 0) == 1);
	gl_sampler_destroy(&s);
	CHECK(s == NULL);
}

static void test_top_k(void)
{
	gl_sampler_t *s = make(1, 3, 1, 0, 7);
	int c[NV];
	draw(s, base, 3000, c);
	/* the three best: 1, 3 (3.0) and 6 (2.5); nothing else ever */
	for (int i = 0; i < NV; i++)
		CHECK((i == 1 || i == 3 || i == 6) ? c[i] > 0 : c[i] == 0);
	gl_sampler_destroy(&s);
	/* top_k 1 is greedy */
	s = make(1, 1, 1, 0, 7);
	draw(s, base, 200, c);
	CHECK(c[1] == 200);
	gl_sampler_destroy(&s);
}

static void test_top_p(void)
{
	/* probabilities 0.5, 0.3, 0.15, 0.05 (logits are their logs) */
	float l4[NV];
	for (int i = 0; i < NV; i++)
		l4[i] = -INFINITY;
	l4[2] = logf(0.5f);
	l4[5] = logf(0.3f);
	l4[0] = logf(0.15f);
	l4[7] = logf(0.05f);
	int c[NV];
	gl_sampler_t *s = make(1, 0, 0.75f, 0, 3); /* 0.5 + 0.3 reach 0.75: {2, 5} */
	draw(s, l4, 4000, c);
	CHECK(c[2] > 0 && c[5] > 0 && c[2] + c[5] == 4000);
	/* renormalised over the two: 0.5 / 0.8 = 0.625 */
	CHECK(fabs(c[2] / 4000.0 - 0.625) < 0.04);
	gl_sampler_destroy(&s);
	s = make(1, 0, 0.9f, 0, 3); /* 0.95 needed to pass 0.9: {2, 5, 0} */
	draw(s, l4, 4000, c);
	CHECK(c[0] > 0 && c[7] == 0 && c[2] + c[5] + c[0] == 4000);
	gl_sampler_destroy(&s);
	s = make(1, 0, 0.0f, 0, 3); /* top_p 0 keeps only the best */
	draw(s, l4, 100, c);
	CHECK(c[2] == 100);
	gl_sampler_destroy(&s);
}

/* A large vocabulary, flat and peaked: the draws stay inside the nucleus a full sort gives, and
 * reach past the 64 best when the nucleus is wider (the partial sort does not cut it short). */
#define BIGV 5000
static int cmp_desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x < y) - (x > y);
}

static void test_top_p_large(void)
{
	static float l[BIGV], sorted[BIGV], work[BIGV];
	for (int peaked = 0; peaked < 2; peaked++) {
		uint64_t x = 99;
		for (int i = 0; i < BIGV; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			l[i] = (float)(x >> 40) / (float)(1u << 24) * (peaked ? 100.0f : 1.0f);
		}
		/* the nucleus's smallest member, by a full sort: keep p >= that */
		memcpy(sorted, l, sizeof l);
		qsort(sorted, BIGV, sizeof *sorted, cmp_desc);
		double total = 0, acc = 0;
		for (int i = 0; i < BIGV; i++)
			total += exp((double)(sorted[i] - sorted[0]));
		int keep = 0;
		while (acc < 0.5 * total)
			acc += exp((double)(sorted[keep++] - sorted[0]));
		float floor = sorted[keep - 1], top64 = sorted[63];
		gl_sample_params_t p;
		gl_sample_defaults(&p);
		p.top_p = 0.5f;
		gl_sampler_t *s = gl_sampler_create(&p, BIGV);
		int beyond = 0;
		for (int d = 0; d < 400; d++) {
			memcpy(work, l, sizeof l);
			int32_t t = gl_sampler_next(s, work, NULL, 0);
			CHECK(t >= 0 && t < BIGV && l[t] >= floor);
			beyond += l[t] < top64;
		}
		CHECK(peaked ? keep < 64 : keep > 1000 && beyond > 100);
		gl_sampler_destroy(&s);
	}
}

static void test_min_p(void)
{
	int c[NV];
	/* min_p 0.5: keep p >= 0.5 p_max, i.e. logit >= 3 + ln 0.5 = 2.307: {1, 3, 6} */
	gl_sampler_t *s = make(1, 0, 1, 0.5f, 11);
	draw(s, base, 3000, c);
	for (int i = 0; i < NV; i++)
		CHECK((i == 1 || i == 3 || i == 6) ? c[i] > 0 : c[i] == 0);
	gl_sampler_destroy(&s);
}

static void test_seed(void)
{
	int32_t a[64], b[64], d[64];
	gl_sampler_t *s1 = make(1, 0, 1, 0, 42), *s2 = make(1, 0, 1, 0, 42),
		     *s3 = make(1, 0, 1, 0, 43);
	for (int i = 0; i < 64; i++) {
		float l[NV];
		memcpy(l, base, sizeof l);
		a[i] = gl_sampler_next(s1, l, NULL, 0);
		memcpy(l, base, sizeof l);
		b[i] = gl_sampler_next(s2, l, NULL, 0);
		memcpy(l, base, sizeof l);
		d[i] = gl_sampler_next(s3, l, NULL, 0);
	}
	CHECK(memcmp(a, b, sizeof a) == 0);
	CHECK(memcmp(a, d, sizeof a) != 0);
	gl_sampler_destroy(&s1);
	gl_sampler_destroy(&s2);
	gl_sampler_destroy(&s3);
}

/* The expected share of token 1 under temperature T, against what 20000 draws give. */
static void test_temperature(void)
{
	const float temps[] = {0.25f, 1.0f, 2.0f};
	double share[3];
	for (int k = 0; k < 3; k++) {
		gl_sampler_t *s = make(temps[k], 0, 1, 0, 5);
		int c[NV];
		draw(s, base, 20000, c);
		double z = 0;
		for (int i = 0; i < NV; i++)
			z += exp((double)(base[i] / temps[k]));
		double want = exp((double)(base[4] / temps[k])) / z;
		share[k] = c[4] / 20000.0;
		CHECK(fabs(share[k] - want) < 0.02);
		gl_sampler_destroy(&s);
	}
	/* token 4 (2.0) is below the best: a cold draw picks it less, a hot one more */
	CHECK(share[0] < share[1] && share[1] < share[2]);
}

static void test_penalty(void)
{
	gl_sample_params_t p;
	gl_sample_defaults(&p);
	p.temperature = 0;
	p.repeat_penalty = 2.0f;
	p.repeat_last_n = 2;
	gl_sampler_t *s = gl_sampler_create(&p, NV);
	CHECK(s);
	float l[NV];
	memcpy(l, base, sizeof l);
	/* 1 seen (3.0 -> 1.5), seen twice still halved once; 3 is older than the window */
	const int32_t hist[] = {3, 1, 1};
	int32_t t = gl_sampler_next(s, l, hist, 3);
	CHECK(t == 3);
	CHECK(l[1] == 1.5f && l[3] == 3.0f);
	/* a negative logit is multiplied */
	memcpy(l, base, sizeof l);
	const int32_t h2[] = {5};
	gl_sampler_next(s, l, h2, 1);
	CHECK(l[5] == -2.0f);
	gl_sampler_destroy(&s);
}

static void test_check(void)
{
	gl_sample_params_t p;
	const char *f = NULL;
	gl_sample_defaults(&p);
	CHECK(gl_sample_check(&p, &f) == 0 && f == NULL);
	p.temperature = 2.5f;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "temperature") == 0);
	p.temperature = NAN;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "temperature") == 0);
	gl_sample_defaults(&p);
	p.top_p = 1.5f;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "top_p") == 0);
	gl_sample_defaults(&p);
	p.min_p = -0.1f;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "min_p") == 0);
	gl_sample_defaults(&p);
	p.top_k = -1;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "top_k") == 0);
	gl_sample_defaults(&p);
	p.repeat_penalty = 0;
	CHECK(gl_sample_check(&p, &f) < 0 && strcmp(f, "repeat_penalty") == 0);
	CHECK(gl_sampler_create(&p, NV) == NULL);
}

int main(void)
{
	test_greedy();
	test_top_k();
	test_top_p();
	test_top_p_large();
	test_min_p();
	test_seed();
	test_temperature();
	test_penalty();
	test_check();
	return 0;
}
