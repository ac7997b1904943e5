/* tp.c - the transports built in, by name. */
#include <string.h>

#include "comm/src/tp.h"

static const gc_tp_ops_t *const transports[] = {
    &gc_tp_tcp,
#ifdef GCOMM_HAVE_UCX
    &gc_tp_ucx,
#endif
};

const gc_tp_ops_t *gc_tp_find(const char *name)
{
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (!strcmp(transports[i]->name, name))
			return transports[i];
	return NULL;
}
