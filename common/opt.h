/* opt.h: command-line options as a table. Every gpool command describes its options once, in
 * an array of struct gp_opt; getopt_long's tables and the --help text are made from it, so an
 * option and its documentation cannot drift apart.
 *
 * gp_opt_scan and gp_opt_parse stop at the first non-option argument ("+" mode): what
 * follows a script or a command belongs to it (gsub). gp_opt_parse_mixed takes options and
 * operands in any order (the other commands). Errors are reported in a gp_error_t (errno = EINVAL),
 * never printed.
 */
#ifndef GP_COMMON_OPT_H
#define GP_COMMON_OPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

/* Apply one option to the command's context; arg is NULL for a flag. 0 / -1 with err filled
 * (errno EINVAL for bad values, anything else for failures such as an unreadable file). */
typedef int (*gp_opt_set_f)(void *ctx, const char *arg, gp_error_t *err);

enum gp_opt_flags {
	GP_OPT_CMDLINE = 1, /* not allowed in a script's #GPOOL lines */
	GP_OPT_HIDDEN = 2,  /* accepted, not shown by --help */
};

struct gp_opt {
	const char *name; /* long name without "--" */
	int key;	  /* short option character, or 0 for none */
	int has_arg;	  /* no_argument, required_argument */
	const char *arg;  /* argument name shown by --help */
	const char *help;
	gp_opt_set_f set;
	int flags;
};

/* Where one option stands in an argument vector (for parse-now, apply-later). */
struct gp_opt_hit {
	const struct gp_opt *opt;
	const char *arg;
};

/* Parse argv[0..argc) (argv[0] is the program name) against the table of n options. The
 * options found are stored in *hits (malloc'd, *nhits of them) in order, not applied; *optind
 * is the index of the first operand and *dashdash says whether "--" ended the options.
 * 0 / -1 with err filled ("unknown option '--x'", "option '--time' needs a value"). */
int gp_opt_scan(const struct gp_opt *tab, int n, int argc, char **argv, struct gp_opt_hit **hits,
		int *nhits, int *optind_out, bool *dashdash, gp_error_t *err);

/* Apply hits in order. Stops at the first failing one. */
int gp_opt_apply(const struct gp_opt_hit *hits, int nhits, void *ctx, gp_error_t *err);

/* scan + apply. */
int gp_opt_parse(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx, int *optind_out,
		 gp_error_t *err);

/* Options and operands in any order (as `gcancel 42 -s KILL`); "--" ends the options.
 * *operands (malloc'd array of pointers into argv, *noperands of them) in order. */
int gp_opt_parse_mixed(const struct gp_opt *tab, int n, int argc, char **argv, void *ctx,
		       char ***operands, int *noperands, gp_error_t *err);

/* Print "  -t, --time=TIME        help" lines for the table. */
void gp_opt_usage(const struct gp_opt *tab, int n, FILE *f);

/* The last arms of a plain getopt_long loop (a daemon or tool without a table): for --help
 * (HELP true) usage(stdout) and exit status 0, for an unknown option usage(stderr) and BAD. */
int gp_opt_usage_status(void (*usage)(FILE *f), bool help, int bad);

/* Typed setters: what an option's set function calls to store a value of a common kind, so no
 * program writes its own. Each returns 0, or -1 with errno EINVAL (ENOMEM) and, for a bad value,
 * "invalid WHAT 'ARG'" in err; on failure the destination is left as it was. */

/* A copy of arg replaces *field (the old string freed). An empty arg is refused when what is
 * given; with what NULL it is stored. */
int gp_opt_string(char **field, const char *arg, const char *what, gp_error_t *err);

/* "on" 1, "off" 0, "auto" -1 (the caller decides later what auto means); anything else is
 * "invalid WHAT 'ARG' (auto, on, off)". */
int gp_opt_onoff(int *out, const char *arg, const char *what, gp_error_t *err);

/* A decimal count in [min, max] ("8"; no sign, no trailing text). */
int gp_opt_count(uint32_t *out, const char *arg, uint32_t min, uint32_t max, const char *what,
		 gp_error_t *err);

/* A size as gp_parse_size reads it ("512M", "2GiB"; a bare number is in units of unit), in
 * bytes. */
int gp_opt_size(uint64_t *out, const char *arg, uint64_t unit, const char *what, gp_error_t *err);

/* A duration as gp_parse_duration reads it ("90", "10:00", "1-00:00:00"), in seconds, refused
 * outside [min, max]. */
int gp_opt_duration(uint32_t *out, const char *arg, uint32_t min, uint32_t max, const char *what,
		    gp_error_t *err);

/* A copy of arg appended to the list *v of *n strings (the option given again adds another). */
int gp_opt_list(char ***v, size_t *n, const char *arg, gp_error_t *err);

/* Free a list of gp_opt_list: its strings and the array; *v NULL, *n 0. */
void gp_opt_list_clear(char ***v, size_t *n);

#define GP_NOPTS(tab) ((int)(sizeof(tab) / sizeof((tab)[0])))

#endif
