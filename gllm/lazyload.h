/* lazyload.h: a rank's share of a lazily staged model, fetched before it is read (lazyload.c). */
#ifndef GLLM_LAZYLOAD_H
#define GLLM_LAZYLOAD_H

#include "common/error.h"
#include "llm/gguf.h"

/* When path is a lazily staged file of this job, fetch its header (metadata and tensor
 * descriptions): 1. A whole file: 0, nothing done. -1 with errno and err. */
int gllm_lazy_header(const char *path, gp_error_t *err);
/* Fetch the bytes of the tensors gl_weights_load reads for layers [first, last), and the
 * embedding, output norm and head when head (g: the file's header). 0 / -1 with err. */
int gllm_lazy_layers(const char *path, const gl_gguf_t *g, int first, int last, int head,
		     gp_error_t *err);

#endif
