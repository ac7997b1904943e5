/* table.c - a text table as squeue and sinfo print one, each column as wide as its widest
 * cell (table.h) */
#include "common/table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct gp_table {
	int ncols;
	int nrows;
	char **cells; /* (nrows + 1) * ncols, the header first */
	size_t *width;
	bool *right;
};

gp_table_t *gp_table_create(const char *const *headers)
{
	gp_table_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	while (headers[t->ncols])
		t->ncols++;
	t->width = calloc(t->ncols, sizeof(*t->width));
	t->right = calloc(t->ncols, sizeof(*t->right));
	if (!t->width || !t->right) {
		gp_table_destroy(&t);
		return NULL;
	}
	t->nrows = -1; /* the header is row -1 */
	if (gp_table_add(t, headers) < 0) {
		gp_table_destroy(&t);
		return NULL;
	}
	return t;
}

void gp_table_destroy(gp_table_t **p)
{
	if (!p || !*p)
		return;
	gp_table_t *t = *p;
	for (int i = 0; i < (t->nrows + 1) * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->width);
	free(t->right);
	free(t);
	*p = NULL;
}

int gp_table_add(gp_table_t *t, const char *const *cells)
{
	int have = (t->nrows + 1) * t->ncols;
	char **nc = realloc(t->cells, (have + t->ncols) * sizeof(*nc));
	if (!nc)
		return errno = ENOMEM, -1;
	t->cells = nc;
	for (int i = 0; i < t->ncols; i++) {
		if (!(nc[have + i] = strdup(cells[i] ? cells[i] : ""))) {
			while (i-- > 0)
				free(nc[have + i]);
			return errno = ENOMEM, -1;
		}
	}
	for (int i = 0; i < t->ncols; i++) {
		size_t w = strlen(nc[have + i]);
		if (w > t->width[i])
			t->width[i] = w;
	}
	t->nrows++;
	return 0;
}

void gp_table_align_right(gp_table_t *t, int col)
{
	if (col >= 0 && col < t->ncols)
		t->right[col] = true;
}

int gp_table_rows(const gp_table_t *t)
{
	return t->nrows;
}

int gp_table_print(const gp_table_t *t, FILE *f)
{
	for (int r = 0; r <= t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			bool last = c == t->ncols - 1;
			int w = (int)t->width[c];
			if (t->right[c])
				fprintf(f, "%*s", w, s);
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s", w, s);
			fputs(last ? "\n" : "  ", f);
		}
	}
	return ferror(f) ? -1 : 0;
}
