/* eng_check.h - the engine's tests' one assertion: plain C, no cmocka, so that they build on the
 * GPU machine too. A failed check names itself and exits 1. */
#ifndef GL_TEST_ENG_CHECK_H
#define GL_TEST_ENG_CHECK_H

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
