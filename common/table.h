/* table.h: a text table as squeue and sinfo print them: a header line and rows, each column
 * as wide as its widest cell, separated by two blanks; the last column is not padded. */
#ifndef GP_COMMON_TABLE_H
#define GP_COMMON_TABLE_H

#include <stdio.h>

typedef struct gp_table gp_table_t;

/* Columns named by the NULL-terminated list of headers. NULL when out of memory. */
gp_table_t *gp_table_create(const char *const *headers);
void gp_table_destroy(gp_table_t **t);

/* Add a row of as many cells as there are columns (copied). 0 / -1 (ENOMEM). */
int gp_table_add(gp_table_t *t, const char *const *cells);
/* Right-align column col (numbers). */
void gp_table_align_right(gp_table_t *t, int col);

int gp_table_rows(const gp_table_t *t);
/* Print the header and the rows. 0 / -1 on a write error. */
int gp_table_print(const gp_table_t *t, FILE *f);

#endif
