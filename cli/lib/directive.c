/* directive.c - reading a job script's `#GPOOL <options>` lines (as #SBATCH) into words
 * for gsub's option table (directive.h) */
#include "cli/lib/directive.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "#GPOOL"

static int push_word(struct gp_directive *d, const char *w, size_t len)
{
	char **v = realloc(d->argv, (d->argc + 2) * sizeof(*v));
	if (!v)
		return -1;
	d->argv = v;
	if (!(v[d->argc] = strndup(w, len)))
		return -1;
	v[++d->argc] = NULL;
	return 0;
}

/* Split one line (without its newline) into words after the program name. */
static int split(struct gp_directive *d, const char *p, const char *end, gp_error_t *err)
{
	char *word = malloc(end - p + 1);
	if (!word)
		return gp_errprintf(err, "out of memory");
	while (p < end) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p == end || *p == '#')
			break;
		size_t k = 0;
		while (p < end && !isspace((unsigned char)*p)) {
			if (*p == '\'' || *p == '"') {
				char q = *p++;
				while (p < end && *p != q)
					word[k++] = *p++;
				if (p == end) {
					free(word);
					errno = EINVAL;
					return gp_errprintf(err, "line %d: unterminated quote",
							    d->lineno);
				}
				p++;
			} else {
				word[k++] = *p++;
			}
		}
		if (push_word(d, word, k) < 0) {
			free(word);
			return gp_errprintf(err, "out of memory");
		}
	}
	free(word);
	return 0;
}

int gp_directives_parse(const char *text, size_t len, const char *prog, struct gp_directive **dirs,
			int *n, gp_error_t *err)
{
	struct gp_directive *v = NULL;
	int nv = 0, lineno = 0;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		if (!eol)
			eol = end;
		lineno++;
		const char *s = p;
		while (s < eol && isspace((unsigned char)*s))
			s++;
		if (lineno == 1 && eol - s >= 2 && s[0] == '#' && s[1] == '!')
			goto next;
		if (s == eol)
			goto next;
		if (*s != '#')
			break;
		size_t pl = strlen(PREFIX);
		if ((size_t)(eol - s) >= pl && memcmp(s, PREFIX, pl) == 0 &&
		    (s + pl == eol || isspace((unsigned char)s[pl]))) {
			struct gp_directive *nvv = realloc(v, (nv + 1) * sizeof(*v));
			if (!nvv)
				goto oom;
			v = nvv;
			struct gp_directive *d = &v[nv++];
			memset(d, 0, sizeof(*d));
			d->lineno = lineno;
			if (push_word(d, prog, strlen(prog)) < 0)
				goto oom;
			if (split(d, s + pl, eol, err) < 0) {
				gp_directives_free(v, nv);
				return -1;
			}
		}
	next:
		p = eol < end ? eol + 1 : end;
	}
	*dirs = v;
	*n = nv;
	return 0;
oom:
	gp_directives_free(v, nv);
	errno = ENOMEM;
	return gp_errprintf(err, "out of memory");
}

void gp_directives_free(struct gp_directive *dirs, int n)
{
	if (!dirs)
		return;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < dirs[i].argc; k++)
			free(dirs[i].argv[k]);
		free(dirs[i].argv);
	}
	free(dirs);
}
