/* softmax.h: probabilities from logits, row by row (the host's part of every forward pass). */
#ifndef GPOOL_SERVE_SOFTMAX_H
#define GPOOL_SERVE_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

/* z[n][k] in place: each row shifted by its maximum, exponentiated, normalised. */
void gs_softmax_rows(float *z, size_t n, uint32_t k);

#endif
