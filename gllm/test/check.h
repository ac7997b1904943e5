/* check.h - gllm's tests' one assertion: plain C, so they build wherever gllm does. A failed
 * check names itself and exits 1. */
#ifndef GLLM_TEST_CHECK_H
#define GLLM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);      \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#endif
