/* jobfmt.h: gstat -o, squeue's -o field lists: "%.8i %j %u %t %M %D %R" (fieldfmt.h), with the
 * letters of the table in jobfmt.c (squeue's letters where squeue has one). */
#ifndef GP_CLI_JOBFMT_H
#define GP_CLI_JOBFMT_H

#include <stdio.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "cli/lib/fieldfmt.h"

typedef gp_fieldfmt_t gp_jobfmt_t;

/* NULL with err filled (errno EINVAL) for an unknown letter or a bad width. */
gp_jobfmt_t *gp_jobfmt_create(const char *fmt, gp_error_t *err);
void gp_jobfmt_destroy(gp_jobfmt_t **f);
/* The header line (each field's name) and one line per job. 0 / -1 on a write error. */
int gp_jobfmt_header(const gp_jobfmt_t *f, FILE *out);
int gp_jobfmt_job(const gp_jobfmt_t *f, const Gpool__JobInfo *job, double now, FILE *out);

#endif
