/* file.h - the model file: what gtrain writes (--model) and gserve loads (docs/training.md,
 * docs/commands/gserve.md). The one reader and writer of the format.
 *
 *   "GPMODEL1\n"
 *   {"kind":"mlp","layers":[64,256,256,10],"activation":"relu","dtype":"f32","input_scale":S}\n
 *   then for each layer l: W_l [layers[l+1]][layers[l]] f32 row-major, then b_l
 *   [layers[l+1]], little-endian; nothing after the last bias.
 *
 * Reading: "kind" must be "mlp" and "dtype" "f32"; "activation", when there, "relu";
 * "input_scale" defaults to 1; other keys are ignored, a key given twice is refused; every
 * parameter must be finite. The writer always writes every key above, in that order.
 * Parsers take a buffer (the fuzz harness, tests/fuzz/fuzz_model.c, drives them) and never
 * trust a length. Without jansson (model/file_none.c) each call fails with ENOTSUP. */
#ifndef GM_FILE_H
#define GM_FILE_H

#include <stddef.h>

#include "common/error.h"
#include "model/model.h"

/* NULL with errno and err set */
gm_model_t *gm_model_parse(const void *buf, size_t len, gp_error_t *err);
gm_model_t *gm_model_read(const char *path, gp_error_t *err);
/* 0 / -1 with errno and err set; the old file stays when writing fails */
int gm_model_write(const char *path, const gm_model_t *m, gp_error_t *err);

#endif
