/* config.c - gpool.conf and the flags that mirror it, read against the one table of keys
 * (config_keys.c): parsing, defaults, checks and reload (config.h) */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/util.h"

/* room for every key of config_keys.c (gp_config_create refuses a table that outgrew it) */
#define GP_CONF_MAX 256

struct gp_config {
	enum gp_prog prog;
	int check_only;
	char *val[GP_CONF_MAX];
	int64_t num[GP_CONF_MAX];
};

static int key_index(const char *name)
{
	for (int i = 0; i < gp_conf_nkeys; i++)
		if (strcmp(gp_conf_keys[i].name, name) == 0)
			return i;
	return -1;
}

/* v one of "a|b|c"? */
static int in_choices(const char *choices, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = choices; *p;) {
		size_t len = strcspn(p, "|");
		if (len == n && strncmp(p, v, n) == 0)
			return 1;
		p += len;
		if (*p == '|')
			p++;
	}
	return 0;
}

static int convert(const struct gp_conf_key *k, const char *v, int64_t *out, gp_error_t *err)
{
	if (k->choices && !in_choices(k->choices, v))
		return gp_errprintf(err, "invalid value '%s' for %s (one of %s)", v, k->name,
				    k->choices);
	long l;
	uint32_t secs;
	uint64_t b;
	switch (k->type) {
	case GP_CONF_STR:
		*out = 0;
		return 0;
	case GP_CONF_INT:
		if (gp_parse_long(v, -1, 2000000000L, &l) < 0)
			return gp_errprintf(err, "invalid number '%s' for %s", v, k->name);
		*out = l;
		return 0;
	case GP_CONF_BOOL:
		if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on"))
			*out = 1;
		else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") ||
			 !strcmp(v, "off"))
			*out = 0;
		else
			return gp_errprintf(err, "invalid boolean '%s' for %s", v, k->name);
		return 0;
	case GP_CONF_DURATION: {
		/* plain gp_parse_duration treats a bare number as minutes; config wants ms suffix
		 * too */
		size_t n = strlen(v);
		if (n > 2 && !strcmp(v + n - 2, "ms")) {
			char tmp[32];
			if (n - 2 >= sizeof(tmp))
				return gp_errprintf(err, "invalid duration '%s' for %s", v,
						    k->name);
			memcpy(tmp, v, n - 2);
			tmp[n - 2] = 0;
			if (gp_parse_long(tmp, 0, 2000000000L, &l) < 0)
				return gp_errprintf(err, "invalid duration '%s' for %s", v,
						    k->name);
			*out = l;
			return 0;
		}
		if (gp_parse_duration(v, &secs) < 0)
			return gp_errprintf(err, "invalid duration '%s' for %s", v, k->name);
		if (strcmp(v, "0") == 0)
			secs = 0;
		*out = (int64_t)secs * 1000;
		return 0;
	}
	case GP_CONF_SIZE:
		if (gp_parse_size(v, 1, &b) < 0)
			return gp_errprintf(err, "invalid size '%s' for %s", v, k->name);
		*out = (int64_t)b;
		return 0;
	}
	return gp_errprintf(err, "bad key type");
}

gp_config_t *gp_config_create(enum gp_prog prog)
{
	if (gp_conf_nkeys > GP_CONF_MAX) {
		errno = E2BIG;
		return NULL;
	}
	gp_config_t *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NULL;
	cfg->prog = prog;
	for (int i = 0; i < gp_conf_nkeys; i++) {
		if (gp_config_set(cfg, gp_conf_keys[i].name, gp_conf_keys[i].def, NULL) < 0) {
			gp_config_destroy(&cfg);
			return NULL;
		}
	}
	return cfg;
}

void gp_config_destroy(gp_config_t **p)
{
	if (!p || !*p)
		return;
	for (int i = 0; i < gp_conf_nkeys; i++)
		free((*p)->val[i]);
	free(*p);
	*p = NULL;
}

