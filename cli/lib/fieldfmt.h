/* fieldfmt.h: squeue's and sinfo's -o field lists ("%.8i %j %u %t %M %D %R"), for any kind of
 * row (gstat's jobs: jobfmt.h, gnodes' nodes: nodefmt.h). Each field is '%', an optional width
 * ("10", or ".10": at most 10 characters, right aligned as squeue's), and a letter from the
 * caller's table; other text is copied, "%%" is a '%'. Parsed once into a list, then applied to
 * each row: no table, no header collapsing. */
#ifndef GP_CLI_FIELDFMT_H
#define GP_CLI_FIELDFMT_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

/* Writes one row's field (at most len bytes with the NUL); now: the time of the listing. */
typedef void (*gp_field_f)(const void *row, double now, char *buf, size_t len);

struct gp_field {
	char letter;
	const char *header;
	gp_field_f fn;
};

typedef struct gp_fieldfmt gp_fieldfmt_t;

/* fields must outlive the format. NULL with err filled (errno EINVAL) for an unknown letter or
 * a bad width, ENOMEM. */
gp_fieldfmt_t *gp_fieldfmt_create(const char *fmt, const struct gp_field *fields, size_t nfields,
				  gp_error_t *err);
void gp_fieldfmt_destroy(gp_fieldfmt_t **f);
/* The header line (each field's name) and one line per row. 0 / -1 on a write error. */
int gp_fieldfmt_header(const gp_fieldfmt_t *f, FILE *out);
int gp_fieldfmt_row(const gp_fieldfmt_t *f, const void *row, double now, FILE *out);

#endif
