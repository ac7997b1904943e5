/* dtype.c - the element types and reduction operations by name and size (gpool/gcomm.h). */
#include <errno.h>
#include <string.h>

#include "comm/src/comm_int.h"

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
