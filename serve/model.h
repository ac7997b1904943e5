/* model.h: the trainer's model file and its forward pass.
 *
 * Format (shared with the trainer): the bytes "GPMODEL1\n"; one line of JSON ending in "\n",
 * e.g. {"kind":"mlp","layers":[64,256,256,10],"activation":"relu","dtype":"f32"} (other keys
 * are ignored except "input_scale", a number multiplied into the inputs, default 1); then for
 * each layer l in order the weights W_l, [layers[l+1]][layers[l]] row-major little-endian f32,
 * then the bias b_l, layers[l+1] f32. ReLU between hidden layers, softmax on the output.
 * Nothing may follow the last bias.
 */
#ifndef GPOOL_SERVE_MODEL_H
#define GPOOL_SERVE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GS_MODEL_MAX_LAYERS 16	       /* weight layers */
#define GS_MODEL_MAX_WIDTH  65536      /* units in one layer */
#define GS_MODEL_MAX_PARAMS (1u << 28) /* floats in all: 1 GiB */

typedef struct gs_model gs_model_t;

/* Parse a model from memory (the fuzz target) or a file. NULL with errno and err set. */
gs_model_t *gs_model_parse(const uint8_t *buf, size_t len, gp_error_t *err);
gs_model_t *gs_model_load(const char *path, gp_error_t *err);
void gs_model_destroy(gs_model_t **m);

uint32_t gs_model_inputs(const gs_model_t *m);
uint32_t gs_model_outputs(const gs_model_t *m);
/* "64-256-256-10" */
const char *gs_model_shape(const gs_model_t *m);

/* weight layers; width of layer i (0: the inputs, layers(): the outputs); layer l's
 * weights [width(l+1)][width(l)] and bias; what inputs are multiplied by */
uint32_t gs_model_layers(const gs_model_t *m);
uint32_t gs_model_width(const gs_model_t *m, uint32_t i);
void gs_model_params(const gs_model_t *m, uint32_t l, const float **w, const float **b);
float gs_model_input_scale(const gs_model_t *m);

/* probs[n][outputs] = softmax(MLP(x[n][inputs])) through OpenBLAS. 0 / -1 (ENOMEM). */
int gs_model_forward(const gs_model_t *m, const float *x, size_t n, float *probs);

#endif
