/* gguf_check.h - the assertion of llm/'s file tests: plain C, no cmocka, so that they build on
 * the GPU machine as the library does. A failed check names itself and exits 1. */
#ifndef GL_TEST_GGUF_CHECK_H
#define GL_TEST_GGUF_CHECK_H

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
