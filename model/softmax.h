/* softmax.h - probabilities from logits, row by row (the host's end of a served forward pass) */
#ifndef GM_SOFTMAX_H
#define GM_SOFTMAX_H

#include <stddef.h>

/* z[n][k] in place: each row shifted by its maximum, exponentiated, normalised. */
void gm_softmax_rows(float *z, size_t n, size_t k);

#endif
