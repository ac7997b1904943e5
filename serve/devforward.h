/* devforward.h: an MLP's forward pass on the kernels backend (kernels/include/gpool/kernels.h):
 * on a card when the replica has one (cuda, hip), or the backend's cpu. The weights are
 * copied to the device once; a batch is one upload of its rows, one gk_sgemm and one
 * gk_bias_act a layer on one stream, one download of the logits, softmax on the host. It
 * takes plain arrays (not a model file), so that it builds where only the CUDA toolkit is
 * (the GPU machine's test). */
#ifndef GPOOL_SERVE_DEVFORWARD_H
#define GPOOL_SERVE_DEVFORWARD_H

#include <stddef.h>
#include <stdint.h>

#include <gpool/kernels.h>

typedef struct gs_devfwd gs_devfwd_t;

/* nl weight layers; width[0..nl]; w[l]: [width[l+1]][width[l]] row-major, b[l]: width[l+1];
 * inputs multiplied by input_scale. max_rows: the largest batch. NULL with errno and a
 * reason in why (of whylen bytes). */
gs_devfwd_t *gs_devfwd_create(gk_backend_t *bk, uint32_t nl, const uint32_t *width,
			      const float *const *w, const float *const *b, float input_scale,
			      size_t max_rows, char *why, size_t whylen);
void gs_devfwd_destroy(gs_devfwd_t **d);
/* probs[n][width[nl]] = softmax(MLP(x[n][width[0]])), n <= max_rows. 0 / -1. */
int gs_devfwd_run(gs_devfwd_t *d, const float *x, size_t n, float *probs);

#endif
