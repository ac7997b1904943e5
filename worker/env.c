/* env.c: building a task's environment. */
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct envv {
	char **v;
	size_t n, cap;
};

static int valid_name(const char *s)
{
	if (!s || !*s || strchr(s, '='))
		return 0;
	return 1;
}

/* Set name=value, replacing an existing entry. */
static int env_set(struct envv *e, const char *name, const char *value)
{
	size_t nl = strlen(name);
	char *kv;
	if (asprintf(&kv, "%s=%s", name, value ? value : "") < 0)
		return -1;
	for (size_t i = 0; i < e->n; i++) {
		if (!strncmp(e->v[i], name, nl) && e->v[i][nl] == '=') {
			free(e->v[i]);
			e->v[i] = kv;
			return 0;
		}
	}
	if (e->n + 2 > e->cap) {
		size_t nc = e->cap ? e->cap * 2 : 64;
		char **nv = realloc(e->v, nc * sizeof(*nv));
		if (!nv) {
			free(kv);
			return -1;
		}
		e->v = nv;
		e->cap = nc;
	}
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
	return 0;
}

static int env_setu(struct envv *e, const char *name, unsigned long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%llu", v);
	return env_set(e, name, b);
}

void gp_env_free(char **env)
{
	if (!env)
		return;
	for (char **p = env; *p; p++)
		free(*p);
	free(env);
}

const char *gp_env_get(char *const *env, const char *name)
{
	size_t nl = strlen(name);
	for (; env && *env; env++)
		if (!strncmp(*env, name, nl) && (*env)[nl] == '=')
			return *env + nl + 1;
	return NULL;
}

char **gp_env_build(const struct gp_task_env_ctx *c, gp_error_t *err)
{
	const Gpool__Launch *l = c->launch;
	const Gpool__TaskPlacement *t = c->task;
	const Gpool__JobSpec *spec = l->spec;
	struct envv e = { 0 };
	int rc = 0;
	if (spec && spec->n_env) {
		for (size_t i = 0; i < spec->n_env && rc == 0; i++)
			if (valid_name(spec->env[i]->name))
				rc = env_set(&e, spec->env[i]->name, spec->env[i]->value);
	} else {
		rc |= env_set(&e, "PATH", "/usr/local/bin:/usr/bin:/bin");
		rc |= env_set(&e, "HOME", c->account->home);
		rc |= env_set(&e, "USER", c->account->name);
		rc |= env_set(&e, "LOGNAME", c->account->name);
		rc |= env_set(&e, "SHELL", c->account->shell);
	}
	uint32_t cpt = t->n_cpus ? (uint32_t)t->n_cpus : (spec && spec->cpus_per_task ? spec->cpus_per_task : 1);
	char port[16];
	snprintf(port, sizeof(port), "%u", l->master_port);
	rc |= env_setu(&e, "GPOOL_JOB_ID", l->job_id);
	rc |= env_setu(&e, "GPOOL_ATTEMPT", l->attempt);
	rc |= env_setu(&e, "GPOOL_RANK", t->rank);
	rc |= env_setu(&e, "GPOOL_SIZE", l->size);
	rc |= env_setu(&e, "GPOOL_LOCAL_RANK", t->local_rank);
	rc |= env_setu(&e, "GPOOL_LOCAL_SIZE", l->local_size);
	rc |= env_set(&e, "GPOOL_NODELIST", l->nodelist);
	rc |= env_set(&e, "GPOOL_NODENAME", c->node);
	rc |= env_setu(&e, "GPOOL_CPUS_PER_TASK", cpt);
	rc |= env_set(&e, "GPOOL_SCRATCH", c->scratch);
	rc |= env_setu(&e, "RANK", t->rank);
	rc |= env_setu(&e, "WORLD_SIZE", l->size);
	rc |= env_setu(&e, "LOCAL_RANK", t->local_rank);
	rc |= env_setu(&e, "LOCAL_WORLD_SIZE", l->local_size);
	rc |= env_set(&e, "MASTER_ADDR", l->master_addr);
	rc |= env_set(&e, "MASTER_PORT", port);
	if (rc || !e.v) {
		char **v = e.v;
		if (v) {
			v[e.n] = NULL;
			gp_env_free(v);
		}
		errno = ENOMEM;
		gp_errprintf(err, "out of memory building the environment");
		return NULL;
	}
	return e.v;
}
