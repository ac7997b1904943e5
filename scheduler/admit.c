/* admit.c: the chain of checks a submission passes (admit.h); the checks are the features'. */
#include "scheduler/admit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct link {
	const char *name;
	admit_check_f check;
};

struct admit_chain {
	struct link *v;
	size_t n;
};

struct admit_chain *admit_chain_create(void)
{
	return calloc(1, sizeof(struct admit_chain));
}

void admit_chain_destroy(struct admit_chain **c)
{
	if (!c || !*c)
		return;
	free((*c)->v);
	free(*c);
	*c = NULL;
}

int admit_chain_add(struct admit_chain *c, const char *name, admit_check_f check)
{
	struct link *nv = realloc(c->v, (c->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	c->v = nv;
	c->v[c->n++] = (struct link){name, check};
	return 0;
}

int admit_run(struct gsched *s, const struct admit_chain *c, struct admission *a)
{
	for (size_t i = 0; c && i < c->n; i++)
		if (c->v[i].check(s, a) < 0)
			return -1;
	return 0;
}

int admit_refuse(struct admission *a, Gpool__ErrorCode code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	a->code = code;
	return -1;
}
