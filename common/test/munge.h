/* munge.h: the start of a common unit test that needs the real munged (test_wire,
 * test_endpoint): an auth handle that has just encoded a credential, or NULL after saying
 * why, and the test then exits 77 so that ctest counts it as skipped. */
#ifndef GPOOL_COMMON_TEST_MUNGE_H
#define GPOOL_COMMON_TEST_MUNGE_H

#include <stdio.h>
#include <stdlib.h>

#include "common/auth.h"

static inline gp_auth_t *gp_test_auth_or_skip(void)
{
	gp_error_t err;
	gp_auth_t *auth = gp_auth_create(NULL, &err);
	char *cred = NULL;
	if (!auth || gp_auth_encode(auth, "x", 1, &cred, &err) < 0) {
		printf("skip: munged is not running (%s)\n", err.text);
		gp_auth_destroy(&auth);
		return NULL;
	}
	free(cred);
	return auth;
}

#endif
