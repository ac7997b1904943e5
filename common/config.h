/* config.h: gpool.conf and the command-line flags that mirror it.
 *
 * Every key lives in one table (config_keys.c) with its type, default, documentation and the
 * programs that read it. One gpool.conf serves every program: a key another program reads is
 * accepted and ignored, an unknown key is an error. Every key of a program is also its flag:
 * `state_dir = /x` in the file is `--state-dir=/x` (or `--state-dir /x`) on the command line.
 * Precedence: defaults < file < flags. The file is --config PATH, else $GPOOL_CONF, else
 * /etc/gpool/gpool.conf when it exists.
 */
#ifndef GPOOL_CONFIG_H
#define GPOOL_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

enum gp_prog { GP_SCHED = 1, GP_WORKER = 2, GP_CLI = 4, GP_STEPD = 8 };

enum gp_conf_type { GP_CONF_STR, GP_CONF_INT, GP_CONF_BOOL, GP_CONF_DURATION, GP_CONF_SIZE };

struct gp_conf_key {
	const char *name;
	unsigned progs; /* mask of enum gp_prog */
	enum gp_conf_type type;
	const char *def;
	const char *help;
	const char *choices; /* "a|b|c": the only values accepted; NULL: any of its type */
	unsigned reload;     /* mask of enum gp_prog that apply a new value on SIGHUP */
};

extern const struct gp_conf_key gp_conf_keys[];
extern const int gp_conf_nkeys;

typedef struct gp_config gp_config_t;

gp_config_t *gp_config_create(enum gp_prog prog);
void gp_config_destroy(gp_config_t **cfg);

/* Read a config file. path NULL: $GPOOL_CONF, else /etc/gpool/gpool.conf if it exists. */
int gp_config_load_file(gp_config_t *cfg, const char *path, gp_error_t *err);
/* Set one key from a string, checking its type. */
int gp_config_set(gp_config_t *cfg, const char *key, const char *value, gp_error_t *err);
/* Daemon argument parsing: --config, --help (sets *help), --KEY[=VALUE] for every key of the
 * program. Returns 0 / -1 with err filled. */
int gp_config_parse_args(gp_config_t *cfg, int argc, char **argv, int *help, gp_error_t *err);
/* --check-config was given (parse_args read and checked the file: the program says so and
 * exits). */
int gp_config_check_only(const gp_config_t *cfg);
/* SIGHUP: read the file and the flags again (argc/argv as at start-up) into a fresh config; on
 * success copy into cfg the values of the keys this program applies live (their `reload` mask)
 * and call changed(key, applied, arg) for every key of the program whose value differs
 * (applied false: it takes effect at the next restart). On failure cfg is untouched.
 * Returns the number of keys applied, or -1 with err filled. Strings of applied keys are
 * freed: a caller keeping gp_config_str pointers of reloadable keys must take them again. */
int gp_config_reload(gp_config_t *cfg, int argc, char **argv,
		     void (*changed)(const char *key, int applied, void *arg), void *arg,
		     gp_error_t *err);
/* Print the program's flags with defaults and documentation. */
void gp_config_usage(const gp_config_t *cfg, FILE *f);

const char *gp_config_str(const gp_config_t *cfg, const char *key);
int64_t gp_config_int(const gp_config_t *cfg,
		      const char *key); /* durations in ms, sizes in bytes */
int gp_config_bool(const gp_config_t *cfg, const char *key);

#endif
