/* infer.h - a model answering batches (gserve's forward pass): the parameters are copied to
 * the backend once; a batch is its rows multiplied by the input scale on the host, one upload,
 * the forward pass (model/forward.h) on the runner's stream, one download of the logits and
 * softmax on the host. Any kernels backend: a card (cuda, hip) or the cpu one (OpenBLAS).
 * libc and the kernels only: it builds where only the CUDA toolkit is (bench/serve/on-gpu.sh). */
#ifndef GM_INFER_H
#define GM_INFER_H

#include <stddef.h>

#include "common/error.h"
#include "gpool/kernels.h"
#include "model/model.h"

typedef struct gm_infer gm_infer_t;

/* M's parameters onto BK, buffers for batches of up to MAX_ROWS rows. M may be destroyed
 * afterwards. NULL with errno and err set ("<backend> backend: <why>"). */
gm_infer_t *gm_infer_create(gk_backend_t *bk, const gm_model_t *m, size_t max_rows,
			    gp_error_t *err);
/* Takes NULL; sets *d to NULL. */
void gm_infer_destroy(gm_infer_t **d);
/* probs[n][outputs] = softmax(MLP(x[n][inputs] * input_scale)). 0 / -1 with errno (E2BIG:
 * n over max_rows; EIO: the backend failed). */
int gm_infer_run(gm_infer_t *d, const float *x, size_t n, float *probs);

#endif
