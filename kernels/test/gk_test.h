/* gk_test.h - what gk-test's files share: the backends under test, the check counters and
 * assertion macros, the random source, and the language-model layers' tests (gk_test_llm.c) */
#ifndef GK_TEST_H
#define GK_TEST_H

#include <stdint.h>
#include <stdio.h>

#include "gpool/kernels.h"

extern gk_backend_t *b;	  /* under test */
extern gk_backend_t *ref; /* cpu */
extern int checks, failures;

#define ASSERT(cond, ...)                                                                          \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			if (failures <= 60) {                                                      \
				fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
				fprintf(stderr, __VA_ARGS__);                                      \
				fputc('\n', stderr);                                               \
			}                                                                          \
		}                                                                                  \
	} while (0)
#define OK(be, call) ASSERT((call) == 0, "%s: %s", #call, gk_backend_error(be))

uint64_t rnd(void); /* splitmix64 of a counter */
double unit(void);  /* uniform in [0, 1) */

void t_llm_dequant_ref(void);
void t_llm_qmatmul(void);
void t_llm_get_rows(void);
void t_llm_rmsnorm(void);
void t_llm_rope(void);
void t_llm_elementwise(void);
void t_llm_kv_write(void);
void t_llm_attention(void);
void t_llm_api(void);

#endif
