/* env.c - the environment a job gets from gsub's --export, as Slurm's forms read (env.h) */
#include "cli/lib/env.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct envlist {
	Gpool__EnvVar **v;
	size_t n;
};

static bool valid_name(const char *s, size_t len)
{
	if (len == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* Set name=value, replacing an earlier value of the same name. */
static int env_set(struct envlist *l, const char *name, size_t nlen, const char *value)
{
	for (size_t i = 0; i < l->n; i++) {
		if (strlen(l->v[i]->name) == nlen && !memcmp(l->v[i]->name, name, nlen)) {
			char *nv = strdup(value);
			if (!nv)
				return -1;
			free(l->v[i]->value);
			l->v[i]->value = nv;
			return 0;
		}
	}
	Gpool__EnvVar **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	l->v = nv;
	Gpool__EnvVar *e = malloc(sizeof(*e));
	if (!e)
		return -1;
	gpool__env_var__init(e);
	e->name = strndup(name, nlen);
	e->value = strdup(value);
	l->v[l->n++] = e; /* owned now, even if a strdup failed */
	if (!e->name || !e->value)
		return -1;
	return 0;
}

static const char *env_get(char *const *envp, const char *name, size_t nlen)
{
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, name, nlen) && (*e)[nlen] == '=')
			return *e + nlen + 1;
	return NULL;
}

/* Walk the items; with l == NULL only check them. */
static int walk(const char *spec, char *const *envp, struct envlist *l, gp_error_t *err)
{
	const char *p = spec;
	if (!*spec) {
		errno = EINVAL;
		return gp_errprintf(err, "invalid --export value ''");
	}
	while (1) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		size_t nlen = eq ? (size_t)(eq - p) : len;
		if (!eq && len == 3 && !strncmp(p, "ALL", 3)) {
			for (char *const *e = envp; l && e && *e; e++) {
				const char *q = strchr(*e, '=');
				if (q && valid_name(*e, q - *e) &&
				    env_set(l, *e, q - *e, q + 1) < 0)
					goto oom;
			}
		} else if (!eq && len == 4 && !strncmp(p, "NONE", 4)) {
			/* nothing from the environment */
		} else if (!valid_name(p, nlen)) {
			errno = EINVAL;
			return gp_errprintf(err, "invalid --export item '%.*s'", (int)len, p);
		} else if (l) {
			if (eq) {
				char *val = strndup(eq + 1, len - nlen - 1);
				if (!val)
					goto oom;
				int rc = env_set(l, p, nlen, val);
				free(val);
				if (rc < 0)
					goto oom;
			} else {
				const char *val = env_get(envp, p, nlen);
				if (val && env_set(l, p, nlen, val) < 0)
					goto oom;
			}
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return 0;
oom:
	errno = ENOMEM;
	return gp_errprintf(err, "out of memory");
}

int gp_export_check(const char *spec, gp_error_t *err)
{
	return walk(spec, NULL, NULL, err);
}

int gp_export_build(const char *spec, char *const *envp, Gpool__EnvVar ***vars, size_t *n,
		    gp_error_t *err)
{
	struct envlist l = {0};
	if (walk(spec ? spec : "ALL", envp, &l, err) < 0) {
		gp_export_free(l.v, l.n);
		return -1;
	}
	*vars = l.v;
	*n = l.n;
	return 0;
}

void gp_export_free(Gpool__EnvVar **vars, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gpool__env_var__free_unpacked(vars[i], NULL);
	free(vars);
}
