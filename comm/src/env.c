/* env.c - communicators from the job's environment; names of types and operations. */
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

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
    [GC_F32] = {"f32", 4}, [GC_F16] = {"f16", 2}, [GC_BF16] = {"bf16", 2},
    [GC_F64] = {"f64", 8}, [GC_I32] = {"i32", 4},
};

static const char *const ops[] = {
    [GC_SUM] = "sum", [GC_MAX] = "max", [GC_MIN] = "min", [GC_AVG] = "avg"};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

size_t gc_dtype_size(gc_dtype_t t)
{
	return (int)t >= 0 && (int)t < N(dtypes) ? dtypes[t].size : 0;
}

const char *gc_dtype_name(gc_dtype_t t)
{
	return (int)t >= 0 && (int)t < N(dtypes) ? dtypes[t].name : "?";
}

const char *gc_op_name(gc_op_t op)
{
	return (int)op >= 0 && (int)op < N(ops) ? ops[op] : "?";
}

int gc_dtype_parse(const char *s, gc_dtype_t *t)
{
	for (int i = 0; s && i < N(dtypes); i++)
		if (!strcmp(s, dtypes[i].name))
			return *t = (gc_dtype_t)i, 0;
	return errno = EINVAL, -1;
}

int gc_op_parse(const char *s, gc_op_t *op)
{
	for (int i = 0; s && i < N(ops); i++)
		if (!strcmp(s, ops[i]))
			return *op = (gc_op_t)i, 0;
	return errno = EINVAL, -1;
}
