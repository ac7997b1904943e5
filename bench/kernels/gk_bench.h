/* gk_bench.h - what gk-bench's files share: the failure macro and the llm mode */
#ifndef GK_BENCH_H
#define GK_BENCH_H

#include <stdio.h>
#include <stdlib.h>

#include "gpool/kernels.h"

#define GKB_TRY(be, call)                                                                          \
	do {                                                                                       \
		if ((call) != 0) {                                                                 \
			fprintf(stderr, "gk-bench: %s: %s\n", #call, gk_backend_error(be));        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* gk-bench llm: the language-model layers at 7B shapes (gk_bench_llm.c); QUICK: small shapes */
int gk_bench_llm(gk_backend_t *b, int quick, int runs, int warmup);

#endif
