/* env.c - communicators from the job's environment (names of types and operations: dtype.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/src/comm_int.h"

static int env_rank(const char *const *names, int *out)
{
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		if (!v || !*v)
			continue;
		char *end;
		long x = strtol(v, &end, 10);
		if (*end || x < 0 || x > 1 << 20)
			return -1;
		*out = (int)x;
		return 0;
	}
	return -1;
}

gc_comm_t *gc_comm_from_env(gc_error_t *err)
{
	static const char *const ranks[] = {"GCOMM_RANK",	    "GPOOL_RANK", "RANK",
					    "OMPI_COMM_WORLD_RANK", "PMIX_RANK",  NULL};
	static const char *const sizes[] = {"GCOMM_SIZE", "GPOOL_SIZE", "WORLD_SIZE",
					    "OMPI_COMM_WORLD_SIZE", NULL};
	gc_params_t p = {.device = -1};
	const char *tp = getenv("GCOMM_TRANSPORT");
	int mpi = tp && !strcmp(tp, "mpi");
	if (!mpi && (env_rank(ranks, &p.rank) < 0 || env_rank(sizes, &p.size) < 0)) {
		if (err)
			snprintf(
			    err->text, sizeof(err->text),
			    "no rank in the environment (GPOOL_RANK/GPOOL_SIZE, RANK/WORLD_SIZE "
			    "or OMPI_COMM_WORLD_RANK/SIZE)");
		errno = EINVAL;
		return NULL;
	}
	return gc_comm_create(&p, err);
}
