/* jobctl.h: JobControl for gcancel and gpool (cancel, signal, hold, release, priority). */
#ifndef GP_CLI_JOBCTL_H
#define GP_CLI_JOBCTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"
#include "cli/lib/session.h"

/* Send one JobControl for ids. Per-job failures from the reply are printed to `report` as
 * "<prog>: job 42: <text>" and counted in *failed. 0, or -1 with err filled when the call
 * itself failed. */
int gp_jobctl(gp_session_t *s, Gpool__JobAction action, uint64_t *ids, size_t n, int32_t value,
	      const char *prog, FILE *report, int *failed, gp_error_t *err);
/* The same, with selectors of array tasks as well ("12_7", "12_[3-5]"; docs/arrays.md). */
int gp_jobctl_sel(gp_session_t *s, Gpool__JobAction action, uint64_t *ids, size_t n, char **sel,
		  size_t nsel, int32_t value, const char *prog, FILE *report, int *failed,
		  gp_error_t *err);

#endif
