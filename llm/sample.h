/* sample.h - choosing the next token from logits: temperature, top-k, top-p, min-p, a repeat
 * penalty, greedy at temperature 0, and a seed that makes a run repeatable (the same seed, prompt
 * and parameters give the same tokens on every backend whose logits agree). */
#ifndef GL_SAMPLE_H
#define GL_SAMPLE_H

#include <stdint.h>

typedef struct {
	float temperature;    /* 0: greedy (argmax, the lowest id on a tie) */
	int top_k;	      /* 0: off */
	float top_p;	      /* 1: off */
	float min_p;	      /* 0: off (keep tokens with p >= min_p * p_max) */
	float repeat_penalty; /* 1: off (llama.cpp's: logits of recent tokens / or * it) */
	int repeat_last_n;    /* tokens the penalty looks back over */
	uint64_t seed;	      /* the generator's seed */
} gl_sample_params_t;

/* OpenAI's defaults: temperature 1, top_p 1; top_k 0, min_p 0, no penalty, seed from the clock
 * is the caller's choice (here: 0). */
void gl_sample_defaults(gl_sample_params_t *p);
/* Check ranges (temperature 0..2 as OpenAI's, top_p 0..1, min_p 0..1, top_k >= 0, penalty > 0):
 * 0, or -1 (EINVAL) with the offending field's name in *FIELD. */
int gl_sample_check(const gl_sample_params_t *p, const char **field);

typedef struct gl_sampler gl_sampler_t;

gl_sampler_t *gl_sampler_create(const gl_sample_params_t *p, int n_vocab);
void gl_sampler_destroy(gl_sampler_t **s);
/* The next token from N_VOCAB LOGITS (overwritten), HIST the tokens so far (for the penalty). */
int32_t gl_sampler_next(gl_sampler_t *s, float *logits, const int32_t *hist, int nhist);

#endif
