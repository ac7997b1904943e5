/* directive.h: `#GPOOL <options>` lines at the top of a job script (as #SBATCH for sbatch).
 * They are read from the top: an optional "#!" line, then comments and blank lines; the first
 * other line ends them. Words split at blanks; '...' and "..." quote; a word starting with '#'
 * starts a comment.
 */
#ifndef GP_CLI_DIRECTIVE_H
#define GP_CLI_DIRECTIVE_H

#include <stddef.h>

#include "common/error.h"

struct gp_directive {
	int lineno;
	int argc;    /* argv[0] is the program name given to the parser */
	char **argv; /* NULL-terminated */
};

/* Collect the directive lines of text. *dirs is malloc'd (*n of them, possibly 0).
 * 0 / -1 (EINVAL: "line 3: unterminated quote"). */
int gp_directives_parse(const char *text, size_t len, const char *prog, struct gp_directive **dirs,
			int *n, gp_error_t *err);
void gp_directives_free(struct gp_directive *dirs, int n);

#endif