int gp_config_set(gp_config_t *cfg, const char *key, const char *value, gp_error_t *err)
{
	int i = key_index(key);
	if (i < 0)
		return errno = EINVAL, gp_errprintf(err, "unknown key '%s'", key);
	int64_t n = 0;
	if (convert(&gp_conf_keys[i], value, &n, err) < 0)
		return errno = EINVAL, -1;
	char *s = strdup(value);
	if (!s)
		return gp_errprintf(err, "out of memory");
	free(cfg->val[i]);
	cfg->val[i] = s;
	cfg->num[i] = n;
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int gp_config_load_file(gp_config_t *cfg, const char *path, gp_error_t *err)
{
	if (!path)
		path = getenv("GPOOL_CONF");
	if (!path) {
		if (access("/etc/gpool/gpool.conf", R_OK) != 0)
			return 0;
		path = "/etc/gpool/gpool.conf";
	}
	uint8_t *data;
	size_t len;
	if (gp_read_file(path, 1 << 20, &data, &len) < 0)
		return gp_errprintf(err, "cannot read config '%s': %s", path, strerror(errno));
	char *save = NULL, *line;
	int lineno = 0, rc = 0;
	for (line = strtok_r((char *)data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *t = trim(line);
		if (!*t)
			continue;
		char *eq = strchr(t, '=');
		if (!eq) {
			rc = gp_errprintf(err, "%s:%d: expected 'key = value'", path, lineno);
			break;
		}
		*eq = '\0';
		char *k = trim(t), *v = trim(eq + 1);
		gp_error_t e2;
		if (gp_config_set(cfg, k, v, &e2) < 0) {
			rc = gp_errprintf(err, "%s:%d: %s", path, lineno, e2.text);
			break;
		}
	}
	free(data);
	if (rc < 0)
		errno = EINVAL;
	return rc;
}

/* "--state-dir" -> "state_dir" */
static int flag_to_key(const char *flag, char *key, size_t len)
{
	size_t n = strcspn(flag, "=");
	if (n + 1 > len)
		return -1;
	for (size_t i = 0; i < n; i++)
		key[i] = flag[i] == '-' ? '_' : flag[i];
	key[n] = '\0';
	return 0;
}

int gp_config_parse_args(gp_config_t *cfg, int argc, char **argv, int *help, gp_error_t *err)
{
	const char *conf = NULL;
	*help = 0;
	/* --config first, so flags override the file wherever they stand */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			conf = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			conf = argv[i] + 9;
	}
	if (gp_config_load_file(cfg, conf, err) < 0)
		return -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = 1;
			continue;
		}
		if (!strcmp(a, "--check-config")) {
			cfg->check_only = 1;
			continue;
		}
		if (!strcmp(a, "--config")) {
			i++;
			continue;
		}
		if (!strncmp(a, "--config=", 9))
			continue;
		if (strncmp(a, "--", 2) != 0)
			return errno = EINVAL, gp_errprintf(err, "unexpected argument '%s'", a);
		char key[64];
		if (flag_to_key(a + 2, key, sizeof(key)) < 0)
			return errno = EINVAL, gp_errprintf(err, "unknown option '%s'", a);
		int k = key_index(key);
		if (k < 0 || !(gp_conf_keys[k].progs & cfg->prog))
			return errno = EINVAL, gp_errprintf(err, "unknown option '%s'", a);
		const char *v = strchr(a, '=');
		if (v)
			v++;
		else if (gp_conf_keys[k].type == GP_CONF_BOOL)
			v = "true";
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return errno = EINVAL, gp_errprintf(err, "option '%s' needs a value", a);
		if (gp_config_set(cfg, key, v, err) < 0)
			return -1;
	}
	return 0;
}

int gp_config_check_only(const gp_config_t *cfg)
{
	return cfg->check_only;
}

int gp_config_reload(gp_config_t *cfg, int argc, char **argv,
		     void (*changed)(const char *key, int applied, void *arg), void *arg,
		     gp_error_t *err)
{
	gp_config_t *fresh = gp_config_create(cfg->prog);
	int help;
	if (!fresh)
		return gp_errprintf(err, "out of memory");
	if (gp_config_parse_args(fresh, argc, argv, &help, err) < 0) {
		gp_config_destroy(&fresh);
		return -1;
	}
	int applied = 0;
	for (int i = 0; i < gp_conf_nkeys; i++) {
		const struct gp_conf_key *k = &gp_conf_keys[i];
		if (!(k->progs & cfg->prog) || strcmp(cfg->val[i], fresh->val[i]) == 0)
			continue;
		int live = (k->reload & cfg->prog) != 0;
		if (live) {
			free(cfg->val[i]);
			cfg->val[i] = fresh->val[i];
			cfg->num[i] = fresh->num[i];
			fresh->val[i] = NULL;
			applied++;
		}
		if (changed)
			changed(k->name, live, arg);
	}
	gp_config_destroy(&fresh);
	return applied;
}

void gp_config_usage(const gp_config_t *cfg, FILE *f)
{
	fprintf(f, "options (each also a gpool.conf key, with - written _):\n");
	fprintf(f, "  --config PATH          read this gpool.conf (default $GPOOL_CONF, "
		   "/etc/gpool/gpool.conf)\n");
	for (int i = 0; i < gp_conf_nkeys; i++) {
		const struct gp_conf_key *k = &gp_conf_keys[i];
		if (!(k->progs & cfg->prog))
			continue;
		char flag[64];
		snprintf(flag, sizeof(flag), "--%s", k->name);
		for (char *p = flag; *p; p++)
			if (*p == '_')
				*p = '-';
		fprintf(f, "  %-22s %s (default: '%s')\n", flag, k->help, k->def);
	}
	fprintf(f, "  --check-config         check the configuration, say what is wrong, exit\n");
	fprintf(f, "  --help                 this text\n");
}

const char *gp_config_str(const gp_config_t *cfg, const char *key)
{
	int i = key_index(key);
	return i < 0 ? NULL : cfg->val[i];
}

int64_t gp_config_int(const gp_config_t *cfg, const char *key)
{
	int i = key_index(key);
	return i < 0 ? 0 : cfg->num[i];
}

int gp_config_bool(const gp_config_t *cfg, const char *key)
{
	return (int)gp_config_int(cfg, key);
}
